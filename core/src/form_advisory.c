/* The advisory lock form (SPEC 3.3): a lock on each row's key, held by the connection serving
 * the delivery, with no transaction open. A claim reads candidates (due rows in claim order with
 * their rendered keys), locks each key without waiting on its own connection, skips keys held
 * elsewhere, then takes the row while it is still claimable. A database without session locks
 * (TABQ_ADVISORY_PROCESS_KEYS) has its keys kept in the process instead (process_keys.c). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

/* Reads of candidates one claim makes at most before it ends short. */
#define CLAIM_PASSES 3

int tabq__advisory_open(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_advisory_v1 *adv = b->plugin.plugin->advisory;
  tabq_build build = tabq__sub_build(s);
  int rc = tabq__sub_begins(s, false, err);
  if (!rc)
    rc = tabq__sub_stmt(s, adv->candidates, "candidates", SQ_CANDIDATES, err);
  /* A database without session locks: the process keeps the keys, unless the service locks
   * with statements of its own (a statement check takes no key registry: it claims nothing). */
  bool process_keys = (adv->flags & TABQ_ADVISORY_PROCESS_KEYS) && !tabq__sub_own(s, SQ_LOCK);
  if (!rc && process_keys && !s->checking)
    rc = tabq__pkeys_open(s, err);
  else if (!rc && !process_keys)
    rc = tabq__sub_stmt(s, adv->lock, "lock", SQ_LOCK, err);
  if (!rc && !process_keys)
    rc = tabq__sub_stmt(s, adv->unlock, "unlock", SQ_UNLOCK, err);
  if (!rc)
    rc = tabq__stmt_build(s->reg, b->host, adv->take, &build, "take", &s->st[SQ_TAKE], err);
  if (!rc && adv->stamp && s->t->attempt.name)
    rc = tabq__stmt_build(s->reg, b->host, adv->stamp, &build, "stamp", &s->st[SQ_STAMP], err);
  /* ABI 1.5: one round trip for the lock and the take, and one for the ack and the release,
   * where the database locks and the service's own statements do not. */
  bool session_locks = !process_keys && !tabq__sub_own(s, SQ_LOCK);
  bool built;
  if (!rc && session_locks && s->st[SQ_STAMP] == TABQ_NO_STMT &&
      TABQ_HAS_MEMBER(adv, tabq_advisory_v1, lock_take) && adv->lock_take)
    rc = tabq__stmt_build_optional(s->reg, b->host, adv->lock_take, &build, "lock_take",
                                   &s->st[SQ_LOCK_TAKE], &built, err);
  if (!rc && session_locks && !tabq__sub_own(s, SQ_ACK) &&
      TABQ_HAS_MEMBER(adv, tabq_advisory_v1, ack_unlock) && adv->ack_unlock)
    rc = tabq__stmt_build_optional(s->reg, b->host, adv->ack_unlock, &build, "ack_unlock",
                                   &s->st[SQ_ACK_UNLOCK], &built, err);
  /* Room for the rows in work here (still due) and one claim's worth past them, for each
   * worker: their claims run side by side, each reading its candidates into a space of its own
   * (the round trips of one claim's locks and takes would otherwise queue every worker). The
   * service's own fetch reads the taken row again, one row a take. */
  if (!rc)
    rc = tabq__claim_spaces(s, s->workers, 3 * s->nslots, err);
  return rc;
}

/* Runs a one-cell statement (lock or unlock) and reads its answer as a truth value. */
static int ask(tabq_subscription *s, tabq_pconn *c, unsigned stmt, const tabq_value *key, bool *yes,
               tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_bind v = {.key = *key};
  bool row;
  tabq_value answer;
  *yes = false;
  int rc = tabq__stmt_first(&b->stmts, b->drv, c, stmt, &v, &row, &answer, err);
  if (rc)
    return rc;
  *yes = row && answer.type == TABQ_T_INT && answer.u.i != 0;
  return TABQ_OK;
}

