/* A batch's settlements joined in one transaction on one connection, one commit instead of one
 * per row (the lease and advisory forms, and the acks coalesce_acks gathers), with the acks in
 * one ack_ids statement per lease token where the dialect has it; the row lock form's batch
 * uses that statement too, inside its claim's transaction. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

int tabq__ack_by_ids(tabq_delivery *const *ds, unsigned n, const tabq_action *actions,
                     tabq_pconn *c, tabq_batch_scratch *x, tabq_error *err) {
  tabq_subscription *s = ds[0]->sub;
  tabq_broker *b = s->b;
  /* A row the statement did not change: in the lease form its own loss (its lease ended), in
   * the others a row gone under a held lock, which fails the batch. */
  tabq_error lost;
  bool own_loss = s->ops->lost(s, "ack", &lost) == TABQ_LEASE_LOST;
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
    tabq_bind v = {.token = ds[i]->token, .now = tabq__now_us()};
    v.ids.type = TABQ_T_INT_LIST;
    v.ids.u.list.items = x->ids;
    v.ids.u.list.count = m;
    tabq_prepared *p = NULL;
    int rc = tabq__stmt_run(&b->stmts, b->drv, c, s->st[SQ_ACK_IDS], &v, &p, err);
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
      return tabq__err_from_plugin(err, rc, s->t->name, "ack_ids");
    /* A database whose DELETE returns no rows: all changed, or none; a part cannot be told. */
    if (!returned && changed == m)
      for (unsigned k = 0; k < m; k++)
        x->rcs[x->at[k]] = TABQ_OK;
    else if (!returned && changed)
      return tabq__err_set(err, TABQ_BACKEND, s->t->name, "ack_ids",
                           "table %s: the batch's ack changed %llu of %u rows and cannot tell "
                           "which; the batch settles row by row",
                           s->t->name, (unsigned long long)changed, m);
    for (unsigned k = 0; k < m; k++)
      if (x->rcs[x->at[k]] && !own_loss) {
        *err = lost;
        return lost.code;
      }
  }
  return TABQ_OK;
}

/* Whether every row of a lease or advisory batch can settle inside one transaction tabq
 * begins: not when a statement of the service's own runs (it has a transaction of its own) nor
 * a dead letter into a table (its copy and delete commit on their own). */

static bool joinable(tabq_delivery *const *ds, unsigned n, const tabq_action *actions) {
  tabq_subscription *s = ds[0]->sub;
  for (unsigned i = 0; i < n; i++) {
    if (actions[i] != ACT_RELEASE && tabq__sub_own(s, tabq__action_stmt(actions[i])))
      return false;
    if (actions[i] == ACT_DEAD && s->dead_letter_table)
      return false;
    if (actions[i] == ACT_RELEASE && !s->ops->by_statement(ACT_RELEASE))
      return false; /* a release that ends what the delivery holds, not a statement */
  }
  return true;
}

int tabq__batch_scratch_init(tabq_batch_scratch *x, unsigned n) {
  x->ids = calloc(n, sizeof *x->ids);
  x->at = calloc(n, sizeof *x->at);
  x->rcs = calloc(n, sizeof *x->rcs);
  x->done = calloc(n, sizeof *x->done);
  x->order = calloc(n, sizeof *x->order);
  return x->ids && x->at && x->rcs && x->done && x->order ? TABQ_OK : TABQ_NOMEM;
}

void tabq__batch_scratch_free(tabq_batch_scratch *x) {
  free(x->ids);
  free(x->at);
  free(x->rcs);
  free(x->done);
  free(x->order);
  memset(x, 0, sizeof *x);
}

/* A lease or advisory batch's settlements in one transaction on one connection: one commit
 * instead of one per row. Each statement still names its row and, in the lease form, its
 * token, so a lost lease changes no row and fails only its own delivery with LEASE_LOST. Every
 * delivery's lock is held until the commit, so the lease extender cannot move a token the
 * transaction has checked. Any other failure rolls the whole batch back and returns false:
 * nothing was settled and the caller settles the rows one by one. */
static bool settle_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                          const tabq_action *actions, tabq_batch_scratch *x, bool pooled) {
  tabq_subscription *s = ds[0]->sub;
  tabq_broker *b = s->b;
  tabq_pconn *c = ds[0]->conn; /* else the first row's own connection (an advisory key's) */
  tabq_error err;
  if (pooled && tabq__pool_acquire(&b->pool, &c, &err))
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
    tabq__delivery_lock(x->order[i]);
    all = all && x->order[i]->in_work; /* else its handler settled it: settle one by one */
  }
  bool begun = all && !tabq__sub_begin(s, c, &err);
  all = begun;
  for (unsigned i = 0; i < n; i++)
    x->done[i] = false;
  if (all && s->st[SQ_ACK_IDS] != TABQ_NO_STMT)
    all = !tabq__ack_by_ids(ds, n, actions, c, x, &err);
  for (unsigned i = 0; all && i < n; i++) {
    if (x->done[i])
      continue;
    x->rcs[i] = tabq__run_action(ds[i], actions[i], outcomes[i], c, true, &err);
    all = !x->rcs[i] || x->rcs[i] == TABQ_LEASE_LOST;
  }
  all = all && !tabq__sub_commit(s, c, &err);
  if (begun && !all)
    tabq__sub_rollback(s, c); /* nothing of the batch stays */
  for (unsigned i = 0; i < n; i++) {
    if (all)
      tabq__leave_work(ds[i]);
    tabq__claim_gone(ds[i], all && !x->rcs[i] && tabq__takes_row_off(actions[i]));
  }
  for (unsigned i = 0; i < n; i++)
    pthread_mutex_unlock(&x->order[i]->mu);
  if (pooled)
    tabq__pool_release(&b->pool, c);
  return all;
}

bool tabq__settle_acks_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                              tabq_batch_scratch *x) {
  tabq_action actions[n];
  for (unsigned i = 0; i < n; i++) {
    actions[i] = ACT_ACK;
    x->rcs[i] = TABQ_OK;
  }
  return joinable(ds, n, actions) && settle_joined(ds, n, outcomes, actions, x, true);
}

bool tabq__settle_joined_try(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                             const tabq_action *actions, tabq_batch_scratch *x, bool pooled) {
  tabq_subscription *s = ds[0]->sub;
  for (unsigned i = 0; i < n; i++)
    x->rcs[i] = TABQ_OK;
  tabq__err_clear(&x->err);
  if (n < 2 || !joinable(ds, n, actions) || !settle_joined(ds, n, outcomes, actions, x, pooled))
    return false;
  bool wake = false;
  for (unsigned i = 0; i < n; i++) {
    if (s->ops->release) {
      pthread_mutex_lock(&ds[i]->mu);
      s->ops->release(ds[i]);
      pthread_mutex_unlock(&ds[i]->mu);
      tabq__sub_unhold(s, 1);
    }
    tabq__settle_count(ds[i], actions[i], x->rcs[i]);
    if (x->rcs[i]) { /* only a lost lease reaches here */
      tabq_error err;
      s->ops->lost(s, tabq__action_name(actions[i]), &err);
      tabq__logf(&s->b->log, TABQ_LOG_WARN, "settlement on table %s failed (%s): %s", s->t->name,
                 tabq_code_name(err.code), err.message);
      if (!x->err.code)
        x->err = err;
    }
    wake = wake || s->ops->due_now(actions[i], x->rcs[i]);
  }
  if (wake)
    tabq__sub_wake(s);
  return true;
}
