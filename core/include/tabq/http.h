/* tabq — an HTTP listener of tabq's own, shared by the metrics endpoint (tabq/metrics.h,
 * tabq_metrics_listen) and the dashboard (tabq/web.h, tabq_web_listen): where it listens, who
 * may ask, and how it is stopped (docs/metrics.md, docs/dashboard.md).
 *
 *   tabq_http_listener *l;
 *   if (tabq_metrics_listen(b, "127.0.0.1:9464", NULL, &l, &err) == TABQ_OK) {
 *     ...                      // GET http://127.0.0.1:9464/metrics
 *     tabq_http_stop(l);       // before tabq_close(b)
 *   }
 *
 * An address is "HOST:PORT" with HOST an IPv4 address, "[IPv6]" or "localhost" (":PORT" alone
 * is 127.0.0.1); PORT 0 takes a free port, which tabq_http_port() tells. A listener answers on
 * a loopback address unless the options say otherwise, and there, only requests whose Host
 * header names a loopback host (so a web page of another site cannot reach it through a name
 * that resolves to 127.0.0.1). */
#ifndef TABQ_HTTP_H
#define TABQ_HTTP_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tabq_listen_options {
  uint32_t size; /* sizeof(tabq_listen_options): TABQ_LISTEN_OPTIONS_INIT sets it */
  /* Listen on an address that is not loopback (a LAN address, 0.0.0.0, [::]). Refused unless
   * a bearer token or basic auth credentials are set too: the counters and the dashboard say
   * what the service does, and the dashboard moves rows. Plain HTTP: put TLS in front. */
  bool allow_remote;
  /* When set, every request must carry "Authorization: Bearer TOKEN" (scripts, Prometheus'
   * `authorization` setting). */
  const char *bearer_token;
  /* When both are set, every request may carry HTTP basic auth with them instead (a browser
   * asks for them). */
  const char *basic_user;
  const char *basic_password;
} tabq_listen_options;

#define TABQ_LISTEN_OPTIONS_INIT TABQ_SIZED_INIT(tabq_listen_options)
/* The first layout: a smaller `size` is refused. */
#define TABQ_LISTEN_OPTIONS_SIZE_1_0                                                               \
  (offsetof(tabq_listen_options, basic_password) + sizeof(char *))

typedef struct tabq_http_listener tabq_http_listener;

/* The port the listener is bound to (the one picked when the address asked for port 0). */
TABQ_API int tabq_http_port(const tabq_http_listener *l);

/* Stops listening, waits for the requests being answered, and frees the listener. Call it
 * before tabq_close() of the broker it reads: a request needs the broker until it is answered.
 * Between tabq_shutdown() (or the end of tabq_run()) and this call, requests are answered 503.
 * NULL is ignored. */
TABQ_API void tabq_http_stop(tabq_http_listener *l);

#ifdef __cplusplus
}
#endif

#endif
