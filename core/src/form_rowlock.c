/* The row lock form (SPEC 3.1): the claim locks due rows FOR UPDATE SKIP LOCKED in a
 * transaction that stays open while the handler runs; the settlement runs in it and commits. A
 * crashed process's transaction rolls back on the server, so its rows return at once. */
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

int tabq__rowlock_open(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_plugin *p = b->plugin.plugin;
  tabq_build build = tabq__sub_build(s);
  int rc = tabq__sub_begins(s, true, err);
  if (!rc && s->o.transactional)
    rc = tabq__txn_render_savepoint(b, &build, s->savepoint_sql, s->rollback_sql,
                                    sizeof s->savepoint_sql, err);
  if (!rc)
    rc = tabq__sub_stmt(s, p->rowlock->claim, "claim", SQ_CLAIM, err);
  if (!rc && TABQ_HAS_MEMBER(p->rowlock, tabq_rowlock_v1, claim_one))
    rc = tabq__claim_one_open(s, p->rowlock->claim_one, err);
  if (!rc && s->t->fifo) {
    if (!p->dialect->fifo_guard)
      return tabq__err_set(err, TABQ_DIALECT, s->t->name, "fifo_guard",
                           "table %s has FIFO groups, but the %s dialect builds no group guard",
                           s->t->name, p->name);
    rc = tabq__stmt_build(s->reg, b->host, p->dialect->fifo_guard, &build, "fifo_guard",
                          &s->st[SQ_GUARD], err);
  }
  if (!rc && p->rowlock->stamp && s->t->attempt.name)
    rc = tabq__sub_stmt(s, p->rowlock->stamp, "stamp", SQ_STAMP, err);
  if (!rc && TABQ_HAS_MEMBER(p->rowlock, tabq_rowlock_v1, stamp_ids))
    rc = tabq__stamp_ids_open(s, p->rowlock->stamp_ids, err);
  s->claim_flags = p->rowlock->flags;
  s->serial = (p->rowlock->flags & TABQ_CLAIM_SERIAL) || s->t->fifo;
  return rc;
}

int tabq__rowlock_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                        unsigned *got, tabq_error *err) {
  tabq_broker *b = s->b;
  *got = 0;
  tabq_pconn *c = NULL;
  bool mine = true, dropped = false;
  int rc = tabq__claim_begin(s, &c, &mine, err);
  if (!c)
    return rc;
  if (!rc && mine) {
    tabq_bind v = {.now = tabq__now_us(), .limit = limit};
    v.group = s->queue_value;
    tabq_prepared *p = NULL;
    rc = tabq__stmt_run(&b->stmts, b->drv, c, tabq__claim_stmt(s, limit), &v, &p, err);
    if (!rc) {
      rc = tabq__claim_read(s, p, slots, limit, got, 0, c, err);
      if (!rc && *got && tabq__claim_stamps(s, limit))
        rc = tabq__stamp_claimed(s, c, slots, ids, *got, 0, err);
      if (!rc && *got && s->st[SQ_FETCH] != TABQ_NO_STMT) {
        rc = tabq__refetch(s, c, slots, got, 0, c, err);
        dropped = !rc && !*got; /* a claimed id without a row: its drop must commit */
      }
      if (!rc && *got)
        tabq__claim_dedup(s, slots, got, 0);
    }
  }
  if (rc || !*got) {
    /* Nothing to hold: end the transaction (a failed claim's rows return at once). */
    tabq__delivery_unclaim(slots, *got);
    *got = 0;
    if (dropped)
      rc = tabq__sub_commit(s, c, err);
    if (!dropped || rc)
      tabq__sub_rollback(s, c);
    tabq__pool_release(&b->pool, c);
  }
  tabq__count_claimed(slots, *got);
  return rc;
}

static bool served(const tabq_plugin *p) {
  return p->rowlock != NULL;
}

static uint32_t flags(const tabq_plugin *p) {
  return p->rowlock->flags;
}

/* Transactional mode: a savepoint in the claim's transaction. A non-ack outcome rolls back to
 * it, so the claim's writes before it (the counted attempt) stay. */
static int tx_open(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_pconn *c = d->conn;
  int rc = tabq__pconn_check(c, s->b->drv->exec(c->conn, s->savepoint_sql));
  if (rc)
    return tabq__err_from_plugin(err, rc, s->t->name, "savepoint");
  tabq__tx_start(d->tx, c);
  return TABQ_OK;
}

