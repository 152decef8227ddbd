/* A subscription's counters (tabq_stats, docs/metrics.md), kept in cells per delivery slot so a
 * worker adds to cells no other worker writes on the hot path: a relaxed atomic add, no lock, no
 * allocation, no cache line shared between workers; a read sums the slots' cells and the
 * subscription's own (the rare counts that belong to no slot). */
#ifndef TABQ_COUNTERS_H
#define TABQ_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

#include <tabq/tabq.h>

typedef enum tabq_count {
  TABQ__N_CLAIMED,
  TABQ__N_ACKED,
  TABQ__N_DROPPED,
  TABQ__N_RETRIED,
  TABQ__N_DELAYED,
  TABQ__N_DEAD_LETTERED,
  TABQ__N_RELEASED,
  TABQ__N_LEASE_LOST,
  TABQ__N_FAILED,
  TABQ__N_EXTENSIONS,
  TABQ__N_CLAIMS,
  TABQ__N_CLAIM_ROUND_TRIPS,
  TABQ__N_SHUTDOWN_RELEASED,
  TABQ__N_SHUTDOWN_CLOSED,
  TABQ__N_COALESCED,
  TABQ__N_DECODE_FAILED,
  TABQ__N_CANCELLED, /* drops a cancel made of a delivery's settlement (cancel.c) */
  TABQ__N_DEADLINE_EXPIRED,
  TABQ__N_DEFERRED,      /* steps aside of a concurrency limit (concurrency_slot.c) */
  TABQ__N_CLAIMED_AHEAD, /* rows claimed to wait for a worker (worker.c, lookahead.c) */
  TABQ__N_COUNT
} tabq_count;

typedef struct tabq_count_cells {
  atomic_uint_least64_t n[TABQ__N_COUNT];
} tabq_count_cells;

static inline void tabq__count(tabq_count_cells *c, tabq_count which, uint64_t n) {
  atomic_fetch_add_explicit(&c->n[which], n, memory_order_relaxed);
}

/* Adds `c`'s counts into `sums`. */
void tabq__count_sum_into(const tabq_count_cells *c, uint64_t sums[TABQ__N_COUNT]);
/* The counts as the public struct holds them (ack and drop in `acked`, `dropped` of them too). */
void tabq__count_to_stats(const uint64_t sums[TABQ__N_COUNT], tabq_stats *out);

/* The cells the statements a thread runs are counted in as a claim's round trips, while it
 * claims (NULL otherwise): set by the claimer around its claim, read where a statement is sent. */
extern __thread tabq_count_cells *tabq__claim_trips __attribute__((tls_model("initial-exec")));

/* One statement sent to the server: counted when the thread is claiming. */
static inline void tabq__round_trip(void) {
  tabq_count_cells *c = tabq__claim_trips;
  if (c)
    tabq__count(c, TABQ__N_CLAIM_ROUND_TRIPS, 1);
}

#endif
