/* Database URLs as AsyncAPI servers (asyncapi_url.h). Each built-in scheme is read as its
 * plugin's driver reads it (libpq's URIs and key=value conninfo, the MySQL driver's URLs in
 * plugins/mysql/url.c, SQLite's file names in plugins/sqlite/driver.c), and only the parts that say
 * where the server is are kept: the host list with its ports, and the database's name. Everything
 * else of the URL is skipped unread, so a password in the user info or in a query option cannot
 * reach the document. */
#include "asyncapi_url.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ---- Text that grows ---------------------------------------------------------------------- */

typedef struct text {
  char *p;
  size_t len, cap;
  bool failed;
} text;

static void put(text *t, const char *s, size_t n) {
  if (t->failed)
    return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->len + n + 1)
      cap *= 2;
    char *grown = realloc(t->p, cap);
    if (!grown) {
      t->failed = true;
      return;
    }
    t->p = grown;
    t->cap = cap;
  }
  memcpy(t->p + t->len, s, n);
  t->len += n;
  t->p[t->len] = '\0';
}

static void puts_(text *t, const char *s) {
  put(t, s, strlen(s));
}

/* ---- What a URL says ---------------------------------------------------------------------- */

#define MAX_HOSTS 64

/* One URL's parts, each a string of its own (decoded) or NULL. */
typedef struct parts {
  char *hosts[MAX_HOSTS]; /* the host list as given; "" for a host left out */
  size_t nhosts;
  char *ports[MAX_HOSTS]; /* the port list: one for every host, or one for all */
  size_t nports;
  char *addrs[MAX_HOSTS]; /* libpq's hostaddr list: the hosts when no host is named */
  size_t naddrs;
  char *database; /* a later host=, port= or dbname= replaces what came before */
} parts;

typedef struct reader {
  const char *scheme; /* for messages: the scheme, without its colon */
  size_t scheme_len, index;
  tabq_error *err;
  int rc; /* the refusal reported, for the callers of copy() */
  parts p;
} reader;

static void parts_free(parts *p) {
  for (size_t i = 0; i < p->nhosts; i++)
    free(p->hosts[i]);
  for (size_t i = 0; i < p->nports; i++)
    free(p->ports[i]);
  for (size_t i = 0; i < p->naddrs; i++)
    free(p->addrs[i]);
  free(p->database);
  memset(p, 0, sizeof *p);
}

static int bad(reader *r, const char *why) {
  return r->rc = tabq__err_set(r->err, TABQ_INVALID, NULL, NULL, "URL %zu (%.*s:): %s",
                               r->index + 1, (int)r->scheme_len, r->scheme, why);
}

static int no_memory(reader *r) {
  return r->rc = tabq__err_set(r->err, TABQ_NOMEM, NULL, NULL, "out of memory reading URL %zu",
                               r->index + 1);
}

static int hex(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* s[0..n), percent-decoded when `decode`, as a string of its own; NULL (the reader's error set)
 * for a malformed escape or one that decodes to NUL. */
static char *copy(reader *r, const char *s, size_t n, bool decode) {
  char *out = malloc(n + 1), *w = out;
  if (!out) {
    no_memory(r);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!decode || s[i] != '%') {
      *w++ = s[i];
      continue;
    }
    int hi = i + 2 < n ? hex(s[i + 1]) : -1;
    int lo = hi >= 0 ? hex(s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      free(out);
      bad(r, "a malformed percent escape");
      return NULL;
    }
    *w++ = (char)(hi << 4 | lo);
    i += 2;
  }
  *w = '\0';
  return out;
}

/* Splits a comma-separated list into a list of parts (replacing what it held). */
static int set_list(reader *r, char **list, size_t *n, const char *s, size_t len, bool decode) {
  for (size_t i = 0; i < *n; i++)
    free(list[i]);
  *n = 0;
  for (const char *end = s + len;;) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    const char *stop = comma ? comma : end;
    if (*n == MAX_HOSTS)
      return bad(r, "more hosts or ports than a list may hold (64)");
    if (!(list[*n] = copy(r, s, (size_t)(stop - s), decode)))
      return r->rc;
    (*n)++;
    if (!comma)
      return TABQ_OK;
    s = comma + 1;
  }
}

