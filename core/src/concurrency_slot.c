/* Concurrency limits across processes (tabq/concurrency.h, docs/concurrency.md): the slots
 * table's statements, the keeper that moves this broker's slots' expiry, and what a limited
 * subscription does around each handler call: take one of the key's N slots (an insert that
 * writes nothing where the slot is held), clear the key's expired slots and try once more where
 * every one is held, and give the slot back once the handler returned. A subscription without a
 * limit tests one flag. The statements are built in the core with the dialect's quoting and
 * placeholders, and its insert (ON CONFLICT DO NOTHING, INSERT IGNORE), so they serve every
 * database and form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>
#include <unistd.h>

#include "clock.h"
#include "concurrency_int.h"
#include "error.h"

/* A statement on the slots table tries this many times: MariaDB may report a deadlock between
 * concurrent inserts into, and deletes from, one index range. */
#define TRIES 3

/* ---- Building ----------------------------------------------------------------------------- */

typedef struct sql {
  tabq_stmt st;
  const tabq_dialect_v1 *d;
} sql;

static void sql_init(sql *q, tabq_broker *b) {
  tabq_sql_init(&q->st, b->host);
  q->d = b->plugin.plugin->dialect;
}

static void raw(sql *q, const char *text) {
  tabq_sql_raw(&q->st, text);
}

static void name(sql *q, const char *n) {
  if (!q->st.status && q->d->quote(&q->st, n))
    q->st.status = TABQ_INVALID;
}

static void param(sql *q, tabq_param id) {
  if (q->st.status)
    return;
  if (!q->d->placeholder)
    q->st.status = TABQ_DIALECT; /* a dialect before ABI 1.1: no placeholders to render */
  else if (q->d->placeholder(&q->st, id))
    q->st.status = TABQ_INVALID;
}

/* Registers the statement built (its text taken) under *id; frees it either way. */
static int put(tabq_registry *r, sql *q, const char *what, const char *table, unsigned *id,
               tabq_error *err) {
  int rc = q->st.status;
  if (rc)
    rc = tabq__err_set(
        err, rc, table, what, "table %s: cannot build the %s statement (%s)", table, what,
        rc == TABQ_DIALECT ? "the dialect renders no placeholders" : tabq_strerror(rc));
  else
    rc = tabq__stmt_register(r, &q->st, what, table, id, err);
  tabq_sql_free(&q->st);
  return rc;
}

int tabq__conc_check(tabq_concurrency_slots *c, const char *call, tabq_error *err) {
  const char *const names[] = {c->name, c->key_column, c->holder_column, c->expires_column};
  const char *const members[] = {"name", "key_column", "holder_column", "expires_column"};
  const char *table = c->name && *c->name ? c->name : NULL;
  for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
    if (!names[i] || !*names[i])
      return tabq__err_set(err, TABQ_INVALID, table, "concurrency_slots",
                           "%s: the slots table%s%s has no %s: describe the %s", call,
                           table ? " " : "", table ? table : "", members[i], members[i]);
  if (c->ttl_ms && c->ttl_ms < TABQ__CONC_MIN_TTL_MS)
    return tabq__err_set(err, TABQ_INVALID, table, "concurrency_slots",
                         "%s: the slots table %s: ttl_ms %u is under %u ms (0: the default, "
                         "30,000): the keeper moves the expiry every ttl/3",
                         call, table, c->ttl_ms, TABQ__CONC_MIN_TTL_MS);
  return TABQ_OK;
}

