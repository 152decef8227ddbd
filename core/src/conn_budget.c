/* The connections that deliveries hold (row lock: one per claim; advisory: one per row) and
 * that claims in flight may take, counted across all the broker's subscriptions: together they
 * stay under the pool's size less one (less the listener's), so a handler's publish, a lease
 * settlement or another subscription's claim always finds a connection. Counted per
 * subscription, two row lock subscriptions could hold the whole pool between them, and a
 * handler that publishes would wait for ever. */
#include "engine.h"

/* What deliveries and claims may hold at most. */
static unsigned cap_of(const tabq_broker *b) {
  unsigned kept = 1 + (b->listen_notify ? 1 : 0);
  return b->pool.size > kept ? b->pool.size - kept : 0;
}

unsigned tabq__budget_room(const tabq_broker *b) {
  unsigned cap = cap_of(b), used = atomic_load(&b->conns_used);
  return cap > used ? cap - used : 0;
}

unsigned tabq__budget_take(tabq_broker *b, unsigned want) {
  unsigned cap = cap_of(b), used = atomic_load(&b->conns_used);
  for (;;) {
    unsigned room = cap > used ? cap - used : 0, k = want < room ? want : room;
    if (!k)
      return 0;
    if (atomic_compare_exchange_weak(&b->conns_used, &used, used + k))
      return k;
  }
}

/* Another subscription's workers may be waiting for room: wake them (b->mu before s->mu, the
 * order everything here takes them in). */
static void wake_others(tabq_broker *b, const tabq_subscription *self) {
  pthread_mutex_lock(&b->mu);
  for (tabq_subscription *s = b->subs; s; s = s->next) {
    if (s == self || !s->ops->conns_held(s, 1))
      continue;
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
  pthread_mutex_unlock(&b->mu);
}

void tabq__budget_put(tabq_broker *b, unsigned n) {
  atomic_fetch_sub(&b->conns_used, n);
}

void tabq__budget_give(tabq_broker *b, const tabq_subscription *s, unsigned n) {
  if (!n)
    return;
  atomic_fetch_sub(&b->conns_used, n);
  if (atomic_load(&b->conn_subs) > 1)
    wake_others(b, s);
}

void tabq__sub_unhold(tabq_subscription *s, unsigned n) {
  if (!n)
    return;
  tabq__budget_give(s->b, s, n);
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}
