/* Settling a delivery by its outcome (SPEC 2), in each form:
 * - lease: on a pooled connection; every statement names the row and the token, so a late
 *   settlement changes nothing and fails with LEASE_LOST; a failed statement leaves the row
 *   leased until its lease ends;
 * - row lock: in the claim's transaction, then commit (a batch commits once at its end);
 * - advisory: on the delivery's connection in autocommit, then the key's release.
 * A statement of the service's own (SPEC 8) runs in a transaction tabq commits: the claim's in
 * the row lock form; in the lease form one that first confirms the delivery still holds its
 * lease; in the advisory form one on the key's connection, ended before the release. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

typedef tabq_action action;

static action choose(tabq_delivery *d, tabq_outcome o) {
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
      tabq_logf(&s->b->log, TABQ_LOG_WARN,
                "table %s has no retry_after column: retry_after(d) returns rows at once",
                s->t->name);
    return ACT_RETRY;
  case TABQ_OUTCOME_DEAD_LETTER:
    tabq_logf(&s->b->log, TABQ_LOG_ERROR,
              "table %s: a handler asked for a dead letter, but the mount declares none; the "
              "row is retried",
              s->t->name);
    return ACT_RETRY;
  case TABQ_OUTCOME_RETRY:
    return ACT_RETRY;
  case TABQ_OUTCOME_NONE:
    break;
  }
  return ACT_RELEASE;
}

static int expect_one(tabq_subscription *s, uint64_t changed, const char *what, tabq_error *err) {
  if (changed == 1)
    return TABQ_OK;
  if (!s->ops->tokens)
    return tabq_err_set(err, TABQ_BACKEND, s->t->name, what,
                        "table %s: the %s changed %llu rows, not one", s->t->name, what,
                        (unsigned long long)changed);
  return tabq_err_set(err, TABQ_LEASE_LOST, s->t->name, what,
                      "table %s: the %s changed no row: the lease ended and another claim may "
                      "own the row",
                      s->t->name, what);
}

/* Commits, or rolls back when rc says the transaction failed. */
static int finish_transaction(tabq_subscription *s, tabq_pconn *c, int rc, tabq_error *err) {
  if (!rc)
    rc = tabq_sub_commit(s, c, err);
  if (rc)
    tabq_sub_rollback(s, c);
  return rc;
}

/* Dead letter into a table: the copy and the delete commit together, or neither does. In the
 * row lock form they run in the claim's transaction, which the caller commits. */
static int dead_letter_table(tabq_subscription *s, tabq_pconn *c, const tabq_bind *v, bool in_txn,
                             tabq_error *err) {
  tabq_broker *b = s->b;
  int rc = in_txn ? TABQ_OK : tabq_sub_begin(s, c, err);
  if (rc)
    return rc;
  uint64_t changed = 0;
  rc = tabq_stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_COPY], v, &changed, err);
  if (!rc)
    rc = expect_one(s, changed, "dead_letter_copy", err);
  if (!rc)
    rc = tabq_stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_REMOVE], v, &changed, err);
  if (!rc)
    rc = expect_one(s, changed, "dead_letter_delete", err);
  if (in_txn)
    return rc;
  return finish_transaction(s, c, rc, err);
}

static const tabq_sq stmt_of[] = {
    [ACT_RELEASE] = SQ_RELEASE,         [ACT_ACK] = SQ_ACK,
    [ACT_DISCARD] = SQ_DISCARD,         [ACT_RETRY] = SQ_RETRY,
    [ACT_RETRY_AFTER] = SQ_RETRY_AFTER, [ACT_DEAD] = SQ_DL_GROUP,
};
static const char *const name_of[] = {
    [ACT_RELEASE] = "release",         [ACT_ACK] = "ack",
    [ACT_DISCARD] = "discard",         [ACT_RETRY] = "retry",
    [ACT_RETRY_AFTER] = "retry_after", [ACT_DEAD] = "dead_letter",
};

/* The lease form's confirmation: the extension written over itself, true while the delivery's
 * token still holds the row (and, on most databases, the row now locked until the commit).
 * With d->mu held. An extension in flight may have moved the token already, or be waiting for
 * this very transaction (SQLite's write lock): the token it writes is tried too, and taken. */
