/* The lease form (SPEC 3.2): a claim writes an expiry into each row and commits; the expiry is
 * the delivery's ownership token, named by every settlement and extension, and moved every half
 * lease while the handler runs. */
#include <string.h>
#include <tabq/sys/sql_named.h>

#include "clock.h"
#include "deadline.h"
#include "engine.h"
#include "error.h"

int tabq__lease_open(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_lease_v1 *lease = b->plugin.plugin->lease;
  tabq_build build = tabq__sub_build(s);
  s->claim_flags = lease->flags;
  int rc = tabq__sub_begins(s, false, err);
  if (!rc)
    rc = tabq__sub_stmt(s, lease->claim, "claim", SQ_CLAIM, err);
  if (!rc && TABQ_HAS_MEMBER(lease, tabq_lease_v1, claim_one))
    rc = tabq__claim_one_open(s, lease->claim_one, err);
  if (!rc)
    rc = tabq__sub_stmt(s, lease->extend, "extend", SQ_EXTEND, err);
  if (!rc)
    rc = tabq__stmt_build(s->reg, b->host, lease->release, &build, "release", &s->st[SQ_RELEASE],
                          err);
  if (!rc && s->t->fifo && b->plugin.plugin->dialect->fifo_guard)
    rc = tabq__stmt_build(s->reg, b->host, b->plugin.plugin->dialect->fifo_guard, &build,
                          "fifo_guard", &s->st[SQ_GUARD], err);
  if (!rc && lease->stamp)
    rc = tabq__stmt_build(s->reg, b->host, lease->stamp, &build, "stamp", &s->st[SQ_STAMP], err);
  if (!rc && TABQ_HAS_MEMBER(lease, tabq_lease_v1, stamp_ids))
    rc = tabq__stamp_ids_open(s, lease->stamp_ids, err);
  s->serial = (lease->flags & TABQ_CLAIM_SERIAL) || s->t->fifo;
  return rc;
}

/* The expiry of a lease taken or extended at `now`, rounded up to a whole second where the
 * dialect keeps whole seconds (a DATETIME without fractions then holds the token exactly). */
int64_t tabq__lease_expiry(const tabq_subscription *s, int64_t now) {
  int64_t until = now + (int64_t)s->lease_s * 1000000;
  if (s->claim_flags & TABQ_LEASE_WHOLE_SECONDS)
    until = (until + 999999) / 1000000 * 1000000;
  return until;
}

int tabq__lease_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                      unsigned *got, tabq_error *err) {
  tabq_broker *b = s->b;
  *got = 0;
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  /* A FIFO claim first takes its group with the guard, and a claim that selects then stamps
   * needs the two together: both run in a transaction of their own. */
  bool guarded = s->st[SQ_GUARD] != TABQ_NO_STMT, mine = true;
  bool stamps = tabq__claim_stamps(s, limit), in_txn = guarded || stamps;
  if (in_txn) {
    rc = tabq__sub_begin(s, c, err);
    if (!rc && guarded)
      rc = tabq__guard_group(s, c, &mine, err);
    if (rc || !mine) {
      tabq__sub_rollback(s, c);
      tabq__pool_release(&b->pool, c);
      return rc;
    }
  }
  /* "now" is read once: due rows, ended leases and the new expiry all start from it. */
  tabq_bind v = {.now = tabq__now_us(), .limit = limit};
  v.lease_until = tabq__lease_expiry(s, v.now);
  v.group = s->queue_value;
  tabq_prepared *p = NULL;
  rc = tabq__stmt_run(&b->stmts, b->drv, c, tabq__claim_stmt(s, limit), &v, &p, err);
  if (!rc)
    rc = tabq__claim_read(s, p, slots, limit, got, v.lease_until, NULL, err);
  if (!rc && *got && stamps)
    rc = tabq__stamp_claimed(s, c, slots, ids, *got, v.lease_until, err);
  if (!rc && *got && s->st[SQ_FETCH] != TABQ_NO_STMT)
    rc = tabq__refetch(s, c, slots, got, v.lease_until, NULL, err);
  if (in_txn && (rc = tabq__txn_end(b, s->t->name, c, rc, err))) {
    tabq__delivery_unclaim(slots, *got);
    *got = 0;
  }
  if (!rc && *got)
    tabq__claim_dedup(s, slots, got, v.lease_until); /* after the commit: the lease is written */
  tabq__pool_release(&b->pool, c);
  tabq__count_claimed(slots, *got);
  return rc;
}

/* One extension round: every delivery in work gets a new expiry, if its token still holds.
 * No delivery's lock is held while the statement waits for the database: a delivery whose own
 * transaction holds the write lock (SQLite) would otherwise wait for that lock in its
 * settlement while the extension waits for its transaction. The delivery is marked
 * `extending` instead, which its other settlements wait out. */
