/* The look-ahead of a lease subscription whose handler takes one delivery (docs/prefetch.md):
 * how many rows a claim takes beyond one per idle worker, to wait their turn in the process.
 * `prefetch` fixes it; otherwise, by default, it adapts: as many rows as the workers start
 * within a bound (lookahead_wait_ms, by default a tenth of the lease, at most 250 ms), given how
 * long a worker takes a delivery lately. The estimate rises at once with a slow delivery and falls
 * by an eighth of the gap with each faster one, so slow handlers stop the look-ahead at once and a
 * burst of fast ones brings it back within a few dozen rows. A row that waits keeps its lease (the
 * extender moves it with the running rows') and goes back unsettled at shutdown. */
#include "lookahead.h"

/* The cap: 8 rows a worker, at least 32 (one claim's commit spread over many rows pays even for
 * one worker) and at most 64. */
#define MOST_PER_WORKER 8
#define FEWEST_MOST 32
#define MOST 64
#define LONGEST_WAIT_US 250000

/* The rows a claim may take ahead at most, with the adaptive look-ahead: 0 where it does not
 * serve (a fixed prefetch, turned off, or a mount whose waiting rows would hold more than a
 * lease: see the refusals of prefetch in mount.c). */
static unsigned adaptive_max(const tabq_table *t, const tabq_subscription_options *o,
                             unsigned workers) {
  if (o->lookahead != TABQ_LOOKAHEAD_ADAPTIVE || o->prefetch || o->batch_handler ||
      o->transactional || o->workers_by_key || t->fifo || tabq_table_form(t) != TABQ_FORM_LEASE)
    return 0;
  unsigned most = workers * MOST_PER_WORKER;
  return most < FEWEST_MOST ? FEWEST_MOST : most < MOST ? most : MOST;
}

void tabq__lookahead_open(tabq_subscription *s) {
  s->ahead_max = adaptive_max(s->t, &s->o, s->workers);
  int64_t tenth = (int64_t)s->lease_s * 100000;
  s->ahead_wait_us = s->o.lookahead_wait_ms    ? (int64_t)s->o.lookahead_wait_ms * 1000
                     : tenth < LONGEST_WAIT_US ? tenth
                                               : LONGEST_WAIT_US;
  s->took_us = 0; /* nothing learnt yet: no row ahead until a delivery is done */
  s->nslots += s->o.prefetch ? s->o.prefetch : s->ahead_max;
}

unsigned tabq__lookahead(const tabq_subscription *s) {
  if (s->o.prefetch)
    return s->o.prefetch;
  if (!s->ahead_max || s->took_us <= 0)
    return 0;
  int64_t n = (int64_t)s->workers * s->ahead_wait_us / s->took_us;
  return n < s->ahead_max ? (unsigned)n : s->ahead_max;
}

void tabq__lookahead_took(tabq_subscription *s, int64_t us) {
  if (us < 1)
    us = 1;
  if (us >= s->took_us)
    s->took_us = us;
  else
    s->took_us -= (s->took_us - us) / 8;
}
