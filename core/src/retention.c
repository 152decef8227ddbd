/* Retention (tabq/retention.h, docs/retention.md): the broker's pruner, one thread that runs a
 * round per retained table every interval. A round takes one pooled connection; where the
 * database has session locks it first tries the table's election key there without waiting
 * and skips the round when another session holds it; then it deletes each rule's old rows in
 * batches (prune.c), each batch its own transaction on that connection, and releases the key.
 * Tables are only ever added while the broker lives, and freed by tabq_close. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/retention.h>
#include <tabq/sys/sql.h>

#include "clock.h"
#include "engine.h"
#include "error.h"
#include "prune.h"
#include "retention_int.h"
#include "sized.h"
#include "table.h"

#define DEFAULT_BATCH 500
#define MAX_BATCH 100000
#define DEFAULT_INTERVAL_MS 60000
#define MIN_INTERVAL_MS 10
#define MAX_AGE_MS 10000000000000LL /* about 317 years: the cutoff stays far from overflow */
#define KEY_MAX 64                  /* MySQL's GET_LOCK names: at most 64 characters */

/* One delete: the finished rows, or the dead letters of one group or one table. */
typedef struct rule {
  const char *table; /* the table deleted from (the retained one or a dead letter table) */
  char what[96];     /* for the log: "finished rows", "dead letters of group X" */
  bool dead;
  int64_t age_ms;
  tabq_stmt del;
  char *group;      /* a dead letter group: bound as DEST */
  char *table_copy; /* a dead letter table: `table` points here */
} rule;

typedef struct retained {
  char *name;
  char key[KEY_MAX + 1];
  char begin_sql[128];
  rule *rules;
  size_t nrules;
  unsigned batch, interval_ms;
  int64_t next_ms; /* the next round, on the monotonic clock (under the retainer's mu) */
  _Atomic uint64_t rounds, skipped, batches, processed, dead, failures;
  struct retained *next;
} retained;

struct tabq_retainer {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  atomic_bool stop;
  pthread_t thread;
  retained *list; /* newest first */
  /* The election: the dialect's advisory lock and unlock (KEY), where the database keeps session
   * locks; else every process prunes (SQLite). */
  bool elect;
  tabq_stmt lock, unlock;
};

/* ---- One round ------------------------------------------------------------------------------ */

static bool stopping(const tabq_retainer *r) {
  return atomic_load(&r->stop);
}

/* The rule's rows older than its age, batch after batch until one comes back short. */
static int prune_rule(tabq_broker *b, tabq_retainer *r, retained *e, rule *u, tabq_pconn *c,
                      tabq_error *err) {
  tabq_prune_vals v = {.cutoff = tabq__now_us() - u->age_ms * 1000, .limit = e->batch};
  if (u->group)
    v.dest = tabq_text(u->group, strlen(u->group));
  int rc = TABQ_OK;
  for (bool more = true; more && !rc && !stopping(r);) {
    uint64_t deleted = 0;
    rc = tabq__prune_batch(b, c, e->begin_sql, &u->del, &v, u->table, &deleted, err);
    if (rc)
      break;
    atomic_fetch_add(&e->batches, 1);
    atomic_fetch_add(u->dead ? &e->dead : &e->processed, deleted);
    more = deleted == e->batch;
  }
  return rc;
}

/* Tries the election key (*held when this session holds it now). */
static int elect(tabq_broker *b, tabq_retainer *r, retained *e, tabq_pconn *c, bool *held,
                 tabq_error *err) {
  tabq_prune_vals v = {.key = tabq_text(e->key, strlen(e->key))};
  int64_t answer = 0;
  int rc = tabq__prune_run(b, c, &r->lock, &v, e->name, "retain_lock", NULL, &answer, err);
  *held = !rc && answer == 1;
  return rc;
}

/* Releases the key: false when the database did not confirm it (the session then ends). */
static bool release(tabq_broker *b, tabq_retainer *r, retained *e, tabq_pconn *c) {
  tabq_prune_vals v = {.key = tabq_text(e->key, strlen(e->key))};
  int64_t answer = 0;
  tabq_error err;
  int rc = tabq__prune_run(b, c, &r->unlock, &v, e->name, "retain_unlock", NULL, &answer, &err);
  if (rc)
    tabq__logf(&b->log, TABQ_LOG_WARN,
               "table %s: retention: releasing the election key failed (%s): the connection is "
               "closed, which releases it",
               e->name, err.message);
  return !rc && answer == 1;
}

