/* What the forms' claims share: the claim's transaction and its FIFO guard, the claim_one
 * statement, the stamp of each claimed row, the rows read into the deliveries, and the rows
 * read again by a fetch of the service's own. */
#include <string.h>

#include "engine.h"
#include "error.h"

int tabq__claim_one_open(tabq_subscription *s, tabq_build_fn fn, tabq_error *err) {
  if (tabq__sub_own(s, SQ_CLAIM))
    return TABQ_OK;
  tabq_build build = tabq__sub_build(s);
  bool built;
  return tabq__stmt_build_optional(s->reg, s->b->host, fn, &build, "claim_one",
                                   &s->st[SQ_CLAIM_ONE], &built, err);
}

/* Runs the FIFO guard: true when this transaction now holds the group. */
int tabq__guard_group(tabq_subscription *s, tabq_pconn *c, bool *held, tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_bind v = {.group = s->queue_value};
  bool row;
  tabq_value first;
  int rc = tabq__stmt_first(&b->stmts, b->drv, c, s->st[SQ_GUARD], &v, &row, &first, err);
  if (rc)
    return rc;
  *held = row && !(first.type == TABQ_T_INT && first.u.i == 0);
  return TABQ_OK;
}

int tabq__claim_begin(tabq_subscription *s, tabq_pconn **out, bool *mine, tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_pconn *c;
  *out = NULL;
  *mine = true;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  if ((rc = tabq__sub_begin(s, c, err))) {
    tabq__pool_release(&b->pool, c);
    return rc;
  }
  *out = c;
  return s->st[SQ_GUARD] != TABQ_NO_STMT ? tabq__guard_group(s, c, mine, err) : TABQ_OK;
}

int tabq__stamp_ids_open(tabq_subscription *s, tabq_build_fn fn, tabq_error *err) {
  /* A claim of the service's own counts or leases each id it read, one by one (claim_ids.c). */
  if (s->st[SQ_STAMP] == TABQ_NO_STMT || tabq__sub_own(s, SQ_CLAIM))
    return TABQ_OK;
  tabq_build build = tabq__sub_build(s);
  bool built;
  return tabq__stmt_build_optional(s->reg, s->b->host, fn, &build, "stamp_ids",
                                   &s->st[SQ_STAMP_IDS], &built, err);
}

/* The stamps of n > 1 claimed rows in one statement, their ids listed in `ids`; *done stays
 * false when an id is not an integer (the caller then stamps row by row). The claim holds its
 * rows, so the statement must change each of them: a count that differs fails the claim, which
 * rolls back. */
static int stamp_by_ids(tabq_subscription *s, tabq_pconn *c, tabq_delivery **slots, int64_t *ids,
                        unsigned n, int64_t lease_until, bool *done, tabq_error *err) {
  *done = false;
  for (unsigned i = 0; i < n; i++) {
    if (slots[i]->id.type != TABQ_T_INT)
      return TABQ_OK;
    ids[i] = slots[i]->id.u.i;
  }
  *done = true;
  tabq_bind v = {.lease_until = lease_until};
  v.ids.type = TABQ_T_INT_LIST;
  v.ids.u.list.items = ids;
  v.ids.u.list.count = n;
  uint64_t changed = 0;
  int rc = tabq__stmt_change(&s->b->stmts, s->b->drv, c, s->st[SQ_STAMP_IDS], &v, &changed, err);
  if (!rc && changed != n)
    rc = tabq__err_set(err, TABQ_BACKEND, s->t->name, "stamp_ids",
                       "table %s: stamping %u claimed rows changed %llu rows", s->t->name, n,
                       (unsigned long long)changed);
  return rc;
}