/* Locks a key for delivery d: in the process's registry, or on the connection. */
static int lock_key(tabq_subscription *s, tabq_pconn *c, const tabq_delivery *d,
                    const tabq_value *key, bool *locked, tabq_error *err) {
  if (!s->pkeys)
    return ask(s, c, s->st[SQ_LOCK], key, locked, err);
  if (tabq__pkeys_lock(s, d, key->u.buf.ptr, key->u.buf.len, locked))
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, "lock", "cannot hold the advisory key");
  return TABQ_OK;
}

/* Releases delivery d's key: false when the database did not confirm it. */
static bool unlock_key(tabq_subscription *s, tabq_pconn *c, const tabq_delivery *d,
                       const tabq_value *key, int *rc, tabq_error *err) {
  bool released = true;
  *rc = TABQ_OK;
  if (s->pkeys)
    tabq__pkeys_release(s, d);
  else
    *rc = ask(s, c, s->st[SQ_UNLOCK], key, &released, err);
  return !*rc && released;
}

/* Due rows with their keys, in claim order. */
static int read_candidates(tabq_subscription *s, tabq_claim_space *sp, tabq_pconn *c, unsigned want,
                           unsigned *n, tabq_error *err) {
  tabq_bind v = {.now = tabq__now_us(), .limit = want};
  v.group = s->queue_value;
  return tabq__ids_read(s, sp, c, s->st[SQ_CANDIDATES], &v, true, n, err);
}

/* Takes a candidate's row while it is still claimable: with `key` NULL by the take (SQ_TAKE),
 * its key locked already; else by the lock and the take in one statement (SQ_LOCK_TAKE), whose
 * last cell says whether the key is held now (*locked). *taken when d holds the row. */
static int take(tabq_subscription *s, tabq_claim_space *sp, tabq_pconn *c, const candidate *k,
                const tabq_value *key, tabq_delivery *d, bool *locked, bool *taken,
                tabq_error *err) {
  tabq_broker *b = s->b;
  /* The group too: a row moved to a dead letter group meanwhile is no longer this queue's. */
  tabq_bind v = {.id = k->id, .now = tabq__now_us()};
  v.group = s->queue_value;
  if (key) {
    v.key = *key;
    *locked = false;
  }
  tabq_prepared *p = NULL;
  *taken = false;
  int rc = tabq__stmt_run(&b->stmts, b->drv, c, s->st[key ? SQ_LOCK_TAKE : SQ_TAKE], &v, &p, err);
  if (rc)
    return rc;
  bool row = false, claimable = false;
  tabq_value held, id;
  if (!(rc = b->drv->next(p, &row)) && row)
    claimable =
        !key || (!(rc = b->drv->cell(p, s->proj.ncols, &held)) &&
                 !(rc = b->drv->cell(p, (unsigned)s->proj.id, &id)) &&
                 (*locked = held.type == TABQ_T_INT && held.u.i != 0) && id.type != TABQ_T_NULL);
  if (claimable) {
    pthread_mutex_lock(&d->mu);
    rc = tabq__delivery_fill(d, b->drv, p, err);
    if (!rc && !(rc = tabq__buf_reserve(&d->key, k->key_len + 1))) {
      memcpy(d->key.p, sp->scratch.p + k->key_at, k->key_len + 1);
      d->key.len = k->key_len;
      d->conn = c;
      *taken = true;
    }
    pthread_mutex_unlock(&d->mu);
  }
  b->drv->reset(p);
  if (rc && rc != TABQ_NOMEM)
    return tabq__err_from_plugin(err, rc, s->t->name, key ? "lock_take" : "take");
  return rc;
}

/* Whether a candidate's row is in work here (one of this subscription's own sessions holds its
 * key, so asking for the lock would only cost a round trip to hear no), or was settled off the
 * queue here since the candidates were read (`since`: asking would find no row, a round trip
 * for nothing, and with a separate lock and take three). */
