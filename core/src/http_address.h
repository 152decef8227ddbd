/* Where an HTTP listener of tabq's listens (tabq/http.h): the address parsed, whether it is
 * loopback, the socket bound; and whether a request's Host header names a loopback host. */
#ifndef TABQ_HTTP_ADDRESS_H
#define TABQ_HTTP_ADDRESS_H

#include <stdbool.h>
#include <sys/socket.h>

#include <tabq/tabq.h>

typedef struct tabq_http_addr {
  struct sockaddr_storage sa;
  socklen_t len;
  bool loopback;
} tabq_http_addr;

/* "HOST:PORT", "[IPv6]:PORT", "localhost:PORT" or ":PORT" (127.0.0.1). TABQ_INVALID naming the
 * address and what is wrong with it. */
int tabq__http_addr_parse(const char *text, tabq_http_addr *out, tabq_error *err);

/* A listening socket bound to `a` (`text` names it in errors): *fd, and the port it got. TABQ_IO
 * naming the address when it is in use or cannot be bound. */
int tabq__http_bind(const tabq_http_addr *a, const char *text, int *fd, int *port, tabq_error *err);

/* Whether the Host header `host` ("localhost:9464", "127.0.0.1", "[::1]:80") names a loopback
 * host. */
bool tabq__http_host_loopback(const char *host);

#endif