int tabq__stamp_claimed(tabq_subscription *s, tabq_pconn *c, tabq_delivery **slots, int64_t *ids,
                        unsigned n, int64_t lease_until, tabq_error *err) {
  tabq_broker *b = s->b;
  if (n > 1 && ids && s->st[SQ_STAMP_IDS] != TABQ_NO_STMT) {
    bool done;
    int rc = stamp_by_ids(s, c, slots, ids, n, lease_until, &done, err);
    if (rc || done)
      return rc;
  }
  for (unsigned i = 0; i < n; i++) {
    tabq_bind v = {.id = slots[i]->id, .lease_until = lease_until};
    uint64_t changed = 0;
    int rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_STAMP], &v, &changed, err);
    if (!rc && changed != 1)
      rc = tabq__err_set(err, TABQ_BACKEND, s->t->name, "stamp",
                         "table %s: stamping a claimed row changed %llu rows", s->t->name,
                         (unsigned long long)changed);
    if (rc)
      return rc;
  }
  return TABQ_OK;
}

int tabq__claim_fill(tabq_delivery *d, tabq_prepared *p, int64_t token, tabq_pconn *conn,
                     tabq_error *err) {
  pthread_mutex_lock(&d->mu);
  int rc = tabq__delivery_fill(d, d->sub->b->drv, p, err);
  d->token = token;
  d->conn = conn;
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int tabq__claim_read(tabq_subscription *s, tabq_prepared *p, tabq_delivery **slots, unsigned limit,
                     unsigned *got, int64_t token, tabq_pconn *conn, tabq_error *err) {
  const tabq_driver_v1 *drv = s->b->drv;
  bool row = false;
  int rc = TABQ_OK;
  while (*got < limit && !(rc = drv->next(p, &row)) && row) {
    if ((rc = tabq__claim_fill(slots[*got], p, token, conn, err)))
      break;
    (*got)++;
  }
  if (rc && rc != TABQ_NOMEM)
    tabq__err_from_plugin(err, rc, s->t->name, "claim");
  drv->reset(p);
  return rc;
}

/* Whether delivery d's row is in work here already, in a slot outside this claim's `n`. */
static tabq_delivery *in_work_elsewhere(tabq_subscription *s, tabq_delivery *const *claimed,
                                        unsigned n, const tabq_delivery *d) {
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *e = &s->slots[i];
    /* An integer id is compared without the lock first: most slots are not the row. */
    if (e == d || (d->id.type == TABQ_T_INT && atomic_load(&e->work_id) != d->id.u.i))
      continue;
    bool ours = false; /* a row of this claim (ids within one claim differ) */
    for (unsigned k = 0; k < n && !ours; k++)
      ours = claimed[k] == e;
    if (ours)
      continue;
    pthread_mutex_lock(&e->mu);
    bool same = e->in_work && tabq__same_id(&e->id, &d->id);
    pthread_mutex_unlock(&e->mu);
    if (same)
      return e;
  }
  return NULL;
}

void tabq__claim_dedup(tabq_subscription *s, tabq_delivery **slots, unsigned *got, int64_t token) {
  for (unsigned i = 0; i < *got;) {
    tabq_delivery *d = slots[i], *e = in_work_elsewhere(s, slots, *got, d);
    if (!e) {
      i++;
      continue;
    }
    /* Still in work? It may have settled since: then the row is this claim's to hand out. */
    pthread_mutex_lock(&e->mu);
    bool running = e->in_work && tabq__same_id(&e->id, &d->id);
    if (running && token) { /* the lease this claim wrote is the running delivery's now */
      e->token = token;
      e->lease_lost = false;
    }
    pthread_mutex_unlock(&e->mu);
    if (!running) {
      i++;
      continue;
    }
    tabq__logf(&s->b->log, TABQ_LOG_WARN,
               "table %s: a claim took a row that is in work here already (its %s ended under "
               "its handler); %s",
               s->t->name, token ? "lease" : "session",
               token ? "the running delivery keeps it under the new lease"
                     : "it is not handed out again");
    /* Out of the claim, to its end, where the caller gives back the slots past *got. */
    for (unsigned k = i; k + 1 < *got; k++)
      slots[k] = slots[k + 1];
    slots[--*got] = d;
    tabq__delivery_unclaim(&slots[*got], 1);
  }
}
