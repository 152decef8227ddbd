/* tabq_metrics_write: the broker's subscriptions' counters in the Prometheus text exposition
 * format 0.0.4 (docs/metrics.md), names and labels as Prometheus' conventions ask: a unit-less
 * counter ends in _total, labels are table and queue (and outcome where one counter is split
 * by it). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tabq/metrics.h>

#include "engine.h"
#include "error.h"
#include "retention_int.h"

/* A label value, escaped as the format asks: backslash, double quote and newline. */
static void label(FILE *f, const char *v) {
  for (; v && *v; v++) {
    if (*v == '\\' || *v == '"')
      fputc('\\', f);
    if (*v == '\n')
      fputs("\\n", f);
    else
      fputc(*v, f);
  }
}

/* One family: its HELP and TYPE, then one sample a subscription. `pick` reads the value of
 * `outcome`'s sample from a subscription's counters. */
typedef uint64_t (*pick_fn)(const tabq_stats *st);

typedef struct family_sample {
  const char *outcome; /* NULL: the family has no outcome label */
  pick_fn pick;
} family_sample;

typedef struct sub_counters {
  const char *table, *queue;
  tabq_stats st;
  tabq_histogram handler, latency;
} sub_counters;

static void labels(FILE *f, const sub_counters *c) {
  fputs("table=\"", f);
  label(f, c->table);
  fputs("\",queue=\"", f);
  label(f, c->queue);
  fputs("\"", f);
}

static void family(FILE *f, const char *name, const char *help, const sub_counters *subs, size_t n,
                   const family_sample *samples, size_t nsamples) {
  fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < nsamples; k++) {
      fprintf(f, "%s{", name);
      labels(f, &subs[i]);
      if (samples[k].outcome)
        fprintf(f, ",outcome=\"%s\"", samples[k].outcome);
      fprintf(f, "} %llu\n", (unsigned long long)samples[k].pick(&subs[i].st));
    }
}

#define PICK(member)                                                                               \
  static uint64_t pick_##member(const tabq_stats *st) {                                            \
    return st->member;                                                                             \
  }
PICK(claimed)
PICK(dropped)
PICK(delayed)
PICK(claim_round_trips)
PICK(dead_lettered)
PICK(released)
PICK(decode_failed)
PICK(deadline_expired)
PICK(deferred)
PICK(claimed_ahead)
PICK(lease_lost)
PICK(failed)
PICK(extensions)
PICK(claims)
PICK(coalesced)
PICK(shutdown_released)
PICK(shutdown_closed)

/* acked and retried hold the drops and the delayed retries too (tabq_stats): apart here. */
static uint64_t pick_ack(const tabq_stats *st) {
  return st->acked - st->dropped;
}
static uint64_t pick_retry(const tabq_stats *st) {
  return st->retried - st->delayed;
}

/* A histogram family: its cumulative buckets by `le`, then _sum and _count; `which` is the
 * offset of the histogram in sub_counters. */
static void histogram(FILE *f, const char *name, const char *help, const sub_counters *subs,
                      size_t n, size_t which) {
  fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  for (size_t i = 0; i < n; i++) {
    const tabq_histogram *h = (const tabq_histogram *)((const char *)&subs[i] + which);
    for (unsigned k = 0; k < h->nbuckets; k++) {
      fprintf(f, "%s_bucket{", name);
      labels(f, &subs[i]);
      if (k + 1 < h->nbuckets)
        fprintf(f, ",le=\"%g\"} %llu\n", h->le[k], (unsigned long long)h->cumulative[k]);
      else
        fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)h->cumulative[k]);
    }
    fprintf(f, "%s_sum{", name);
    labels(f, &subs[i]);
    fprintf(f, "} %.6f\n%s_count{", h->sum_seconds, name);
    labels(f, &subs[i]);
    fprintf(f, "} %llu\n", (unsigned long long)h->count);
  }
}

/* A broker-wide sample, without labels. */
static void one_sample(FILE *f, const char *type, const char *name, const char *help, uint64_t v) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
          (unsigned long long)v);
}
static void gauge(FILE *f, const char *name, const char *help, uint64_t v) {
  one_sample(f, "gauge", name, help, v);
}
static void counter(FILE *f, const char *name, const char *help, uint64_t v) {
  one_sample(f, "counter", name, help, v);
}

