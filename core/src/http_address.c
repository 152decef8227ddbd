/* An HTTP listener's address (http_address.h): parsed from its text, numeric hosts only (a name
 * other than localhost could resolve anywhere), checked for loopback, and bound by tabq itself
 * so that a busy port is a clear error naming it and port 0 tells the port it picked. */
#include "http_address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

static bool v4_loopback(const struct in_addr *a) {
  return (ntohl(a->s_addr) >> 24) == 127;
}

static bool v6_loopback(const struct in6_addr *a) {
  if (IN6_IS_ADDR_LOOPBACK(a))
    return true;
  if (IN6_IS_ADDR_V4MAPPED(a)) {
    struct in_addr v4;
    memcpy(&v4, &a->s6_addr[12], 4);
    return v4_loopback(&v4);
  }
  return false;
}

/* A host without its port: "[::1]" -> "::1"; host and port split at the last ':' otherwise. */
static int split(const char *text, char *host, size_t cap, const char **port) {
  const char *colon;
  if (text[0] == '[') {
    const char *close = strchr(text, ']');
    if (!close || close[1] != ':')
      return -1;
    colon = close + 1;
    if ((size_t)(close - text - 1) >= cap)
      return -1;
    memcpy(host, text + 1, (size_t)(close - text - 1));
    host[close - text - 1] = '\0';
  } else {
    colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= cap || memchr(text, ':', (size_t)(colon - text)))
      return -1;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
  }
  *port = colon + 1;
  return 0;
}

int tabq__http_addr_parse(const char *text, tabq_http_addr *out, tabq_error *err) {
  memset(out, 0, sizeof *out);
  if (!text || !*text)
    return tabq__err_set(err, TABQ_INVALID, NULL, "listen",
                         "no address to listen on: write HOST:PORT, such as 127.0.0.1:9464");
  char host[64];
  const char *port_text;
  if (split(text, host, sizeof host, &port_text))
    return tabq__err_set(err, TABQ_INVALID, NULL, "listen",
                         "address '%s' is not HOST:PORT (such as 127.0.0.1:9464, [::1]:9464 or "
                         ":0 for a free loopback port)",
                         text);
  char *end;
  long port = strtol(port_text, &end, 10);
  if (!*port_text || *end || port < 0 || port > 65535)
    return tabq__err_set(err, TABQ_INVALID, NULL, "listen",
                         "address '%s': the port '%s' is not a number from 0 to 65535", text,
                         port_text);
  if (!*host || !strcmp(host, "localhost"))
    strcpy(host, "127.0.0.1");
  struct sockaddr_in *v4 = (struct sockaddr_in *)&out->sa;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->sa;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    out->len = sizeof *v4;
    out->loopback = v4_loopback(&v4->sin_addr);
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    out->len = sizeof *v6;
    out->loopback = v6_loopback(&v6->sin6_addr);
  } else {
    return tabq__err_set(err, TABQ_INVALID, NULL, "listen",
                         "address '%s': '%s' is not an IP address (write 127.0.0.1, [::1], "
                         "localhost, or the address of an interface)",
                         text, host);
  }
  return TABQ_OK;
}

int tabq__http_bind(const tabq_http_addr *a, const char *text, int *fd, int *port,
                    tabq_error *err) {
  int s = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return tabq__err_set(err, TABQ_IO, NULL, "listen", "cannot listen on %s: socket: %s", text,
                         strerror(errno));
  /* A port left in TIME_WAIT by a listener just stopped binds again; one another socket
   * listens on still does not (Linux). */
  int on = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(s, (const struct sockaddr *)&a->sa, a->len) || listen(s, 64)) {
    int e = errno;
    close(s);
    if (e == EADDRINUSE)
      return tabq__err_set(err, TABQ_IO, NULL, "listen",
                           "cannot listen on %s: the address is in use (another process, or "
                           "another listener of this one, listens there)",
                           text);
    return tabq__err_set(err, TABQ_IO, NULL, "listen", "cannot listen on %s: %s", text,
                         strerror(e));
  }
  struct sockaddr_storage bound;
  socklen_t len = sizeof bound;
  getsockname(s, (struct sockaddr *)&bound, &len);
  *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                            : ((struct sockaddr_in *)&bound)->sin_port);
  *fd = s;
  return TABQ_OK;
}

bool tabq__http_host_loopback(const char *host) {
  char name[64];
  size_t n;
  if (host[0] == '[') {
    const char *close = strchr(host, ']');
    if (!close || (n = (size_t)(close - host - 1)) >= sizeof name)
      return false;
    memcpy(name, host + 1, n);
  } else {
    n = strcspn(host, ":");
    if (n >= sizeof name)
      return false;
    memcpy(name, host, n);
  }
  name[n] = '\0';
  struct in_addr v4;
  struct in6_addr v6;
  if (!strcmp(name, "localhost"))
    return true;
  if (inet_pton(AF_INET, name, &v4) == 1)
    return v4_loopback(&v4);
  return inet_pton(AF_INET6, name, &v6) == 1 && v6_loopback(&v6);
}