/* One delivery in its claim's transaction, then the commit (which puts a retried row back). */
static int settle(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err) {
  tabq_subscription *s = d->sub;
  /* A batch handler's rows commit together; they settle through the batch. */
  if (d->batch)
    return tabq__err_set(err, TABQ_INVALID, s->t->name, NULL,
                         "table %s: the rows of a row lock batch settle together; write the "
                         "outcome into the batch handler's array, or settle the batch with "
                         "tabq_batch_settle",
                         s->t->name);
  pthread_mutex_lock(&d->mu);
  if (!d->in_work) {
    int rc = tabq__not_in_work(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
  }
  tabq_pconn *c = d->conn;
  *a = tabq__choose(d, o);
  int rc = tabq__txn_end(s->b, s->t->name, c, tabq__run_action(d, *a, o, c, true, err), err);
  d->conn = NULL;
  tabq__leave_work(d);
  pthread_mutex_unlock(&d->mu);
  tabq__pool_release(&s->b->pool, c);
  tabq__sub_unhold(s, 1);
  return rc;
}

/* A batch: every row's settlement in the claim's one transaction, then one commit; a failure
 * rolls them all back, every other row's result BATCH_ROLLED_BACK. */
static void settle_batch(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                         tabq_batch_scratch *x) {
  if (!n)
    return;
  tabq_subscription *s = ds[0]->sub;
  tabq_pconn *c = ds[0]->conn;
  tabq_action actions[n];
  tabq_error err;
  tabq__err_clear(&err);
  int rc = TABQ_OK;
  /* Where it failed: a row (its index), the batch's one ack statement (n + 1), or the commit (n).
   */
  unsigned failed_at = n;
  for (unsigned i = 0; i < n; i++) {
    actions[i] = tabq__choose(ds[i], outcomes[i]);
    x->done[i] = false;
  }
  if (s->st[SQ_ACK_IDS] != TABQ_NO_STMT && (rc = tabq__ack_by_ids(ds, n, actions, c, x, &err)))
    failed_at = n + 1;
  for (unsigned i = 0; i < n && !rc; i++) {
    if (x->done[i])
      continue;
    pthread_mutex_lock(&ds[i]->mu);
    rc = tabq__run_action(ds[i], actions[i], outcomes[i], c, true, &err);
    pthread_mutex_unlock(&ds[i]->mu);
    if (rc)
      failed_at = i;
  }
  rc = tabq__txn_end(s->b, s->t->name, c, rc, &err);
  if (rc)
    tabq__logf(&s->b->log, TABQ_LOG_ERROR,
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
    tabq__err_clear(&x->err);
  for (unsigned i = 0; i < n; i++) {
    pthread_mutex_lock(&ds[i]->mu);
    ds[i]->conn = NULL;
    tabq__leave_work(ds[i]);
    pthread_mutex_unlock(&ds[i]->mu);
    tabq__settle_count(ds[i], actions[i], x->rcs[i]);
  }
  tabq__pool_release(&s->b->pool, c);
  tabq__sub_unhold(s, 1);
  tabq__sub_wake(s);
}

static int lost(tabq_subscription *s, const char *what, tabq_error *err) {
  return tabq__err_set(err, TABQ_BACKEND, s->t->name, what,
                       "table %s: the %s changed no row, under the claim's lock", s->t->name, what);
}

/* A failed settlement rolled the claim's transaction back, which puts the row back too. */
static bool due_now(tabq_action a, int rc) {
  return rc || a == ACT_RETRY || a == ACT_RELEASE;
}

/* Outside a batch, one row a claim: each row settles in a transaction of its own. */
static unsigned claim_limit(const tabq_subscription *s, unsigned want) {
  return s->o.batch_handler || want < 1 ? want : 1;
}

/* A claim's rows share its transaction's connection. */
static unsigned conns_held(const tabq_subscription *s, unsigned rows) {
  (void)s;
  return rows ? 1 : 0;
}

/* Back to the savepoint after the claim: the counted attempt stays. */
static int tx_undo(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_pconn *c = tabq__tx_conn(d->tx);
  int rc = tabq__pconn_check(c, s->b->drv->exec(c->conn, s->rollback_sql));
  if (rc)
    tabq__err_from_plugin(err, rc, s->t->name, "rollback to savepoint");
  tabq__tx_close(d->tx, false);
  return rc;
}

/* The claim's transaction ended with the delivery's: its connection goes back. */
static void tx_end(tabq_delivery *d, tabq_pconn *c, bool committed) {
  (void)committed;
  d->conn = NULL;
  tabq__pool_release(&d->sub->b->pool, c);
}

static void events(tabq_sq *claim_slot, uint32_t *settle_names) {
  *claim_slot = SQ_CLAIM;
  *settle_names = 0;
}

/* A claim of the service's own: each id it returns is counted (Dialect.count_attempt, ABI 1.1,
 * where the table has an attempt), in the claim's transaction, which the rows then hold. */
static int claim_own(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                     unsigned *got, tabq_error *err) {
  (void)ids;
  tabq_by_ids how = {.take = s->st[SQ_STAMP], .now = tabq__now_us(), .keep_txn = true};
  return tabq__claim_by_ids(s, slots, limit, got, &how, err);
}

static int own_claim(tabq_subscription *s, tabq_error *err) {
  const tabq_plugin *p = s->b->plugin.plugin;
  s->claim = claim_own;
  if (!s->t->attempt.name || s->st[SQ_STAMP] != TABQ_NO_STMT)
    return TABQ_OK;
  if (!p->dialect->count_attempt)
    return tabq__err_set(err, TABQ_DIALECT, s->t->name, "count_attempt",
                         "table %s has a claim of its own, but the %s dialect cannot count a "
                         "claimed row's attempt (it needs ABI 1.1's Dialect.count_attempt)",
                         s->t->name, p->name);
  return tabq__sub_stmt(s, p->dialect->count_attempt, "count_attempt", SQ_STAMP, err);
}

/* One connection holds a claim's rows and its open transaction until they settle. */
const tabq_form_ops tabq_rowlock_ops = {
    .name = "row lock",
    .served = served,
    .flags = flags,
    .open = tabq__rowlock_open,
    .events = events,
    .own_claim = own_claim,
    .claim = tabq__rowlock_claim,
    .claim_limit = claim_limit,
    .conns_held = conns_held,
    .settle = settle,
    .settle_batch = settle_batch,
    .due_now = due_now,
    .by_statement = tabq__put_back_by_holder,
    .lost = lost,
    .held = tabq__conn_held,
    .token = tabq__no_token,
    .tx_open = tx_open,
    .tx_undo = tx_undo,
    .tx_end = tx_end,
    .cancel_in_row = false, /* the delivery's transaction locks the row */
};