static void write_all(FILE *f, tabq_broker *b, const sub_counters *subs, size_t n) {
  fprintf(f, "# HELP tabq_info The tabq library serving these figures.\n# TYPE tabq_info gauge\n");
  fprintf(f, "tabq_info{version=\"%s\",dialect=\"", tabq_version_string());
  label(f, tabq_dialect_name(b));
  fputs("\"} 1\n", f);
  family(f, "tabq_claimed_total", "Deliveries claimed and handed to a handler.", subs, n,
         (family_sample[]){{NULL, pick_claimed}}, 1);
  family(f, "tabq_deliveries_total",
         "Deliveries settled, by outcome: ack, drop, retry, retry_after (a retry after a delay), "
         "dead_letter, released (given back unsettled, as at shutdown).",
         subs, n,
         (family_sample[]){{"ack", pick_ack},
                           {"drop", pick_dropped},
                           {"retry", pick_retry},
                           {"retry_after", pick_delayed},
                           {"dead_letter", pick_dead_lettered},
                           {"released", pick_released}},
         6);
  family(f, "tabq_decode_failures_total",
         "Rows the decode policy settled before a handler saw them (their settlement is counted "
         "in tabq_deliveries_total too).",
         subs, n, (family_sample[]){{NULL, pick_decode_failed}}, 1);
  family(f, "tabq_deadline_expired_total",
         "Deliveries whose handler outlived its deadline, settled by the core by the "
         "subscription's on_deadline (their settlement is counted in tabq_deliveries_total too).",
         subs, n, (family_sample[]){{NULL, pick_deadline_expired}}, 1);
  family(f, "tabq_deferred_total",
         "Deliveries that stepped aside because every slot of their concurrency key was held; "
         "their rows are due again a poll interval on (not counted in tabq_deliveries_total).",
         subs, n, (family_sample[]){{NULL, pick_deferred}}, 1);
  family(f, "tabq_claimed_ahead_total",
         "Rows a claim took ahead of the idle workers, to wait their turn in the process "
         "(prefetch or the adaptive look-ahead).",
         subs, n, (family_sample[]){{NULL, pick_claimed_ahead}}, 1);
  family(f, "tabq_lease_lost_total",
         "Settlements and extensions refused because the lease was no longer held.", subs, n,
         (family_sample[]){{NULL, pick_lease_lost}}, 1);
  family(f, "tabq_settlement_failures_total", "Settlements whose statement failed.", subs, n,
         (family_sample[]){{NULL, pick_failed}}, 1);
  family(f, "tabq_lease_extensions_total", "Leases moved forward while a handler ran.", subs, n,
         (family_sample[]){{NULL, pick_extensions}}, 1);
  family(f, "tabq_claims_total", "Claims run (each takes up to its limit of rows).", subs, n,
         (family_sample[]){{NULL, pick_claims}}, 1);
  family(f, "tabq_claim_round_trips_total",
         "Statements the claims sent to the database (begin, claim, stamps, fetch, commit).", subs,
         n, (family_sample[]){{NULL, pick_claim_round_trips}}, 1);
  family(f, "tabq_coalesced_acks_total", "Acks settled in one transaction with another delivery's.",
         subs, n, (family_sample[]){{NULL, pick_coalesced}}, 1);
  family(f, "tabq_shutdown_releases_total",
         "Advisory locks of deliveries in work at shutdown: released, or their connection "
         "closed.",
         subs, n,
         (family_sample[]){{"released", pick_shutdown_released}, {"closed", pick_shutdown_closed}},
         2);
  histogram(f, "tabq_handler_duration_seconds",
            "How long handlers of one delivery ran, from their call to their return.", subs, n,
            offsetof(sub_counters, handler));
  histogram(f, "tabq_queue_latency_seconds",
            "How long rows waited, from their due time (retry_after) to their handler's call.",
            subs, n, offsetof(sub_counters, latency));
  tabq__retention_metrics(b, f, label);
  tabq_pool_stats pool;
  tabq_broker_pool_stats(b, &pool, sizeof pool);
  gauge(f, "tabq_pool_connections", "The connection pool's size.", pool.connections);
  gauge(f, "tabq_pool_connections_in_use", "Pooled connections taken now.", pool.in_use);
  gauge(f, "tabq_pool_connections_held_by_deliveries",
        "Of the connections taken, those deliveries in work hold (row lock, advisory).",
        pool.held_by_deliveries);
  counter(f, "tabq_pool_connects_total", "Connections opened, replacements included.",
          pool.connects);
  counter(f, "tabq_pool_waits_total", "Takes of a connection that found none free and waited.",
          pool.waits);
  counter(f, "tabq_pool_timeouts_total", "Of those waits, the ones that gave up.", pool.timeouts);
}

int tabq_metrics_write(tabq_broker *b, char **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_metrics_write needs a broker and a place for the text");
  *out = NULL;
  /* The counters are copied under the broker's lock (the list may grow), written after it. */
  pthread_mutex_lock(&b->mu);
  size_t n = 0;
  for (tabq_subscription *s = b->subs; s; s = s->next)
    n++;
  sub_counters *subs = calloc(n ? n : 1, sizeof *subs);
  size_t i = 0;
  for (tabq_subscription *s = b->subs; subs && s; s = s->next, i++) {
    subs[i].table = s->t->name;
    subs[i].queue = s->queue ? s->queue : "";
    tabq_subscription_stats(s, &subs[i].st, sizeof subs[i].st);
    tabq_subscription_handler_durations(s, &subs[i].handler, sizeof subs[i].handler);
    tabq_subscription_queue_latencies(s, &subs[i].latency, sizeof subs[i].latency);
  }
  pthread_mutex_unlock(&b->mu);
  char *text = NULL;
  size_t len = 0;
  FILE *f = subs ? open_memstream(&text, &len) : NULL;
  if (!f) {
    free(subs);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot hold the metrics' text");
  }
  /* The list holds the newest subscription first: written oldest first. */
  for (size_t lo = 0, hi = n ? n - 1 : 0; lo < hi; lo++, hi--) {
    sub_counters t = subs[lo];
    subs[lo] = subs[hi];
    subs[hi] = t;
  }
  write_all(f, b, subs, n);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    free(text);
    free(subs);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot hold the metrics' text");
  }
  free(subs);
  *out = text;
  return TABQ_OK;
}
