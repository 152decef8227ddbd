/* tabq — a broker's counters in the Prometheus text exposition format (docs/metrics.md), for a
 * service to serve on its own /metrics or write where its collector reads.
 *
 *   char *text;
 *   if (tabq_metrics_write(b, &text, &err) == TABQ_OK) {
 *     fputs(text, stdout);   // tabq_deliveries_total{table="jobs",queue="emails",outcome="ack"} 12
 *     free(text);
 *   }
 *
 * Included by nothing else: a service that exports metrics includes it. */
#ifndef TABQ_METRICS_H
#define TABQ_METRICS_H

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

#ifdef __cplusplus
}
#endif

#endif
