/* Claims that read ids first and the rows after (SPEC 8): a claim of the service's own returns
 * ids, which the form then leases (lease) or counts (row lock), and a fetch reads their rows; a
 * fetch of the service's own also reads again the rows a built-in claim took. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "error.h"

int tabq__claim_spaces(tabq_subscription *s, unsigned n, unsigned ncandidates, tabq_error *err) {
  if (s->nspaces >= n)
    return TABQ_OK;
  tabq_claim_space *spaces = calloc(n, sizeof *spaces);
  tabq_claim_space **free_spaces = calloc(n, sizeof *free_spaces);
  const candidate **in_claim = calloc(n, sizeof *in_claim);
  _Atomic int64_t *gone_ids = calloc(ncandidates, sizeof *gone_ids);
  bool ok = spaces && free_spaces && in_claim && gone_ids;
  for (unsigned i = 0; ok && i < ncandidates; i++)
    atomic_init(&gone_ids[i], INT64_MIN);
  for (unsigned i = 0; ok && i < n; i++) {
    spaces[i].ncandidates = ncandidates;
    ok = (spaces[i].candidates = calloc(ncandidates, sizeof *spaces[i].candidates)) != NULL;
  }
  if (!ok) {
    for (unsigned i = 0; spaces && i < n; i++)
      free(spaces[i].candidates);
    free(spaces);
    free(free_spaces);
    free(in_claim);
    free(gone_ids);
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the claimed ids");
  }
  tabq__claim_spaces_free(s);
  s->gone_ids = gone_ids;
  s->ngone = ncandidates;
  s->spaces = spaces;
  s->free_spaces = free_spaces;
  s->in_claim = in_claim;
  s->nspaces = s->nfree_spaces = n;
  for (unsigned i = 0; i < n; i++)
    free_spaces[i] = &spaces[i];
  return TABQ_OK;
}

void tabq__claim_spaces_free(tabq_subscription *s) {
  for (unsigned i = 0; i < s->nspaces; i++) {
    free(s->spaces[i].candidates);
    tabq__buf_free(&s->spaces[i].scratch);
  }
  free(s->spaces);
  free(s->free_spaces);
  free(s->in_claim);
  free(s->gone_ids);
  s->gone_ids = NULL;
  s->ngone = 0;
  s->spaces = NULL;
  s->free_spaces = NULL;
  s->in_claim = NULL;
  s->nspaces = s->nfree_spaces = 0;
}

/* Claims in flight never outnumber the spaces (one per worker, or one when serial). */
tabq_claim_space *tabq__claim_space_take(tabq_subscription *s) {
  pthread_mutex_lock(&s->mu);
  tabq_claim_space *sp = s->nfree_spaces ? s->free_spaces[--s->nfree_spaces] : NULL;
  pthread_mutex_unlock(&s->mu);
  return sp;
}

void tabq__claim_space_give(tabq_subscription *s, tabq_claim_space *sp) {
  pthread_mutex_lock(&s->mu);
  s->free_spaces[s->nfree_spaces++] = sp;
  pthread_mutex_unlock(&s->mu);
}

bool tabq__claim_space_mark(tabq_subscription *s, tabq_claim_space *sp, const candidate *k) {
  unsigned me = (unsigned)(sp - s->spaces);
  bool free_row = true;
  pthread_mutex_lock(&s->mu);
  for (unsigned i = 0; k && free_row && i < s->nspaces; i++)
    free_row = i == me || !s->in_claim[i] || !tabq__same_id(&s->in_claim[i]->id, &k->id);
  s->in_claim[me] = free_row ? k : NULL;
  pthread_mutex_unlock(&s->mu);
  return free_row;
}

void tabq__claim_gone(tabq_delivery *d, bool gone) {
  tabq_subscription *s = d->sub;
  d->gone = gone;
  /* Only claims that read candidates ask (advisory, claims by ids): elsewhere a batch's
   * settlement would count on a shared counter for nothing. */
  if (!gone || !s->gone_ids)
    return;
  d->gone_at = atomic_fetch_add(&s->gone_next, 1);
  if (d->id.type == TABQ_T_INT)
    atomic_store(&s->gone_ids[d->gone_at % s->ngone], d->id.u.i);
}

bool tabq__delivery_gone_since(const tabq_delivery *d, unsigned since) {
  return d->gone && d->gone_at - since < UINT_MAX / 2; /* at or after `since`, counting round */
}