static bool in_work_here(tabq_subscription *s, unsigned since, const tabq_value *id) {
  if (tabq__claim_gone_since(s, since, id))
    return true;
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    pthread_mutex_lock(&d->mu);
    bool same = (d->in_work || tabq__delivery_gone_since(d, since)) && tabq__same_id(&d->id, id);
    pthread_mutex_unlock(&d->mu);
    if (same)
      return true;
  }
  return false;
}

int tabq__advisory_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                         unsigned *got, tabq_error *err) {
  (void)ids; /* each take stamps its own row */
  tabq_broker *b = s->b;
  *got = 0;
  tabq_claim_space *sp = tabq__claim_space_take(s);
  if (!sp)
    return tabq__err_set(err, TABQ_INVALID, s->t->name, "claim", "no claim space is free");
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc) {
    tabq__claim_space_give(s, sp);
    return rc;
  }
  /* Rows in work here are still due: read past them. Claims run side by side, so the rows a
   * read finds may be gone or locked by the time this one asks; while a read came back full
   * (more rows may lie past it), read again rather than end the claim empty, which would send
   * the subscription to wait a poll interval with rows still due. */
  for (unsigned pass = 0; pass < CLAIM_PASSES && *got < limit && !rc; pass++) {
    unsigned n = 0, want = limit - *got + 2 * s->nslots;
    if (!c && (rc = tabq__pool_acquire(&b->pool, &c, err)))
      break;
    /* No mark may point into the candidates while the read rewrites them. */
    tabq__claim_space_mark(s, sp, NULL);
    unsigned since = tabq__claim_gone_count(s);
    rc = read_candidates(s, sp, c, want, &n, err);
    for (unsigned i = 0; i < n && *got < limit && !rc; i++) {
      const candidate *k = &sp->candidates[i];
      if (in_work_here(s, since, &k->id) || !tabq__claim_space_mark(s, sp, k))
        continue;
      tabq_value key = tabq_text(sp->scratch.p + k->key_at, k->key_len);
      if (!c && (rc = tabq__pool_acquire(&b->pool, &c, err)))
        break;
      bool locked = false, taken = false;
      if (s->st[SQ_LOCK_TAKE] != TABQ_NO_STMT)
        rc = take(s, sp, c, k, &key, slots[*got], &locked, &taken, err);
      else if (!(rc = lock_key(s, c, slots[*got], &key, &locked, err)) && locked)
        rc = take(s, sp, c, k, NULL, slots[*got], &locked, &taken, err);
      if (!locked)
        continue; /* held elsewhere (or failed): pass it over */
      unsigned one = 1;
      if (!rc && taken &&
          (s->st[SQ_STAMP] == TABQ_NO_STMT ||
           !(rc = tabq__stamp_claimed(s, c, &slots[*got], NULL, 1, 0, err))) &&
          (s->st[SQ_FETCH] == TABQ_NO_STMT ||
           (!(rc = tabq__refetch(s, c, &slots[*got], &one, 0, c, err)) && one))) {
        (*got)++;
        c = NULL; /* the delivery holds it now */
        continue;
      }
      /* Settled meanwhile (or not stamped): release the key; a release not confirmed ends the
       * session. */
      tabq__delivery_unclaim(&slots[*got], 1);
      int unlock_rc;
      if (!unlock_key(s, c, slots[*got], &key, &unlock_rc, err)) {
        tabq__pool_discard(&b->pool, c);
        c = NULL;
      }
    }
    if (n < want)
      break; /* the read saw every due row: none is left for this claim */
  }
  if (c)
    tabq__pool_release(&b->pool, c);
  tabq__claim_space_mark(s, sp, NULL);
  tabq__claim_space_give(s, sp);
  tabq__count_claimed(slots, *got);
  return rc;
}