static void run_round(tabq_broker *b, tabq_retainer *r, retained *e) {
  tabq_error err;
  tabq_pconn *c = NULL; /* stays NULL without a connection: nothing to unlock or give back */
  int rc = tabq__pool_acquire(&b->pool, &c, &err);
  bool held = true;
  if (!rc && r->elect)
    rc = elect(b, r, e, c, &held, &err);
  if (!rc && !held) {
    atomic_fetch_add(&e->skipped, 1);
    tabq__pool_release(&b->pool, c);
    return;
  }
  if (!rc) {
    atomic_fetch_add(&e->rounds, 1);
    for (size_t i = 0; !rc && i < e->nrules && !stopping(r); i++)
      if ((rc = prune_rule(b, r, e, &e->rules[i], c, &err)))
        tabq__logf(&b->log, TABQ_LOG_WARN,
                   "table %s: retention: deleting %s failed (%s: %s); the next round tries again",
                   e->name, e->rules[i].what, tabq_code_name(err.code), err.message);
  } else {
    tabq__logf(&b->log, TABQ_LOG_WARN,
               "table %s: retention: a round could not start (%s: %s); the next one tries again",
               e->name, tabq_code_name(err.code), err.message);
  }
  if (rc)
    atomic_fetch_add(&e->failures, 1);
  if (!c)
    return;
  if (r->elect && held && !release(b, r, e, c))
    tabq__pool_discard(&b->pool, c);
  else
    tabq__pool_release(&b->pool, c);
}

static void *pruner(void *arg) {
  tabq_broker *b = arg;
  tabq_retainer *r = b->retainer;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  pthread_mutex_lock(&r->mu);
  while (!stopping(r)) {
    int64_t now = tabq__mono_ms(), next = INT64_MAX;
    retained *due = NULL;
    for (retained *e = r->list; e && !due; e = e->next)
      if (e->next_ms <= now)
        due = e;
      else if (e->next_ms < next)
        next = e->next_ms;
    if (!due) {
      if (next == INT64_MAX) {
        pthread_cond_wait(&r->cv, &r->mu);
      } else {
        struct timespec until = tabq__deadline_ms(next);
        pthread_cond_timedwait(&r->cv, &r->mu, &until);
      }
      continue;
    }
    due->next_ms = now + due->interval_ms;
    pthread_mutex_unlock(&r->mu);
    run_round(b, r, due);
    pthread_mutex_lock(&r->mu);
  }
  pthread_mutex_unlock(&r->mu);
  tabq__log_leave(outer);
  return NULL;
}

/* ---- Registering a table ------------------------------------------------------------------- */

static void retained_free(retained *e) {
  if (!e)
    return;
  for (size_t i = 0; i < e->nrules; i++) {
    tabq_sql_free(&e->rules[i].del);
    free(e->rules[i].group);
    free(e->rules[i].table_copy);
  }
  free(e->rules);
  free(e->name);
  free(e);
}

/* 64-bit FNV-1a: a long key's stand-in. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* "tabq.retain:DB.TABLE" (without the database where the driver tells none), or "tabq.retain#"
 * and its hash when that is longer than a MySQL lock name may be. */
static void election_key(const char *database, const char *table, char *out) {
  char full[PATH_MAX + 256];
  snprintf(full, sizeof full, "tabq.retain:%s%s%s", database, database[0] ? "." : "", table);
  if (strlen(full) <= KEY_MAX)
    memcpy(out, full, strlen(full) + 1);
  else
    snprintf(out, KEY_MAX + 1, "tabq.retain#%016" PRIx64, fnv1a(full));
}

TABQ_PRINTF_(3, 4)
static int refuse(tabq_error *err, const char *table, const char *fmt, ...) {
  char why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return tabq__err_set(err, TABQ_INVALID, table, "retain", "table %s: retention: %s", table, why);
}

static int check_names(const char *table, const char *const *names, size_t n, const char *field,
                       tabq_error *err) {
  if (n && !names)
    return refuse(err, table, "%s is NULL with n%s %zu", field, field, n);
  for (size_t i = 0; i < n; i++)
    if (!names[i] || !names[i][0])
      return refuse(err, table, "%s[%zu] is %s", field, i, names[i] ? "empty" : "NULL");
  return TABQ_OK;
}

