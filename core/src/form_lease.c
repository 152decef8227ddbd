/* The lease form (SPEC 3.2): a claim writes an expiry into each row and commits; the expiry is
 * the delivery's ownership token, named by every settlement and extension, and moved every half
 * lease while the handler runs. */
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

int tabq_lease_open(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_lease_v1 *lease = b->plugin.plugin->lease;
  tabq_build build = tabq_sub_build(s);
  s->claim_flags = lease->flags;
  int rc = tabq_sub_stmt(s, lease->claim, "claim", SQ_CLAIM, err);
  if (!rc && TABQ_HAS_MEMBER(lease, tabq_lease_v1, claim_one))
    rc = tabq_claim_one_open(s, lease->claim_one, err);
  if (!rc)
    rc = tabq_sub_stmt(s, lease->extend, "extend", SQ_EXTEND, err);
  if (!rc)
    rc = tabq_stmt_build(&b->stmts, b->host, lease->release, &build, "release", &s->st[SQ_RELEASE],
                         err);
  if (!rc && s->t->fifo && b->plugin.plugin->dialect->fifo_guard)
    rc = tabq_stmt_build(&b->stmts, b->host, b->plugin.plugin->dialect->fifo_guard, &build,
                         "fifo_guard", &s->st[SQ_GUARD], err);
  if (!rc && lease->stamp)
    rc = tabq_stmt_build(&b->stmts, b->host, lease->stamp, &build, "stamp", &s->st[SQ_STAMP], err);
  if (!rc && TABQ_HAS_MEMBER(lease, tabq_lease_v1, stamp_ids))
    rc = tabq_stamp_ids_open(s, lease->stamp_ids, err);
  s->serial = (lease->flags & TABQ_CLAIM_SERIAL) || s->t->fifo;
  return rc;
}

/* The expiry of a lease taken or extended at `now`, rounded up to a whole second where the
 * dialect keeps whole seconds (a DATETIME without fractions then holds the token exactly). */
int64_t tabq_lease_expiry(const tabq_subscription *s, int64_t now) {
  int64_t until = now + (int64_t)s->lease_s * 1000000;
  if (s->claim_flags & TABQ_LEASE_WHOLE_SECONDS)
    until = (until + 999999) / 1000000 * 1000000;
  return until;
}

