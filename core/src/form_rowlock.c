/* The row lock form (SPEC 3.1): the claim locks due rows FOR UPDATE SKIP LOCKED in a
 * transaction that stays open while the handler runs; the settlement runs in it and commits. A
 * crashed process's transaction rolls back on the server, so its rows return at once. */
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

int tabq_rowlock_open(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_plugin *p = b->plugin.plugin;
  tabq_build build = tabq_sub_build(s);
  int rc = tabq_sub_stmt(s, p->rowlock->claim, "claim", SQ_CLAIM, err);
  if (!rc && TABQ_HAS_MEMBER(p->rowlock, tabq_rowlock_v1, claim_one))
    rc = tabq_claim_one_open(s, p->rowlock->claim_one, err);
  if (!rc && s->t->fifo) {
    if (!p->dialect->fifo_guard)
      return tabq_err_set(err, TABQ_DIALECT, s->t->name, "fifo_guard",
                          "table %s has FIFO groups, but the %s dialect builds no group guard",
                          s->t->name, p->name);
    rc = tabq_stmt_build(&b->stmts, b->host, p->dialect->fifo_guard, &build, "fifo_guard",
                         &s->st[SQ_GUARD], err);
  }
  if (!rc && p->rowlock->stamp && s->t->attempt.name)
    rc = tabq_sub_stmt(s, p->rowlock->stamp, "stamp", SQ_STAMP, err);
  if (!rc && TABQ_HAS_MEMBER(p->rowlock, tabq_rowlock_v1, stamp_ids))
    rc = tabq_stamp_ids_open(s, p->rowlock->stamp_ids, err);
  s->claim_flags = p->rowlock->flags;
  s->serial = (p->rowlock->flags & TABQ_CLAIM_SERIAL) || s->t->fifo;
  return rc;
}

int tabq_rowlock_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                       unsigned *got, tabq_error *err) {
  tabq_broker *b = s->b;
  *got = 0;
  tabq_pconn *c = NULL;
  bool mine = true, dropped = false;
  int rc = tabq_claim_begin(s, &c, &mine, err);
  if (!c)
    return rc;
  if (!rc && mine) {
    tabq_bind v = {.now = tabq_now_us(), .limit = limit};
    v.group = s->queue_value;
    tabq_prepared *p = NULL;
    rc = tabq_stmt_run(&b->stmts, b->drv, c, tabq_claim_stmt(s, limit), &v, &p, err);
    if (!rc) {
      rc = tabq_claim_read(s, p, slots, limit, got, 0, c, err);
      if (!rc && *got && tabq_claim_stamps(s, limit))
        rc = tabq_stamp_claimed(s, c, slots, ids, *got, 0, err);
      if (!rc && *got && s->st[SQ_FETCH] != TABQ_NO_STMT) {
        rc = tabq_refetch(s, c, slots, got, 0, c, err);
        dropped = !rc && !*got; /* a claimed id without a row: its drop must commit */
      }
      if (!rc && *got)
        tabq_claim_dedup(s, slots, got, 0);
    }
  }
  if (rc || !*got) {
    /* Nothing to hold: end the transaction (a failed claim's rows return at once). */
    tabq_delivery_unclaim(slots, *got);
    *got = 0;
    if (dropped)
      rc = tabq_sub_commit(s, c, err);
    if (!dropped || rc)
      tabq_sub_rollback(s, c);
    tabq_pool_release(&b->pool, c);
  }
  atomic_fetch_add(&s->stats.claimed, *got);
  return rc;
}

static bool served(const tabq_plugin *p) {
  return p->rowlock != NULL;
}

/* One connection holds a claim's rows and its open transaction until they settle. */
const tabq_form_ops tabq_rowlock_ops = {
    .name = "row lock",
    .served = served,
    .open = tabq_rowlock_open,
    .claim = tabq_rowlock_claim,
    .settle = tabq_settle_rowlock,
    .settle_batch = tabq_settle_batch,
    .holds_conn = true,
    .claim_txn = true,
};
