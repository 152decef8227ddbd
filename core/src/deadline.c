/* Deadlines (docs/deadlines.md): each handler's time budget, from its call. One watchdog thread
 * per subscription that has deadlines sleeps until the earliest deadline of a handler running,
 * then settles that row by the subscription's policy with the delivery's own hold (its lease
 * token, its row lock's transaction, its advisory key's connection), as a handler's settlement
 * would: the row's fate is decided at the deadline whether or not the handler ever returns. C
 * cannot stop a thread: the handler keeps its worker until it returns, its hold is gone
 * (tabq_delivery_held turns false) and its own settlement fails with TABQ_LEASE_LOST. */
#include "deadline.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

typedef struct tabq_deadlines {
  pthread_t thread;
  bool started, stop;
  pthread_mutex_t mu; /* guards stop and gen */
  pthread_cond_t cv;
  uint64_t gen;         /* deliveries armed so far: a new one may be the earliest */
  int column;           /* the deadline column's cell in the projection, else -1 */
  tabq_outcome outcome; /* what settles a row at its deadline */
} tabq_deadlines;

int tabq__deadline_open(tabq_subscription *s, tabq_error *err) {
  if (!tabq__deadline_used(s->t, &s->o))
    return TABQ_OK;
  tabq_deadlines *dl = calloc(1, sizeof *dl);
  if (!dl)
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the deadlines");
  pthread_mutex_init(&dl->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&dl->cv, &attr);
  pthread_condattr_destroy(&attr);
  dl->column = -1;
  for (size_t i = 0; s->t->deadline_column && i < s->t->ndata; i++)
    if (!strcmp(s->t->data[i].name, s->t->deadline_column))
      dl->column = s->proj.data0 + (int)i;
  dl->outcome = s->o.on_deadline == TABQ_DEADLINE_DEAD_LETTER
                    ? tabq_dead_letter()
                    : tabq_retry_after(s->o.deadline_retry_ms ? s->o.deadline_retry_ms : 1000);
  s->deadlines = dl;
  return TABQ_OK;
}

void tabq__deadline_free(tabq_subscription *s) {
  tabq_deadlines *dl = s->deadlines;
  if (!dl)
    return;
  pthread_mutex_destroy(&dl->mu);
  pthread_cond_destroy(&dl->cv);
  free(dl);
  s->deadlines = NULL;
}

/* The row's own budget in milliseconds from its deadline column, 0 for none (NULL, not a
 * number, zero or less). */
static int64_t row_budget(const tabq_delivery *d, int column) {
  if (column < 0)
    return 0;
  const tabq_value *v = &d->cells[column];
  int64_t ms = 0;
  if (v->type == TABQ_T_INT)
    ms = v->u.i;
  else if (v->type == TABQ_T_REAL)
    ms = (int64_t)v->u.r;
  else if (v->type == TABQ_T_TEXT && v->u.buf.len) /* NUL-terminated in the row's copy */
    ms = strtoll(v->u.buf.ptr, NULL, 10);
  return ms > 0 ? ms : 0;
}

void tabq__deadline_arm(tabq_delivery *d) {
  tabq_subscription *s = d->sub;
  tabq_deadlines *dl = s->deadlines;
  if (!dl)
    return;
  int64_t ms = s->o.deadline_ms, own = row_budget(d, dl->column);
  if (own && (!ms || own < ms))
    ms = own;
  if (!ms)
    return;
  pthread_mutex_lock(&d->mu);
  d->deadline_us = tabq__now_us() + ms * 1000;
  d->deadline_mono_us = tabq__mono_us() + ms * 1000;
  pthread_mutex_unlock(&d->mu);
  pthread_mutex_lock(&dl->mu);
  dl->gen++;
  pthread_cond_signal(&dl->cv);
  pthread_mutex_unlock(&dl->mu);
}

void tabq__deadline_disarm(tabq_delivery *d) {
  if (!d->sub->deadlines)
    return;
  pthread_mutex_lock(&d->mu);
  while (d->expiring)
    pthread_cond_wait(&d->cv, &d->mu);
  d->deadline_us = d->deadline_mono_us = 0;
  pthread_mutex_unlock(&d->mu);
}