static int set_database(reader *r, const char *s, size_t n, bool decode) {
  free(r->p.database);
  return (r->p.database = copy(r, s, n, decode)) ? TABQ_OK : r->rc;
}

/* A key libpq reads for where the server is: host, hostaddr (the host when none is named),
 * port, dbname. Every other key is skipped: its value may be a password. */
static int pg_key(reader *r, const char *key, size_t klen, const char *value, size_t vlen,
                  bool decode) {
#define KEY_IS(name) (klen == sizeof(name) - 1 && memcmp(key, name, klen) == 0)
  if (KEY_IS("host"))
    return set_list(r, r->p.hosts, &r->p.nhosts, value, vlen, decode);
  if (KEY_IS("hostaddr"))
    return set_list(r, r->p.addrs, &r->p.naddrs, value, vlen, decode);
  if (KEY_IS("port"))
    return set_list(r, r->p.ports, &r->p.nports, value, vlen, decode);
  if (KEY_IS("dbname"))
    return set_database(r, value, vlen, decode);
  return TABQ_OK;
#undef KEY_IS
}

/* A query string, key=value&..., percent-encoded; `each` takes the keys it knows. */
static int read_query(reader *r, const char *q, const char *end,
                      int (*each)(reader *, const char *, size_t, const char *, size_t, bool)) {
  while (q < end) {
    const char *amp = memchr(q, '&', (size_t)(end - q));
    const char *stop = amp ? amp : end;
    const char *eq = memchr(q, '=', (size_t)(stop - q));
    if (eq) {
      int rc = each(r, q, (size_t)(eq - q), eq + 1, (size_t)(stop - eq - 1), true);
      if (rc)
        return rc;
    } else if (stop > q)
      return bad(r, "a query parameter has no value");
    q = amp ? amp + 1 : end;
  }
  return TABQ_OK;
}

/* host[:port] items of an authority (after its user info), separated by commas where `list`:
 * a host is a name, an address or [an IPv6 address]; each is percent-decoded. */
static int read_hosts(reader *r, const char *s, const char *end, bool list) {
  r->p.nhosts = r->p.nports = 0;
  for (;;) {
    const char *host = s, *host_end;
    if (*s == '[' && s < end) {
      const char *close = memchr(s, ']', (size_t)(end - s));
      if (!close)
        return bad(r, "an IPv6 address without its ']'");
      host = s + 1;
      host_end = close;
      s = close + 1;
    } else {
      while (s < end && *s != ':' && !(list && *s == ','))
        s++;
      host_end = s;
    }
    const char *port = s, *port_end = s;
    if (s < end && *s == ':') {
      port = ++s;
      while (s < end && !(list && *s == ','))
        s++;
      port_end = s;
    } else if (s < end && !(list && *s == ','))
      return bad(r, "text after the IPv6 address");
    if (r->p.nhosts == MAX_HOSTS)
      return bad(r, "more hosts than a list may hold (64)");
    if (!(r->p.hosts[r->p.nhosts] = copy(r, host, (size_t)(host_end - host), true)))
      return r->rc;
    r->p.nhosts++;
    if (!(r->p.ports[r->p.nports] = copy(r, port, (size_t)(port_end - port), true)))
      return r->rc;
    r->p.nports++;
    if (s >= end)
      return TABQ_OK;
    s++; /* the comma */
  }
}

/* The authority of scheme://authority/...: from `s` to the first of `stops`. Its user info
 * (up to the last '@') is skipped; returns where the host list starts. */
static const char *after_user_info(const char *s, const char *end) {
  const char *at = NULL;
  for (const char *p = s; p < end; p++)
    if (*p == '@')
      at = p;
  return at ? at + 1 : s;
}

/* postgres://... and postgresql://..., as libpq reads a URI: the authority ends at '/' or '?',
 * hosts are a comma-separated list, the path is the database, and host, hostaddr, port and
 * dbname in the query replace what the authority gave. */
