/* What every form's settlement shares (SPEC 2): the action an outcome asks for, the statements
 * that carry it out (the service's own in a transaction tabq commits, dead letters into a table
 * as a copy and a delete that commit together), the settlement inside a delivery's own
 * transaction (transactional mode), and a batch's settlements joined in one transaction (the
 * lease and advisory forms; the row lock form's batch rides its claim's transaction,
 * form_rowlock.c). Where the forms differ, they answer through their operations (s->ops). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "deadline.h"
#include "engine.h"
#include "error.h"

tabq_action tabq__choose(tabq_delivery *d, tabq_outcome o) {
  tabq_subscription *s = d->sub;
  bool failure = o.kind == TABQ_OUTCOME_RETRY || o.kind == TABQ_OUTCOME_RETRY_AFTER;
  if (o.kind == TABQ_OUTCOME_DEAD_LETTER && s->o.max_attempts)
    return ACT_DEAD;
  if (failure && s->o.max_attempts && d->attempt >= (long)s->o.max_attempts)
    return ACT_DEAD;
  switch (o.kind) {
  case TABQ_OUTCOME_ACK:
    return ACT_ACK;
  case TABQ_OUTCOME_DROP:
    return ACT_DISCARD;
  case TABQ_OUTCOME_RETRY_AFTER:
    if (s->st[SQ_RETRY_AFTER] != TABQ_NO_STMT)
      return ACT_RETRY_AFTER;
    if (!atomic_exchange(&s->warned_retry_after, true))
      tabq__logf(&s->b->log, TABQ_LOG_WARN,
                 "table %s has no retry_after column: retry_after(d) returns rows at once",
                 s->t->name);
    return ACT_RETRY;
  case TABQ_OUTCOME_DEAD_LETTER:
    tabq__logf(&s->b->log, TABQ_LOG_ERROR,
               "table %s: a handler asked for a dead letter, but the mount declares none; the "
               "row is retried",
               s->t->name);
    return ACT_RETRY;
  case TABQ_OUTCOME_RETRY:
    return ACT_RETRY;
  case TABQ_OUTCOME_NONE:
    if (d->stepping_aside) /* a concurrency limit's (concurrency_slot.c): no outcome counted */
      return ACT_STEP_ASIDE;
    break;
  }
  return ACT_RELEASE;
}

/* A settlement statement that changed `changed` rows: one is its row; none is the form's loss
 * (LEASE_LOST in the lease form); more is a table whose id is no key. */
int tabq__expect_one(tabq_subscription *s, uint64_t changed, const char *what, tabq_error *err) {
  if (changed == 1)
    return TABQ_OK;
  if (changed == 0)
    return s->ops->lost(s, what, err);
  return tabq__err_set(err, TABQ_BACKEND, s->t->name, what,
                       "table %s: the %s changed %llu rows, not one", s->t->name, what,
                       (unsigned long long)changed);
}

/* Dead letter into a table: the copy and the delete commit together, or neither does. In the
 * row lock form they run in the claim's transaction, which the caller commits. */
static int dead_letter_table(tabq_subscription *s, tabq_pconn *c, const tabq_bind *v, bool in_txn,
                             tabq_error *err) {
  tabq_broker *b = s->b;
  int rc = in_txn ? TABQ_OK : tabq__sub_begin(s, c, err);
  if (rc)
    return rc;
  uint64_t changed = 0;
  rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_COPY], v, &changed, err);
  if (!rc)
    rc = tabq__expect_one(s, changed, "dead_letter_copy", err);
  if (!rc)
    rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_REMOVE], v, &changed, err);
  if (!rc)
    rc = tabq__expect_one(s, changed, "dead_letter_delete", err);
  if (in_txn)
    return rc;
  return tabq__txn_end(s->b, s->t->name, c, rc, err);
}

static const tabq_sq stmt_of[] = {
    [ACT_RELEASE] = SQ_RELEASE,         [ACT_ACK] = SQ_ACK,
    [ACT_DISCARD] = SQ_DISCARD,         [ACT_RETRY] = SQ_RETRY,
    [ACT_RETRY_AFTER] = SQ_RETRY_AFTER, [ACT_DEAD] = SQ_DL_GROUP,
    [ACT_STEP_ASIDE] = SQ_STEP_ASIDE,
};

static const char *const name_of[] = {
    [ACT_RELEASE] = "release",         [ACT_ACK] = "ack",
    [ACT_DISCARD] = "discard",         [ACT_RETRY] = "retry",
    [ACT_RETRY_AFTER] = "retry_after", [ACT_DEAD] = "dead_letter",
    [ACT_STEP_ASIDE] = "step_aside",
};

/* A statement of the service's own outside a claim's transaction: in one of its own. */
static int run_own(tabq_delivery *d, tabq_action a, tabq_pconn *c, const tabq_bind *v,
                   tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  int rc = tabq__sub_begin(s, c, err);
  if (rc)
    return rc;
  if (s->ops->confirm)
    rc = s->ops->confirm(d, c, v, err);
  uint64_t changed = 0;
  if (!rc)
    rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[stmt_of[a]], v, &changed, err);
  return tabq__txn_end(b, s->t->name, c, rc, err);
}

