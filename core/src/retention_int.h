/* The retention pruner inside (retention.c): what the broker's shutdown and the metrics call. */
#ifndef TABQ_RETENTION_INT_H
#define TABQ_RETENTION_INT_H

#include <stdbool.h>
#include <stdio.h>
#include <tabq/retention.h>

typedef struct tabq_retainer tabq_retainer;

/* The rules of `o` for table t (TABQ_INVALID naming the table and the rule). With
 * `destinations_later` (an app's retention, whose dead letter destinations its subscriptions
 * give when it runs) a dead letter age needs no destination, and the options may name none. */
int tabq__retention_check(const tabq_table *t, const tabq_retention_options *o,
                          bool destinations_later, tabq_error *err);

/* Stops the broker's pruner, if it runs, and joins its thread (a round in flight ends after its
 * batch). tabq_shutdown calls it before the pool closes. */
void tabq__retention_stop(tabq_broker *b);
/* Stops it and frees what it holds (tabq_close). */
void tabq__retention_free(tabq_broker *b);
/* Its counters as Prometheus families, label values escaped by `label` (metrics.c). */
void tabq__retention_metrics(tabq_broker *b, FILE *f, void (*label)(FILE *, const char *));

#endif