static int read_pg_uri(reader *r, const char *s) {
  const char *end = s + strcspn(s, "/?");
  int rc = read_hosts(r, after_user_info(s, end), end, true);
  if (rc)
    return rc;
  s = end;
  if (*s == '/') {
    size_t n = strcspn(s + 1, "?");
    if ((rc = set_database(r, s + 1, n, true)))
      return rc;
    s += 1 + n;
  }
  return *s == '?' ? read_query(r, s + 1, s + strlen(s), pg_key) : TABQ_OK;
}

/* postgres:key=value ..., a libpq conninfo: values plain or in single quotes, with backslash
 * escapes in both. */
static int read_pg_conninfo(reader *r, const char *s) {
  for (;;) {
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      return TABQ_OK;
    const char *key = s;
    while (*s && *s != '=' && !isspace((unsigned char)*s))
      s++;
    size_t klen = (size_t)(s - key);
    while (isspace((unsigned char)*s))
      s++;
    if (*s != '=')
      return bad(r, "a conninfo key without '=' and a value");
    s++;
    while (isspace((unsigned char)*s))
      s++;
    char *value = malloc(strlen(s) + 1), *w = value;
    if (!value)
      return no_memory(r);
    bool quoted = *s == '\'';
    if (quoted)
      s++;
    while (*s && (quoted ? *s != '\'' : !isspace((unsigned char)*s))) {
      if (*s == '\\' && s[1])
        s++;
      *w++ = *s++;
    }
    *w = '\0';
    if (quoted && *s++ != '\'') {
      free(value);
      return bad(r, "a quoted conninfo value without its closing quote");
    }
    int rc = pg_key(r, key, klen, value, (size_t)(w - value), false);
    free(value);
    if (rc)
      return rc;
  }
}

/* mysql://... and mariadb://..., as the MySQL driver reads them (plugins/mysql/url.c): the
 * authority ends at '/', '?' or '#', one host, the path is the database; of the query only
 * socket= matters, and only to say the server is local (its path is not kept). */
static int my_key(reader *r, const char *key, size_t klen, const char *value, size_t vlen,
                  bool decode) {
  (void)value;
  (void)decode;
  if (klen == 6 && memcmp(key, "socket", 6) == 0 && vlen > 0 && r->p.nhosts == 1 &&
      !r->p.hosts[0][0]) {
    free(r->p.hosts[0]);
    return (r->p.hosts[0] = copy(r, "/", 1, false)) ? TABQ_OK : r->rc;
  }
  return TABQ_OK;
}

static int read_my_url(reader *r, const char *s) {
  const char *end = s + strcspn(s, "/?#");
  int rc = read_hosts(r, after_user_info(s, end), end, false);
  if (rc)
    return rc;
  s = end;
  if (*s == '/') {
    size_t n = strcspn(s + 1, "?#");
    if ((rc = set_database(r, s + 1, n, true)))
      return rc;
    s += 1 + n;
  }
  return *s == '?' ? read_query(r, s + 1, s + 1 + strcspn(s + 1, "#"), my_key) : TABQ_OK;
}

/* ---- What the document says ---------------------------------------------------------------- */

/* A host as the document may carry it: a name or an address, printable ASCII without the
 * characters that delimit URLs or AsyncAPI's server variables ({name}). */
static bool host_text(const char *h) {
  if (!*h)
    return false;
  for (; *h; h++)
    if (*h <= ' ' || *h >= 127 || strchr("/\\@?#[]{}\"'<>`^|%,", *h))
      return false;
  return true;
}

static bool port_text(const char *p) {
  unsigned long v = 0;
  if (!*p || strlen(p) > 5)
    return false;
  for (const char *s = p; *s; s++) {
    if (!isdigit((unsigned char)*s))
      return false;
    v = v * 10 + (unsigned long)(*s - '0');
  }
  return v >= 1 && v <= 65535;
}

/* The host list as the server's host: host[:port] items joined by commas, an IPv6 address in
 * brackets. A host left out, or a Unix socket's folder (a path, which is not written), is
 * "localhost"; *local says one was. */
