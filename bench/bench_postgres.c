/* tabq_bench_postgres — one drain of a PostgreSQL queue table per run, by one side:
 *
 *   tabq  tabq itself, a no-op handler that acks (a batch handler with --batch N > 1);
 *   own   a plain libpq loop of the very statements the PostgreSQL dialect renders (from its
 *         builders, bound by parameter id as the core binds them, binary as the driver runs
 *         them): what tabq would cost with nothing of its own;
 *   best  a plain libpq loop of the best SQL written by hand for the same guarantee (pg_best.c;
 *         on a processed_at table the statements below, run by the own loop's code).
 *
 * --table processed keeps finished rows (acks set processed_at) with the partial claim index
 * docs/table-description.md recommends; processed-naive keeps them with the plain index.
 *
 * The table lives in a schema of the run's own (bench_<pid>, dropped at the end, also when
 * interrupted), is filled untimed with --rows rows and vacuumed, then drained by --workers
 * threads (each raw loop a connection of its own; tabq's workers share its pool). The run prints
 * one JSON line (bench_emit) with the rate, this process's CPU per row and the server's, read
 * from /proc when TABQ_BENCH_SERVER_PID names the postmaster. bench/run.py interleaves the sides
 * in rounds. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tabq/sys/sql.h>
#include <tabq/tabq.h>

#include "pg_bench.h"
#include "postgres_plugin.h"

#define PROGRAM "tabq_bench_postgres"
#define URL_ENV "TABQ_BENCH_POSTGRES_URL"
#define DEFAULT_ROWS 20000

/* Each form's description of the one table; the columns a form does not use stay NULL. */
#define JOBS_ROLES                                                                                 \
  .name = "jobs", .id = {.name = "id", .generated = true}, .group = {.name = "queue"},             \
  .attempt = {.name = "attempt", .generated = true}, .payload = {.name = "payload"}
static const tabq_table rowlock_jobs = {.size = sizeof(tabq_table), JOBS_ROLES};
static const tabq_table lease_jobs = {
    .size = sizeof(tabq_table), JOBS_ROLES, .locked_until = {.name = "locked_until"}};
static const tabq_table advisory_jobs = {
    .size = sizeof(tabq_table), JOBS_ROLES, .advisory_lock = "job-{id}"};

/* No autovacuum on the table: one landing inside a drain would slow whichever side ran then.
 * The refill ends with a VACUUM ANALYZE instead, so every run starts alike. The %s are the
 * processed_at column, the table's options, and the claim index's processed_at column and
 * predicate. */
static const char *const schema_sql =
    "CREATE TABLE jobs (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, "
    "attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ,%s payload BYTEA NOT NULL) "
    "WITH (%s);"
    "CREATE INDEX jobs_claim ON jobs (queue, %sid)%s";

/* --autovacuum: the per-table settings docs/table-description.md recommends for a queue. */
static const char *const docs_autovacuum =
    "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, "
    "autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000, "
    "autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000, "
    "autovacuum_vacuum_cost_delay = 0, fillfactor = 80";

/* The statements a raw loop runs: the dialect's for the "own" loop, or on a processed_at table
 * the hand-written ones for the "best" loop. */
typedef struct form_stmts {
  tabq_stmt claim, ack, begin; /* begin: row lock only, whose claim and ack share a transaction */
  bench_projection pr;
  bool in_txn;
  bool ack_ids; /* one ack for a claim's rows, by an array of their ids */
} form_stmts;

static form_stmts raw;

/* ---- The schema, and dropping it whatever ends the run -------------------------------------- */

static const char *base_url;
static char schema[32];   /* bench_<pid> */
static char app_name[48]; /* every connection of this run, tabq's too, so cleanup finds them */
static char url[2048];    /* base_url reaching the schema */
const char *pg_bench_url = url;
static pthread_mutex_t cleanup_mu = PTHREAD_MUTEX_INITIALIZER;
static bool schema_made, schema_dropped;