void tabq__advisory_give_back(tabq_delivery *d, bool released, const char *why) {
  tabq_subscription *s = d->sub;
  if (!released) {
    tabq__logf(&s->b->log, TABQ_LOG_WARN,
               "table %s: the release of key '%s' was not confirmed%s%s; closing its connection",
               s->t->name, d->key.p, why ? ": " : "", why ? why : "");
    tabq__pool_discard(&s->b->pool, d->conn);
  } else {
    tabq__pool_release(&s->b->pool, d->conn);
  }
  d->conn = NULL;
}

bool tabq__advisory_release(tabq_delivery *d) {
  tabq_value key = tabq_text(d->key.p, d->key.len);
  tabq_error err;
  int rc;
  bool released = unlock_key(d->sub, d->conn, d, &key, &rc, &err);
  tabq__advisory_give_back(d, released, rc ? err.message : NULL);
  return released;
}

void tabq__advisory_release_all(tabq_subscription *s) {
  unsigned released = 0, closed = 0;
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    pthread_mutex_lock(&d->mu); /* waits for a settlement in flight */
    /* A handler's own transaction runs on the key's connection: its settlement releases it. */
    bool held = d->in_work && d->conn && !tabq__tx_open(d->tx);
    if (held) {
      if (tabq__advisory_release(d))
        released++;
      else
        closed++;
      d->in_work = false;
      atomic_store(&d->work_id, 0);
      d->closed = true;
    }
    pthread_mutex_unlock(&d->mu);
    if (held)
      tabq__sub_unhold(s, 1);
  }
  tabq__count(&s->counts, TABQ__N_SHUTDOWN_RELEASED, released);
  tabq__count(&s->counts, TABQ__N_SHUTDOWN_CLOSED, closed);
  if (released || closed)
    tabq__logf(&s->b->log, TABQ_LOG_INFO,
               "table %s: shutdown released %u advisory locks with their connections back in the "
               "pool and closed %u connections instead",
               s->t->name, released, closed);
}

static bool served(const tabq_plugin *p) {
  return p->advisory != NULL;
}

static uint32_t flags(const tabq_plugin *p) {
  return p->advisory->flags;
}

/* Transactional mode: a transaction on the key's connection, begun under the delivery's lock,
 * since shutdown releases the key on that connection from another thread unless the
 * transaction is open; once it has released it, there is nothing to open. */
static int tx_open(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  tabq_pconn *c = d->conn;
  int rc = d->in_work && c ? tabq__txn_begin(s->b, s->t->name, c, s->tx_begin_sql, err)
                           : tabq__err_set(err, TABQ_CLOSED, s->t->name, "begin",
                                           "table %s: the broker shut down and released this "
                                           "delivery's lock",
                                           s->t->name);
  if (!rc)
    tabq__tx_start(d->tx, c);
  pthread_mutex_unlock(&d->mu);
  return rc;
}

/* An advisory ack and the key's release in one statement (SQ_ACK_UNLOCK): the connection goes
 * back to the pool when the release is confirmed, else it is closed, which ends the lock. */
static int ack_unlock(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_bind v = {.id = d->id, .now = tabq__now_us(), .key = tabq_text(d->key.p, d->key.len)};
  v.group = s->queue_value;
  tabq_prepared *p = NULL;
  tabq_value changed = tabq_null(), released = tabq_null();
  bool row = false;
  int rc = tabq__stmt_run(&b->stmts, b->drv, d->conn, s->st[SQ_ACK_UNLOCK], &v, &p, err);
  if (!rc) {
    if (!(rc = b->drv->next(p, &row)) && row && !(rc = b->drv->cell(p, 0, &changed)))
      rc = b->drv->cell(p, 1, &released);
    b->drv->reset(p);
    if (rc)
      rc = tabq__err_from_plugin(err, rc, s->t->name, "ack_unlock");
  }
  if (!rc)
    rc = tabq__expect_one(s, changed.type == TABQ_T_INT ? (uint64_t)changed.u.i : 0, "ack", err);
  tabq__advisory_give_back(d, row && released.type == TABQ_T_INT && released.u.i != 0,
                           rc ? err->message : NULL);
  return rc;
}