int64_t tabq_delivery_deadline(const tabq_delivery *d) {
  return d ? d->deadline_us : 0; /* written on the handler's own thread before its call */
}

/* Settles d by the policy, where its deadline passed while its handler runs (the handler
 * settling meanwhile wins: its settlement found the row in work first). */
static void expire(tabq_subscription *s, tabq_delivery *d) {
  tabq_deadlines *dl = s->deadlines;
  int64_t id = d->id.type == TABQ_T_INT ? d->id.u.i : 0;
  tabq_error err;
  tabq__deadline_settling = true;
  int rc = tabq__settle(d, dl->outcome, &err);
  tabq__deadline_settling = false;
  tabq_action a = d->settled_as;
  pthread_mutex_lock(&d->mu);
  d->expiring = false;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
  if (rc == TABQ_INVALID || rc == TABQ_CLOSED)
    return; /* settled by its handler first, or released by shutdown */
  if (rc) {
    tabq__logf(&s->b->log, TABQ_LOG_ERROR,
               "table %s: row %lld passed its deadline, and its settlement by the policy failed "
               "(%s): %s; the row comes back when what held it ends",
               s->t->name, (long long)id, tabq_code_name(err.code), err.message);
    return;
  }
  tabq__count(&s->counts, TABQ__N_DEADLINE_EXPIRED, 1);
  tabq__logf(&s->b->log, TABQ_LOG_WARN,
             "table %s: row %lld passed its deadline; settled by %s (its handler still runs on "
             "its worker, and its own settlement will fail with LEASE_LOST)",
             s->t->name, (long long)id, tabq__action_name(a));
}

/* One pass over the deliveries: those past their deadline settled, the earliest of the others
 * returned (on the monotonic clock, INT64_MAX for none). */
static int64_t sweep(tabq_subscription *s) {
  int64_t next = INT64_MAX;
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    pthread_mutex_lock(&d->mu);
    int64_t at = d->in_work && !d->expiring ? d->deadline_mono_us : 0;
    bool due = at && at <= tabq__mono_us();
    d->expiring = due;
    pthread_mutex_unlock(&d->mu);
    if (due)
      expire(s, d);
    else if (at && at < next)
      next = at;
  }
  return next;
}

static void *watch(void *arg) {
  tabq_subscription *s = arg;
  tabq_deadlines *dl = s->deadlines;
  tabq__log_enter(&s->b->log);
  pthread_mutex_lock(&dl->mu);
  while (!dl->stop) {
    uint64_t gen = dl->gen;
    pthread_mutex_unlock(&dl->mu);
    int64_t next = sweep(s);
    pthread_mutex_lock(&dl->mu);
    if (dl->stop || dl->gen != gen)
      continue;
    if (next == INT64_MAX) {
      pthread_cond_wait(&dl->cv, &dl->mu);
    } else {
      struct timespec until = tabq__deadline_ms((next + 999) / 1000);
      pthread_cond_timedwait(&dl->cv, &dl->mu, &until);
    }
  }
  pthread_mutex_unlock(&dl->mu);
  return NULL;
}

int tabq__deadline_start(tabq_subscription *s, tabq_error *err) {
  tabq_deadlines *dl = s->deadlines;
  if (!dl || dl->started)
    return TABQ_OK;
  if (pthread_create(&dl->thread, NULL, watch, s))
    return tabq__err_set(err, TABQ_IO, s->t->name, NULL, "cannot start the deadline watchdog");
  dl->started = true;
  return TABQ_OK;
}

void tabq__deadline_stop(tabq_subscription *s) {
  tabq_deadlines *dl = s->deadlines;
  if (!dl || !dl->started)
    return;
  pthread_mutex_lock(&dl->mu);
  dl->stop = true;
  pthread_cond_signal(&dl->cv);
  pthread_mutex_unlock(&dl->mu);
  pthread_join(dl->thread, NULL);
  dl->started = false;
  dl->stop = false;
}
