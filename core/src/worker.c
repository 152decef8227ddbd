/* A subscription's workers. There is no separate claimer thread. Where claims must run one at
 * a time (s->serial), an idle worker takes the claimer's role when no claim runs, claims for
 * every idle worker, and hands the rest to the others (with workers_by_key, each row to its
 * key's worker: key_dispatch.c); elsewhere each idle worker claims for itself, several claims
 * in flight (as many as the claim window allows: one after a claim came back short, so that a
 * wake-up on an empty queue costs one claim a process, doubling with each full claim). With one
 * worker no row changes thread between claim and handler. Workers wait on a condition variable; a
 * short claim waits the poll interval, ended early by a wake-up. Forms whose deliveries hold a
 * connection never hold more than the pool's size less one, over all the broker's subscriptions
 * (conn_budget.c), so handlers and publishes always find one. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "concurrency_int.h"
#include "controls_int.h"
#include "deadline.h"
#include "engine.h"
#include "error.h"
#include "lookahead.h"

typedef struct worker {
  tabq_subscription *s;
  unsigned index;          /* workers_by_key: the queue this worker pops */
  tabq_delivery **claimed; /* this worker's claim, s->batch or s->nslots long */
  int64_t *ids;            /* as long: its rows' ids for stamp_ids, where there is one */
  tabq_batch_run batch;    /* a batch handler's call (batch.c) */
} worker;

static tabq_delivery *pop_ready(tabq_subscription *s) {
  tabq_delivery *d = s->ready[s->ready_head];
  s->ready_head = (s->ready_head + 1) % s->nslots;
  s->ready_count--;
  return d;
}

/* A claimed row for the other workers: onto its key's worker with workers_by_key, else (and
 * for a row without a key) onto the shared ring. */
static void push_ready(tabq_subscription *s, tabq_delivery *d) {
  if (s->bykey && tabq__bykey_push(s, d))
    return;
  s->ready[(s->ready_head + s->ready_count) % s->nslots] = d;
  s->ready_count++;
}

/* The next row waiting for worker w: its key queue's first, else the shared ring's. */
static tabq_delivery *next_ready(worker *w) {
  tabq_subscription *s = w->s;
  tabq_delivery *d = s->bykey ? tabq__bykey_pop(s, w->index) : NULL;
  return d ? d : s->ready_count ? pop_ready(s) : NULL;
}

/* How many rows this claim may take: one batch; or with workers_by_key, every free slot (rows
 * of a busy worker's keys wait in its queue, the slots bound them); or, serial, one per idle
 * worker and `prefetch` more, less the rows already waiting; or one for this worker. */
static unsigned claim_limit(const tabq_subscription *s) {
  unsigned want;
  if (s->o.batch_handler)
    want = s->batch;
  else if (s->bykey)
    want = s->nfree;
  else if (s->serial) {
    /* with a look-ahead, rows waiting their turn too (lookahead.c) */
    unsigned idle = s->workers - s->busy, ahead = idle + tabq__lookahead(s);
    want = ahead > s->ready_count ? ahead - s->ready_count : 0;
  } else
    want = 1;
  if (want > s->nfree)
    want = s->nfree;
  want = s->ops->claim_limit(s, want);
  /* No more rows than the connections their deliveries would hold leave room for. */
  if (s->ops->conns_held(s, want)) {
    unsigned room = tabq__budget_room(s->b);
    while (want && s->ops->conns_held(s, want) > room)
      want--;
  }
  return want;
}

/* A row that will not reach a handler in a transaction of its own (it did not decode, or the
 * transaction did not open): what the claim reserved for that transaction goes back. */
static void skip_tx(tabq_subscription *s, tabq_delivery *d) {
  if (s->o.transactional && s->ops->tx_skip)
    s->ops->tx_skip(d);
}