int tabq__conc_build(tabq_broker *b, tabq_conc_state *st, tabq_error *err) {
  const tabq_concurrency_slots *c = &st->c;
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  snprintf(st->holder, sizeof st->holder, "%s/%ld/%llx", host[0] ? host : "host", (long)getpid(),
           (unsigned long long)(tabq__now_us() ^ (uint64_t)(uintptr_t)st));
  st->ttl_us = (int64_t)(c->ttl_ms ? c->ttl_ms : TABQ__CONC_DEFAULT_TTL_MS) * 1000;
  /* The take: the dialect's insert of a table whose unique key is the slot, which writes
   * nothing where the slot is held (ON CONFLICT DO NOTHING, INSERT IGNORE). */
  tabq_col data[2] = {{.name = c->holder_column}, {.name = c->expires_column}};
  tabq_table as = {.size = sizeof(tabq_table)};
  as.name = c->name;
  as.unique_key.name = c->key_column;
  as.data = data;
  as.ndata = 2;
  tabq_build build = {.table = &as};
  int rc = tabq__stmt_build(&b->stmts, b->host, b->plugin.plugin->dialect->insert, &build,
                            "concurrency_take", &st->take, err);
  /* The give back: "DELETE FROM slots WHERE key = :unique_key AND holder = :data0". */
  sql q;
  if (!rc) {
    sql_init(&q, b);
    raw(&q, "DELETE FROM ");
    name(&q, c->name);
    raw(&q, " WHERE ");
    name(&q, c->key_column);
    raw(&q, " = ");
    param(&q, TABQ_P_UNIQUE_KEY);
    raw(&q, " AND ");
    name(&q, c->holder_column);
    raw(&q, " = ");
    param(&q, TABQ_P_DATA);
    rc = put(&b->stmts, &q, "concurrency_give_back", c->name, &st->give, err);
  }
  /* The keeper's: "UPDATE slots SET expires = :data1 WHERE holder = :data0". */
  if (!rc) {
    sql_init(&q, b);
    raw(&q, "UPDATE ");
    name(&q, c->name);
    raw(&q, " SET ");
    name(&q, c->expires_column);
    raw(&q, " = ");
    param(&q, TABQ_P_DATA + 1);
    raw(&q, " WHERE ");
    name(&q, c->holder_column);
    raw(&q, " = ");
    param(&q, TABQ_P_DATA);
    rc = put(&b->stmts, &q, "concurrency_keep", c->name, &st->keep, err);
  }
  tabq_pconn *pc;
  if (!rc && !(rc = tabq__pool_acquire(&b->pool, &pc, err))) {
    tabq_prepared *p;
    unsigned ids[] = {st->take, st->give, st->keep};
    for (size_t i = 0; !rc && i < sizeof ids / sizeof ids[0]; i++)
      rc = tabq__stmt_prepare(&b->stmts, b->drv, pc, ids[i], &p, err);
    tabq__pool_release(&b->pool, pc);
  }
  return rc;
}

/* ---- The keeper --------------------------------------------------------------------------- */

/* Runs a statement of the slots table, tried again where it fails (a deadlock); *changed. */
static int run(tabq_broker *b, tabq_pconn *c, unsigned id, const tabq_bind *v, uint64_t *changed,
               tabq_error *err) {
  int rc = TABQ_BACKEND;
  for (int i = 0; rc && i < TRIES; i++) {
    *changed = 0;
    rc = tabq__stmt_change(&b->stmts, b->drv, c, id, v, changed, err);
    if (rc == TABQ_NOMEM || rc == TABQ_CLOSED || rc == TABQ_POOL_TIMEOUT)
      break;
  }
  return rc;
}

static void *keeper_main(void *arg) {
  tabq_broker *b = arg;
  tabq_conc_state *st = b->conc;
  tabq__log_enter(&b->log);
  bool failing = false;
  pthread_mutex_lock(&st->mu);
  while (!st->stop) {
    struct timespec until = tabq__deadline_ms(tabq__mono_ms() + st->ttl_us / 3000);
    pthread_cond_timedwait(&st->cv, &st->mu, &until);
    if (st->stop)
      break;
    if (!atomic_load(&st->held))
      continue;
    pthread_mutex_unlock(&st->mu);
    tabq_value data[2] = {tabq_text(st->holder, strlen(st->holder)),
                          tabq_time(tabq__now_us() + st->ttl_us)};
    tabq_bind v = {.data = data, .ndata = 2};
    tabq_error err;
    tabq_pconn *c;
    uint64_t changed;
    int rc = tabq__pool_acquire(&b->pool, &c, &err);
    if (!rc) {
      rc = run(b, c, st->keep, &v, &changed, &err);
      tabq__pool_release(&b->pool, c);
    }
    if (rc && !failing)
      tabq__logf(&b->log, TABQ_LOG_WARN,
                 "concurrency slots table %s: the keeper could not move its slots' expiry (%s): "
                 "%s; they free themselves once it passes",
                 st->c.name, tabq_code_name(err.code), err.message);
    else if (!rc && failing)
      tabq__logf(&b->log, TABQ_LOG_INFO,
                 "concurrency slots table %s: the keeper moves its slots' expiry again",
                 st->c.name);
    failing = rc != TABQ_OK;
    pthread_mutex_lock(&st->mu);
  }
  pthread_mutex_unlock(&st->mu);
  return NULL;
}

