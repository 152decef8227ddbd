/* tabq — the PostgreSQL driver's URLs: which text goes to libpq (a URI whole, the conninfo after
 * "postgres:"), and the URL as messages show it, every password replaced by "***" however the
 * URL spells it (libpq's own reading is the reference: tests/fuzz/fuzz_url_postgres.c). */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "postgres_plugin.h"

typedef struct text_out {
  char *buf;
  size_t cap, len;
} text_out;

static void out_put(text_out *o, const char *s, size_t n) {
  while (n-- > 0 && o->len + 1 < o->cap)
    o->buf[o->len++] = *s++;
  o->buf[o->len] = '\0';
}

static void out_str(text_out *o, const char *s) {
  out_put(o, s, strlen(s));
}

/* A key=value conninfo with each password's value replaced. */
static void redact_conninfo(text_out *o, const char *s) {
  while (*s) {
    while (isspace((unsigned char)*s))
      out_put(o, s++, 1);
    const char *key = s;
    while (*s && *s != '=' && !isspace((unsigned char)*s))
      s++;
    size_t klen = (size_t)(s - key);
    out_put(o, key, klen);
    while (isspace((unsigned char)*s))
      out_put(o, s++, 1);
    if (*s != '=')
      continue;
    out_put(o, s++, 1);
    while (isspace((unsigned char)*s))
      out_put(o, s++, 1);
    const char *value = s;
    if (*s == '\'') { /* quoted, with backslash escapes */
      for (s++; *s && *s != '\''; s++)
        if (*s == '\\' && s[1])
          s++;
      if (*s)
        s++;
    } else { /* to the first space; libpq reads a backslash as escaping the next character */
      for (; *s && !isspace((unsigned char)*s); s++)
        if (*s == '\\' && s[1])
          s++;
    }
    if (klen == 8 && strncmp(key, "password", 8) == 0)
      out_str(o, "***");
    else
      out_put(o, value, (size_t)(s - value));
  }
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Whether s[0..n), percent-decoded as libpq decodes a URI's query keywords, is `word`. */
static bool decodes_to(const char *s, size_t n, const char *word) {
  for (size_t i = 0; i < n; i++, word++) {
    char c = s[i];
    if (c == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      c = (char)(hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]));
      i += 2;
    }
    if (!*word || c != *word)
      return false;
  }
  return !*word;
}

/* The end of a URI's hosts and ports, where its database or query begins: a '/' or '?' outside
 * the brackets of an IPv6 address, as libpq reads them. */
static const char *hosts_end(const char *p) {
  while (*p && *p != '/' && *p != '?') {
    if (*p == '[') {
      const char *close = strchr(p, ']');
      if (!close)
        return p + strlen(p);
      p = close;
    }
    p++;
  }
  return p;
}

/* A URI with the password of its user info and of its query replaced. libpq reads user info up
 * to the first '@' before any '/' ('?' and '#' included), the query after its hosts (an IPv6
 * address may hold a '?'), and decodes the query's keywords. */
static void redact_uri(text_out *o, const char *url, const char *authority) {
  const char *info_end = authority + strcspn(authority, "/");
  const char *at = NULL;
  for (const char *p = authority; p < info_end; p++)
    if (*p == '@')
      at = p;
  const char *from = url;
  const char *colon = at ? memchr(authority, ':', (size_t)(at - authority)) : NULL;
  if (colon) {
    out_put(o, url, (size_t)(colon + 1 - url));
    out_str(o, "***");
    from = at;
  }
  const char *query = strchr(hosts_end(at ? at + 1 : authority), '?');
  if (!query) {
    out_str(o, from);
    return;
  }
  out_put(o, from, (size_t)(query + 1 - from));
  for (const char *s = query + 1;;) {
    size_t n = strcspn(s, "&");
    const char *eq = memchr(s, '=', n);
    if (eq && decodes_to(s, (size_t)(eq - s), "password")) {
      out_put(o, s, (size_t)(eq + 1 - s));
      out_str(o, "***");
    } else
      out_put(o, s, n);
    if (s[n] != '&')
      break;
    out_put(o, "&", 1);
    s += n + 1;
  }
}

static bool is_uri(const char *s) {
  return strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0;
}

/* The URL as messages may show it: without its password. What libpq reads is redacted as libpq
 * reads it: "postgres:postgres://u:pw@h/db" hands libpq a URI after the first colon. */
const char *tabq_pg_shown_url(const char *url, char buf[TABQ_PG_URL_SHOWN]) {
  text_out o = {buf, TABQ_PG_URL_SHOWN, 0};
  buf[0] = '\0';
  const char *info = tabq_pg_conninfo_of(url);
  if (info) {
    out_put(&o, url, (size_t)(info - url)); /* "postgres:" before a conninfo, else nothing */
    if (is_uri(info))
      redact_uri(&o, info, strstr(info, "://") + 3);
    else
      redact_conninfo(&o, info);
    return buf;
  }
  const char *colon = strchr(url, ':');
  if (colon && strncmp(colon, "://", 3) == 0)
    redact_uri(&o, url, colon + 3);
  else if (colon) {
    out_put(&o, url, (size_t)(colon + 1 - url));
    redact_conninfo(&o, colon + 1);
  } else
    redact_conninfo(&o, url);
  return buf;
}

/* What libpq parses: the whole URI, or the conninfo after "postgres:". NULL for other schemes. */
const char *tabq_pg_conninfo_of(const char *url) {
  static const char *const schemes[] = {"postgresql:", "postgres:"};
  for (size_t i = 0; i < 2; i++) {
    size_t n = strlen(schemes[i]);
    if (strncmp(url, schemes[i], n) == 0)
      return strncmp(url + n, "//", 2) == 0 ? url : url + n;
  }
  return NULL;
}