static void handle_one(tabq_subscription *s, tabq_delivery *d) {
  tabq_error err;
  tabq_outcome policy;
  if (!tabq__decode_gate(d, &policy)) {
    skip_tx(s, d);
    tabq__settle_returned(d, policy);
  } else if (s->conc_limit && !tabq__conc_take(d)) {
    /* Every slot of the row's key held (tabq/concurrency.h): the row steps aside, due again a
     * poll interval on, its attempt as it was. */
    skip_tx(s, d);
    d->stepping_aside = true;
    tabq__settle_returned(d, tabq_outcome_of(TABQ_OUTCOME_NONE, s->poll_ms));
    d->stepping_aside = false;
  } else if (s->o.transactional && s->ops->tx_open(d, &err)) {
    /* No transaction for the handler: the row goes back (its attempt counted) for a later try. */
    tabq__logf(&s->b->log, TABQ_LOG_ERROR,
               "table %s: the delivery's transaction did not open (%s): %s; the row is released",
               s->t->name, tabq_code_name(err.code), err.message);
    skip_tx(s, d);
    tabq__settle_returned(d, tabq_no_outcome());
  } else {
    tabq__hooks_start(d);
    tabq__queue_latency_add(d);
    tabq__deadline_arm(d); /* nothing without deadlines */
    int64_t began = tabq__mono_us();
    tabq_outcome outcome = s->o.handler(d, s->o.user);
    d->handler_us = tabq__mono_us() - began;
    tabq__deadline_disarm(d); /* past it, the watchdog settled the row: the outcome is refused */
    tabq__hist_add(&d->handler_time, d->handler_us);
    tabq__settle_returned(d, outcome);
    tabq__hooks_end(d);
  }
  if (d->slot_held) /* once the handler returned, whatever settled the row */
    tabq__conc_give_back(d);
  tabq__delivery_done(d);
}

/* Runs one claim as the claimer, handles what it took where its worker does (else hands it to
 * the ready ring), and returns the claim's result with *claimed its rows (err: why it failed);
 * called and returning with s->mu held. */
static int claim_round(worker *w, unsigned limit, unsigned *claimed, tabq_error *err) {
  tabq_subscription *s = w->s;
  unsigned want = s->ops->conns_held(s, limit);
  unsigned reserved = want ? tabq__budget_take(s->b, want) : 0;
  *claimed = 0;
  if (reserved < want) { /* another subscription took the room meanwhile: fewer rows */
    while (limit && s->ops->conns_held(s, limit) > reserved)
      limit--;
    unsigned kept = s->ops->conns_held(s, limit);
    tabq__budget_put(s->b, reserved - kept); /* s->mu held: no wake-ups from here */
    reserved = kept;
    if (!limit)
      return TABQ_OK;
  }
  uint64_t wakes = s->wakes;
  /* Serial, the rows past the idle workers' share wait their turn: counted as claimed ahead. */
  unsigned idle = s->workers - s->busy;
  unsigned for_idle = idle > s->ready_count ? idle - s->ready_count : 0;
  s->claiming++;
  for (unsigned i = 0; i < limit; i++)
    w->claimed[i] = s->free_slots[--s->nfree];
  pthread_mutex_unlock(&s->mu);

  unsigned got = 0;
  tabq_count_cells *counts = &w->claimed[0]->counts;
  tabq__claim_trips = counts; /* the statements of this claim count as its round trips */
  int rc = s->claim(s, w->claimed, w->ids, limit, &got, err);
  tabq__claim_trips = NULL;
  tabq__count(counts, TABQ__N_CLAIMS, 1);
  *claimed = got;
  unsigned held = s->ops->conns_held(s, got);
  tabq__budget_give(s->b, s, reserved - held); /* the deliveries keep what they hold */

  pthread_mutex_lock(&s->mu);
  s->claiming--;
  for (unsigned i = got; i < limit; i++)
    s->free_slots[s->nfree++] = w->claimed[i];
  /* A full claim may have left rows behind: claim again as soon as a worker is free. A short
   * one waits the poll interval, unless a wake-up came while it ran. */
  if (rc) {
    int64_t retry_ms = tabq__claim_failed(s, err);
    if (s->wakes == wakes)
      s->next_claim_ms = retry_ms;
  } else {
    tabq__claim_succeeded(s);
    if (got < limit)
      s->claim_window = 1;
    else if (s->claim_window)
      s->claim_window = s->claim_window >= s->workers / 2 ? 0 : s->claim_window * 2;
    if (got == limit)
      s->next_claim_ms = 0;
    else if (s->wakes == wakes)
      s->next_claim_ms = tabq__mono_ms() + s->poll_ms;
  }
  if (s->o.batch_handler) {
    if (got) {
      s->busy++;
      pthread_cond_broadcast(&s->cv); /* another worker may claim meanwhile */
      pthread_mutex_unlock(&s->mu);
      tabq__batch_handle(&w->batch, w->claimed, got);
      pthread_mutex_lock(&s->mu);
      s->busy--;
      for (unsigned i = 0; i < got; i++)
        s->free_slots[s->nfree++] = w->claimed[i];
    }
  } else if (!s->serial) {
    /* A claim for this worker alone: handle it here, no hand-off to another thread. */
    for (unsigned i = 0; i < got; i++) {
      s->busy++;
      pthread_cond_broadcast(&s->cv); /* another idle worker may claim meanwhile */
      pthread_mutex_unlock(&s->mu);
      handle_one(s, w->claimed[i]);
      pthread_mutex_lock(&s->mu);
      s->busy--;
      s->free_slots[s->nfree++] = w->claimed[i];
    }
  } else {
    for (unsigned i = 0; i < got; i++)
      push_ready(s, w->claimed[i]);
    if (!s->bykey && got > for_idle)
      tabq__count(counts, TABQ__N_CLAIMED_AHEAD, got - for_idle);
  }
  pthread_cond_broadcast(&s->cv);
  return rc;
}

