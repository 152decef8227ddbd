/* tabq — a broker's counters in the Prometheus text exposition format (docs/metrics.md), for a
 * service to serve on its own /metrics or write where its collector reads.
 *
 *   char *text;
 *   if (tabq_metrics_write(b, &text, &err) == TABQ_OK) {
 *     fputs(text, stdout);   // tabq_deliveries_total{table="jobs",queue="emails",outcome="ack"} 12
 *     free(text);
 *   }
 *
 * Or served by tabq itself, on an HTTP listener of its own (tabq/http.h):
 *
 *   tabq_http_listener *l;
 *   tabq_metrics_listen(b, "127.0.0.1:9464", NULL, &l, &err);   // GET /metrics
 *   ...
 *   tabq_http_stop(l);   // before tabq_close(b)
 *
 * Included by nothing else: a service that exports metrics includes it. */
#ifndef TABQ_METRICS_H
#define TABQ_METRICS_H

#include <tabq/http.h>
#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The counters of every subscription the broker has opened (tabq_subscription_stats), labelled
 * by table and queue, and the broker's own gauges, as Prometheus text format 0.0.4 in *out
 * (free() it). Reads counters only: no statement runs and no lock a delivery takes is held. A
 * counter only grows while the broker lives. TABQ_INVALID without a broker or `out`,
 * TABQ_NOMEM. */
TABQ_API int tabq_metrics_write(tabq_broker *b, char **out, tabq_error *err);

/* Serves tabq_metrics_write's text on `address` ("127.0.0.1:9464", "[::1]:9464", ":0" for a
 * free loopback port: tabq_http_port) at GET /metrics, as Content-Type "text/plain;
 * version=0.0.4; charset=utf-8", until tabq_http_stop(*out), which comes before tabq_close(b).
 * `options` may be NULL (loopback only, no credentials). Once the broker shuts down a scrape
 * gets 503 with a one-line reason. TABQ_INVALID: an address that does not parse, or is not
 * loopback without allow_remote and credentials (the message names the address and the
 * option); TABQ_IO: the address is in use, or cannot be bound. */
TABQ_API int tabq_metrics_listen(tabq_broker *b, const char *address,
                                 const tabq_listen_options *options, tabq_http_listener **out,
                                 tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