/* libpq's message on one line: each run of line breaks and tabs becomes one space. */
static const char *one_line(const char *msg, char *buf, size_t cap) {
  size_t n = 0;
  bool gap = false;
  for (const char *s = msg && *msg ? msg : "unknown error"; *s && n + 1 < cap; s++) {
    bool space = *s == '\n' || *s == '\t' || *s == '\r' || *s == ' ';
    if (!space && gap && n > 0)
      buf[n++] = ' ';
    if (!space && n + 1 < cap)
      buf[n++] = *s;
    gap = space;
  }
  buf[n] = '\0';
  return buf;
}

/* Ends this run's own sessions (a row lock transaction left open would block the drop) and
 * drops the schema. Never dies: it runs from exit and from the signal thread. */
static void drop_schema(void) {
  pthread_mutex_lock(&cleanup_mu);
  if (!schema_made || schema_dropped) {
    pthread_mutex_unlock(&cleanup_mu);
    return;
  }
  schema_dropped = true;
  char terminate[256], drop[64];
  snprintf(terminate, sizeof terminate,
           "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
           "WHERE application_name = '%s' AND pid <> pg_backend_pid()",
           app_name);
  snprintf(drop, sizeof drop, "DROP SCHEMA %s CASCADE", schema);
  const char *steps[] = {"SET client_min_messages = warning; SET lock_timeout = '10s'", terminate,
                         drop};
  PGconn *c = PQconnectdb(base_url);
  bool ok = PQstatus(c) == CONNECTION_OK;
  for (int i = 0; ok && i < 3; i++) {
    PGresult *r = PQexec(c, steps[i]);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
  }
  char msg[512];
  if (!ok)
    fprintf(stderr, "%s: could not drop schema %s: %s\n", PROGRAM, schema,
            one_line(PQerrorMessage(c), msg, sizeof msg));
  PQfinish(c);
  pthread_mutex_unlock(&cleanup_mu);
}

static void watch_signals(void) {
  char what[96];
  snprintf(what, sizeof what, "dropping schema %s", schema);
  bench_watch_signals(drop_schema, what);
}

/* ---- Plain libpq ---------------------------------------------------------------------------- */

/* Server notices to stderr, as libpq's default does, but not the farewells of the sessions an
 * interruption's cleanup ends. */
static void on_notice(void *arg, const char *message) {
  (void)arg;
  char msg[512];
  if (!bench_is_interrupted())
    fprintf(stderr, "%s: server: %s\n", PROGRAM, one_line(message, msg, sizeof msg));
}

PGconn *pg_open(const char *conninfo) {
  PGconn *c = PQconnectdb(conninfo);
  char msg[512];
  if (PQstatus(c) != CONNECTION_OK)
    bench_die("cannot connect: %s", one_line(PQerrorMessage(c), msg, sizeof msg));
  PQsetNoticeProcessor(c, on_notice, NULL);
  return c;
}

void pg_check(PGconn *c, PGresult *r, const char *what) {
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
    return;
  char msg[512];
  bench_die("%s: %s", what,
            one_line(r ? PQresultErrorMessage(r) : PQerrorMessage(c), msg, sizeof msg));
}

void pg_exec(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  pg_check(c, r, sql);
  PQclear(r);
}

