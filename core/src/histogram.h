/* Fixed-bucket histograms of durations (docs/metrics.md), one per delivery slot so a worker
 * adds to cells no other thread writes: a relaxed atomic add on the hot path, no lock, no
 * allocation; a read sums the slots. */
#ifndef TABQ_HISTOGRAM_H
#define TABQ_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#include <tabq/tabq.h>

typedef struct tabq_hist_cells {
  atomic_uint_least64_t bucket[TABQ_HISTOGRAM_BUCKETS]; /* not cumulative: one bucket a sample */
  atomic_uint_least64_t sum_us;
} tabq_hist_cells;

/* Adds one duration, in microseconds. */
void tabq__hist_add(tabq_hist_cells *c, int64_t us);
/* Adds `c`'s samples into `out` (cumulative buckets, as tabq_histogram holds them). */
void tabq__hist_sum_into(const tabq_hist_cells *c, tabq_histogram *out);
/* `out` emptied, its bounds set. */
void tabq__hist_clear(tabq_histogram *out);
/* A monotonic clock in microseconds, for durations. */
int64_t tabq__mono_us(void);

#endif
