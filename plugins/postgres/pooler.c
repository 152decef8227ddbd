/* The URL's `pooler` setting: tabq's own, so it is taken out before libpq reads the URL (libpq
 * refuses a parameter it does not know).
 *
 *   postgres://app@127.0.0.1:6432/jobs?pooler=transaction
 *   postgres:host=127.0.0.1 port=6432 dbname=jobs pooler=transaction
 *
 * pooler=transaction declares a transaction pooler between tabq and the server (PgBouncer's
 * pool_mode=transaction): each transaction may run on another server session, so the driver
 * prepares nothing that outlives a statement and the core refuses what needs a session.
 * pooler=session (or none) is a session of its own, PgBouncer's session pooling included.
 * Whether a pooler is there cannot be read off the connection (PgBouncer answers as the server
 * does), so the URL says it. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "postgres_plugin.h"

#define KEY "pooler="

/* The value's length: up to '&' in a URI's query, up to white space in key=value form. */
static size_t value_len(const char *v, bool uri) {
  return uri ? strcspn(v, "&#") : strcspn(v, " \t\n");
}

/* Where the setting starts, or NULL: "pooler=" after '?' or '&' (URI), or at the start or after
 * white space (key=value). */
static const char *find_setting(const char *url, bool uri) {
  const char *from = uri ? strchr(url, '?') : url;
  for (const char *p = from ? strstr(from, KEY) : NULL; p; p = strstr(p + 1, KEY)) {
    char before = p == url ? ' ' : p[-1];
    if (uri ? before == '?' || before == '&' : isspace((unsigned char)before))
      return p;
  }
  return NULL;
}

int tabq_pg_take_pooler(const char *url, bool uri, char *out, size_t cap, bool *per_transaction) {
  *per_transaction = false;
  const char *at = find_setting(url, uri);
  if (!at) {
    if (strlen(url) >= cap)
      return tabq_pg_host()->fail(TABQ_INVALID, NULL, 0, "postgres URL too long (%zu bytes)",
                                  strlen(url));
    strcpy(out, url);
    return TABQ_OK;
  }
  const char *value = at + strlen(KEY);
  size_t n = value_len(value, uri);
  if (n == strlen("transaction") && !strncmp(value, "transaction", n))
    *per_transaction = true;
  else if (!(n == strlen("session") && !strncmp(value, "session", n)))
    return tabq_pg_host()->fail(TABQ_INVALID, NULL, 0,
                                "postgres URL: pooler=%.*s: the setting takes transaction (a "
                                "transaction pooler, as PgBouncer's pool_mode=transaction, stands "
                                "between tabq and the server) or session",
                                (int)(n > 40 ? 40 : n), value);
  /* The URL without the setting and its separator. */
  const char *rest = value + n;
  size_t head = (size_t)(at - url);
  if (uri && *rest == '&')
    rest++; /* "?pooler=x&a=b" -> "?a=b"; "&pooler=x&a" -> "&a" */
  else if (head > 0 && (uri ? url[head - 1] == '&' || url[head - 1] == '?'
                            : isspace((unsigned char)url[head - 1])))
    head--; /* "?a=b&pooler=x" -> "?a=b"; "?pooler=x" -> ""; " pooler=x" -> "" */
  if (head + strlen(rest) >= cap)
    return tabq_pg_host()->fail(TABQ_INVALID, NULL, 0, "postgres URL too long (%zu bytes)",
                                strlen(url));
  snprintf(out, cap, "%.*s%s", (int)head, url, rest);
  return TABQ_OK;
}