int tabq__retention_check(const tabq_table *t, const tabq_retention_options *o,
                          bool destinations_later, tabq_error *err) {
  const char *n = t->name;
  size_t ndest = o->ndead_letter_groups + o->ndead_letter_tables;
  if (o->processed_age_ms < 0 || o->processed_age_ms > MAX_AGE_MS)
    return refuse(err, n,
                  "processed_age_ms is %" PRId64 "; it is 0 (finished rows kept) or an age "
                  "up to %lld ms",
                  o->processed_age_ms, MAX_AGE_MS);
  if (o->dead_letter_age_ms < 0 || o->dead_letter_age_ms > MAX_AGE_MS)
    return refuse(err, n,
                  "dead_letter_age_ms is %" PRId64 "; it is 0 (dead letters kept) or an "
                  "age up to %lld ms",
                  o->dead_letter_age_ms, MAX_AGE_MS);
  if (!o->processed_age_ms && !o->dead_letter_age_ms)
    return refuse(err, n,
                  "neither processed_age_ms nor dead_letter_age_ms is set: nothing would "
                  "ever be deleted");
  if (o->processed_age_ms && !t->processed_at.name)
    return refuse(err, n,
                  "processed_age_ms needs a processed_at column: the table has none (its "
                  "acks delete the rows)");
  if (o->dead_letter_age_ms && !ndest && !destinations_later)
    return refuse(err, n,
                  "dead_letter_age_ms needs a dead letter destination "
                  "(dead_letter_groups or dead_letter_tables)");
  if (destinations_later && ndest)
    return refuse(err, n,
                  "an app's dead letter destinations are its subscriptions': the options "
                  "name none");
  if (!o->dead_letter_age_ms && ndest)
    return refuse(err, n, "dead letter destinations are given without dead_letter_age_ms");
  if (o->dead_letter_age_ms && !t->retry_after.name)
    return refuse(err, n,
                  "dead_letter_age_ms needs a retry_after column: a dead letter's age is "
                  "its retry_after, and the table has none");
  if (o->ndead_letter_groups && !t->group.name)
    return refuse(err, n, "dead_letter_groups needs a group column: the table has none");
  int rc = check_names(n, o->dead_letter_groups, o->ndead_letter_groups, "dead_letter_groups", err);
  if (!rc)
    rc = check_names(n, o->dead_letter_tables, o->ndead_letter_tables, "dead_letter_tables", err);
  if (rc)
    return rc;
  if (o->batch > MAX_BATCH)
    return refuse(err, n, "batch is %u; it is at most %d (0: %d)", o->batch, MAX_BATCH,
                  DEFAULT_BATCH);
  if (o->interval_ms && o->interval_ms < MIN_INTERVAL_MS)
    return refuse(err, n, "interval_ms is %u; it is at least %d (0: %d)", o->interval_ms,
                  MIN_INTERVAL_MS, DEFAULT_INTERVAL_MS);
  return TABQ_OK;
}

/* Adds a rule and builds its DELETE. */
static int add_rule(tabq_broker *b, const tabq_table *t, retained *e, const char *table,
                    const char *time_col, const char *group, bool dead, int64_t age_ms,
                    tabq_error *err) {
  rule *u = &e->rules[e->nrules];
  *u = (rule){.dead = dead, .age_ms = age_ms};
  bool own = table != e->name;
  if ((group && !(u->group = strdup(group))) || (own && !(u->table_copy = strdup(table)))) {
    free(u->group);
    return tabq__err_set(err, TABQ_NOMEM, t->name, "retain", "out of memory");
  }
  u->table = own ? u->table_copy : e->name;
  int rc = tabq__prune_sql(b, t, u->table, time_col, group != NULL, false, &u->del, err);
  if (rc) {
    free(u->group);
    free(u->table_copy);
    return rc;
  }
  if (!dead)
    snprintf(u->what, sizeof u->what, "finished rows");
  else if (group)
    snprintf(u->what, sizeof u->what, "dead letters of group %s", group);
  else
    snprintf(u->what, sizeof u->what, "dead letters in table %s", table);
  e->nrules++;
  return TABQ_OK;
}

