/* The queue latency (docs/metrics.md): from a row's due time, its retry_after, to the call of its
 * handler. The due time comes with the claim, as the last column of the projection, where the
 * plugin can give it (ABI 1.8, TABQ_PROJECTS_DUE) and no statement of the service's own reads the
 * rows in its place; one sample a row handed to a handler, in its slot's cells, summed on read. */
#include <string.h>

#include "clock.h"
#include "engine.h"

void tabq__due_open(tabq_subscription *s) {
  const tabq_plugin *p = s->b->plugin.plugin;
  const tabq_table *t = s->t;
  /* A fetch of the service's own returns the documented projection, without the due time. */
  bool due = t->retry_after.name && !t->events.fetch && p && TABQ_ABI_MINOR_OF(p->abi) >= 8 &&
             (s->ops->flags(p) & TABQ_PROJECTS_DUE);
  tabq__projection_init(&s->proj, t, due);
}

void tabq__queue_latency_add(tabq_delivery *d) {
  int at = d->sub->proj.due;
  int64_t due;
  if (at < 0 || !tabq__cell_time(&d->cells[at], &due))
    return; /* not asked for, or a row without a due time */
  /* retry_after is written from the host's clock (publish, retry after a delay): read the same
   * one. A row taken a little before its due time (clock skew) counts as 0. */
  tabq__hist_add(&d->queue_latency, tabq__now_us() - due);
}

void tabq__slots_histogram(const tabq_subscription *s, size_t cells_at, tabq_histogram *caller,
                           size_t size) {
  tabq_histogram all;
  tabq__hist_clear(&all);
  for (unsigned i = 0; i < s->nslots; i++)
    tabq__hist_sum_into((const tabq_hist_cells *)((const char *)&s->slots[i] + cells_at), &all);
  size = size < sizeof all ? size : sizeof all;
  all.size = (uint32_t)size;
  memcpy(caller, &all, size);
}

void tabq_subscription_queue_latencies(const tabq_subscription *s, tabq_histogram *caller,
                                       size_t size) {
  tabq__slots_histogram(s, offsetof(tabq_delivery, queue_latency), caller, size);
}