static int confirm_lease(tabq_delivery *d, tabq_pconn *c, const tabq_bind *v, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_bind same = *v;
  same.token = same.lease_until = d->token;
  uint64_t changed = 0;
  int rc = tabq_stmt_change(&s->b->stmts, s->b->drv, c, s->st[SQ_EXTEND], &same, &changed, err);
  if (!rc && changed != 1 && d->extending) {
    same.token = same.lease_until = d->pending;
    rc = tabq_stmt_change(&s->b->stmts, s->b->drv, c, s->st[SQ_EXTEND], &same, &changed, err);
    if (!rc && changed == 1)
      d->token = d->pending;
  }
  if (!rc && changed != 1)
    rc = tabq_err_set(err, TABQ_LEASE_LOST, s->t->name, "extend",
                      "table %s: the lease ended before the settlement; another claim may own "
                      "the row, and the service's own statement did not run",
                      s->t->name);
  return rc;
}

/* A statement of the service's own outside a claim's transaction: in one of its own. */
static int run_own(tabq_delivery *d, action a, tabq_pconn *c, const tabq_bind *v, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  int rc = tabq_sub_begin(s, c, err);
  if (rc)
    return rc;
  if (s->ops->tokens)
    rc = confirm_lease(d, c, v, err);
  uint64_t changed = 0;
  if (!rc)
    rc = tabq_stmt_change(&b->stmts, b->drv, c, s->st[stmt_of[a]], v, &changed, err);
  return finish_transaction(s, c, rc, err);
}

/* The statements of an action. Retry and release run none where deliveries hold a connection
 * (outside the lease form): the row lock form's commit (or rollback) and the advisory form's key
 * release put the row back. */
static int run_action(tabq_delivery *d, action a, tabq_outcome o, tabq_pconn *c, bool in_txn,
                      tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  bool own = a != ACT_RELEASE && tabq_sub_own(s, stmt_of[a]);
  if (s->ops->holds_conn && (a == ACT_RELEASE || (a == ACT_RETRY && !own)))
    return TABQ_OK;
  tabq_bind v = {.id = d->id, .token = d->token, .now = tabq_now_us()};
  v.retry_at = v.now + (int64_t)o.delay_ms * 1000;
  v.group = s->queue_value;
  v.dest = s->dest_value;
  if (own && !in_txn)
    return run_own(d, a, c, &v, err);
  uint64_t changed = 0;
  if (own) /* the service's statement may change any number of rows */
    return tabq_stmt_change(&b->stmts, b->drv, c, s->st[stmt_of[a]], &v, &changed, err);
  if (a == ACT_DEAD && s->dead_letter_table)
    return dead_letter_table(s, c, &v, in_txn, err);
  int rc = tabq_stmt_change(&b->stmts, b->drv, c, s->st[stmt_of[a]], &v, &changed, err);
  if (!rc)
    rc = expect_one(s, changed, name_of[a], err);
  return rc;
}

static void count(tabq_subscription *s, action a, int rc) {
  if (rc == TABQ_LEASE_LOST)
    atomic_fetch_add(&s->stats.lease_lost, 1);
  else if (rc)
    atomic_fetch_add(&s->stats.failed, 1);
  else if (a == ACT_ACK || a == ACT_DISCARD)
    atomic_fetch_add(&s->stats.acked, 1);
  else if (a == ACT_RETRY || a == ACT_RETRY_AFTER)
    atomic_fetch_add(&s->stats.retried, 1);
  else if (a == ACT_DEAD)
    atomic_fetch_add(&s->stats.dead_lettered, 1);
  else
    atomic_fetch_add(&s->stats.released, 1);
}

/* Whether a settlement leaves the row off the subscription's queue: an advisory claim need not
 * try its key again (a candidate read before the settlement may still name it). */
static bool takes_row_off(action a) {
  return a == ACT_ACK || a == ACT_DISCARD || a == ACT_DEAD;
}

static int not_in_work(tabq_delivery *d, tabq_error *err) {
  if (d->closed) {
    d->settled = true; /* answered: the returned outcome is not tried again */
    return tabq_err_set(err, TABQ_CLOSED, d->sub->t->name, NULL,
                        "table %s: the broker shut down and released this delivery's lock; the "
                        "row is back in the queue",
                        d->sub->t->name);
  }
  return tabq_err_set(err, TABQ_INVALID, d->sub->t->name, NULL, "the delivery is settled already");
}