unsigned tabq__claim_gone_count(tabq_subscription *s) {
  return atomic_load(&s->gone_next);
}

bool tabq__claim_gone_since(tabq_subscription *s, unsigned since, const tabq_value *id) {
  if (!s->gone_ids || id->type != TABQ_T_INT)
    return false;
  /* The notes since `since` sit just behind gone_next, the newest last (a note whose count is
   * taken but whose id is not stored yet reads as the one before it: at worst a round trip). */
  unsigned now = atomic_load(&s->gone_next), n = now - since;
  if (n > s->ngone)
    n = s->ngone;
  for (unsigned k = 1; k <= n; k++)
    if (atomic_load(&s->gone_ids[(now - k) % s->ngone]) == id->u.i)
      return true;
  return false;
}

int tabq__ids_read(tabq_subscription *s, tabq_claim_space *sp, tabq_pconn *c, unsigned stmt,
                   const tabq_bind *v, bool with_key, unsigned *n, tabq_error *err) {
  tabq_broker *b = s->b;
  const char *name = b->stmts.defs[stmt].name;
  tabq_prepared *p = NULL;
  *n = 0;
  int rc = tabq__stmt_run(&b->stmts, b->drv, c, stmt, v, &p, err);
  if (rc)
    return rc;
  candidate *cand = sp->candidates;
  tabq_buf *scratch = &sp->scratch;
  scratch->len = 0;
  bool row = false;
  while (*n < sp->ncandidates && !(rc = b->drv->next(p, &row)) && row) {
    tabq_value id, key = tabq_null();
    if ((rc = b->drv->cell(p, 0, &id)) || (with_key && (rc = b->drv->cell(p, 1, &key))))
      break;
    size_t id_len = id.type == TABQ_T_TEXT ? id.u.buf.len : 0;
    size_t key_len = key.type == TABQ_T_TEXT ? key.u.buf.len : 0;
    if (tabq__buf_reserve(scratch, scratch->len + id_len + key_len + 2)) {
      rc = TABQ_NOMEM;
      break;
    }
    candidate *k = &cand[(*n)++];
    k->id = id;
    k->id_at = scratch->len;
    if (id_len)
      memcpy(scratch->p + k->id_at, id.u.buf.ptr, id_len);
    scratch->p[k->id_at + id_len] = '\0';
    k->key_at = k->id_at + id_len + 1;
    k->key_len = key_len;
    if (key_len)
      memcpy(scratch->p + k->key_at, key.u.buf.ptr, key_len);
    scratch->p[k->key_at + key_len] = '\0';
    scratch->len = k->key_at + key_len + 1;
  }
  b->drv->reset(p);
  if (rc == TABQ_NOMEM)
    return tabq__err_set(err, rc, s->t->name, name, "cannot hold the claimed ids");
  if (rc)
    return tabq__err_from_plugin(err, rc, s->t->name, name);
  for (unsigned i = 0; i < *n; i++) /* the buffer may have moved while it grew */
    if (cand[i].id.type == TABQ_T_TEXT)
      cand[i].id.u.buf.ptr = scratch->p + cand[i].id_at;
  return TABQ_OK;
}

/* One run with every id: the rows come in any order and go to the slot of their id's place. */
static int fetch_list(tabq_subscription *s, tabq_pconn *c, const candidate *ids, unsigned n,
                      tabq_delivery **slots, bool *found, int64_t token, tabq_pconn *conn,
                      tabq_error *err) {
  tabq_broker *b = s->b;
  for (unsigned i = 0; i < n; i++) {
    if (ids[i].id.type != TABQ_T_INT)
      return tabq__err_set(err, TABQ_DECLARATION, s->t->name, "fetch",
                           "table %s: the fetch by a list reads integer ids; give the table a "
                           "fetch of its own by :id",
                           s->t->name);
    s->id_list[i] = ids[i].id.u.i;
  }
  tabq_bind v = {.now = tabq__now_us()};
  v.ids.type = TABQ_T_INT_LIST;
  v.ids.u.list.items = s->id_list;
  v.ids.u.list.count = n;
  v.group = s->queue_value;
  tabq_prepared *p = NULL;
  int rc = tabq__stmt_run(&b->stmts, b->drv, c, s->st[SQ_FETCH], &v, &p, err);
  if (rc)
    return rc;
  bool row = false;
  while (!(rc = b->drv->next(p, &row)) && row) {
    tabq_value id;
    if ((rc = b->drv->cell(p, (unsigned)s->proj.id, &id)))
      break;
    unsigned i = 0;
    while (i < n && (found[i] || !tabq__same_id(&id, &ids[i].id)))
      i++;
    if (i == n)
      continue; /* not asked for, or twice */
    if ((rc = tabq__claim_fill(slots[i], p, token, conn, err)))
      break;
    found[i] = true;
  }
  b->drv->reset(p);
  if (rc && rc != TABQ_NOMEM)
    tabq__err_from_plugin(err, rc, s->t->name, "fetch");
  return rc;
}