void tabq__conc_init(tabq_conc_state *st) {
  pthread_mutex_init(&st->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&st->cv, &attr);
  pthread_condattr_destroy(&attr);
}

/* The keeper reads b->conc: it starts once the state is the broker's. */
static int keeper_launch(tabq_broker *b) {
  tabq_conc_state *st = b->conc;
  if (!st || st->started)
    return TABQ_OK;
  if (pthread_create(&st->keeper, NULL, keeper_main, b))
    return TABQ_IO;
  st->started = true;
  return TABQ_OK;
}

void tabq__conc_stop(tabq_broker *b) {
  tabq_conc_state *st = b->conc;
  if (!st || !st->started)
    return;
  pthread_mutex_lock(&st->mu);
  st->stop = true;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  pthread_join(st->keeper, NULL);
  st->started = false;
}

void tabq__conc_state_free(tabq_conc_state *st) {
  if (!st)
    return;
  pthread_mutex_destroy(&st->mu);
  pthread_cond_destroy(&st->cv);
  free(st->names);
  free(st);
}

void tabq__conc_free(tabq_broker *b) {
  tabq__conc_stop(b);
  tabq__conc_state_free(b->conc);
  b->conc = NULL;
}

/* ---- A subscription ----------------------------------------------------------------------- */

static int refuse(tabq_subscription *s, const char *rule, const char *detail, tabq_error *err) {
  return tabq__err_set(err, TABQ_INVALID, s->t->name, "concurrency",
                       "subscription to table %s breaks the concurrency rule (%s): %s", s->t->name,
                       rule, detail);
}

/* The key's cell in the projection: a role the claim projects, or a row mode data column. */
static int key_cell(tabq_subscription *s, const char *key, int *cell, tabq_error *err) {
  const tabq_table *t = s->t;
  *cell = -1;
  if (t->partition_key.name && !strcmp(t->partition_key.name, key))
    *cell = s->proj.partition_key;
  else if (t->group.name && !strcmp(t->group.name, key))
    *cell = s->proj.group;
  else if (t->id.name && !strcmp(t->id.name, key))
    *cell = s->proj.id;
  for (size_t i = 0; *cell < 0 && i < t->ndata; i++)
    if (t->data[i].name && !strcmp(t->data[i].name, key))
      *cell = s->proj.data0 >= 0 ? s->proj.data0 + (int)i : -1;
  if (*cell >= 0)
    return TABQ_OK;
  char detail[512];
  snprintf(detail, sizeof detail,
           "concurrency_key '%s' is no column the claim reads: name the partition key, the group "
           "or a row mode data column of the table (the key travels with the claimed row)",
           key);
  return refuse(s, "the key is a column of the table", detail, err);
}

/* "UPDATE t SET retry_after = :retry_at[, attempt = attempt - 1][, locked_until = NULL] WHERE
 * id = :id[ AND locked_until = :token]": the row back, due a poll interval on, its attempt as
 * it was before the claim counted it; in the lease form guarded by the delivery's token. */
static int build_step_aside(tabq_subscription *s, tabq_error *err) {
  const tabq_table *t = s->t;
  bool leased = s->form == TABQ_FORM_LEASE && t->locked_until.name;
  sql q;
  sql_init(&q, s->b);
  raw(&q, "UPDATE ");
  name(&q, t->name);
  raw(&q, " SET ");
  name(&q, t->retry_after.name);
  raw(&q, " = ");
  param(&q, TABQ_P_RETRY_AT);
  if (t->attempt.name) {
    raw(&q, ", ");
    name(&q, t->attempt.name);
    raw(&q, " = ");
    name(&q, t->attempt.name);
    raw(&q, " - 1");
  }
  if (leased) {
    raw(&q, ", ");
    name(&q, t->locked_until.name);
    raw(&q, " = NULL");
  }
  raw(&q, " WHERE ");
  name(&q, t->id.name);
  raw(&q, " = ");
  param(&q, TABQ_P_ID);
  if (leased) {
    raw(&q, " AND ");
    name(&q, t->locked_until.name);
    raw(&q, " = ");
    param(&q, TABQ_P_TOKEN);
  }
  return put(s->reg, &q, "step_aside", t->name, &s->st[SQ_STEP_ASIDE], err);
}