static void leave_work(tabq_delivery *d) {
  d->in_work = false;
  atomic_store(&d->work_id, 0);
  d->settled = true;
}

int tabq_settle_lease(tabq_delivery *d, tabq_outcome o, action *a, tabq_error *err) {
  tabq_broker *b = d->sub->b;
  /* The connection first, then the delivery: the extender takes them in the same order. */
  tabq_pconn *c;
  int rc = tabq_pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  tabq_delivery_lock(d);
  if (!d->in_work)
    rc = not_in_work(d, err);
  else {
    *a = choose(d, o);
    rc = run_action(d, *a, o, c, false, err);
    leave_work(d); /* settled or not: a failed statement leaves the row to its lease */
  }
  pthread_mutex_unlock(&d->mu);
  tabq_pool_release(&b->pool, c);
  return rc;
}

int tabq_settle_rowlock(tabq_delivery *d, tabq_outcome o, action *a, tabq_error *err) {
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  if (!d->in_work) {
    int rc = not_in_work(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
  }
  tabq_pconn *c = d->conn;
  *a = choose(d, o);
  int rc = finish_transaction(s, c, run_action(d, *a, o, c, true, err), err);
  d->conn = NULL;
  leave_work(d);
  pthread_mutex_unlock(&d->mu);
  tabq_pool_release(&s->b->pool, c);
  tabq_sub_unhold(s, 1);
  return rc;
}

/* An advisory ack and the key's release in one statement (SQ_ACK_UNLOCK): the connection goes
 * back to the pool when the release is confirmed, else it is closed, which ends the lock. */
static int ack_unlock(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_bind v = {.id = d->id, .now = tabq_now_us(), .key = tabq_text(d->key.p, d->key.len)};
  v.group = s->queue_value;
  tabq_prepared *p = NULL;
  tabq_value changed = tabq_null(), released = tabq_null();
  bool row = false;
  int rc = tabq_stmt_run(&b->stmts, b->drv, d->conn, s->st[SQ_ACK_UNLOCK], &v, &p, err);
  if (!rc) {
    if (!(rc = b->drv->next(p, &row)) && row && !(rc = b->drv->cell(p, 0, &changed)))
      rc = b->drv->cell(p, 1, &released);
    b->drv->reset(p);
    if (rc)
      rc = tabq_err_from_plugin(err, rc, s->t->name, "ack_unlock");
  }
  if (!rc)
    rc = expect_one(s, changed.type == TABQ_T_INT ? (uint64_t)changed.u.i : 0, "ack", err);
  tabq_advisory_give_back(d, row && released.type == TABQ_T_INT && released.u.i != 0,
                          rc ? err->message : NULL);
  return rc;
}

int tabq_settle_advisory(tabq_delivery *d, tabq_outcome o, action *a, tabq_error *err) {
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  if (!d->in_work) {
    int rc = not_in_work(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
  }
  *a = choose(d, o);
  int rc = TABQ_OK;
  if (*a == ACT_RELEASE) {
    /* Dropped unsettled: end the session, which ends its lock, without waiting on a statement. */
    tabq_pool_discard(&s->b->pool, d->conn);
    d->conn = NULL;
    tabq_pkeys_release(s, d); /* a key the process keeps goes with it */
  } else if (*a == ACT_ACK && s->st[SQ_ACK_UNLOCK] != TABQ_NO_STMT) {
    rc = ack_unlock(d, err);
    tabq_claim_gone(d, !rc);
  } else {
    rc = run_action(d, *a, o, d->conn, false, err);
    tabq_claim_gone(d, !rc && takes_row_off(*a));
    tabq_advisory_release(d);
  }
  leave_work(d);
  pthread_mutex_unlock(&d->mu);
  tabq_sub_unhold(s, 1);
  return rc;
}

/* Rolls back what a delivery's handler wrote: to the savepoint after the claim (row lock: the
 * counted attempt stays), else its whole transaction (lease: and its connection goes back). */
static int undo_handler(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_pconn *c = tabq_tx_conn(d->tx);
  int rc = TABQ_OK;
  if (s->ops->claim_txn) {
    if ((rc = tabq_pconn_check(c, b->drv->exec(c->conn, "ROLLBACK TO SAVEPOINT tabq_handler"))))
      tabq_err_from_plugin(err, rc, s->t->name, "rollback to savepoint");
  } else {
    tabq_txn_rollback(b, s->t->name, c);
  }
  tabq_tx_close(d->tx, false);
  if (s->tx_conn) { /* lease: the transaction's own connection */
    tabq_pool_release(&b->pool, c);
    tabq_sub_unhold(s, 1);
  }
  return rc;
}

/* Transactional mode (SPEC 7): an ack settles inside the delivery's transaction and commits the
 * handler's writes with it (the lease form first confirms its token: a lost lease rolls it all
 * back with LEASE_LOST); any other outcome rolls the handler's writes back, then settles as
 * without the mode. */
static int settle_tx(tabq_delivery *d, tabq_outcome o, action *a, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  *a = choose(d, o);
  if (*a != ACT_ACK) {
    int rc = undo_handler(d, err);
    if (rc) { /* the savepoint is beyond reach: end the claim's transaction, the row returns */
      tabq_error ignored;
      s->ops->settle(d, tabq_no_outcome(), a, &ignored);
      return rc;
    }
    return s->ops->settle(d, o, a, err);
  }
  tabq_pconn *c = tabq_tx_conn(d->tx);
  /* Not tabq_delivery_lock: an extension in flight may wait for this transaction to end. */
  pthread_mutex_lock(&d->mu);
  int rc;
  if (!d->in_work) {
    rc = not_in_work(d, err);
    tabq_txn_rollback(b, s->t->name, c);
  } else {
    tabq_bind v = {.id = d->id, .token = d->token};
    rc = s->ops->tokens ? confirm_lease(d, c, &v, err) : TABQ_OK;
    if (!rc)
      rc = run_action(d, ACT_ACK, o, c, true, err);
    rc = finish_transaction(s, c, rc, err);
    leave_work(d);
  }
  tabq_tx_close(d->tx, rc == TABQ_OK);
  if (s->ops->claim_txn)
    d->conn = NULL;
  else if (!s->tx_conn) { /* advisory: the key's release, on the same connection */
    tabq_claim_gone(d, !rc);
    tabq_advisory_release(d);
  }
  pthread_mutex_unlock(&d->mu);
  if (s->ops->claim_txn || s->tx_conn)
    tabq_pool_release(&b->pool, c);
  tabq_sub_unhold(s, 1);
  return rc;
}

int tabq_settle_lost(tabq_subscription *s, const char *what, tabq_error *err) {
  return expect_one(s, 0, what, err);
}

int tabq_settle(tabq_delivery *d, tabq_outcome o, tabq_error *err) {
  tabq_subscription *s = d->sub;
  action a = ACT_RELEASE;
  int rc = TABQ_OK;
  bool settled = false;
  if (s->coalescer.ready && choose(d, o) == ACT_ACK) {
    a = ACT_ACK;
    rc = tabq_ack_coalesced(d, o, &settled, err);
  }
  if (settled)
    ; /* with the acks of other workers (coalesce_acks) */
  else if (tabq_tx_open(d->tx))
    rc = settle_tx(d, o, &a, err);
  else
    rc = s->ops->settle(d, o, &a, err);
  if (rc == TABQ_INVALID || rc == TABQ_CLOSED)
    return rc; /* nothing was settled */
  count(s, a, rc);
  /* A row retried or released is due at once: claim it now rather than a poll interval on. A
   * settlement that failed in the claim's transaction (row lock) rolled back, which puts the row
   * back too. */
  if ((!rc && (a == ACT_RETRY || a == ACT_RELEASE)) || (rc && s->ops->claim_txn))
    tabq_sub_wake(s);
  return rc;
}

static int ack_by_ids(tabq_delivery *const *ds, unsigned n, const action *actions, tabq_pconn *c,
                      tabq_batch_scratch *x, tabq_error *err);

void tabq_settle_batch(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                       tabq_batch_scratch *x) {
  if (!n)
    return;
  tabq_subscription *s = ds[0]->sub;
  tabq_pconn *c = ds[0]->conn;
  action actions[n];
  tabq_error err;
  tabq_err_clear(&err);
  int rc = TABQ_OK;
  /* Where it failed: a row (its index), the batch's one ack statement (n + 1), or the commit (n).
   */
  unsigned failed_at = n;
  for (unsigned i = 0; i < n; i++) {
    actions[i] = choose(ds[i], outcomes[i]);
    x->done[i] = false;
  }
  if (s->st[SQ_ACK_IDS] != TABQ_NO_STMT && (rc = ack_by_ids(ds, n, actions, c, x, &err)))
    failed_at = n + 1;
  for (unsigned i = 0; i < n && !rc; i++) {
    if (x->done[i])
      continue;
    pthread_mutex_lock(&ds[i]->mu);
    rc = run_action(ds[i], actions[i], outcomes[i], c, true, &err);
    pthread_mutex_unlock(&ds[i]->mu);
    if (rc)
      failed_at = i;
  }
  rc = finish_transaction(s, c, rc, &err);
  if (rc)
    tabq_logf(&s->b->log, TABQ_LOG_ERROR,
              "table %s: a batch of %u rolled back (%s%s): %s; the other settlements fail with "
              "BATCH_ROLLED_BACK",
              s->t->name, n, tabq_code_name(err.code),
              failed_at < n    ? " in one row's settlement"
              : failed_at == n ? " at commit"
                               : " in the batch's ack",
              err.message);
  /* The rows whose own statement failed (or every row, when the commit did) get its code; the
   * others of a rolled back batch BATCH_ROLLED_BACK: each row is back in the queue. */
  for (unsigned i = 0; i < n; i++) {
    bool own = failed_at == n || i == failed_at || (failed_at == n + 1 && x->done[i]);
    x->rcs[i] = !rc ? TABQ_OK : own ? err.code : TABQ_BATCH_ROLLED_BACK;
  }
  if (rc)
    x->err = err;
  else
    tabq_err_clear(&x->err);
  for (unsigned i = 0; i < n; i++) {
    pthread_mutex_lock(&ds[i]->mu);
    ds[i]->conn = NULL;
    leave_work(ds[i]);
    pthread_mutex_unlock(&ds[i]->mu);
    count(s, actions[i], x->rcs[i]);
  }
  tabq_pool_release(&s->b->pool, c);
  tabq_sub_unhold(s, 1);
  tabq_sub_wake(s);
}

/* Whether every row of a lease or advisory batch can settle inside one transaction tabq
 * begins: not when a statement of the service's own runs (it has a transaction of its own) nor
 * a dead letter into a table (its copy and delete commit on their own). */
static bool joinable(tabq_delivery *const *ds, unsigned n, const action *actions) {
  tabq_subscription *s = ds[0]->sub;
  for (unsigned i = 0; i < n; i++) {
    if (actions[i] != ACT_RELEASE && tabq_sub_own(s, stmt_of[actions[i]]))
      return false;
    if (actions[i] == ACT_DEAD && s->dead_letter_table)
      return false;
    if (s->ops->holds_conn && actions[i] == ACT_RELEASE)
      return false; /* advisory: a release ends the key's session, not a statement */
  }
  return true;
}

int tabq_batch_scratch_init(tabq_batch_scratch *x, unsigned n) {
  x->ids = calloc(n, sizeof *x->ids);
  x->at = calloc(n, sizeof *x->at);
  x->rcs = calloc(n, sizeof *x->rcs);
  x->done = calloc(n, sizeof *x->done);
  x->order = calloc(n, sizeof *x->order);
  return x->ids && x->at && x->rcs && x->done && x->order ? TABQ_OK : TABQ_NOMEM;
}

void tabq_batch_scratch_free(tabq_batch_scratch *x) {
  free(x->ids);
  free(x->at);
  free(x->rcs);
  free(x->done);
  free(x->order);
  memset(x, 0, sizeof *x);
}

/* The acks of a batch in as few statements as there are lease tokens (a claim's rows share
 * one), for rows with integer ids: ack_ids returns the rows it finished, and a row it did not
 * return fails as its own ack would (LEASE_LOST in the lease form). Marks them done. */
static int ack_by_ids(tabq_delivery *const *ds, unsigned n, const action *actions, tabq_pconn *c,
                      tabq_batch_scratch *x, tabq_error *err) {
  tabq_subscription *s = ds[0]->sub;
  tabq_broker *b = s->b;
  for (unsigned i = 0; i < n; i++) {
    if (x->done[i] || actions[i] != ACT_ACK || ds[i]->id.type != TABQ_T_INT)
      continue;
    unsigned m = 0;
    for (unsigned j = i; j < n; j++)
      if (!x->done[j] && actions[j] == ACT_ACK && ds[j]->id.type == TABQ_T_INT &&
          ds[j]->token == ds[i]->token) {
        x->ids[m] = ds[j]->id.u.i;
        x->at[m++] = j;
        x->done[j] = true;
        x->rcs[j] = TABQ_LEASE_LOST; /* until the statement returns the row */
      }
    tabq_bind v = {.token = ds[i]->token, .now = tabq_now_us()};
    v.ids.type = TABQ_T_INT_LIST;
    v.ids.u.list.items = x->ids;
    v.ids.u.list.count = m;
    tabq_prepared *p = NULL;
    int rc = tabq_stmt_run(&b->stmts, b->drv, c, s->st[SQ_ACK_IDS], &v, &p, err);
    if (rc)
      return rc;
    bool row = false;
    unsigned returned = 0;
    tabq_value id = tabq_null();
    while (!(rc = b->drv->next(p, &row)) && row && !(rc = b->drv->cell(p, 0, &id))) {
      returned++;
      for (unsigned k = 0; k < m; k++)
        if (id.type == TABQ_T_INT && x->ids[k] == id.u.i)
          x->rcs[x->at[k]] = TABQ_OK;
    }
    uint64_t changed = rc ? 0 : b->drv->affected(p);
    b->drv->reset(p);
    if (rc)
      return tabq_err_from_plugin(err, rc, s->t->name, "ack_ids");
    /* A database whose DELETE returns no rows: all changed, or none; a part cannot be told. */
    if (!returned && changed == m)
      for (unsigned k = 0; k < m; k++)
        x->rcs[x->at[k]] = TABQ_OK;
    else if (!returned && changed)
      return tabq_err_set(err, TABQ_BACKEND, s->t->name, "ack_ids",
                          "table %s: the batch's ack changed %llu of %u rows and cannot tell "
                          "which; the batch settles row by row",
                          s->t->name, (unsigned long long)changed, m);
    for (unsigned k = 0; k < m; k++)
      if (x->rcs[x->at[k]] && !s->ops->tokens)
        return expect_one(s, 0, "ack", err); /* a row gone under a held lock: not a batch's */
  }
  return TABQ_OK;
}

/* A lease or advisory batch's settlements in one transaction on one connection: one commit
 * instead of one per row. Each statement still names its row and, in the lease form, its
 * token, so a lost lease changes no row and fails only its own delivery with LEASE_LOST. Every
 * delivery's lock is held until the commit, so the lease extender cannot move a token the
 * transaction has checked. Any other failure rolls the whole batch back and returns false:
 * nothing was settled and the caller settles the rows one by one. */
static bool settle_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                          const action *actions, tabq_batch_scratch *x) {
  tabq_subscription *s = ds[0]->sub;
  tabq_broker *b = s->b;
  tabq_pconn *c = ds[0]->conn; /* advisory: the first key's session */
  tabq_error err;
  if (!s->ops->holds_conn && tabq_pool_acquire(&b->pool, &c, &err))
    return false;
  /* The deliveries' locks in address order, the one order every batch takes them in (two
   * batches never share a delivery, but their slots come back in any order). */
  for (unsigned i = 0; i < n; i++) {
    unsigned j = i;
    for (; j > 0 && (uintptr_t)x->order[j - 1] > (uintptr_t)ds[i]; j--)
      x->order[j] = x->order[j - 1];
    x->order[j] = ds[i];
  }
  bool all = true;
  for (unsigned i = 0; i < n; i++) {
    tabq_delivery_lock(x->order[i]);
    all = all && x->order[i]->in_work; /* else its handler settled it: settle one by one */
  }
  bool begun = all && !tabq_sub_begin(s, c, &err);
  all = begun;
  for (unsigned i = 0; i < n; i++)
    x->done[i] = false;
  if (all && s->st[SQ_ACK_IDS] != TABQ_NO_STMT)
    all = !ack_by_ids(ds, n, actions, c, x, &err);
  for (unsigned i = 0; all && i < n; i++) {
    if (x->done[i])
      continue;
    x->rcs[i] = run_action(ds[i], actions[i], outcomes[i], c, true, &err);
    all = !x->rcs[i] || x->rcs[i] == TABQ_LEASE_LOST;
  }
  all = all && !tabq_sub_commit(s, c, &err);
  if (begun && !all)
    tabq_sub_rollback(s, c); /* nothing of the batch stays */
  for (unsigned i = 0; i < n; i++) {
    if (all)
      leave_work(ds[i]);
    tabq_claim_gone(ds[i], all && !x->rcs[i] && takes_row_off(actions[i]));
  }
  for (unsigned i = 0; i < n; i++)
    pthread_mutex_unlock(&x->order[i]->mu);
  if (!s->ops->holds_conn)
    tabq_pool_release(&b->pool, c);
  return all;
}

bool tabq_settle_acks_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                             tabq_batch_scratch *x) {
  action actions[n];
  for (unsigned i = 0; i < n; i++) {
    actions[i] = ACT_ACK;
    x->rcs[i] = TABQ_OK;
  }
  return joinable(ds, n, actions) && settle_joined(ds, n, outcomes, actions, x);
}