/* One run an id. */
static int fetch_each(tabq_subscription *s, tabq_pconn *c, const candidate *ids, unsigned n,
                      tabq_delivery **slots, bool *found, int64_t token, tabq_pconn *conn,
                      tabq_error *err) {
  tabq_broker *b = s->b;
  int rc = TABQ_OK;
  for (unsigned i = 0; i < n && !rc; i++) {
    tabq_bind v = {.id = ids[i].id, .now = tabq__now_us()};
    v.group = s->queue_value;
    tabq_prepared *p = NULL;
    if ((rc = tabq__stmt_run(&b->stmts, b->drv, c, s->st[SQ_FETCH], &v, &p, err)))
      break;
    bool row = false;
    if (!(rc = b->drv->next(p, &row)) && row &&
        !(rc = tabq__claim_fill(slots[i], p, token, conn, err)))
      found[i] = true;
    b->drv->reset(p);
    if (rc && rc != TABQ_NOMEM)
      tabq__err_from_plugin(err, rc, s->t->name, "fetch");
  }
  return rc;
}

/* A claimed id the fetch found no row for cannot be delivered: the decode policy settles it, as
 * a row that does not read (SPEC 7), so it is not claimed again and again. Its statements run
 * by id in the claim's transaction. */
static int settle_missing(tabq_subscription *s, tabq_pconn *c, const candidate *k, int64_t token,
                          tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_outcome o = tabq__decode_outcome(s);
  tabq_bind v = {.id = k->id, .token = token, .now = tabq__now_us()};
  v.group = s->queue_value;
  v.dest = s->dest_value;
  v.retry_at = v.now + (int64_t)o.delay_ms * 1000;
  const char *what = o.kind == TABQ_OUTCOME_RETRY_AFTER   ? "retried after a delay"
                     : o.kind == TABQ_OUTCOME_DEAD_LETTER ? "dead-lettered"
                                                          : "dropped";
  char id[TABQ__ID_SHOWN];
  tabq__logf(&b->log, TABQ_LOG_WARN, "table %s: the fetch found no row for claimed id %s; it is %s",
             s->t->name, tabq__id_shown(&k->id, id), what);
  tabq__count(&s->counts, TABQ__N_DECODE_FAILED, 1);
  uint64_t changed = 0;
  if (o.kind == TABQ_OUTCOME_RETRY_AFTER)
    return tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_RETRY_AFTER], &v, &changed, err);
  if (o.kind != TABQ_OUTCOME_DEAD_LETTER)
    return tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_DISCARD], &v, &changed, err);
  if (!s->dead_letter_table)
    return tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_GROUP], &v, &changed, err);
  int rc = tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_COPY], &v, &changed, err);
  return rc ? rc : tabq__stmt_change(&b->stmts, b->drv, c, s->st[SQ_DL_REMOVE], &v, &changed, err);
}

int tabq__fetch_into(tabq_subscription *s, tabq_pconn *c, const candidate *ids, unsigned n,
                     tabq_delivery **slots, unsigned *got, int64_t token, tabq_pconn *conn,
                     tabq_error *err) {
  *got = 0;
  if (!n)
    return TABQ_OK;
  bool found[n];
  memset(found, 0, sizeof found);
  int rc =
      (s->fetch_by_list ? fetch_list : fetch_each)(s, c, ids, n, slots, found, token, conn, err);
  /* In claim order, the slots with a row first; the others leave work. */
  tabq_delivery *empty[n];
  unsigned nempty = 0;
  for (unsigned i = 0; i < n; i++) {
    if (!rc && !found[i])
      rc = settle_missing(s, c, &ids[i], token, err);
    if (found[i])
      slots[(*got)++] = slots[i];
    else
      empty[nempty++] = slots[i];
  }
  memcpy(slots + *got, empty, nempty * sizeof *empty);
  if (rc) {
    tabq__delivery_unclaim(slots, n);
    *got = 0;
  } else {
    tabq__delivery_unclaim(slots + *got, nempty);
  }
  return rc;
}