int tabq__run_action(tabq_delivery *d, tabq_action a, tabq_outcome o, tabq_pconn *c, bool in_txn,
                     tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  bool own = a != ACT_RELEASE && tabq__sub_own(s, stmt_of[a]);
  if (!own && !s->ops->by_statement(a))
    return TABQ_OK; /* the end of what the delivery holds puts the row back */
  tabq_bind v = {.id = d->id, .token = d->token, .now = tabq__now_us()};
  v.retry_at = v.now + (int64_t)o.delay_ms * 1000;
  v.group = s->queue_value;
  v.dest = s->dest_value;
  if (own && !in_txn)
    return run_own(d, a, c, &v, err);
  uint64_t changed = 0;
  if (own) /* the service's statement may change any number of rows */
    return tabq__stmt_change(&b->stmts, b->drv, c, s->st[stmt_of[a]], &v, &changed, err);
  if (a == ACT_DEAD && s->dead_letter_table)
    return dead_letter_table(s, c, &v, in_txn, err);
  int rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[stmt_of[a]], &v, &changed, err);
  if (!rc && !(a == ACT_DISCARD && !changed && d->cancel == TABQ__CANCEL_FINISHED))
    rc = tabq__expect_one(s, changed, name_of[a], err); /* a cancel may have finished it first */
  return rc;
}

void tabq__settle_count(tabq_delivery *d, tabq_action a, int rc) {
  tabq_count which = rc == TABQ_LEASE_LOST  ? TABQ__N_LEASE_LOST
                     : rc                   ? TABQ__N_FAILED
                     : a == ACT_ACK         ? TABQ__N_ACKED
                     : a == ACT_DISCARD     ? TABQ__N_DROPPED
                     : a == ACT_RETRY       ? TABQ__N_RETRIED
                     : a == ACT_RETRY_AFTER ? TABQ__N_DELAYED
                     : a == ACT_DEAD        ? TABQ__N_DEAD_LETTERED
                     : a == ACT_STEP_ASIDE  ? TABQ__N_DEFERRED
                                            : TABQ__N_RELEASED;
  tabq__count(&d->counts, which, 1);
  if (which == TABQ__N_DROPPED && d->cancel)
    tabq__count(&d->counts, TABQ__N_CANCELLED, 1);
  d->settled_as = a;
  d->settled_rc = rc;
}

/* Whether a settlement leaves the row off the subscription's queue: an advisory claim need not
 * try its key again (a candidate read before the settlement may still name it). */
bool tabq__takes_row_off(tabq_action a) {
  return a == ACT_ACK || a == ACT_DISCARD || a == ACT_DEAD;
}

int tabq__not_in_work(tabq_delivery *d, tabq_error *err) {
  if (d->closed) {
    d->settled = true; /* answered: the returned outcome is not tried again */
    return tabq__err_set(err, TABQ_CLOSED, d->sub->t->name, NULL,
                         "table %s: the broker shut down and released this delivery's lock; the "
                         "row is back in the queue",
                         d->sub->t->name);
  }
  if (d->by_deadline) /* docs/deadlines.md */
    return tabq__err_set(err, TABQ_LEASE_LOST, d->sub->t->name, NULL,
                         "table %s: the delivery's deadline passed and the core settled the row "
                         "by the subscription's policy; this settlement changed nothing",
                         d->sub->t->name);
  return tabq__err_set(err, TABQ_INVALID, d->sub->t->name, NULL, "the delivery is settled already");
}

void tabq__leave_work(tabq_delivery *d) {
  d->in_work = false;
  atomic_store(&d->work_id, 0);
  d->settled = true;
  d->by_deadline = tabq__deadline_settling; /* the watchdog's settlement at the deadline */
}

/* Transactional mode (SPEC 7): an ack settles inside the delivery's transaction and commits the
 * handler's writes with it (where the form confirms its hold first, a lost one rolls it all
 * back); any other outcome rolls the handler's writes back, then settles as without the mode. */
int tabq__settle_tx(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  *a = tabq__choose(d, o);
  if (*a != ACT_ACK) {
    int rc = s->ops->tx_undo(d, err);
    if (rc) { /* the handler's writes are beyond reach: end what the delivery holds */
      tabq_error ignored;
      s->ops->settle(d, tabq_no_outcome(), a, &ignored);
      return rc;
    }
    return s->ops->settle(d, o, a, err);
  }
  tabq_pconn *c = tabq__tx_conn(d->tx);
  /* Not tabq__delivery_lock: an extension in flight may wait for this transaction to end. */
  pthread_mutex_lock(&d->mu);
  int rc;
  if (!d->in_work) {
    rc = tabq__not_in_work(d, err);
    tabq__txn_rollback(b, s->t->name, c);
  } else {
    tabq_bind v = {.id = d->id, .token = d->token};
    rc = s->ops->confirm ? s->ops->confirm(d, c, &v, err) : TABQ_OK;
    if (!rc)
      rc = tabq__run_action(d, ACT_ACK, o, c, true, err);
    rc = tabq__txn_end(b, s->t->name, c, rc, err);
    tabq__leave_work(d);
  }
  tabq__tx_close(d->tx, rc == TABQ_OK);
  s->ops->tx_end(d, c, rc == TABQ_OK);
  pthread_mutex_unlock(&d->mu);
  tabq__sub_unhold(s, 1);
  return rc;
}

const char *tabq__action_name(tabq_action a) {
  return name_of[a];
}

tabq_sq tabq__action_stmt(tabq_action a) {
  return stmt_of[a];
}

bool tabq__put_back_by_holder(tabq_action a) {
  return a != ACT_RETRY && a != ACT_RELEASE;
}

int64_t tabq__no_token(const tabq_delivery *d) {
  (void)d;
  return 0;
}

unsigned tabq__claim_as_asked(const tabq_subscription *s, unsigned want) {
  (void)s;
  return want;
}