static int host_list(reader *r, text *out, bool *local, bool *defaulted) {
  char **hosts = r->p.hosts;
  size_t n = r->p.nhosts;
  if (r->p.naddrs && (n == 0 || (n == 1 && !hosts[0][0]))) {
    hosts = r->p.addrs;
    n = r->p.naddrs;
  }
  if (r->p.nports > 1 && r->p.nports != (n ? n : 1))
    return bad(r, "the number of ports is neither one nor that of the hosts");
  for (size_t i = 0; i < (n ? n : 1); i++) {
    const char *h = n ? hosts[i] : "";
    const char *port = r->p.nports ? r->p.ports[r->p.nports > 1 ? i : 0] : "";
    if (i)
      puts_(out, ",");
    if (!*h || *h == '/' || *h == '@') { /* the default, a socket folder, an abstract socket */
      *(*h ? local : defaulted) = true;
      h = "localhost";
    }
    bool v6 = strchr(h, ':') != NULL;
    if (v6 ? strspn(h, "0123456789abcdefABCDEF:.") != strlen(h) : !host_text(h))
      return bad(r, "a host that is neither a name nor an address");
    if (*port && !port_text(port))
      return bad(r, "a port that is not a number from 1 to 65535");
    puts_(out, v6 ? "[" : "");
    puts_(out, h);
    puts_(out, v6 ? "]" : "");
    if (*port) {
      puts_(out, ":");
      puts_(out, port);
    }
  }
  return out->failed ? no_memory(r) : TABQ_OK;
}

/* The database as the server's pathname, "/name", percent-encoded as a path segment; NULL for
 * none, and for a name that reads like a URL or a conninfo (':', '@', '='): a value that is not
 * a database's name has no place in the document. */
static char *pathname(const char *db) {
  if (!db || !*db || strpbrk(db, ":@="))
    return NULL;
  text t = {0};
  puts_(&t, "/");
  for (const unsigned char *s = (const unsigned char *)db; *s; s++) {
    if (isalnum(*s) || strchr("-._~!$&'()*+,;", *s))
      put(&t, (const char *)s, 1);
    else {
      char esc[4] = {'%', "0123456789ABCDEF"[*s >> 4], "0123456789ABCDEF"[*s & 15], '\0'};
      puts_(&t, esc);
    }
  }
  if (t.failed)
    free(t.p);
  return t.failed ? NULL : t.p;
}

typedef struct dialect {
  const char *prefix, *id, *protocol, *title;
  int kind; /* 0 postgres, 1 mysql, 2 sqlite */
} dialect;

static const dialect dialects[] = {
    {"postgresql:", "postgresql", "postgresql", "PostgreSQL", 0},
    {"postgres:", "postgresql", "postgresql", "PostgreSQL", 0},
    {"mysql:", "mysql", "mysql", "MySQL", 1},
    {"mariadb:", "mariadb", "mysql", "MariaDB", 1},
    {"sqlite:", "sqlite", "sqlite", "SQLite", 2},
};

static const char *const sqlite_note =
    "A database file on the host of each process that opens it (its path is left out).";
static const char *const socket_note =
    "Reached through a Unix socket on the service's host (its path is left out).";
static const char *const default_note =
    "The URL names no host: the client library's default, a server on the service's host.";
static const char *const foreign_note =
    "A scheme of a dialect outside tabq: the server is named by its protocol, and by the host "
    "of its URL where the URL has one as RFC 3986 writes it.";

static json_t *server_object(const char *host, const char *path, const char *protocol,
                             const char *title, const char *note) {
  json_t *o = json_object();
  bool ok = o && !json_object_set_new(o, "host", json_string(host)) &&
            (!path || !json_object_set_new(o, "pathname", json_string(path))) &&
            !json_object_set_new(o, "protocol", json_string(protocol)) &&
            !json_object_set_new(o, "title", json_string(title)) &&
            (!note || !json_object_set_new(o, "description", json_string(note)));
  if (!ok)
    json_decref(o);
  return ok ? o : NULL;
}

