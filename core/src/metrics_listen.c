/* tabq_metrics_listen: tabq_metrics_write's text served at GET /metrics on an HTTP listener of
 * tabq's (http_listen.c), for a service with no HTTP server of its own. */
#include <stdlib.h>
#include <string.h>

#include <tabq/metrics.h>

#include "http_listen.h"

/* The exposition format's own content type, as Prometheus asks for it. */
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void serve(void *site, const tabq_http_request *r, tabq_http_reply *out) {
  tabq_broker *b = site;
  if (strcmp(r->path, "/metrics")) {
    tabq__http_error(out, 404, "not found: the metrics are at /metrics");
    return;
  }
  if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
    out->allow = "GET, HEAD";
    tabq__http_error(out, 405, "/metrics answers GET");
    return;
  }
  char *text;
  tabq_error err;
  if (tabq_metrics_write(b, &text, &err)) {
    tabq__http_error(out, 500, err.message);
    return;
  }
  tabq__http_take(out, 200, METRICS_TYPE, text, strlen(text));
}

int tabq_metrics_listen(tabq_broker *b, const char *address, const tabq_listen_options *options,
                        tabq_http_listener **out, tabq_error *err) {
  return tabq__http_listen(b, address, options, "metrics", serve, b, NULL, out, err);
}