/* One delivery on its key's connection, in autocommit, then the key's release. */
static int settle(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err) {
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  if (!d->in_work) {
    int rc = tabq__not_in_work(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
  }
  *a = tabq__choose(d, o);
  int rc = TABQ_OK;
  if (*a == ACT_RELEASE) {
    /* Dropped unsettled: end the session, which ends its lock, without waiting on a statement. */
    tabq__pool_discard(&s->b->pool, d->conn);
    d->conn = NULL;
    tabq__pkeys_release(s, d); /* a key the process keeps goes with it */
  } else if (*a == ACT_ACK && s->st[SQ_ACK_UNLOCK] != TABQ_NO_STMT) {
    rc = ack_unlock(d, err);
    tabq__claim_gone(d, !rc);
  } else {
    rc = tabq__run_action(d, *a, o, d->conn, false, err);
    tabq__claim_gone(d, !rc && tabq__takes_row_off(*a));
    tabq__advisory_release(d);
  }
  tabq__leave_work(d);
  pthread_mutex_unlock(&d->mu);
  tabq__sub_unhold(s, 1);
  return rc;
}

/* A batch's settlements joined in one transaction on its first row's key connection. */
static void settle_batch(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                         tabq_batch_scratch *x) {
  tabq__settle_joined(ds, n, outcomes, x, false);
}

static int lost(tabq_subscription *s, const char *what, tabq_error *err) {
  return tabq__err_set(err, TABQ_BACKEND, s->t->name, what,
                       "table %s: the %s changed no row, under the key's lock", s->t->name, what);
}

static bool due_now(tabq_action a, int rc) {
  return !rc && (a == ACT_RETRY || a == ACT_RELEASE);
}

/* Each row holds its key's session: a connection each. */
static unsigned conns_held(const tabq_subscription *s, unsigned rows) {
  (void)s;
  return rows;
}

static int tx_undo(tabq_delivery *d, tabq_error *err) {
  (void)err;
  tabq_subscription *s = d->sub;
  tabq__txn_rollback(s->b, s->t->name, tabq__tx_conn(d->tx));
  tabq__tx_close(d->tx, false);
  return TABQ_OK;
}

/* The transaction ended on the key's connection: the key's release follows on it. */
static void tx_end(tabq_delivery *d, tabq_pconn *c, bool committed) {
  (void)c;
  tabq__claim_gone(d, committed);
  tabq__advisory_release(d);
}

/* A claim of the service's own reads candidates here: the take still counts and reads the row. */
static void events(tabq_sq *claim_slot, uint32_t *settle_names) {
  *claim_slot = SQ_CANDIDATES;
  *settle_names = 0;
}

/* Each delivery holds its key's session, one connection a row, released at settlement or at
 * shutdown. */
const tabq_form_ops tabq_advisory_ops = {
    .name = "advisory lock",
    .served = served,
    .flags = flags,
    .check = NULL, /* TABQ_ADVISORY_PROCESS_KEYS: the keys are kept in the process */
    .open = tabq__advisory_open,
    .claim = tabq__advisory_claim,
    .events = events,
    .claim_limit = tabq__claim_as_asked,
    .conns_held = conns_held,
    .settle = settle,
    .settle_batch = settle_batch,
    .due_now = due_now,
    .by_statement = tabq__put_back_by_holder,
    .lost = lost,
    .held = tabq__conn_held,
    .token = tabq__no_token,
    .tx_undo = tx_undo,
    .tx_end = tx_end,
    .stopping = tabq__advisory_release_all,
    .release = tabq__advisory_release,
    .tx_open = tx_open,
    .cancel_in_row = true, /* the row is not locked: the mark is written */
    .cancel_check_reads = true,
};