/* "DELETE FROM slots WHERE expires < :now AND key IN (:data0, ..., :dataN-1)" */
static int build_clear(tabq_subscription *s, tabq_error *err) {
  const tabq_concurrency_slots *c = &s->b->conc->c;
  sql q;
  sql_init(&q, s->b);
  raw(&q, "DELETE FROM ");
  name(&q, c->name);
  raw(&q, " WHERE ");
  name(&q, c->expires_column);
  raw(&q, " < ");
  param(&q, TABQ_P_NOW);
  raw(&q, " AND ");
  name(&q, c->key_column);
  raw(&q, " IN (");
  for (unsigned i = 0; i < s->conc_limit; i++) {
    if (i)
      raw(&q, ", ");
    param(&q, (tabq_param)(TABQ_P_DATA + i));
  }
  raw(&q, ")");
  return put(s->reg, &q, "concurrency_clear", c->name, &s->st[SQ_SLOT_CLEAR], err);
}

int tabq__conc_sub_open(tabq_subscription *s, tabq_error *err) {
  const tabq_subscription_options *o = &s->o;
  s->conc_cell = -1;
  if (!o->concurrency_limit) {
    if (o->concurrency_key)
      return refuse(s, "a key needs a limit",
                    "concurrency_key is given with concurrency_limit 0 (no limit); give the "
                    "limit, or no key",
                    err);
    return TABQ_OK;
  }
  char detail[256];
  if (o->concurrency_limit > TABQ__CONC_MAX_LIMIT) {
    snprintf(detail, sizeof detail, "concurrency_limit %u is over %u", o->concurrency_limit,
             TABQ__CONC_MAX_LIMIT);
    return refuse(s, "at most 32 slots a key", detail, err);
  }
  pthread_mutex_lock(&s->b->mu);
  bool slots = s->b->conc != NULL;
  pthread_mutex_unlock(&s->b->mu);
  if (!slots && s->checking)
    return TABQ_OK; /* a statement check: the slots table is the running broker's */
  if (!slots)
    return refuse(s, "a limit needs the slots table",
                  "concurrency_limit is set but the broker has no slots table; give it one with "
                  "tabq_set_concurrency_slots before subscribing",
                  err);
  if (o->batch_handler)
    return refuse(s, "a handler of one delivery",
                  "a limit counts deliveries in work one by one; a batch handler's rows are "
                  "claimed and handled together",
                  err);
  if (!s->t->retry_after.name)
    return refuse(s, "a limit needs a retry_after column",
                  "a row whose key has every slot held steps aside until a poll interval on, "
                  "which the table holds in its retry_after column",
                  err);
  int rc = o->concurrency_key ? key_cell(s, o->concurrency_key, &s->conc_cell, err) : TABQ_OK;
  if (rc)
    return rc;
  /* The slots' names begin with the table and the column, or the table and the queue. */
  const char *what = o->concurrency_key ? o->concurrency_key : s->queue ? s->queue : "";
  size_t n = strlen(s->t->name) + strlen(what) + 3;
  if (!(s->conc_prefix = malloc(n)))
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, "concurrency", "cannot copy the key");
  snprintf(s->conc_prefix, n, o->concurrency_key ? "%s.%s=" : "%s/%s", s->t->name, what);
  s->conc_limit = o->concurrency_limit;
  rc = build_step_aside(s, err);
  if (!rc)
    rc = build_clear(s, err);
  if (rc)
    s->conc_limit = 0;
  return rc;
}

void tabq__conc_sub_free(tabq_subscription *s) {
  free(s->conc_prefix);
  s->conc_prefix = NULL;
  for (unsigned i = 0; s->slots && i < s->nslots; i++)
    tabq__buf_free(&s->slots[i].slot);
}

/* ---- Around a handler call ---------------------------------------------------------------- */

/* d->slot = "<prefix><value>#", its length before the index in *base; false where the row is
 * not limited (a NULL key) or the name could not be made. */
static bool slot_base(tabq_delivery *d, size_t *base) {
  tabq_subscription *s = d->sub;
  char num[32];
  const char *v = "";
  size_t vlen = 0;
  if (s->conc_cell >= 0) {
    const tabq_value *cell = &d->cells[s->conc_cell];
    if (cell->type == TABQ_T_NULL)
      return false;
    if (tabq__has_buffer(cell->type)) {
      v = cell->u.buf.ptr;
      vlen = cell->u.buf.len;
    } else if (cell->type == TABQ_T_INT) {
      vlen = (size_t)snprintf(num, sizeof num, "%lld", (long long)cell->u.i);
      v = num;
    } else {
      vlen = (size_t)snprintf(num, sizeof num, "%.17g", cell->u.r);
      v = num;
    }
  }
  size_t plen = strlen(s->conc_prefix);
  if (tabq__buf_reserve(&d->slot, plen + vlen + 16))
    return false;
  memcpy(d->slot.p, s->conc_prefix, plen);
  memcpy(d->slot.p + plen, v, vlen);
  d->slot.p[plen + vlen] = '#';
  *base = plen + vlen + 1;
  return true;
}