/* A row from the ready ring, handled by this worker; called and returning with s->mu held. */
static void handle_ready(tabq_subscription *s, tabq_delivery *d) {
  s->busy++;
  pthread_mutex_unlock(&s->mu);
  int64_t began = s->ahead_max ? tabq__mono_us() : 0;
  handle_one(s, d);
  int64_t took = s->ahead_max ? tabq__mono_us() - began : 0;
  pthread_mutex_lock(&s->mu);
  if (s->ahead_max) /* the adaptive look-ahead learns how long a delivery takes */
    tabq__lookahead_took(s, took);
  s->busy--;
  s->free_slots[s->nfree++] = d;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  tabq_subscription *s = w->s;
  tabq__log_enter(&s->b->log);
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    tabq_delivery *d = next_ready(w);
    if (d) {
      handle_ready(s, d);
      continue;
    }
    /* One claim at a time where claims are serial; elsewhere as many as the claim window
     * allows, one while the queue looks empty, so that a wake-up (a notification every process
     * hears) costs this process one claim, not one per idle worker. */
    bool window_full =
        s->serial ? s->claiming > 0 : s->claim_window && s->claiming >= s->claim_window;
    unsigned limit = window_full ? 0 : claim_limit(s);
    if (limit && tabq__mono_ms() >= s->next_claim_ms) {
      /* With controls (tabq/controls.h): no claim while the queue is paused. */
      if (s->ctl && tabq__controls_hold(s))
        continue;
      unsigned got;
      tabq_error err;
      claim_round(w, limit, &got, &err); /* a failure is logged; the poll interval paces retries */
      continue;
    }
    if (!limit) {
      /* Woken by a settlement or a claim's end; the poll interval bounds the wait, for room
       * another subscription gives back between its check and its wait. */
      struct timespec until = tabq__deadline_ms(tabq__mono_ms() + s->poll_ms);
      pthread_cond_timedwait(&s->cv, &s->mu, &until);
    } else {
      struct timespec until = tabq__deadline_ms(s->next_claim_ms);
      pthread_cond_timedwait(&s->cv, &s->mu, &until);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static void free_workers(tabq_subscription *s, worker *ws) {
  for (unsigned i = 0; i < s->workers; i++) {
    free(ws[i].claimed);
    free(ws[i].ids);
    tabq__batch_run_free(&ws[i].batch);
  }
  free(ws);
}

/* The workers' contexts live as long as the threads; the subscription keeps them here. */
static worker *contexts_of(tabq_subscription *s) {
  return (worker *)s->worker_ctx;
}

int tabq__workers_start(tabq_subscription *s, bool threads, tabq_error *err) {
  unsigned per_claim = s->o.batch_handler ? s->batch : s->nslots;
  worker *ws = calloc(s->workers, sizeof *ws);
  s->threads = calloc(s->workers, sizeof *s->threads);
  bool ok = ws && s->threads;
  for (unsigned i = 0; ok && i < s->workers; i++) {
    ws[i].s = s;
    ws[i].index = i;
    ws[i].claimed = calloc(per_claim, sizeof *ws[i].claimed);
    if (s->st[SQ_STAMP_IDS] != TABQ_NO_STMT)
      ok = (ws[i].ids = calloc(per_claim, sizeof *ws[i].ids)) != NULL;
    if (s->o.batch_handler)
      ok = ok && !tabq__batch_run_init(&ws[i].batch, s->batch);
    ok = ok && ws[i].claimed;
  }
  if (!ok) {
    if (ws)
      free_workers(s, ws);
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the workers");
  }
  s->worker_ctx = ws;
  int rc = s->ops->start ? s->ops->start(s, err) : TABQ_OK; /* the lease extender */
  if (!rc)
    rc = tabq__deadline_start(s, err);
  if (rc)
    return rc;
  for (unsigned i = 0; threads && i < s->workers; i++) {
    if (pthread_create(&s->threads[i], NULL, worker_main, &ws[i])) {
      tabq__workers_stop(s);
      return tabq__err_set(err, TABQ_IO, s->t->name, NULL, "cannot start worker thread %u", i);
    }
    s->nthreads++;
  }
  return TABQ_OK;
}

int tabq__drain(tabq_subscription *s, tabq_error *err) {
  worker *w = contexts_of(s);
  int rc = TABQ_OK;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    tabq_delivery *d;
    while ((d = next_ready(w)))
      handle_ready(s, d);
    unsigned limit = claim_limit(s), got = 0;
    if (!limit) {
      rc = tabq__err_set(err, TABQ_POOL_TIMEOUT, s->t->name, "claim",
                         "no pooled connection is free for the drain's claim (pool size %u)",
                         s->b->pool.size);
      break;
    }
    if ((rc = claim_round(w, limit, &got, err)) || !got)
      break;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

void tabq__workers_stop(tabq_subscription *s) {
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_cond_broadcast(&s->cv);
  /* Claims in flight end first: an advisory claim still runs statements (the stamp) on the
   * connection of a row it took, which `stopping` would otherwise release from this thread at
   * the same time. Claims do not wait on locks, so this wait is short. */
  while (s->claiming)
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  /* Advisory locks in work are released now (SPEC 3.3); their late settlements fail CLOSED. */
  if (s->ops->stopping && s->nthreads)
    s->ops->stopping(s);
  for (unsigned i = 0; i < s->nthreads; i++)
    pthread_join(s->threads[i], NULL);
  s->nthreads = 0;
  /* Running until every handler returned: a row whose handler outlives its deadline during the
   * shutdown is settled by the policy all the same. */
  tabq__deadline_stop(s);
  /* Rows claimed but never handed to a handler go back to the queue now. */
  for (;;) {
    tabq_delivery *d = s->bykey ? tabq__bykey_pop_any(s) : NULL;
    if (!d && !s->ready_count)
      break;
    if (!d)
      d = pop_ready(s);
    pthread_mutex_lock(&d->mu);
    bool closed = d->closed; /* advisory: `stopping` released its lock already */
    pthread_mutex_unlock(&d->mu);
    if (!closed)
      tabq__settle_returned(d, tabq_no_outcome());
    tabq__delivery_done(d);
    skip_tx(s, d);
    s->free_slots[s->nfree++] = d;
  }
  if (s->ops->stop)
    s->ops->stop(s); /* the lease extender */
  if (s->worker_ctx) {
    free_workers(s, contexts_of(s));
    s->worker_ctx = NULL;
  }
}
