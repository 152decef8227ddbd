/* The MySQL/MariaDB driver's URLs (url.h): parsed strictly, percent-decoded, shown without the
 * password. */
#include "url.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/dialect.h>

#include "mysql_plugin.h"

static int hex(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* Percent-decodes s[0..n) into the store; NULL when an escape is malformed or decodes to NUL. */
static const char *decoded(tabq_my_url *u, const char *s, size_t n) {
  char *out = u->store + u->used, *w = out;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '%') {
      *w++ = s[i];
      continue;
    }
    int hi = i + 2 < n ? hex(s[i + 1]) : -1;
    int lo = hi >= 0 ? hex(s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
      return NULL;
    *w++ = (char)(hi << 4 | lo);
    i += 2;
  }
  *w++ = '\0';
  u->used += (size_t)(w - out);
  return out;
}

static bool parse_uint(const char *s, unsigned max, unsigned *out) {
  unsigned long v = 0;
  if (!*s)
    return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return false;
    v = v * 10 + (unsigned long)(*s - '0');
    if (v > max)
      return false;
  }
  *out = (unsigned)v;
  return true;
}

static int bad_url(const char *shown, const char *why) {
  return tabq_my_host()->fail(TABQ_INVALID, NULL, 0, "bad MySQL URL %s: %s", shown, why);
}

/* An SQL mode is a list of mode names: letters, digits and '_', separated by commas (empty:
 * no mode). Anything else could not go into the SET statement's literal safely. */
static bool sql_mode_text(const char *s) {
  if (strlen(s) > 1024)
    return false;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == ','))
      return false;
  return true;
}

/* The query string: socket=PATH, connect_timeout=SECONDS, sql_mode=MODES,
 * statement_timeout=SECONDS. */
static int parse_query(tabq_my_url *u, const char *q, const char *shown) {
  while (*q) {
    size_t n = strcspn(q, "&");
    const char *eq = memchr(q, '=', n);
    if (n > 0) {
      if (!eq)
        return bad_url(shown, "a query parameter has no value");
      size_t klen = (size_t)(eq - q);
      const char *value = decoded(u, eq + 1, n - klen - 1);
      if (!value)
        return bad_url(shown, "a malformed percent escape");
      if (klen == 6 && strncmp(q, "socket", 6) == 0)
        u->socket = *value ? value : NULL;
      else if (klen == 15 && strncmp(q, "connect_timeout", 15) == 0) {
        if (!parse_uint(value, 3600, &u->connect_timeout))
          return bad_url(shown, "connect_timeout is not a number of seconds up to 3600");
      } else if (klen == 17 && strncmp(q, "statement_timeout", 17) == 0) {
        if (!parse_uint(value, TABQ_MY_MAX_STATEMENT_TIMEOUT_S, &u->statement_timeout))
          return tabq_my_host()->fail(TABQ_INVALID, NULL, 0,
                                      "bad MySQL URL %s: statement_timeout=%.20s: the setting "
                                      "takes whole seconds, from 0 (no bound) to %d",
                                      shown, value, TABQ_MY_MAX_STATEMENT_TIMEOUT_S);
      } else if (klen == 8 && strncmp(q, "sql_mode", 8) == 0) {
        if (!sql_mode_text(value))
          return bad_url(shown, "sql_mode is a comma-separated list of mode names (letters, "
                                "digits and '_'), as SET sql_mode takes them");
        u->sql_mode = value;
      } else
        return tabq_my_host()->fail(TABQ_INVALID, NULL, 0,
                                    "bad MySQL URL %s: unknown parameter '%.*s' (known: socket, "
                                    "connect_timeout, sql_mode, statement_timeout)",
                                    shown, (int)klen, q);
    }
    q += n;
    if (*q == '&')
      q++;
  }
  return TABQ_OK;
}

