/* tabq's own settings in a PostgreSQL URL, taken out before libpq reads it (libpq refuses a
 * parameter it does not know): pooler (pooler.c) and statement_timeout.
 *
 *   postgres://app@db/jobs?statement_timeout=10&pooler=transaction
 *   postgres:host=db dbname=jobs statement_timeout=10
 *
 * statement_timeout=SECONDS bounds every statement twice: the server cancels one that runs longer
 * (the session's statement_timeout, set at connect), and the driver waits at most SECONDS plus
 * TABQ_PG_REPLY_GRACE_S for any reply before it gives the connection up, which is what bounds a
 * statement on a server that stops answering (paused, or its host gone) while its kernel keeps
 * the connection open. 0 turns both off; without the setting, TABQ_PG_DEFAULT_STATEMENT_TIMEOUT_S.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "postgres_plugin.h"

/* The value's length: up to '&' in a URI's query, up to white space in key=value form. */
static size_t value_len(const char *v, bool uri) {
  return uri ? strcspn(v, "&#") : strcspn(v, " \t\n");
}

/* Where "KEY=" starts as a setting, or NULL: after '?' or '&' (URI), or at the start or after
 * white space (key=value). */
static char *find_setting(char *url, bool uri, const char *key) {
  size_t klen = strlen(key);
  char *from = uri ? strchr(url, '?') : url;
  for (char *p = from ? strstr(from, key) : NULL; p; p = strstr(p + 1, key)) {
    char before = p == url ? ' ' : p[-1];
    if (p[klen] == '=' && (uri ? before == '?' || before == '&' : isspace((unsigned char)before)))
      return p;
  }
  return NULL;
}

bool tabq_pg_take_setting(char *url, bool uri, const char *key, char *value, size_t cap,
                          size_t *len) {
  char *at = find_setting(url, uri, key);
  if (!at)
    return false;
  const char *v = at + strlen(key) + 1;
  size_t n = value_len(v, uri);
  *len = n;
  snprintf(value, cap, "%.*s", (int)n, v);
  /* The URL without the setting and its separator. */
  const char *rest = v + n;
  size_t head = (size_t)(at - url);
  if (uri && *rest == '&')
    rest++; /* "?pooler=x&a=b" -> "?a=b"; "&pooler=x&a" -> "&a" */
  else if (head > 0 && (uri ? url[head - 1] == '&' || url[head - 1] == '?'
                            : isspace((unsigned char)url[head - 1])))
    head--; /* "?a=b&pooler=x" -> "?a=b"; "?pooler=x" -> ""; " pooler=x" -> "" */
  memmove(url + head, rest, strlen(rest) + 1);
  return true;
}

int tabq_pg_take_statement_timeout(char *url, bool uri, unsigned *seconds) {
  *seconds = TABQ_PG_DEFAULT_STATEMENT_TIMEOUT_S;
  char value[16];
  size_t n;
  if (!tabq_pg_take_setting(url, uri, "statement_timeout", value, sizeof value, &n))
    return TABQ_OK;
  unsigned long s = 0;
  bool ok = n > 0 && n < sizeof value;
  for (size_t i = 0; ok && i < n; i++) {
    ok = value[i] >= '0' && value[i] <= '9';
    s = s * 10 + (unsigned long)(value[i] - '0');
    ok = ok && s <= TABQ_PG_MAX_STATEMENT_TIMEOUT_S;
  }
  if (!ok)
    return tabq_pg_host()->fail(TABQ_INVALID, NULL, 0,
                                "postgres URL: statement_timeout=%.*s: the setting takes whole "
                                "seconds, from 0 (no bound) to %d",
                                (int)(n > 20 ? 20 : n), value, TABQ_PG_MAX_STATEMENT_TIMEOUT_S);
  *seconds = (unsigned)s;
  return TABQ_OK;
}