bool tabq__conc_take(tabq_delivery *d) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_conc_state *st = b->conc;
  d->slot_held = false;
  size_t base;
  if (!slot_base(d, &base))
    return true; /* not limited (or no memory to name its slot: handled as it would be) */
  tabq_error err;
  tabq_pconn *c;
  if (tabq__pool_acquire(&b->pool, &c, &err)) {
    tabq__logf(&b->log, TABQ_LOG_WARN,
               "table %s: no connection to take a concurrency slot (%s); the row steps aside",
               s->t->name, err.message);
    return false;
  }
  unsigned n = s->conc_limit;
  tabq_value data[2] = {tabq_text(st->holder, strlen(st->holder)), tabq_null()};
  tabq_bind v = {.data = data, .ndata = 2};
  int rc = TABQ_OK;
  for (int round = 0; round < 2 && !d->slot_held && !rc; round++) {
    if (round) { /* every slot held: clear the expired ones, then once more */
      char names[TABQ__CONC_MAX_LIMIT][24];
      tabq_buf keys = {0};
      tabq_value vals[TABQ__CONC_MAX_LIMIT];
      if (tabq__buf_reserve(&keys, n * (base + 24))) {
        rc = TABQ_NOMEM;
        break;
      }
      for (unsigned i = 0; i < n; i++) {
        int k = snprintf(names[i], sizeof names[i], "%u", i);
        char *at = keys.p + i * (base + 24);
        memcpy(at, d->slot.p, base);
        memcpy(at + base, names[i], (size_t)k);
        vals[i] = tabq_text(at, base + (size_t)k);
      }
      tabq_bind cv = {.now = tabq__now_us(), .data = vals, .ndata = n};
      uint64_t changed;
      rc = run(b, c, s->st[SQ_SLOT_CLEAR], &cv, &changed, &err);
      tabq__buf_free(&keys);
      if (rc || !changed)
        break; /* nothing expired: every slot is held */
    }
    for (unsigned i = 0; i < n && !rc; i++) {
      int k = snprintf(d->slot.p + base, 16, "%u", i);
      d->slot.len = base + (size_t)k;
      v.unique_key = tabq_text(d->slot.p, d->slot.len);
      data[1] = tabq_time(tabq__now_us() + st->ttl_us);
      uint64_t changed;
      rc = run(b, c, st->take, &v, &changed, &err);
      if (!rc && changed) {
        d->slot_held = true;
        atomic_fetch_add(&st->held, 1);
        break;
      }
    }
  }
  tabq__pool_release(&b->pool, c);
  if (rc)
    tabq__logf(&b->log, TABQ_LOG_WARN,
               "table %s: the concurrency slots table %s failed (%s): %s; the row steps aside",
               s->t->name, st->c.name, tabq_code_name(err.code), err.message);
  return d->slot_held;
}

void tabq__conc_give_back(tabq_delivery *d) {
  if (!d->slot_held)
    return;
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_conc_state *st = b->conc;
  d->slot_held = false;
  atomic_fetch_sub(&st->held, 1);
  tabq_value data[1] = {tabq_text(st->holder, strlen(st->holder))};
  tabq_bind v = {.unique_key = tabq_text(d->slot.p, d->slot.len), .data = data, .ndata = 1};
  tabq_error err;
  tabq_pconn *c;
  uint64_t changed;
  int rc = tabq__pool_acquire(&b->pool, &c, &err);
  if (!rc) {
    rc = run(b, c, st->give, &v, &changed, &err);
    tabq__pool_release(&b->pool, c);
  }
  if (rc)
    tabq__logf(&b->log, TABQ_LOG_WARN,
               "table %s: concurrency slot %.*s could not be given back (%s): %s; it frees itself "
               "once its expiry passes",
               s->t->name, (int)d->slot.len, d->slot.p, tabq_code_name(err.code), err.message);
}

int tabq__conc_launch(tabq_broker *b, tabq_error *err) {
  if (keeper_launch(b))
    return tabq__err_set(err, TABQ_IO, b->conc->c.name, "concurrency_slots",
                         "cannot start the concurrency slots' keeper thread");
  return TABQ_OK;
}