void tabq_settle_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                        tabq_batch_scratch *x) {
  if (!n)
    return;
  tabq_subscription *s = ds[0]->sub;
  action actions[n];
  for (unsigned i = 0; i < n; i++) {
    actions[i] = choose(ds[i], outcomes[i]);
    x->rcs[i] = TABQ_OK;
  }
  tabq_err_clear(&x->err);
  if (n < 2 || !joinable(ds, n, actions) || !settle_joined(ds, n, outcomes, actions, x)) {
    for (unsigned i = 0; i < n; i++) {
      tabq_error err;
      x->rcs[i] = tabq_settle_logged(ds[i], outcomes[i], &err);
      if (x->rcs[i] && !x->err.code)
        x->err = err;
    }
    return;
  }
  bool wake = false;
  for (unsigned i = 0; i < n; i++) {
    if (s->ops->release) {
      pthread_mutex_lock(&ds[i]->mu);
      s->ops->release(ds[i]);
      pthread_mutex_unlock(&ds[i]->mu);
      tabq_sub_unhold(s, 1);
    }
    count(s, actions[i], x->rcs[i]);
    if (x->rcs[i]) { /* only a lost lease reaches here */
      tabq_error err;
      expect_one(s, 0, name_of[actions[i]], &err);
      tabq_logf(&s->b->log, TABQ_LOG_WARN, "settlement on table %s failed (%s): %s", s->t->name,
                tabq_code_name(err.code), err.message);
      if (!x->err.code)
        x->err = err;
    }
    wake = wake || (!x->rcs[i] && (actions[i] == ACT_RETRY || actions[i] == ACT_RELEASE));
  }
  if (wake)
    tabq_sub_wake(s);
}

int tabq_settle_logged(tabq_delivery *d, tabq_outcome o, tabq_error *err) {
  pthread_mutex_lock(&d->mu);
  bool settled = d->settled;
  pthread_mutex_unlock(&d->mu);
  if (settled)
    return tabq_err_set(err, TABQ_INVALID, d->sub->t->name, NULL,
                        "table %s: the delivery is settled already", d->sub->t->name);
  int rc = tabq_settle(d, o, err);
  if (rc)
    tabq_logf(&d->sub->b->log, rc == TABQ_LEASE_LOST ? TABQ_LOG_WARN : TABQ_LOG_ERROR,
              "settlement on table %s failed (%s): %s", d->sub->t->name, tabq_code_name(err->code),
              err->message);
  return rc;
}

void tabq_settle_returned(tabq_delivery *d, tabq_outcome o) {
  tabq_error err;
  tabq_settle_logged(d, o, &err);
}