/* The first cell as text; "" for NULL. */
static void pg_text(PGconn *c, const char *sql, char *buf, size_t cap) {
  PGresult *r = PQexec(c, sql);
  pg_check(c, r, sql);
  snprintf(buf, cap, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
  PQclear(r);
}

static int64_t pg_int(PGconn *c, const char *sql) {
  char buf[32];
  pg_text(c, sql, buf, sizeof buf);
  return buf[0] ? strtoll(buf, NULL, 10) : -1;
}

/* Fills the table with `rows` fresh rows, then vacuums away the last drain's dead ones. Returns
 * the sum of the ids, which each side must read back exactly. */
static int64_t refill(PGconn *admin, int64_t rows) {
  char sql[320];
  snprintf(sql, sizeof sql,
           "INSERT INTO jobs (queue, payload) SELECT '%s', "
           "convert_to(rpad('job-' || i, %d, chr(97 + i %% 26)), 'UTF8') "
           "FROM generate_series(1, %lld) AS i",
           BENCH_QUEUE, BENCH_PAYLOAD_LEN, (long long)rows);
  pg_exec(admin, sql);
  pg_exec(admin, "VACUUM ANALYZE jobs");
  return pg_int(admin, "SELECT sum(id) FROM jobs");
}

/* After a drain: nothing may be left, not even a leased row; of a processed_at table every row,
 * each finished and none leased. */
static void expect_drained(PGconn *admin, const bench_args *a) {
  const char *side = bench_side_name(a->side);
  int64_t left = pg_int(admin, "SELECT count(*) FROM jobs");
  if (bench_processed_at(a))
    bench_expect_finished(left,
                          pg_int(admin, "SELECT count(*) FROM jobs WHERE processed_at IS NOT NULL "
                                        "AND locked_until IS NULL"),
                          a->rows, side);
  else if (left != 0)
    bench_die("%s: %lld rows left in the table after the drain", side, (long long)left);
}

void pg_prepare(PGconn *c, const char *name, const char *sql, int n, const Oid *types) {
  PGresult *r = PQprepare(c, name, sql, n, types);
  pg_check(c, r, sql);
  PQclear(r);
}

void pg_put_be64(char *p, int64_t v) {
  uint64_t u = (uint64_t)v;
  for (int i = 7; i >= 0; i--, u >>= 8)
    p[i] = (char)(u & 0xffu);
}

int64_t pg_get_int(const char *p, int len) {
  uint64_t u = (unsigned char)p[0] & 0x80 ? UINT64_MAX : 0;
  for (int i = 0; i < len; i++)
    u = u << 8 | (unsigned char)p[i];
  return (int64_t)u;
}

/* ---- The raw loop: the dialect's own statements (or hand-written ones) ---------------------- */

typedef struct raw_values {
  int64_t now, lease_until, token, id, limit;
  const char *ids; /* a claim's ids as a text array, "{1,2,3}" */
} raw_values;

/* A statement prepared on one connection, with the buffers its binary parameters go out in. */
typedef struct raw_stmt {
  const tabq_stmt *def;
  const char *name;
  Oid types[TABQ_STMT_MAX_PARAMS];
  char bufs[TABQ_STMT_MAX_PARAMS][8];
  const char *values[TABQ_STMT_MAX_PARAMS];
  int lengths[TABQ_STMT_MAX_PARAMS], formats[TABQ_STMT_MAX_PARAMS];
} raw_stmt;

/* The type each parameter id is sent as: what the server infers for these statements. */
static Oid wanted_type(uint16_t param) {
  switch (param) {
  case TABQ_P_ID:
  case TABQ_P_LIMIT:
    return PG_OID_INT8;
  case TABQ_P_GROUP:
    return PG_OID_TEXT;
  case TABQ_P_NOW:
  case TABQ_P_LEASE_UNTIL:
  case TABQ_P_TOKEN:
    return PG_OID_TIMESTAMPTZ;
  case TABQ_P_IDS:
    return PG_OID_INT8_ARRAY;
  default:
    bench_die("the own loop binds no parameter id %u", param);
  }
}

/* Prepared with no parameter types, as the driver prepares, so the server infers them; the
 * inferred types are then checked against what bind sends. `pr` (claims only) checks the
 * projection's columns too. */
static void raw_prepare(PGconn *c, raw_stmt *s, const tabq_stmt *def, const char *name,
                        const bench_projection *pr) {
  memset(s, 0, sizeof *s);
  s->def = def;
  s->name = name;
  pg_prepare(c, name, def->sql, 0, NULL);
  PGresult *r = PQdescribePrepared(c, name);
  pg_check(c, r, def->sql);
  if ((unsigned)PQnparams(r) != def->nparams)
    bench_die("%s: %d placeholders, not %u", def->sql, PQnparams(r), def->nparams);
  for (unsigned i = 0; i < def->nparams; i++) {
    s->types[i] = PQparamtype(r, (int)i);
    s->formats[i] = 1;
    if (s->types[i] != wanted_type(def->params[i]))
      bench_die("%s: placeholder $%u is type OID %u, which the own loop does not send", def->sql,
                i + 1, (unsigned)s->types[i]);
  }
  if (pr) {
    Oid id = PQftype(r, pr->id), attempt = PQftype(r, pr->attempt);
    if (PQnfields(r) != pr->n || (id != PG_OID_INT8 && id != PG_OID_INT4) ||
        (attempt != PG_OID_INT4 && attempt != PG_OID_INT8 && attempt != PG_OID_INT2) ||
        PQftype(r, pr->payload) != PG_OID_BYTEA)
      bench_die("%s: the projection's columns are not the bigint/integer/bytea the loop reads",
                def->sql);
  }
  PQclear(r);
}

/* Binds every placeholder by the parameter id the dialect put there, as the core's statement
 * runner does, in the binary format the driver sends. */
static PGresult *raw_exec(PGconn *c, raw_stmt *s, const raw_values *v) {
  const tabq_stmt *def = s->def;
  for (unsigned i = 0; i < def->nparams; i++) {
    s->values[i] = s->bufs[i];
    s->lengths[i] = 8;
    switch (def->params[i]) {
    case TABQ_P_ID:
      pg_put_be64(s->bufs[i], v->id);
      break;
    case TABQ_P_GROUP:
      s->values[i] = BENCH_QUEUE;
      s->lengths[i] = (int)sizeof BENCH_QUEUE - 1;
      break;
    case TABQ_P_LIMIT:
      pg_put_be64(s->bufs[i], v->limit);
      break;
    case TABQ_P_NOW:
      pg_put_be64(s->bufs[i], v->now - PG_EPOCH_US);
      break;
    case TABQ_P_LEASE_UNTIL:
      pg_put_be64(s->bufs[i], v->lease_until - PG_EPOCH_US);
      break;
    case TABQ_P_IDS: /* in text, as pg_best.c sends a batch's ids */
      s->values[i] = v->ids;
      s->lengths[i] = (int)strlen(v->ids);
      s->formats[i] = 0;
      break;
    default: /* TABQ_P_TOKEN: raw_prepare refused the rest */
      pg_put_be64(s->bufs[i], v->token - PG_EPOCH_US);
      break;
    }
  }
  PGresult *r = PQexecPrepared(c, s->name, (int)def->nparams, s->values, s->lengths, s->formats, 1);
  pg_check(c, r, s->name);
  return r;
}

/* A transaction control statement prepared as `name`, checked. */
static PGresult *run_control(PGconn *c, const char *name) {
  PGresult *r = PQexecPrepared(c, name, 0, NULL, NULL, NULL, 0);
  pg_check(c, r, name);
  return r;
}

/* One connection draining until its claim comes back empty: a claim of --batch rows, then an
 * ack per row as the core settles them (or one for them all, by their ids); in the row lock
 * form inside BEGIN ... COMMIT. */
static void *raw_main(void *arg) {
  bench_loop *l = arg;
  const form_stmts *fs = &raw;
  PGconn *c = pg_open(url);
  raw_stmt claim, ack;
  raw_prepare(c, &claim, &fs->claim, "own_claim", &fs->pr);
  raw_prepare(c, &ack, &fs->ack, "own_ack", NULL);
  if (fs->in_txn) { /* prepared by name, as the driver runs them */
    pg_prepare(c, "own_begin", fs->begin.sql, 0, NULL);
    pg_prepare(c, "own_commit", "COMMIT", 0, NULL);
    pg_prepare(c, "own_rollback", "ROLLBACK", 0, NULL);
  }
  int64_t *ids = calloc(l->a->batch, sizeof *ids);
  size_t list_cap = (size_t)l->a->batch * 21 + 4;
  char *list = malloc(list_cap);
  if (!ids || !list)
    bench_die("out of memory");
  memset(&l->t, 0, sizeof l->t);
  pthread_barrier_wait(l->ready);

  l->start = bench_mono_s();
  for (;;) {
    raw_values v = {.now = bench_now_us(), .limit = l->a->batch};
    v.lease_until = v.now + (int64_t)BENCH_LEASE_S * 1000000;
    if (fs->in_txn)
      PQclear(run_control(c, "own_begin"));
    PGresult *r = raw_exec(c, &claim, &v);
    int n = PQntuples(r);
    if (n == 0) {
      PQclear(r);
      if (fs->in_txn)
        PQclear(run_control(c, "own_rollback")); /* nothing to hold, as tabq ends an empty claim */
      break;
    }
    /* What a handler reads: id, the attempt as it stood before this claim, the payload. */
    const bench_projection *pr = &fs->pr;
    for (int i = 0; i < n; i++) {
      if (PQgetisnull(r, i, pr->id) || PQgetisnull(r, i, pr->attempt) ||
          PQgetisnull(r, i, pr->payload))
        bench_die("claim: a row came back with a NULL id, attempt or payload");
      ids[i] = pg_get_int(PQgetvalue(r, i, pr->id), PQgetlength(r, i, pr->id));
      l->t.rows++;
      l->t.id_sum += ids[i];
      l->t.attempt_sum +=
          pg_get_int(PQgetvalue(r, i, pr->attempt), PQgetlength(r, i, pr->attempt)) - 1;
      l->t.bytes += PQgetlength(r, i, pr->payload);
    }
    PQclear(r);

    v.token = v.lease_until;
    v.now = bench_now_us(); /* what a processed_at ack writes: the time of the ack */
    if (fs->ack_ids) {
      size_t used = 0;
      for (int i = 0; i < n; i++)
        used += (size_t)snprintf(list + used, list_cap - used, "%c%lld", i ? ',' : '{',
                                 (long long)ids[i]);
      snprintf(list + used, list_cap - used, "}");
      v.ids = list;
      r = raw_exec(c, &ack, &v);
      if (atoi(PQcmdTuples(r)) != n)
        bench_die("ack of %d rows changed %s", n, PQcmdTuples(r));
      PQclear(r);
    }
    for (int i = 0; !fs->ack_ids && i < n; i++) {
      v.id = ids[i];
      r = raw_exec(c, &ack, &v);
      if (strcmp(PQcmdTuples(r), "1") != 0)
        bench_die("ack of row %lld changed %s rows", (long long)v.id, PQcmdTuples(r));
      PQclear(r);
    }
    if (fs->in_txn) {
      r = run_control(c, "own_commit");
      if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
        bench_die("COMMIT of row %lld rolled back", (long long)v.id);
      PQclear(r);
    }
  }
  l->end = bench_mono_s();
  free(ids);
  free(list);
  PQfinish(c);
  return NULL;
}

/* ---- The best SQL on a processed_at table --------------------------------------------------- */

/* pg_best.c's row lock and lease statements with every claim skipping finished rows and the acks
 * setting processed_at (to the host's time, as tabq's do) instead of deleting. The raw loop runs
 * them, binding $1, $2, ... by the parameter ids listed with each. */
typedef struct hand_sql {
  const char *sql;
  uint16_t params[4];
  unsigned n;
} hand_sql;

#define PICK "SELECT id FROM jobs WHERE queue = $1 "
#define DUE "AND (locked_until IS NULL OR locked_until <= $3) "
/* processed_at first in the order, as tabq's claims (docs/table-description.md): the index
 * (queue, processed_at, id) gives it, where an order by id alone lets the planner walk the
 * primary key over the finished rows. */
#define OPEN_FIRST "AND processed_at IS NULL ORDER BY processed_at, id LIMIT "
#define RET " RETURNING id, attempt, payload"

static const hand_sql processed_rowlock_one = {
    "UPDATE jobs SET attempt = attempt + 1 WHERE id = (" PICK OPEN_FIRST
    "1 FOR UPDATE SKIP LOCKED)" RET,
    {TABQ_P_GROUP},
    1};
static const hand_sql processed_rowlock_many = {
    "UPDATE jobs SET attempt = attempt + 1 WHERE id = ANY (ARRAY(" PICK OPEN_FIRST
    "$2 FOR UPDATE SKIP LOCKED))" RET,
    {TABQ_P_GROUP, TABQ_P_LIMIT},
    2};
static const hand_sql processed_rowlock_ack_one = {
    "UPDATE jobs SET processed_at = $2 WHERE id = $1", {TABQ_P_ID, TABQ_P_NOW}, 2};
static const hand_sql processed_rowlock_ack_many = {
    "UPDATE jobs SET processed_at = $2 WHERE id = ANY ($1)", {TABQ_P_IDS, TABQ_P_NOW}, 2};
static const hand_sql processed_lease_one = {
    "UPDATE jobs SET attempt = attempt + 1, locked_until = $2 WHERE id = (" PICK DUE OPEN_FIRST
    "1 FOR UPDATE SKIP LOCKED)" RET,
    {TABQ_P_GROUP, TABQ_P_LEASE_UNTIL, TABQ_P_NOW},
    3};
static const hand_sql processed_lease_many = {
    "UPDATE jobs SET attempt = attempt + 1, locked_until = $2 WHERE id = ANY (ARRAY(" PICK DUE
        OPEN_FIRST "$4 FOR UPDATE SKIP LOCKED))" RET,
    {TABQ_P_GROUP, TABQ_P_LEASE_UNTIL, TABQ_P_NOW, TABQ_P_LIMIT},
    4};
static const hand_sql processed_lease_ack_one = {
    "UPDATE jobs SET processed_at = $3, locked_until = NULL WHERE id = $1 AND locked_until = $2",
    {TABQ_P_ID, TABQ_P_TOKEN, TABQ_P_NOW},
    3};
static const hand_sql processed_lease_ack_many = {"UPDATE jobs SET processed_at = $3, "
                                                  "locked_until = NULL WHERE id = ANY ($1) AND "
                                                  "locked_until = $2",
                                                  {TABQ_P_IDS, TABQ_P_TOKEN, TABQ_P_NOW},
                                                  3};
static const hand_sql begin_sql = {"BEGIN", {0}, 0};

static void hand_stmt(const hand_sql *h, tabq_stmt *st) {
  tabq_sql_init(st, &bench_host);
  tabq_sql_raw(st, h->sql);
  memcpy(st->params, h->params, h->n * sizeof h->params[0]);
  st->nparams = h->n;
  if (st->status != TABQ_OK)
    bench_die("out of memory");
}

/* The raw loop's statements for the best side on a processed_at table (row lock or lease). */
static void build_best_processed(const bench_args *a) {
  bool many = a->batch > 1;
  raw.in_txn = a->form == TABQ_FORM_ROWLOCK;
  raw.ack_ids = many;
  if (raw.in_txn) {
    hand_stmt(many ? &processed_rowlock_many : &processed_rowlock_one, &raw.claim);
    hand_stmt(many ? &processed_rowlock_ack_many : &processed_rowlock_ack_one, &raw.ack);
    hand_stmt(&begin_sql, &raw.begin);
  } else {
    hand_stmt(many ? &processed_lease_many : &processed_lease_one, &raw.claim);
    hand_stmt(many ? &processed_lease_ack_many : &processed_lease_ack_one, &raw.ack);
  }
  raw.pr = (bench_projection){.id = 0, .attempt = 1, .payload = 2, .n = 3};
}

/* ---- Main ----------------------------------------------------------------------------------- */

static const char *const usage =
    "usage: " PROGRAM " [--side tabq|own|best] [--form rowlock|lease|advisory] [--workers N]\n"
    "                           [--batch N] [--rows N] [--sql]\n"
    "                           [--table plain|processed|processed-naive] [--coalesce-us US]\n"
    "                           [--autovacuum] [--url-query Q]\n"
    "  one drain of --rows rows (default 20000) by one side, printed as one JSON line;\n"
    "  --url-query adds Q to tabq's URL (pooler=transaction: the statements a transaction\n"
    "  pooler allows);\n"
    "  --table processed keeps finished rows (processed_at) with a partial claim index,\n"
    "  processed-naive with the plain one; --coalesce-us turns on coalesce_acks (tabq, lease)\n"
    "  with that window; --autovacuum gives the table docs/table-description.md's\n"
    "  autovacuum settings (else autovacuum is off for it);\n"
    "  the server's URL from " URL_ENV " (postgres://...), its postmaster's pid (for the\n"
    "  server's CPU per row) from TABQ_BENCH_SERVER_PID\n";

/* The description the run drains: its form's, with processed_at on a table that keeps its rows. */
static tabq_table drained;

static const tabq_table *describe(const bench_args *a) {
  drained = a->form == TABQ_FORM_ROWLOCK ? rowlock_jobs
            : a->form == TABQ_FORM_LEASE ? lease_jobs
                                         : advisory_jobs;
  drained.processed_at.name = bench_processed_at(a);
  return &drained;
}

/* The claim tabq runs: claim_one for claims of one row, claim for a batch. */
static void build_own(const tabq_table *t, tabq_form form, unsigned batch) {
  raw.in_txn = form == TABQ_FORM_ROWLOCK;
  if (form == TABQ_FORM_ADVISORY)
    bench_die("the own loop runs the row lock and lease forms (an advisory claim is several "
              "statements per candidate, which tabq's own loop is)");
  tabq_build_fn claim = raw.in_txn ? tabq_pg_rowlock.claim : tabq_pg_lease.claim;
  tabq_build_fn one = raw.in_txn ? tabq_pg_rowlock.claim_one : tabq_pg_lease.claim_one;
  bench_build(batch == 1 && one ? one : claim, t, form, "claim", &raw.claim);
  bench_build(tabq_pg_dialect.ack, t, form, "ack", &raw.ack);
  if (raw.in_txn)
    bench_build(tabq_pg_dialect.begin, t, form, "begin", &raw.begin);
  raw.pr = bench_project(&raw.claim, t);
}

/* Builds the URL that reaches the schema: unqualified names resolve there (search_path), and
 * every session carries the run's application name. */
static void make_url(void) {
  if (strncmp(base_url, "postgres://", 11) != 0 && strncmp(base_url, "postgresql://", 13) != 0)
    bench_die(URL_ENV " must be a postgres:// or postgresql:// URL");
  snprintf(schema, sizeof schema, "bench_%d", (int)getpid());
  snprintf(app_name, sizeof app_name, PROGRAM "_%d", (int)getpid());
  int n = snprintf(url, sizeof url, "%s%coptions=-csearch_path%%3D%s&application_name=%s", base_url,
                   strchr(base_url, '?') ? '&' : '?', schema, app_name);
  if (n < 0 || (size_t)n >= sizeof url)
    bench_die(URL_ENV " is too long");
}

int main(int argc, char **argv) {
  bench_init(PROGRAM);
  bench_args a;
  bench_parse_args(argc, argv, TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE | TABQ_FORM_ADVISORY,
                   DEFAULT_ROWS, usage, &a);
  base_url = getenv(URL_ENV);
  if (!base_url || !*base_url) {
    fprintf(stderr,
            PROGRAM ": " URL_ENV " is not set; point it at a PostgreSQL server where the user "
                    "may create a schema, e.g. postgres://tabq@127.0.0.1:55432/tabq_test\n");
    return 2;
  }
  /* pg_best.c's advisory loop deletes its rows; a processed_at one is left to tabq. */
  bool best_processed = a.side == BENCH_BEST && bench_processed_at(&a);
  if (best_processed && a.form == TABQ_FORM_ADVISORY) {
    fprintf(stderr, PROGRAM ": the best loop on a processed_at table runs the row lock and lease "
                            "forms, not advisory\n");
    return 2;
  }
  make_url();
  const tabq_table *table = describe(&a);
  /* The builders report failures through the host the core would have lent. */
  tabq_pg_set_host(&bench_host);
  if (a.side == BENCH_OWN)
    build_own(table, a.form, a.batch);
  else if (best_processed)
    build_best_processed(&a);
  bool raw_loop = a.side == BENCH_OWN || best_processed;
  if (a.show_sql && raw_loop)
    fprintf(stderr, "%s %s: %s%s%s; %s%s\n", bench_side_name(a.side), bench_form_name(a.form),
            raw.in_txn ? raw.begin.sql : "", raw.in_txn ? "; " : "", raw.claim.sql, raw.ack.sql,
            raw.in_txn ? "; COMMIT" : "");
  else if (a.show_sql && a.side == BENCH_BEST)
    pg_best_print(&a);

  watch_signals(); /* before any other thread, so every one inherits the blocked signals */
  PGconn *admin = pg_open(base_url);
  char sql[64];
  snprintf(sql, sizeof sql, "CREATE SCHEMA %s", schema);
  pg_exec(admin, sql);
  pthread_mutex_lock(&cleanup_mu);
  schema_made = true;
  pthread_mutex_unlock(&cleanup_mu);
  PQfinish(admin);
  admin = pg_open(url);
  char ddl[1024];
  snprintf(ddl, sizeof ddl, schema_sql, bench_processed_at(&a) ? " processed_at TIMESTAMPTZ," : "",
           a.autovacuum ? docs_autovacuum : "autovacuum_enabled = off",
           a.table == BENCH_TABLE_PROCESSED ? "processed_at, " : "",
           a.table == BENCH_TABLE_PROCESSED ? " WHERE processed_at IS NULL" : "");
  pg_exec(admin, ddl);
  int64_t ids = refill(admin, a.rows);

  bench_tally t;
  double cpu = bench_cpu_s(), server = bench_server_cpu_s(), seconds;
  if (a.side == BENCH_TABQ)
    seconds = bench_run_tabq(url, table, &a, &t);
  else
    seconds = bench_run_loops(raw_loop ? raw_main : pg_best_main, &a, &t);
  cpu = bench_cpu_s() - cpu;
  /* The drain's sessions have ended; their backends' time reaches the postmaster once reaped. */
  nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
  double server_end = bench_server_cpu_s();
  bench_expect_tally(&t, a.rows, ids, bench_side_name(a.side));
  expect_drained(admin, &a);

  bench_result r = {.db = "postgres",
                    .server_version = PQparameterStatus(admin, "server_version"),
                    .seconds = seconds,
                    .client_cpu_s = cpu,
                    .server_cpu_s = server >= 0 && server_end >= 0 ? server_end - server : -1};
  bench_emit(&a, &r);
  PQfinish(admin);
  drop_schema();
  if (raw_loop) {
    tabq_sql_free(&raw.claim);
    tabq_sql_free(&raw.ack);
    if (raw.in_txn)
      tabq_sql_free(&raw.begin);
  }
  return 0;
}