static void extend_all(tabq_subscription *s) {
  tabq_broker *b = s->b;
  tabq_pconn *c;
  tabq_error err;
  if (tabq__pool_acquire(&b->pool, &c, &err)) {
    tabq__logf(&b->log, TABQ_LOG_WARN, "lease extension on table %s waits: %s", s->t->name,
               err.message);
    return;
  }
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    pthread_mutex_lock(&d->mu);
    tabq_bind v = {.id = d->id, .token = d->token};
    v.lease_until = tabq__lease_expiry(s, tabq__now_us());
    /* Never past the delivery's deadline (and its guard): the watchdog settles it there. */
    bool skip = !d->in_work || d->lease_lost || tabq__deadline_lease_cap(d, &v.lease_until);
    d->extending = !skip;
    d->pending = v.lease_until;
    pthread_mutex_unlock(&d->mu);
    if (skip)
      continue;
    uint64_t changed = 0;
    int rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_EXTEND], &v, &changed, &err);
    pthread_mutex_lock(&d->mu);
    d->extending = false;
    pthread_cond_broadcast(&d->cv);
    /* A claim here may have handed the running delivery a newer lease meanwhile
     * (tabq__claim_dedup): then this round's result is stale. */
    bool current = d->in_work && d->token == v.token;
    bool extended = current && !rc && changed == 1;
    if (extended) {
      d->token = v.lease_until;
      tabq__count(&d->counts, TABQ__N_EXTENSIONS, 1);
    } else if (current && !rc) {
      d->lease_lost = true;
      tabq__count(&d->counts, TABQ__N_LEASE_LOST, 1);
      tabq__logf(&b->log, TABQ_LOG_WARN,
                 "table %s: the lease on a row in work ended before its extension; another claim "
                 "may own it",
                 s->t->name);
    } else if (rc) {
      tabq__logf(&b->log, TABQ_LOG_WARN, "table %s: lease extension failed (%s): %s", s->t->name,
                 tabq_code_name(err.code), err.message);
    }
    pthread_mutex_unlock(&d->mu);
    if (extended)
      tabq__cancel_after_extension(d, c); /* learnt here, where the table has cancelled_at */
  }
  tabq__pool_release(&b->pool, c);
}

static void *extender_main(void *arg) {
  tabq_subscription *s = arg;
  tabq__log_enter(&s->b->log);
  int64_t period_ms = (int64_t)s->lease_s * 500; /* each half lease */
  pthread_mutex_lock(&s->ext_mu);
  int64_t next = tabq__mono_ms() + period_ms;
  while (!s->ext_stop) {
    struct timespec until = tabq__deadline_ms(next);
    pthread_cond_timedwait(&s->ext_cv, &s->ext_mu, &until);
    if (s->ext_stop || tabq__mono_ms() < next)
      continue;
    pthread_mutex_unlock(&s->ext_mu);
    extend_all(s);
    pthread_mutex_lock(&s->ext_mu);
    next += period_ms;
  }
  pthread_mutex_unlock(&s->ext_mu);
  return NULL;
}

int tabq__lease_extender_start(tabq_subscription *s, tabq_error *err) {
  if (pthread_create(&s->extender, NULL, extender_main, s))
    return tabq__err_set(err, TABQ_IO, s->t->name, NULL, "cannot start the lease extender");
  s->extender_started = true;
  return TABQ_OK;
}

void tabq__lease_extender_stop(tabq_subscription *s) {
  if (!s->extender_started)
    return;
  pthread_mutex_lock(&s->ext_mu);
  s->ext_stop = true;
  pthread_cond_signal(&s->ext_cv);
  pthread_mutex_unlock(&s->ext_mu);
  pthread_join(s->extender, NULL);
  s->extender_started = false;
}

static bool served(const tabq_plugin *p) {
  return p->lease != NULL;
}

static uint32_t flags(const tabq_plugin *p) {
  return p->lease->flags;
}

/* Transactional mode: a transaction of the delivery's own on a pooled connection, reserved in
 * the broker's budget by the claim. */
static int tx_open(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (!rc && (rc = tabq__txn_begin(b, s->t->name, c, s->tx_begin_sql, err)))
    tabq__pool_release(&b->pool, c);
  if (!rc)
    tabq__tx_start(d->tx, c);
  return rc;
}

/* The lease form's confirmation: the extension written over itself, true while the delivery's
 * token still holds the row (and, on most databases, the row now locked until the commit).
 * With d->mu held. An extension in flight may have moved the token already, or be waiting for
 * this very transaction (SQLite's write lock): the token it writes is tried too, and taken. */
static int confirm(tabq_delivery *d, tabq_pconn *c, const tabq_bind *v, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_bind same = *v;
  same.token = same.lease_until = d->token;
  uint64_t changed = 0;
  int rc = tabq__stmt_change(&s->b->stmts, s->b->drv, c, s->st[SQ_EXTEND], &same, &changed, err);
  if (!rc && changed != 1 && d->extending) {
    same.token = same.lease_until = d->pending;
    rc = tabq__stmt_change(&s->b->stmts, s->b->drv, c, s->st[SQ_EXTEND], &same, &changed, err);
    if (!rc && changed == 1)
      d->token = d->pending;
  }
  if (!rc && changed != 1)
    rc = tabq__err_set(err, TABQ_LEASE_LOST, s->t->name, "extend",
                       "table %s: the lease ended before the settlement; another claim may own "
                       "the row, and the service's own statement did not run",
                       s->t->name);
  return rc;
}