/* A scheme outside the built-in ones: its protocol is the scheme; its host is the authority's
 * host[:port] when the URL has an authority that reads as one, else "". */
static int foreign(reader *r, const char *rest, json_t **out, char **id) {
  text host = {0};
  if (strncmp(rest, "//", 2) == 0) {
    const char *s = rest + 2, *end = s + strcspn(s, "/?#");
    tabq_error quiet; /* a host that does not read as one is left out, not refused */
    reader probe = {
        .scheme = r->scheme, .scheme_len = r->scheme_len, .index = r->index, .err = &quiet};
    bool local = false, defaulted = false;
    bool named = read_hosts(&probe, after_user_info(s, end), end, false) == TABQ_OK &&
                 probe.p.hosts[0][0] && host_list(&probe, &host, &local, &defaulted) == TABQ_OK;
    if (!named || local) {
      free(host.p);
      host = (text){0};
    }
    parts_free(&probe.p);
  }
  char *protocol = malloc(r->scheme_len + 1);
  if (protocol) {
    for (size_t i = 0; i < r->scheme_len; i++)
      protocol[i] = (char)tolower((unsigned char)r->scheme[i]);
    protocol[r->scheme_len] = '\0';
  }
  *out =
      protocol ? server_object(host.p ? host.p : "", NULL, protocol, protocol, foreign_note) : NULL;
  free(host.p);
  if (!*out) {
    free(protocol);
    return no_memory(r);
  }
  *id = protocol;
  return TABQ_OK;
}

int tabq__asyncapi_server(const char *url, size_t index, json_t **out, char **id, tabq_error *err) {
  *out = NULL;
  *id = NULL;
  size_t slen =
      url ? strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") : 0;
  reader r = {.scheme = url ? url : "", .index = index, .err = err};
  if (!url || !slen || !isalpha((unsigned char)url[0]) || url[slen] != ':') {
    return tabq__err_set(
        err, TABQ_INVALID, NULL, NULL,
        "URL %zu has no scheme (postgresql://HOST/DATABASE, mysql://HOST/DATABASE, "
        "sqlite:FILE, or a dialect's own)",
        index + 1);
  }
  r.scheme_len = slen;
  const dialect *d = NULL;
  for (size_t i = 0; i < sizeof dialects / sizeof *dialects; i++)
    if (strncmp(url, dialects[i].prefix, slen + 1) == 0)
      d = &dialects[i];
  const char *rest = url + slen + 1;
  if (!d)
    return foreign(&r, rest, out, id);
  int rc = TABQ_OK;
  if (d->kind == 2) { /* sqlite:FILE, sqlite://FILE, sqlite:///FILE: only the protocol shows */
    if (strncmp(rest, "//", 2) == 0)
      rest += 2;
    if (!*rest || *rest == '?')
      return bad(&r, "names no database file");
    *out = server_object("", NULL, d->protocol, d->title, sqlite_note);
  } else {
    bool uri = strncmp(rest, "//", 2) == 0;
    if (d->kind == 1 && !uri)
      return bad(&r, "a MySQL URL reads mysql://user:password@host:port/database");
    rc = d->kind == 1 ? read_my_url(&r, rest + 2)
         : uri        ? read_pg_uri(&r, rest + 2)
                      : read_pg_conninfo(&r, rest);
    text host = {0};
    bool local = false, defaulted = false;
    if (rc == TABQ_OK)
      rc = host_list(&r, &host, &local, &defaulted);
    char *path = rc == TABQ_OK ? pathname(r.p.database) : NULL;
    if (rc == TABQ_OK)
      *out = server_object(host.p, path, d->protocol, d->title,
                           local       ? socket_note
                           : defaulted ? default_note
                                       : NULL);
    free(path);
    free(host.p);
    parts_free(&r.p);
  }
  if (rc == TABQ_OK && (!*out || !(*id = strdup(d->id)))) {
    json_decref(*out);
    *out = NULL;
    return no_memory(&r);
  }
  return rc;
}