int tabq__refetch(tabq_subscription *s, tabq_pconn *c, tabq_delivery **slots, unsigned *got,
                  int64_t token, tabq_pconn *conn, tabq_error *err) {
  /* The ids are copied out of the rows the fetch overwrites, into space of the refetch's own:
   * the advisory claim still walks its candidates. */
  unsigned n = *got;
  tabq_buf *buf = &s->refetch_buf;
  buf->len = 0;
  for (unsigned i = 0; i < n; i++) {
    candidate *k = &s->refetch[i];
    const tabq_value *id = &slots[i]->id;
    size_t len = id->type == TABQ_T_TEXT ? id->u.buf.len : 0;
    if (tabq__buf_reserve(buf, buf->len + len + 1))
      return tabq__err_set(err, TABQ_NOMEM, s->t->name, "fetch", "cannot hold the claimed ids");
    k->id = *id;
    k->id_at = buf->len;
    k->key_at = k->key_len = 0;
    if (len)
      memcpy(buf->p + k->id_at, id->u.buf.ptr, len);
    buf->p[k->id_at + len] = '\0';
    buf->len += len + 1;
  }
  for (unsigned i = 0; i < n; i++)
    if (s->refetch[i].id.type == TABQ_T_TEXT)
      s->refetch[i].id.u.buf.ptr = buf->p + s->refetch[i].id_at;
  return tabq__fetch_into(s, c, s->refetch, n, slots, got, token, conn, err);
}

/* Runs `take` on each claimed id (the lease form leases it, the row lock form counts its
 * attempt), keeping those it changed: a lease another claim holds is passed over. */
static int take_ids(tabq_subscription *s, tabq_pconn *c, unsigned take, unsigned *n, int64_t now,
                    int64_t lease_until, tabq_error *err) {
  tabq_broker *b = s->b;
  if (take == TABQ_NO_STMT)
    return TABQ_OK; /* a row lock table without an attempt column */
  unsigned kept = 0;
  for (unsigned i = 0; i < *n; i++) {
    tabq_bind v = {.id = s->spaces[0].candidates[i].id, .now = now, .lease_until = lease_until};
    uint64_t changed = 0;
    int rc = tabq__stmt_change(&b->stmts, b->drv, c, take, &v, &changed, err);
    if (rc)
      return rc;
    if (changed == 1)
      s->spaces[0].candidates[kept++] = s->spaces[0].candidates[i];
  }
  *n = kept;
  return TABQ_OK;
}

int tabq__claim_by_ids(tabq_subscription *s, tabq_delivery **slots, unsigned limit, unsigned *got,
                       const tabq_by_ids *how, tabq_error *err) {
  tabq_broker *b = s->b;
  *got = 0;
  tabq_pconn *c = NULL;
  bool mine = true;
  int rc = tabq__claim_begin(s, &c, &mine, err);
  if (!c)
    return rc;
  tabq_bind v = {.now = how->now, .limit = limit, .lease_until = how->lease_until};
  v.group = s->queue_value;
  unsigned n = 0;
  if (!rc && mine)
    rc = tabq__ids_read(s, &s->spaces[0], c, s->st[SQ_CLAIM], &v, false, &n, err);
  if (n > limit)
    n = limit;
  if (!rc && n)
    rc = take_ids(s, c, how->take, &n, v.now, v.lease_until, err);
  if (!rc && n)
    rc = tabq__fetch_into(s, c, s->spaces[0].candidates, n, slots, got, v.lease_until,
                          how->keep_txn ? c : NULL, err);
  /* A claim that keeps its transaction for its rows' settlement (row lock) hands it over. */
  if (!rc && how->keep_txn && *got) {
    tabq__count_claimed(slots, *got);
    return TABQ_OK;
  }
  if ((rc = tabq__txn_end(b, s->t->name, c, rc, err))) {
    tabq__delivery_unclaim(slots, *got);
    *got = 0;
  }
  tabq__pool_release(&b->pool, c);
  tabq__count_claimed(slots, *got);
  return rc;
}