/* One delivery on a pooled connection: every statement names the row and the token, so a late
 * settlement changes nothing and fails with LEASE_LOST; a failed statement leaves the row
 * leased until its lease ends. */
static int settle(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err) {
  tabq_broker *b = d->sub->b;
  /* The connection first, then the delivery: the extender takes them in the same order. */
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  tabq__delivery_lock(d);
  if (!d->in_work)
    rc = tabq__not_in_work(d, err);
  else {
    *a = tabq__choose(d, o);
    rc = tabq__run_action(d, *a, o, c, false, err);
    tabq__leave_work(d); /* settled or not: a failed statement leaves the row to its lease */
  }
  pthread_mutex_unlock(&d->mu);
  tabq__pool_release(&b->pool, c);
  return rc;
}

/* A batch's settlements joined in one transaction on a pooled connection. */
static void settle_batch(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                         tabq_batch_scratch *x) {
  tabq__settle_joined(ds, n, outcomes, x, true);
}

static int lost(tabq_subscription *s, const char *what, tabq_error *err) {
  return tabq__err_set(err, TABQ_LEASE_LOST, s->t->name, what,
                       "table %s: the %s changed no row: the lease ended and another claim may "
                       "own the row",
                       s->t->name, what);
}

/* Every action is a statement: the lease is in the row. */
static bool by_statement(tabq_action a) {
  (void)a;
  return true;
}

static bool due_now(tabq_action a, int rc) {
  return !rc && (a == ACT_RETRY || a == ACT_RELEASE);
}

static bool held(tabq_delivery *d) {
  return !d->lease_lost;
}

static int64_t token(const tabq_delivery *d) {
  return d->token;
}

/* A delivery holds no connection, but in transactional mode its transaction's own. */
static unsigned conns_held(const tabq_subscription *s, unsigned rows) {
  return s->o.transactional ? rows : 0;
}

/* The handler's transaction rolls back, and its connection goes back. */
static int tx_undo(tabq_delivery *d, tabq_error *err) {
  (void)err;
  tabq_subscription *s = d->sub;
  tabq_pconn *c = tabq__tx_conn(d->tx);
  tabq__txn_rollback(s->b, s->t->name, c);
  tabq__tx_close(d->tx, false);
  tabq__pool_release(&s->b->pool, c);
  tabq__sub_unhold(s, 1);
  return TABQ_OK;
}

static void tx_end(tabq_delivery *d, tabq_pconn *c, bool committed) {
  (void)committed;
  tabq__pool_release(&d->sub->b->pool, c);
}

/* The connection the claim reserved for a transaction that will not open. */
static void tx_skip(tabq_delivery *d) {
  tabq__sub_unhold(d->sub, 1);
}

/* The service's own settlements may bind :held, the lease the delivery holds. */
static void events(tabq_sq *claim_slot, uint32_t *settle_names) {
  *claim_slot = SQ_CLAIM;
  *settle_names = TABQ_N_HELD;
}

/* A claim of the service's own: each id it returns is leased (Lease.lease_one, ABI 1.1). */
static int claim_own(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                     unsigned *got, tabq_error *err) {
  (void)ids;
  int64_t now = tabq__now_us();
  tabq_by_ids how = {
      .take = s->st[SQ_LEASE_ONE], .now = now, .lease_until = tabq__lease_expiry(s, now)};
  return tabq__claim_by_ids(s, slots, limit, got, &how, err);
}

static int own_claim(tabq_subscription *s, tabq_error *err) {
  const tabq_plugin *p = s->b->plugin.plugin;
  if (!p->lease->lease_one)
    return tabq__err_set(err, TABQ_DIALECT, s->t->name, "lease_one",
                         "table %s has a claim of its own, but the %s dialect cannot lease a "
                         "claimed id (it needs ABI 1.1's Lease.lease_one)",
                         s->t->name, p->name);
  s->claim = claim_own;
  return tabq__sub_stmt(s, p->lease->lease_one, "lease_one", SQ_LEASE_ONE, err);
}

/* Deliveries hold no connection: a token in the row, moved by the extender while they work. */
const tabq_form_ops tabq_lease_ops = {
    .name = "lease",
    .served = served,
    .flags = flags,
    .open = tabq__lease_open,
    .events = events,
    .own_claim = own_claim,
    .claim = tabq__lease_claim,
    .claim_limit = tabq__claim_as_asked,
    .conns_held = conns_held,
    .settle = settle,
    .settle_batch = settle_batch,
    .due_now = due_now,
    .by_statement = by_statement,
    .lost = lost,
    .confirm = confirm,
    .held = held,
    .token = token,
    .tx_open = tx_open,
    .tx_undo = tx_undo,
    .tx_end = tx_end,
    .tx_skip = tx_skip,
    .start = tabq__lease_extender_start,
    .stop = tabq__lease_extender_stop,
    .cancel_in_row = true,       /* the mark is written beside the lease */
    .cancel_check_reads = false, /* learnt at each extension */
};