int tabq_lease_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                     unsigned *got, tabq_error *err) {
  tabq_broker *b = s->b;
  *got = 0;
  tabq_pconn *c;
  int rc = tabq_pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  /* A FIFO claim first takes its group with the guard, and a claim that selects then stamps
   * needs the two together: both run in a transaction of their own. */
  bool guarded = s->st[SQ_GUARD] != TABQ_NO_STMT, mine = true;
  bool stamps = tabq_claim_stamps(s, limit), in_txn = guarded || stamps;
  if (in_txn) {
    rc = tabq_sub_begin(s, c, err);
    if (!rc && guarded)
      rc = tabq_guard_group(s, c, &mine, err);
    if (rc || !mine) {
      tabq_sub_rollback(s, c);
      tabq_pool_release(&b->pool, c);
      return rc;
    }
  }
  /* "now" is read once: due rows, ended leases and the new expiry all start from it. */
  tabq_bind v = {.now = tabq_now_us(), .limit = limit};
  v.lease_until = tabq_lease_expiry(s, v.now);
  v.group = s->queue_value;
  tabq_prepared *p = NULL;
  rc = tabq_stmt_run(&b->stmts, b->drv, c, tabq_claim_stmt(s, limit), &v, &p, err);
  if (!rc)
    rc = tabq_claim_read(s, p, slots, limit, got, v.lease_until, NULL, err);
  if (!rc && *got && stamps)
    rc = tabq_stamp_claimed(s, c, slots, ids, *got, v.lease_until, err);
  if (!rc && *got && s->st[SQ_FETCH] != TABQ_NO_STMT)
    rc = tabq_refetch(s, c, slots, got, v.lease_until, NULL, err);
  if (in_txn && !rc)
    rc = tabq_sub_commit(s, c, err);
  if (in_txn && rc) {
    tabq_sub_rollback(s, c);
    tabq_delivery_unclaim(slots, *got);
    *got = 0;
  }
  if (!rc && *got)
    tabq_claim_dedup(s, slots, got, v.lease_until); /* after the commit: the lease is written */
  tabq_pool_release(&b->pool, c);
  atomic_fetch_add(&s->stats.claimed, *got);
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
  if (tabq_pool_acquire(&b->pool, &c, &err)) {
    tabq_logf(&b->log, TABQ_LOG_WARN, "lease extension on table %s waits: %s", s->t->name,
              err.message);
    return;
  }
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    pthread_mutex_lock(&d->mu);
    bool skip = !d->in_work || d->lease_lost;
    tabq_bind v = {.id = d->id, .token = d->token};
    v.lease_until = tabq_lease_expiry(s, tabq_now_us());
    d->extending = !skip;
    d->pending = v.lease_until;
    pthread_mutex_unlock(&d->mu);
    if (skip)
      continue;
    uint64_t changed = 0;
    int rc = tabq_stmt_change(&b->stmts, b->drv, c, s->st[SQ_EXTEND], &v, &changed, &err);
    pthread_mutex_lock(&d->mu);
    d->extending = false;
    pthread_cond_broadcast(&d->cv);
    /* A claim here may have handed the running delivery a newer lease meanwhile
     * (tabq_claim_dedup): then this round's result is stale. */
    bool current = d->in_work && d->token == v.token;
    if (current && !rc && changed == 1) {
      d->token = v.lease_until;
      atomic_fetch_add(&s->stats.extensions, 1);
    } else if (current && !rc) {
      d->lease_lost = true;
      atomic_fetch_add(&s->stats.lease_lost, 1);
      tabq_logf(&b->log, TABQ_LOG_WARN,
                "table %s: the lease on a row in work ended before its extension; another claim "
                "may own it",
                s->t->name);
    } else if (rc) {
      tabq_logf(&b->log, TABQ_LOG_WARN, "table %s: lease extension failed (%s): %s", s->t->name,
                tabq_code_name(err.code), err.message);
    }
    pthread_mutex_unlock(&d->mu);
  }
  tabq_pool_release(&b->pool, c);
}

static void *extender_main(void *arg) {
  tabq_subscription *s = arg;
  tabq_log_enter(&s->b->log);
  int64_t period_ms = (int64_t)s->lease_s * 500; /* each half lease */
  pthread_mutex_lock(&s->ext_mu);
  int64_t next = tabq_mono_ms() + period_ms;
  while (!s->ext_stop) {
    struct timespec until = tabq_deadline_ms(next);
    pthread_cond_timedwait(&s->ext_cv, &s->ext_mu, &until);
    if (s->ext_stop || tabq_mono_ms() < next)
      continue;
    pthread_mutex_unlock(&s->ext_mu);
    extend_all(s);
    pthread_mutex_lock(&s->ext_mu);
    next += period_ms;
  }
  pthread_mutex_unlock(&s->ext_mu);
  return NULL;
}

int tabq_lease_extender_start(tabq_subscription *s, tabq_error *err) {
  if (pthread_create(&s->extender, NULL, extender_main, s))
    return tabq_err_set(err, TABQ_IO, s->t->name, NULL, "cannot start the lease extender");
  s->extender_started = true;
  return TABQ_OK;
}

void tabq_lease_extender_stop(tabq_subscription *s) {
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

/* Deliveries hold no connection: a token in the row, moved by the extender while they work. */
const tabq_form_ops tabq_lease_ops = {
    .name = "lease",
    .served = served,
    .open = tabq_lease_open,
    .claim = tabq_lease_claim,
    .settle = tabq_settle_lease,
    .settle_batch = tabq_settle_joined,
    .start = tabq_lease_extender_start,
    .stop = tabq_lease_extender_stop,
    .tokens = true,
};
