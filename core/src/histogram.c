/* Fixed-bucket duration histograms (histogram.h). */
#include "histogram.h"

#include <string.h>
#include <time.h>

/* Upper bounds in seconds, Prometheus' default buckets widened to a minute: a handler of a
 * queue may run long. The last bucket is +Inf. */
static const double bounds[TABQ_HISTOGRAM_BUCKETS - 1] = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

void tabq__hist_add(tabq_hist_cells *c, int64_t us) {
  if (us < 0)
    us = 0;
  double s = (double)us / 1e6;
  unsigned i = 0;
  while (i < TABQ_HISTOGRAM_BUCKETS - 1 && s > bounds[i])
    i++;
  atomic_fetch_add_explicit(&c->bucket[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->sum_us, (uint64_t)us, memory_order_relaxed);
}

void tabq__hist_clear(tabq_histogram *out) {
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->nbuckets = TABQ_HISTOGRAM_BUCKETS;
  for (unsigned i = 0; i < TABQ_HISTOGRAM_BUCKETS - 1; i++)
    out->le[i] = bounds[i];
  out->le[TABQ_HISTOGRAM_BUCKETS - 1] = 1.0 / 0.0;
}

void tabq__hist_sum_into(const tabq_hist_cells *c, tabq_histogram *out) {
  uint64_t below = 0;
  for (unsigned i = 0; i < TABQ_HISTOGRAM_BUCKETS; i++) {
    below += atomic_load_explicit(&c->bucket[i], memory_order_relaxed);
    out->cumulative[i] += below;
  }
  out->count += below;
  out->sum_seconds += (double)atomic_load_explicit(&c->sum_us, memory_order_relaxed) / 1e6;
}

int64_t tabq__mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