/* The entry of `o` for table t, its statements built (not yet checked on the database). */
static int build_entry(tabq_broker *b, const tabq_table *t, const tabq_retention_options *o,
                       retained **out, tabq_error *err) {
  retained *e = calloc(1, sizeof *e);
  size_t cap = 1 + o->ndead_letter_groups + o->ndead_letter_tables;
  if (!e || !(e->name = strdup(t->name)) || !(e->rules = calloc(cap, sizeof *e->rules))) {
    retained_free(e);
    return tabq__err_set(err, TABQ_NOMEM, t->name, "retain", "out of memory");
  }
  e->batch = o->batch ? o->batch : DEFAULT_BATCH;
  e->interval_ms = o->interval_ms ? o->interval_ms : DEFAULT_INTERVAL_MS;
  int rc = tabq__prune_begin_sql(b, t, e->begin_sql, sizeof e->begin_sql, err);
  if (!rc && o->processed_age_ms)
    rc = add_rule(b, t, e, e->name, t->processed_at.name, NULL, false, o->processed_age_ms, err);
  for (size_t i = 0; !rc && i < o->ndead_letter_groups; i++)
    rc = add_rule(b, t, e, e->name, t->retry_after.name, o->dead_letter_groups[i], true,
                  o->dead_letter_age_ms, err);
  for (size_t i = 0; !rc && i < o->ndead_letter_tables; i++)
    rc = add_rule(b, t, e, o->dead_letter_tables[i], t->retry_after.name, NULL, true,
                  o->dead_letter_age_ms, err);
  if (rc) {
    retained_free(e);
    return rc;
  }
  *out = e;
  return TABQ_OK;
}

/* Prepares each statement once on a pooled connection, so a table or column the database lacks
 * is refused now (TABQ_SCHEMA, naming the table deleted from) rather than logged every round. */
static int check_on_database(tabq_broker *b, tabq_retainer *proto, retained *e, tabq_error *err) {
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  for (size_t i = 0; !rc && i <= e->nrules + 1; i++) {
    const tabq_stmt *st = i < e->nrules ? &e->rules[i].del : NULL;
    const char *table = i < e->nrules ? e->rules[i].table : e->name;
    if (i >= e->nrules)
      st = !proto->elect ? NULL : i == e->nrules ? &proto->lock : &proto->unlock;
    if (!st)
      continue;
    tabq_prepared *p = NULL;
    rc = tabq__pconn_check(c, b->drv->prepare(c->conn, st->sql, st->nparams, "prune", &p));
    if (p)
      b->drv->finalize(p);
    if (rc) {
      tabq__err_from_plugin(err, rc, table, "prune");
      char said[sizeof err->message];
      memcpy(said, err->message, sizeof said);
      tabq__err_set(err, rc, table, "prune",
                    "table %s: retention: the statement that deletes %s does not prepare on the "
                    "database: %s",
                    e->name, i < e->nrules ? e->rules[i].what : "(the election key)", said);
    }
  }
  tabq__pool_release(&b->pool, c);
  return rc;
}

/* The election's statements, where the dialect's advisory lock form keeps session locks. */
static int build_election(tabq_broker *b, const tabq_table *t, const char *database,
                          tabq_retainer *r, tabq_error *err) {
  const tabq_advisory_v1 *adv = b->plugin.plugin->advisory;
  /* Behind a transaction pooler a session lock would not hold: every process prunes, as on a
   * database without session locks. */
  r->elect = adv && !(adv->flags & TABQ_ADVISORY_PROCESS_KEYS) && adv->lock && adv->unlock &&
             !b->per_transaction;
  if (!r->elect)
    return TABQ_OK;
  tabq_table plain = *t;
  tabq_build build = {.table = &plain, .form = TABQ_FORM_ADVISORY, .database = database};
  tabq_build_fn fns[] = {adv->lock, adv->unlock};
  tabq_stmt *sts[] = {&r->lock, &r->unlock};
  for (int i = 0; i < 2; i++) {
    tabq_sql_init(sts[i], b->host);
    int rc = fns[i](&build, sts[i]);
    if (!rc)
      rc = sts[i]->status;
    if (!rc && !sts[i]->sql)
      rc = TABQ_DIALECT;
    if (rc)
      return tabq__err_from_plugin(err, rc, t->name, i ? "retain_unlock" : "retain_lock");
  }
  return TABQ_OK;
}

