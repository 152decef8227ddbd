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
  s->claim = tabq_rowlock_claim;
  s->claim_flags = p->rowlock->flags;
  s->holds_conn = true;
  s->serial = (p->rowlock->flags & TABQ_CLAIM_SERIAL) || s->t->fifo;
  return rc;
}

int tabq_claim_one_open(tabq_subscription *s, tabq_build_fn fn, tabq_error *err) {
  if (tabq_sub_own(s, SQ_CLAIM))
    return TABQ_OK;
  tabq_build build = tabq_sub_build(s);
  bool built;
  return tabq_stmt_build_optional(&s->b->stmts, s->b->host, fn, &build, "claim_one",
                                  &s->st[SQ_CLAIM_ONE], &built, err);
}

/* Runs the FIFO guard: true when this transaction now holds the group. */
int tabq_guard_group(tabq_subscription *s, tabq_pconn *c, bool *held, tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_bind v = {.group = s->queue_value};
  tabq_prepared *p = NULL;
  int rc = tabq_stmt_run(&b->stmts, b->drv, c, s->st[SQ_GUARD], &v, &p, err);
  if (rc)
    return rc;
  bool row = false;
  tabq_value first = tabq_null();
  rc = b->drv->next(p, &row);
  if (!rc && row)
    rc = b->drv->cell(p, 0, &first);
  b->drv->reset(p);
  if (rc)
    return tabq_err_from_plugin(err, rc, s->t->name, "fifo_guard");
  *held = row && !(first.type == TABQ_T_INT && first.u.i == 0);
  return TABQ_OK;
}

int tabq_claim_begin(tabq_subscription *s, tabq_pconn **out, bool *mine, tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_pconn *c;
  *out = NULL;
  *mine = true;
  int rc = tabq_pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  if ((rc = tabq_sub_begin(s, c, err))) {
    tabq_pool_release(&b->pool, c);
    return rc;
  }
  *out = c;
  return s->st[SQ_GUARD] != TABQ_NO_STMT ? tabq_guard_group(s, c, mine, err) : TABQ_OK;
}

int tabq_stamp_claimed(tabq_subscription *s, tabq_pconn *c, tabq_delivery **slots, unsigned n,
                       int64_t lease_until, tabq_error *err) {
  tabq_broker *b = s->b;
  for (unsigned i = 0; i < n; i++) {
    tabq_bind v = {.id = slots[i]->id, .lease_until = lease_until};
    uint64_t changed = 0;
    int rc = tabq_stmt_change(&b->stmts, b->drv, c, s->st[SQ_STAMP], &v, &changed, err);
    if (!rc && changed != 1)
      rc = tabq_err_set(err, TABQ_BACKEND, s->t->name, "stamp",
                        "table %s: stamping a claimed row changed %llu rows", s->t->name,
                        (unsigned long long)changed);
    if (rc)
      return rc;
  }
  return TABQ_OK;
}

int tabq_rowlock_claim(tabq_subscription *s, tabq_delivery **slots, unsigned limit, unsigned *got,
                       tabq_error *err) {
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
      bool row = false;
      while (*got < limit && !(rc = b->drv->next(p, &row)) && row) {
        tabq_delivery *d = slots[*got];
        pthread_mutex_lock(&d->mu);
        rc = tabq_delivery_fill(d, b->drv, p, err);
        d->conn = c;
        pthread_mutex_unlock(&d->mu);
        if (rc)
          break;
        (*got)++;
      }
      if (rc && rc != TABQ_NOMEM)
        tabq_err_from_plugin(err, rc, s->t->name, "claim");
      b->drv->reset(p);
      if (!rc && *got && tabq_claim_stamps(s, limit))
        rc = tabq_stamp_claimed(s, c, slots, *got, 0, err);
      if (!rc && *got && s->st[SQ_FETCH] != TABQ_NO_STMT) {
        rc = tabq_refetch(s, c, slots, got, 0, c, err);
        dropped = !rc && !*got; /* a claimed id without a row: its drop must commit */
      }
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
