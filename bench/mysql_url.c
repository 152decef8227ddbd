/* The benchmark's MariaDB/MySQL URL read as the mysql driver reads it (percent-decoded user,
 * password and host, the port, a socket= query), and rewritten to reach the run's own database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_bench.h"

static int hex(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

static void decode(const char *env, const char *s, size_t n, char *out, size_t cap,
                   const char *part) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '%') {
      int hi = i + 2 < n ? hex(s[i + 1]) : -1, lo = hi >= 0 ? hex(s[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        bench_die("%s: a malformed percent escape in the %s", env, part);
      ch = (char)(hi << 4 | lo);
      i += 2;
    }
    if (w + 1 >= cap)
      bench_die("%s: the %s is too long", env, part);
    out[w++] = ch;
  }
  out[w] = '\0';
}

void mb_parse_url(const char *base_url, const char *env, const char *database, mb_server *server,
                  char *url, size_t cap) {
  const char *rest = !strncmp(base_url, "mysql://", 8)      ? base_url + 8
                     : !strncmp(base_url, "mariadb://", 10) ? base_url + 10
                                                            : NULL;
  if (!rest)
    bench_die("%s must be a mysql:// or mariadb:// URL", env);
  size_t alen = strcspn(rest, "/?#");
  const char *at = NULL, *hp = rest, *aend = rest + alen;
  for (const char *s = rest; s < aend; s++)
    if (*s == '@')
      at = s;
  if (at) {
    const char *colon = memchr(rest, ':', (size_t)(at - rest));
    decode(env, rest, (size_t)((colon ? colon : at) - rest), server->user, sizeof server->user,
           "user");
    if (colon)
      decode(env, colon + 1, (size_t)(at - colon - 1), server->password, sizeof server->password,
             "password");
    hp = at + 1;
  }
  const char *colon = memchr(hp, ':', (size_t)(aend - hp));
  decode(env, hp, (size_t)((colon ? colon : aend) - hp), server->host, sizeof server->host, "host");
  server->port = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 3306;
  const char *query = strchr(aend, '?');
  for (const char *q = query ? query + 1 : ""; *q;) {
    size_t n = strcspn(q, "&");
    if (n > 7 && !strncmp(q, "socket=", 7))
      decode(env, q + 7, n - 7, server->socket, sizeof server->socket, "socket");
    q += n + (q[n] == '&');
  }
  int n = snprintf(url, cap, "%.*s/%s%s", (int)(aend - base_url), base_url, database,
                   query ? query : "");
  if (n < 0 || (size_t)n >= cap)
    bench_die("%s is too long", env);
}