static void retainer_free(tabq_retainer *r) {
  if (!r)
    return;
  for (retained *e = r->list, *next; e; e = next) {
    next = e->next;
    retained_free(e);
  }
  tabq_sql_free(&r->lock);
  tabq_sql_free(&r->unlock);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static tabq_retainer *retainer_new(void) {
  tabq_retainer *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  pthread_mutex_init(&r->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&r->cv, &attr);
  pthread_condattr_destroy(&attr);
  return r;
}

static retained *find(tabq_retainer *r, const char *table) {
  for (retained *e = r ? r->list : NULL; e; e = e->next)
    if (!strcmp(e->name, table))
      return e;
  return NULL;
}

/* Under b->mu: the entry joins the broker's pruner (started now if it is the first). */
static int enlist(tabq_broker *b, tabq_retainer **fresh, retained *e, tabq_error *err) {
  if (atomic_load(&b->shut))
    return tabq__err_set(err, TABQ_CLOSED, e->name, "retain",
                         "table %s: retention: the broker is shut down", e->name);
  tabq_retainer *r = b->retainer;
  if (r) {
    pthread_mutex_lock(&r->mu);
    bool twice = find(r, e->name) != NULL;
    if (!twice) {
      e->next = r->list;
      r->list = e;
      pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return twice ? refuse(err, e->name, "the broker retains the table already") : TABQ_OK;
  }
  r = *fresh;
  r->list = e;
  b->retainer = r;
  if (pthread_create(&r->thread, NULL, pruner, b)) {
    b->retainer = NULL;
    r->list = NULL;
    return tabq__err_set(err, TABQ_IO, e->name, "retain", "cannot start the pruner's thread: %s",
                         strerror(errno));
  }
  *fresh = NULL; /* the broker's now */
  return TABQ_OK;
}

int tabq_retain(tabq_broker *b, const tabq_table *table, const tabq_retention_options *options,
                tabq_error *err) {
  tabq_error own;
  if (!err)
    err = &own; /* the refusals below quote its message */
  tabq__err_clear(err);
  if (!b || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, NULL, "retain",
                         "tabq_retain needs a broker, a table and options");
  tabq_table t;
  tabq_retention_options o;
  int rc = tabq__table_take(table, &t, err);
  if (rc)
    return rc;
  if ((rc = TABQ_TAKE(options, &o, TABQ_RETENTION_OPTIONS_SIZE_1_0, t.name, err))) {
    char said[sizeof err->message];
    snprintf(said, sizeof said, "%s", err->message);
    return refuse(err, t.name, "%s", said);
  }
  if (atomic_load(&b->shut))
    return tabq__err_set(err, TABQ_CLOSED, t.name, "retain",
                         "table %s: retention: the broker is shut down", t.name);
  if ((rc = tabq__table_rules(&t, err)) || (rc = tabq__retention_check(&t, &o, false, err)))
    return rc;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  char version[64], database[PATH_MAX] = "";
  uint32_t number = 0;
  retained *e = NULL;
  tabq_retainer *fresh = retainer_new();
  if (!fresh)
    rc = tabq__err_set(err, TABQ_NOMEM, t.name, "retain", "out of memory");
  if (!rc)
    rc = tabq__pool_server(&b->pool, t.name, version, sizeof version, &number, database,
                           sizeof database, err);
  /* The election's statements are the first table's, kept by the broker: each table's key is
   * only a value they bind. */
  if (!rc)
    rc = build_election(b, &t, database, fresh, err);
  if (!rc)
    rc = build_entry(b, &t, &o, &e, err);
  if (!rc) {
    election_key(database, t.name, e->key);
    pthread_mutex_lock(&b->mu);
    tabq_retainer *r = b->retainer ? b->retainer : fresh;
    pthread_mutex_unlock(&b->mu);
    rc = check_on_database(b, r, e, err);
  }
  if (!rc) {
    e->next_ms = tabq__mono_ms(); /* the first round at once */
    pthread_mutex_lock(&b->mu);
    rc = enlist(b, &fresh, e, err);
    pthread_mutex_unlock(&b->mu);
  }
  if (rc)
    retained_free(e);
  else
    tabq__logf(&b->log, TABQ_LOG_INFO,
               "table %s: retained: finished rows %" PRId64 " ms, dead letters %" PRId64
               " ms, %u rows a batch, a round every %u ms%s",
               t.name, o.processed_age_ms, o.dead_letter_age_ms, e->batch, e->interval_ms,
               b->retainer->elect ? ", one process at a time" : "");
  retainer_free(fresh);
  tabq__log_leave(outer);
  return rc;
}

/* ---- Reading it, stopping it --------------------------------------------------------------- */

int tabq_retention_stats_read(tabq_broker *b, const char *table, tabq_retention_stats *out,
                              size_t size, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table || !out || size < sizeof out->size)
    return tabq__err_set(err, TABQ_INVALID, table, "retain",
                         "tabq_retention_stats_read needs a broker, a table and an out");
  tabq_retention_stats all = {0};
  pthread_mutex_lock(&b->mu);
  tabq_retainer *r = b->retainer;
  pthread_mutex_unlock(&b->mu);
  if (r)
    pthread_mutex_lock(&r->mu);
  retained *e = find(r, table);
  if (e) {
    all.rounds = atomic_load(&e->rounds);
    all.rounds_skipped = atomic_load(&e->skipped);
    all.batches = atomic_load(&e->batches);
    all.processed_deleted = atomic_load(&e->processed);
    all.dead_deleted = atomic_load(&e->dead);
    all.failures = atomic_load(&e->failures);
  }
  if (r)
    pthread_mutex_unlock(&r->mu);
  if (!e)
    return tabq__err_set(err, TABQ_INVALID, table, "retain",
                         "table %s: the broker does not retain it (tabq_retain)", table);
  size = size < sizeof all ? size : sizeof all;
  all.size = (uint32_t)size;
  memcpy(out, &all, size);
  return TABQ_OK;
}

int tabq_retention_key(tabq_broker *b, const char *table, char *out, size_t cap, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table || !out || !cap)
    return tabq__err_set(err, TABQ_INVALID, table, "retain",
                         "tabq_retention_key needs a broker, a table and room for the key");
  pthread_mutex_lock(&b->mu);
  tabq_retainer *r = b->retainer;
  pthread_mutex_unlock(&b->mu);
  if (r)
    pthread_mutex_lock(&r->mu);
  retained *e = find(r, table);
  int rc = TABQ_OK;
  if (!e)
    rc = tabq__err_set(err, TABQ_INVALID, table, "retain",
                       "table %s: the broker does not retain it (tabq_retain)", table);
  else if (strlen(e->key) >= cap)
    rc = tabq__err_set(err, TABQ_INVALID, table, "retain",
                       "table %s: its key takes %zu bytes, more than %zu", table,
                       strlen(e->key) + 1, cap);
  else
    memcpy(out, e->key, strlen(e->key) + 1);
  if (r)
    pthread_mutex_unlock(&r->mu);
  return rc;
}

