/* A subscription's counters, summed on read (counters.h). */
#include "counters.h"

__thread tabq_count_cells *tabq__claim_trips;

void tabq__count_sum_into(const tabq_count_cells *c, uint64_t sums[TABQ__N_COUNT]) {
  for (unsigned i = 0; i < TABQ__N_COUNT; i++)
    sums[i] += atomic_load_explicit(&c->n[i], memory_order_relaxed);
}

void tabq__count_to_stats(const uint64_t n[TABQ__N_COUNT], tabq_stats *out) {
  *out = (tabq_stats){
      .claimed = n[TABQ__N_CLAIMED],
      .acked = n[TABQ__N_ACKED] + n[TABQ__N_DROPPED],
      .retried = n[TABQ__N_RETRIED] + n[TABQ__N_DELAYED],
      .dead_lettered = n[TABQ__N_DEAD_LETTERED],
      .released = n[TABQ__N_RELEASED],
      .lease_lost = n[TABQ__N_LEASE_LOST],
      .failed = n[TABQ__N_FAILED],
      .extensions = n[TABQ__N_EXTENSIONS],
      .claims = n[TABQ__N_CLAIMS],
      .shutdown_released = n[TABQ__N_SHUTDOWN_RELEASED],
      .shutdown_closed = n[TABQ__N_SHUTDOWN_CLOSED],
      .coalesced = n[TABQ__N_COALESCED],
      .decode_failed = n[TABQ__N_DECODE_FAILED],
      .dropped = n[TABQ__N_DROPPED],
      .delayed = n[TABQ__N_DELAYED],
      .claim_round_trips = n[TABQ__N_CLAIM_ROUND_TRIPS],
      .cancelled = n[TABQ__N_CANCELLED],
      .deadline_expired = n[TABQ__N_DEADLINE_EXPIRED],
      .deferred = n[TABQ__N_DEFERRED],
      .claimed_ahead = n[TABQ__N_CLAIMED_AHEAD],
  };
}