/* Splits scheme://[user[:password]@][host][:port][/database][?query]. */
int tabq_my_parse_url(const char *url, tabq_my_url *u, const char *shown) {
  const char *rest = NULL;
  if (strncmp(url, "mysql://", 8) == 0)
    rest = url + 8;
  else if (strncmp(url, "mariadb://", 10) == 0)
    rest = url + 10;
  else
    return tabq_my_host()->fail(TABQ_INVALID, NULL, 0,
                                "not a MySQL URL: %s (mysql://user:password@host:port/database)",
                                shown);
  u->cap = 2 * strlen(rest) + 16; /* every decoded part with its NUL */
  u->store = tabq_my_host()->alloc(u->cap);
  if (!u->store)
    return tabq_my_host()->fail(TABQ_NOMEM, NULL, 0, "no memory to parse %s", shown);
  u->port = TABQ_MY_DEFAULT_PORT;
  u->connect_timeout = TABQ_MY_DEFAULT_CONNECT_TIMEOUT_S;
  u->statement_timeout = TABQ_MY_DEFAULT_STATEMENT_TIMEOUT_S;
  size_t alen = strcspn(rest, "/?#");
  const char *at = NULL;
  for (const char *s = rest; s < rest + alen; s++)
    if (*s == '@')
      at = s;
  const char *hp = rest;
  if (at) {
    const char *colon = memchr(rest, ':', (size_t)(at - rest));
    const char *uend = colon ? colon : at;
    u->user = decoded(u, rest, (size_t)(uend - rest));
    u->password = colon ? decoded(u, colon + 1, (size_t)(at - colon - 1)) : NULL;
    if (!u->user || (colon && !u->password))
      return bad_url(shown, "a malformed percent escape in the user or password");
    hp = at + 1;
  }
  const char *aend = rest + alen, *hend = aend, *port = NULL;
  if (*hp == '[') { /* [IPv6]:port */
    const char *close = memchr(hp, ']', (size_t)(aend - hp));
    if (!close)
      return bad_url(shown, "an IPv6 address without its ']'");
    u->host = decoded(u, hp + 1, (size_t)(close - hp - 1));
    if (close + 1 < aend && close[1] != ':')
      return bad_url(shown, "text after the IPv6 address");
    port = close + 1 < aend ? close + 2 : NULL;
  } else {
    const char *colon = memchr(hp, ':', (size_t)(aend - hp));
    if (colon) {
      hend = colon;
      port = colon + 1;
    }
    u->host = decoded(u, hp, (size_t)(hend - hp));
  }
  if (!u->host)
    return bad_url(shown, "a malformed percent escape in the host");
  if (port) {
    char digits[8];
    size_t n = (size_t)(aend - port);
    if (n >= sizeof digits)
      return bad_url(shown, "the port is not a number from 1 to 65535");
    memcpy(digits, port, n);
    digits[n] = '\0';
    if (n > 0 && (!parse_uint(digits, 65535, &u->port) || u->port == 0))
      return bad_url(shown, "the port is not a number from 1 to 65535");
  }
  const char *s = aend;
  if (*s == '/') {
    size_t n = strcspn(s + 1, "?#");
    u->database = decoded(u, s + 1, n);
    if (!u->database)
      return bad_url(shown, "a malformed percent escape in the database");
    s += 1 + n;
  }
  if (*s == '?') {
    size_t n = strcspn(s + 1, "#");
    char *q = tabq_my_host()->alloc(n + 1);
    if (!q)
      return tabq_my_host()->fail(TABQ_NOMEM, NULL, 0, "no memory to parse %s", shown);
    memcpy(q, s + 1, n);
    q[n] = '\0';
    int rc = parse_query(u, q, shown);
    tabq_my_host()->free(q);
    if (rc != TABQ_OK)
      return rc;
  }
  if (!*u->host && !u->socket)
    u->host = NULL; /* the library's default: localhost, through its default socket */
  else if (!*u->host)
    u->host = "localhost"; /* with a socket: connect through it */
  if (u->database && !*u->database)
    u->database = NULL;
  return TABQ_OK;
}

/* The URL as messages may show it: the password of its user info replaced. */
const char *tabq_my_shown_url(const char *url, char buf[TABQ_MY_URL_SHOWN]) {
  const char *sep = strstr(url, "://");
  const char *auth = sep ? sep + 3 : url;
  const char *end = auth + strcspn(auth, "/?#");
  const char *at = NULL;
  for (const char *s = auth; s < end; s++)
    if (*s == '@')
      at = s;
  const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
  if (colon)
    snprintf(buf, TABQ_MY_URL_SHOWN, "%.*s***%s", (int)(colon + 1 - url), url, at);
  else
    snprintf(buf, TABQ_MY_URL_SHOWN, "%s", url);
  return buf;
}
