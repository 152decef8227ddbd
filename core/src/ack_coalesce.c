/* Coalesced acks (the subscription option coalesce_acks, lease form, one delivery a handler):
 * acks that workers return at about the same time settle in one transaction on one connection,
 * one commit for all, as a batch handler's acks do (settle.c's joined settlement: the acks in
 * one statement per lease token where the dialect has ack_ids, each row's token still checked).
 *
 * A group commit: the first ack to find no flush running leads. It waits up to the window for
 * the others (or until every worker's ack is in), takes what has gathered, settles it and hands
 * each delivery its own result; acks that come meanwhile wait for the next leader, even while
 * the flush holds the leader's ack alone. Every call
 * returns only after its row's commit, with its own result: a lost lease fails only its own
 * delivery. When the joined settlement cannot run (a statement of the service's own, a failure
 * other than a lost lease), each ack settles alone, as without the option. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct tabq_ack_entry {
  tabq_delivery *d;
  tabq_outcome o;
  int rc;
  bool done;  /* settled by a leader: rc is its result */
  bool alone; /* the leader could not join it: settle it alone */
  bool told;  /* settled by its own call as a flush of one: the caller's err has the details */
  tabq_ack_entry *next;
};

int tabq__coalescer_init(tabq_coalescer *c, unsigned cap, unsigned window_us) {
  memset(c, 0, sizeof *c);
  c->cap = cap;
  c->window_us = window_us;
  c->ds = calloc(cap, sizeof *c->ds);
  c->outcomes = calloc(cap, sizeof *c->outcomes);
  c->entries = calloc(cap, sizeof *c->entries);
  if (!c->ds || !c->outcomes || !c->entries || tabq__batch_scratch_init(&c->scratch, cap))
    return TABQ_NOMEM;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &attr);
  pthread_condattr_destroy(&attr);
  c->ready = true;
  return TABQ_OK;
}

void tabq__coalescer_free(tabq_coalescer *c) {
  if (c->ready) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
  }
  free(c->ds);
  free(c->outcomes);
  free(c->entries);
  tabq__batch_scratch_free(&c->scratch);
  memset(c, 0, sizeof *c);
}

/* Integer ids by value, the others after them in any order. */
static bool before(const tabq_delivery *a, const tabq_delivery *b) {
  return a->id.type == TABQ_T_INT && (b->id.type != TABQ_T_INT || a->id.u.i < b->id.u.i);
}

/* The leader, with c->mu held: waits out the window, unless every worker's ack is in (no other
 * can come), then moves what gathered into the flush arrays. */
static unsigned gather(tabq_coalescer *c, unsigned workers) {
  if (c->window_us && c->npending < workers) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)(c->window_us % 1000000) * 1000;
    until.tv_sec += c->window_us / 1000000 + until.tv_nsec / 1000000000;
    until.tv_nsec %= 1000000000;
    while (c->npending < workers && pthread_cond_timedwait(&c->cv, &c->mu, &until) == 0)
      ;
  }
  unsigned n = 0;
  tabq_ack_entry *e = c->pending;
  for (; e && n < c->cap; e = e->next, n++) {
    /* In id order: every flush then locks its rows in one order, as a claim walks them, which
     * spares the database deadlocks between them. */
    unsigned j = n;
    for (; j > 0 && before(e->d, c->ds[j - 1]); j--) {
      c->entries[j] = c->entries[j - 1];
      c->ds[j] = c->ds[j - 1];
      c->outcomes[j] = c->outcomes[j - 1];
    }
    c->entries[j] = e;
    c->ds[j] = e->d;
    c->outcomes[j] = e->o;
  }
  c->pending = e;
  c->npending -= n;
  return n;
}

int tabq__ack_coalesced(tabq_delivery *d, tabq_outcome o, bool *settled, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_coalescer *c = &s->coalescer;
  tabq_ack_entry me = {.d = d, .o = o};
  pthread_mutex_lock(&c->mu);
  me.next = c->pending; /* the order within a flush does not matter */
  c->pending = &me;
  c->npending++;
  pthread_cond_broadcast(&c->cv); /* a leader in its window counts the acks in */
  while (!me.done && !me.alone) {
    if (c->flushing) {
      pthread_cond_wait(&c->cv, &c->mu);
      continue;
    }
    c->flushing = true;
    unsigned n = gather(c, s->workers);
    pthread_mutex_unlock(&c->mu);
    bool joined = n > 1 && tabq__settle_acks_joined(c->ds, n, c->outcomes, &c->scratch);
    /* A flush of one ack (the leader's own) settles it as it would settle alone, but still as
     * the flush: acks that come meanwhile wait and go together in the next one. Settled outside
     * the flush, it would leave none to wait, and nothing would ever gather. */
    bool single = n == 1 && c->entries[0] == &me;
    if (single) {
      tabq_action a;
      me.rc = s->ops->settle(d, o, &a, err);
    }
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < n; i++) {
      if (!single)
        c->entries[i]->rc = joined ? c->scratch.rcs[i] : TABQ_OK;
      c->entries[i]->done = joined || single;
      c->entries[i]->alone = !joined && !single;
      c->entries[i]->told = single;
    }
    if (joined)
      tabq__count(&s->counts, TABQ__N_COALESCED, n);
    c->flushing = false;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  *settled = me.done;
  if (me.done && me.rc && !me.told)
    s->ops->lost(s, "ack", err);
  return me.done ? me.rc : TABQ_OK;
}