void tabq__retention_stop(tabq_broker *b) {
  pthread_mutex_lock(&b->mu);
  tabq_retainer *r = b->retainer;
  pthread_mutex_unlock(&b->mu);
  if (!r || atomic_exchange(&r->stop, true))
    return;
  pthread_mutex_lock(&r->mu);
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->thread, NULL);
}

void tabq__retention_free(tabq_broker *b) {
  tabq__retention_stop(b);
  retainer_free(b->retainer);
  b->retainer = NULL;
}

void tabq__retention_metrics(tabq_broker *b, FILE *f, void (*label)(FILE *, const char *)) {
  pthread_mutex_lock(&b->mu);
  tabq_retainer *r = b->retainer;
  pthread_mutex_unlock(&b->mu);
  fputs("# HELP tabq_retention_deleted_total Rows the retention pruner deleted, by kind: "
        "processed (finished rows), dead_letter.\n"
        "# TYPE tabq_retention_deleted_total counter\n",
        f);
  if (r)
    pthread_mutex_lock(&r->mu);
  for (retained *e = r ? r->list : NULL; e; e = e->next) {
    const char *kinds[] = {"processed", "dead_letter"};
    uint64_t values[] = {atomic_load(&e->processed), atomic_load(&e->dead)};
    for (int k = 0; k < 2; k++) {
      fputs("tabq_retention_deleted_total{table=\"", f);
      label(f, e->name);
      fprintf(f, "\",kind=\"%s\"} %llu\n", kinds[k], (unsigned long long)values[k]);
    }
  }
  fputs("# HELP tabq_retention_rounds_total Retention rounds, by result: ran (this process was "
        "elected, or no election is needed), skipped (another process held the table's key).\n"
        "# TYPE tabq_retention_rounds_total counter\n",
        f);
  for (retained *e = r ? r->list : NULL; e; e = e->next) {
    const char *results[] = {"ran", "skipped"};
    uint64_t values[] = {atomic_load(&e->rounds), atomic_load(&e->skipped)};
    for (int k = 0; k < 2; k++) {
      fputs("tabq_retention_rounds_total{table=\"", f);
      label(f, e->name);
      fprintf(f, "\",result=\"%s\"} %llu\n", results[k], (unsigned long long)values[k]);
    }
  }
  if (r)
    pthread_mutex_unlock(&r->mu);
}
