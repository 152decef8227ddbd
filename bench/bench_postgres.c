/* tabq_bench_postgres — how close tabq comes to the plainest libpq loop that does its work.
 *
 * One PostgreSQL table, in a schema of the run's own (bench_<pid>, dropped at the end), is
 * drained again and again in one run, in turns: raw loops on plain libpq connections, then tabq,
 * then the raw loops again... so both sides see the same server state. Four scenarios: the row
 * lock form and the lease form, each with one worker and with four. The raw loops run the very
 * statements the PostgreSQL dialect renders (from its builders, bound by parameter id as the core
 * binds them), prepared with PQprepare and run with binary parameters and results as the
 * plugin's driver runs them, one row per claim as each of tabq's workers claims; the difference
 * between the two is what tabq itself costs. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <tabq/sql.h>
#include <tabq/tabq.h>

#include "bench_common.h"
#include "postgres_plugin.h"

#define PROGRAM "tabq_bench_postgres"
#define URL_ENV "TABQ_BENCH_POSTGRES_URL"
#define DEFAULT_ROWS 20000
#define MAX_WORKERS 4
#define PG_EPOCH_US INT64_C(946684800000000) /* 2000-01-01, PostgreSQL's epoch, since 1970 */

/* Type OIDs (pg_type.dat), checked against what the server inferred for each placeholder. */
enum { OID_BYTEA = 17, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_TEXT = 25 };
enum { OID_TIMESTAMPTZ = 1184 };

/* The row lock form's description has no locked_until; the lease form's has. */
#define JOBS_ROLES                                                                                 \
  .name = "jobs", .id = {.name = "id", .generated = true}, .group = {.name = "queue"},             \
  .attempt = {.name = "attempt", .generated = true}, .payload = {.name = "payload"}
static const tabq_table rowlock_jobs = {.size = sizeof(tabq_table), JOBS_ROLES};
static const tabq_table lease_jobs = {
    .size = sizeof(tabq_table), JOBS_ROLES, .locked_until = {.name = "locked_until"}};

/* No autovacuum on the table: one landing inside a drain would slow whichever side ran then.
 * Each refill ends with a VACUUM ANALYZE instead, so every round starts alike. */
static const char *const schema_sql =
    "CREATE TABLE jobs (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, "
    "attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, payload BYTEA NOT NULL) "
    "WITH (autovacuum_enabled = off);"
    "CREATE INDEX jobs_claim ON jobs (queue, id)";

typedef struct scenario {
  const char *key;  /* for --scenario */
  const char *form; /* as printed */
  const tabq_table *table;
  unsigned workers;
} scenario;

static const scenario scenarios[] = {
    {"rowlock1", "rowlock", &rowlock_jobs, 1},
    {"rowlock4", "rowlock", &rowlock_jobs, MAX_WORKERS},
    {"lease1", "lease", &lease_jobs, 1},
    {"lease4", "lease", &lease_jobs, MAX_WORKERS},
};
#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

/* A form's statements as the dialect renders them. */
typedef struct form_stmts {
  tabq_stmt claim, ack, begin; /* begin: row lock only, whose claim and ack share a transaction */
  bench_projection pr;
  bool in_txn;
} form_stmts;

/* ---- The schema, and dropping it whatever ends the run -------------------------------------- */

static const char *base_url;
static char schema[32];   /* bench_<pid> */
static char app_name[48]; /* every connection of this run, tabq's too, so cleanup finds them */
static char url[2048];    /* base_url reaching the schema */
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

static sigset_t stop_signals;

/* Signals are blocked in every thread (tabq's inherit the mask) and taken here, where libpq may
 * be called, unlike in a handler; then the signal's default ends the process. */
static void *signal_main(void *arg) {
  (void)arg;
  int sig;
  if (sigwait(&stop_signals, &sig) != 0)
    return NULL;
  fprintf(stderr, "%s: interrupted, dropping schema %s\n", PROGRAM, schema);
  bench_interrupted();
  drop_schema();
  signal(sig, SIG_DFL);
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
  raise(sig);
  return NULL;
}

static void watch_signals(void) {
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
  /* A closed stdout shows as a failed write (flush_out), which ends the run with the cleanup. */
  signal(SIGPIPE, SIG_IGN);
  pthread_t th;
  if (pthread_create(&th, NULL, signal_main, NULL))
    bench_die("cannot start the signal thread");
  pthread_detach(th);
  atexit(drop_schema);
}

static void flush_out(void) {
  if (fflush(stdout) || ferror(stdout))
    bench_die("cannot write the results: %s", strerror(errno));
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

static PGconn *pg_open(const char *conninfo) {
  PGconn *c = PQconnectdb(conninfo);
  char msg[512];
  if (PQstatus(c) != CONNECTION_OK)
    bench_die("cannot connect: %s", one_line(PQerrorMessage(c), msg, sizeof msg));
  PQsetNoticeProcessor(c, on_notice, NULL);
  return c;
}

static void pg_check(PGconn *c, PGresult *r, const char *what) {
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
    return;
  char msg[512];
  bench_die("%s: %s", what,
            one_line(r ? PQresultErrorMessage(r) : PQerrorMessage(c), msg, sizeof msg));
}

static void pg_exec(PGconn *c, const char *sql) {
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

/* After a drain: nothing may be left, not even a leased row. */
static void expect_empty(PGconn *admin, const char *side) {
  int64_t left = pg_int(admin, "SELECT count(*) FROM jobs");
  if (left != 0)
    bench_die("%s: %lld rows left in the table after the drain", side, (long long)left);
}

/* ---- The raw loop --------------------------------------------------------------------------- */

typedef struct raw_values {
  int64_t now, lease_until, token, id;
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
    return OID_INT8;
  case TABQ_P_GROUP:
    return OID_TEXT;
  case TABQ_P_NOW:
  case TABQ_P_LEASE_UNTIL:
  case TABQ_P_TOKEN:
    return OID_TIMESTAMPTZ;
  default:
    bench_die("the raw loop binds no parameter id %u", param);
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
  PGresult *r = PQprepare(c, name, def->sql, 0, NULL);
  pg_check(c, r, def->sql);
  PQclear(r);
  r = PQdescribePrepared(c, name);
  pg_check(c, r, def->sql);
  if ((unsigned)PQnparams(r) != def->nparams)
    bench_die("%s: %d placeholders, not %u", def->sql, PQnparams(r), def->nparams);
  for (unsigned i = 0; i < def->nparams; i++) {
    s->types[i] = PQparamtype(r, (int)i);
    s->formats[i] = 1;
    if (s->types[i] != wanted_type(def->params[i]))
      bench_die("%s: placeholder $%u is type OID %u, which the raw loop does not send", def->sql,
                i + 1, (unsigned)s->types[i]);
  }
  if (pr) {
    Oid id = PQftype(r, pr->id), attempt = PQftype(r, pr->attempt);
    if (PQnfields(r) != pr->n || (id != OID_INT8 && id != OID_INT4) ||
        (attempt != OID_INT4 && attempt != OID_INT8 && attempt != OID_INT2) ||
        PQftype(r, pr->payload) != OID_BYTEA)
      bench_die("%s: the projection's columns are not the bigint/integer/bytea the raw loop reads",
                def->sql);
  }
  PQclear(r);
}

static void put_be64(char *p, int64_t v) {
  uint64_t u = (uint64_t)v;
  for (int i = 7; i >= 0; i--, u >>= 8)
    p[i] = (char)(u & 0xffu);
}

/* A big-endian integer of 2, 4 or 8 bytes, sign extended. */
static int64_t get_int(const char *p, int len) {
  uint64_t u = (unsigned char)p[0] & 0x80 ? UINT64_MAX : 0;
  for (int i = 0; i < len; i++)
    u = u << 8 | (unsigned char)p[i];
  return (int64_t)u;
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
      put_be64(s->bufs[i], v->id);
      break;
    case TABQ_P_GROUP:
      s->values[i] = BENCH_QUEUE;
      s->lengths[i] = (int)sizeof BENCH_QUEUE - 1;
      break;
    case TABQ_P_LIMIT:
      put_be64(s->bufs[i], 1); /* one row per claim, as each of tabq's workers claims */
      break;
    case TABQ_P_NOW:
      put_be64(s->bufs[i], v->now - PG_EPOCH_US);
      break;
    case TABQ_P_LEASE_UNTIL:
      put_be64(s->bufs[i], v->lease_until - PG_EPOCH_US);
      break;
    default: /* TABQ_P_TOKEN: raw_prepare refused the rest */
      put_be64(s->bufs[i], v->token - PG_EPOCH_US);
      break;
    }
  }
  PGresult *r = PQexecPrepared(c, s->name, (int)def->nparams, s->values, s->lengths, s->formats, 1);
  pg_check(c, r, s->name);
  return r;
}

typedef struct raw_worker {
  const form_stmts *fs;
  pthread_barrier_t *ready;
  bench_tally t;
  double start, end;
} raw_worker;

/* One connection draining until its claim comes back empty: in the row lock form BEGIN, claim,
 * ack, COMMIT per row; in the lease form claim and ack in autocommit. */
static void *raw_main(void *arg) {
  raw_worker *w = arg;
  const form_stmts *fs = w->fs;
  PGconn *c = pg_open(url);
  raw_stmt claim, ack;
  raw_prepare(c, &claim, &fs->claim, "bench_claim", &fs->pr);
  raw_prepare(c, &ack, &fs->ack, "bench_ack", NULL);
  memset(&w->t, 0, sizeof w->t);
  pthread_barrier_wait(w->ready); /* connected and prepared: the clock starts for all at once */

  w->start = bench_mono_s();
  for (;;) {
    raw_values v = {.now = bench_now_us()};
    v.lease_until = v.now + (int64_t)BENCH_LEASE_S * 1000000;
    if (fs->in_txn)
      pg_exec(c, fs->begin.sql);
    PGresult *r = raw_exec(c, &claim, &v);
    if (PQntuples(r) == 0) {
      PQclear(r);
      if (fs->in_txn)
        pg_exec(c, "ROLLBACK"); /* nothing to hold, as tabq ends an empty claim */
      break;
    }
    /* What a handler reads: id, the attempt as it stood before this claim, the payload. */
    const bench_projection *pr = &fs->pr;
    if (PQgetisnull(r, 0, pr->id) || PQgetisnull(r, 0, pr->attempt) ||
        PQgetisnull(r, 0, pr->payload))
      bench_die("claim: a row came back with a NULL id, attempt or payload");
    v.id = get_int(PQgetvalue(r, 0, pr->id), PQgetlength(r, 0, pr->id));
    w->t.rows++;
    w->t.id_sum += v.id;
    w->t.attempt_sum += get_int(PQgetvalue(r, 0, pr->attempt), PQgetlength(r, 0, pr->attempt)) - 1;
    w->t.bytes += PQgetlength(r, 0, pr->payload);
    PQclear(r);

    v.token = v.lease_until;
    r = raw_exec(c, &ack, &v);
    if (strcmp(PQcmdTuples(r), "1") != 0)
      bench_die("ack of row %lld changed %s rows", (long long)v.id, PQcmdTuples(r));
    PQclear(r);
    if (fs->in_txn) {
      r = PQexec(c, "COMMIT");
      pg_check(c, r, "COMMIT");
      if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
        bench_die("COMMIT of row %lld rolled back", (long long)v.id);
      PQclear(r);
    }
  }
  w->end = bench_mono_s();
  PQfinish(c);
  return NULL;
}

/* From the first loop's start to the last one's end. */
static double run_raw(const form_stmts *fs, unsigned n, bench_tally *t) {
  raw_worker ws[MAX_WORKERS];
  pthread_barrier_t ready;
  pthread_barrier_init(&ready, NULL, n);
  for (unsigned i = 0; i < n; i++)
    ws[i] = (raw_worker){.fs = fs, .ready = &ready};
  bench_threads(n, raw_main, ws, sizeof ws[0]);
  pthread_barrier_destroy(&ready);
  double start = ws[0].start, end = ws[0].end;
  memset(t, 0, sizeof *t);
  for (unsigned i = 0; i < n; i++) {
    start = ws[i].start < start ? ws[i].start : start;
    end = ws[i].end > end ? ws[i].end : end;
    bench_tally_add(t, &ws[i].t);
  }
  return end - start;
}

/* ---- Scenarios ------------------------------------------------------------------------------ */

static void build_form(form_stmts *fs, const tabq_table *t, tabq_form form) {
  memset(fs, 0, sizeof *fs);
  fs->in_txn = form == TABQ_FORM_ROWLOCK;
  bench_build(fs->in_txn ? tabq_pg_rowlock.claim : tabq_pg_lease.claim, t, form, "claim",
              &fs->claim);
  bench_build(tabq_pg_dialect.ack, t, form, "ack", &fs->ack);
  if (fs->in_txn)
    bench_build(tabq_pg_dialect.begin, t, form, "begin", &fs->begin);
  fs->pr = bench_project(&fs->claim, t);
}

static void free_form(form_stmts *fs) {
  tabq_sql_free(&fs->claim);
  tabq_sql_free(&fs->ack);
  if (fs->in_txn)
    tabq_sql_free(&fs->begin);
}

/* One side of a scenario: per counted round its rate and the CPU this process spent per row
 * (every thread, so the side's own cost apart from the server's and the neighbours'). */
typedef struct side_rounds {
  double *rate, *cpu_us;
} side_rounds;

typedef struct medians {
  double raw, tabq, raw_cpu_us, tabq_cpu_us;
} medians;

static void print_round(const scenario *sc, unsigned round, const char *side, double rate,
                        double cpu_us) {
  char when[24];
  snprintf(when, sizeof when, round ? "round %u" : "warm-up", round);
  printf("%-7s w%u  %-8s %-4s %6.0f msg/s   client CPU %3.0f us/row%s\n", sc->form, sc->workers,
         when, side, rate, cpu_us, round ? "" : "  (not counted)");
  flush_out();
}

/* One uncounted warm-up round, then `rounds` rounds of raw then tabq. */
static medians run_scenario(const scenario *sc, const form_stmts *fs, PGconn *admin, int64_t rows,
                            unsigned rounds) {
  side_rounds raw = {calloc(rounds, sizeof(double)), calloc(rounds, sizeof(double))};
  side_rounds tq = {calloc(rounds, sizeof(double)), calloc(rounds, sizeof(double))};
  if (!raw.rate || !raw.cpu_us || !tq.rate || !tq.cpu_us)
    bench_die("out of memory");
  bench_tally t;
  for (unsigned r = 0; r <= rounds; r++) {
    int64_t ids = refill(admin, rows);
    double cpu = bench_cpu_s();
    double rate = (double)rows / run_raw(fs, sc->workers, &t);
    cpu = (bench_cpu_s() - cpu) / (double)rows * 1e6;
    bench_expect_tally(&t, rows, ids, "raw");
    expect_empty(admin, "raw");
    print_round(sc, r, "raw", rate, cpu);
    if (r > 0) {
      raw.rate[r - 1] = rate;
      raw.cpu_us[r - 1] = cpu;
    }

    ids = refill(admin, rows);
    cpu = bench_cpu_s();
    rate = (double)rows / bench_run_tabq(url, sc->table, sc->workers, rows, &t);
    cpu = (bench_cpu_s() - cpu) / (double)rows * 1e6;
    bench_expect_tally(&t, rows, ids, "tabq");
    expect_empty(admin, "tabq");
    print_round(sc, r, "tabq", rate, cpu);
    if (r > 0) {
      tq.rate[r - 1] = rate;
      tq.cpu_us[r - 1] = cpu;
    }
  }
  medians m = {bench_median(raw.rate, rounds), bench_median(tq.rate, rounds),
               bench_median(raw.cpu_us, rounds), bench_median(tq.cpu_us, rounds)};
  free(raw.rate);
  free(raw.cpu_us);
  free(tq.rate);
  free(tq.cpu_us);
  return m;
}

/* ---- Main ----------------------------------------------------------------------------------- */

static void usage(FILE *to) {
  fprintf(to,
          "usage: " PROGRAM " [--rows N] [--rounds N] [--scenario NAME] [--sql]\n"
          "  reads the server's URL from " URL_ENV " (postgres://...)\n"
          "  --rows N         rows per drain (default %d)\n"
          "  --rounds N       rounds per side, alternating raw and tabq (default 3)\n"
          "  --scenario NAME  only rowlock1, rowlock4, lease1 or lease4 (default all)\n"
          "  --sql            print the statements both sides run\n",
          DEFAULT_ROWS);
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

static void print_header(PGconn *admin, int64_t rows, unsigned rounds) {
  char fsync[16], sync_commit[16];
  pg_text(admin, "SHOW fsync", fsync, sizeof fsync);
  pg_text(admin, "SHOW synchronous_commit", sync_commit, sizeof sync_commit);
  printf(PROGRAM ": PostgreSQL %s; fsync %s, synchronous_commit %s; libpq %d\n",
         PQparameterStatus(admin, "server_version"), fsync, sync_commit, PQlibVersion());
  printf("  server %s:%s, database %s, schema %s (dropped at the end)\n", PQhost(admin),
         PQport(admin), PQdb(admin), schema);
  printf("  %lld rows per drain, %d-byte payloads; refilled with INSERT .. SELECT "
         "generate_series, then VACUUM ANALYZE (untimed, autovacuum off for the table)\n",
         (long long)rows, BENCH_PAYLOAD_LEN);
  printf("  %u rounds per side, alternating raw and tabq, after one uncounted warm-up round\n",
         rounds);
  printf("  raw:  libpq, one connection per thread, the dialect's statements prepared (PQprepare)"
         " and run with binary parameters and results, as the plugin runs them\n");
  printf("  tabq: no-op handler that acks, pool_size 8, timed from subscribe until every row is "
         "settled\n");
  flush_out();
}

int main(int argc, char **argv) {
  unsigned rounds = 3;
  int64_t rows = DEFAULT_ROWS;
  const char *only = NULL;
  bool show_sql = false;
  bench_init(PROGRAM);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rows"))
      rows = bench_parse_count("--rows", i + 1 < argc ? argv[++i] : NULL, 10000000);
    else if (!strcmp(argv[i], "--rounds"))
      rounds = bench_parse_count("--rounds", i + 1 < argc ? argv[++i] : NULL, 1000);
    else if (!strcmp(argv[i], "--scenario") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--sql"))
      show_sql = true;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  bool known = !only;
  for (size_t i = 0; only && i < NSCENARIOS; i++)
    known = known || !strcmp(only, scenarios[i].key);
  if (!known) {
    fprintf(stderr, PROGRAM ": no scenario %s (rowlock1, rowlock4, lease1, lease4)\n", only);
    return 2;
  }
  base_url = getenv(URL_ENV);
  if (!base_url || !*base_url) {
    fprintf(stderr,
            PROGRAM ": " URL_ENV " is not set; point it at a PostgreSQL server where the user "
                    "may create a schema, e.g. postgres://tabq@127.0.0.1:55432/tabq_test\n");
    return 2;
  }
  make_url();

  /* The builders report failures through the host the core would have lent. */
  tabq_pg_set_host(&bench_host);
  form_stmts rowlock, lease;
  build_form(&rowlock, &rowlock_jobs, TABQ_FORM_ROWLOCK);
  build_form(&lease, &lease_jobs, TABQ_FORM_LEASE);

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
  pg_exec(admin, schema_sql);

  print_header(admin, rows, rounds);
  if (show_sql) {
    printf("  rowlock: %s; %s; %s; COMMIT\n", rowlock.begin.sql, rowlock.claim.sql,
           rowlock.ack.sql);
    printf("  lease:   %s; %s\n", lease.claim.sql, lease.ack.sql);
  }
  flush_out();

  medians med[NSCENARIOS] = {{0}};
  for (size_t i = 0; i < NSCENARIOS; i++) {
    const scenario *sc = &scenarios[i];
    if (only && strcmp(only, sc->key))
      continue;
    med[i] = run_scenario(sc, sc->table == &rowlock_jobs ? &rowlock : &lease, admin, rows, rounds);
  }

  printf("\nmedians of %u rounds\n", rounds);
  printf("  scenario     raw msg/s  tabq msg/s  tabq/raw   client CPU us/row: raw  tabq\n");
  for (size_t i = 0; i < NSCENARIOS; i++) {
    const scenario *sc = &scenarios[i];
    if (only && strcmp(only, sc->key))
      continue;
    printf("  %-7s w%u   %9.0f  %10.0f  %8.2f   %22.0f  %4.0f\n", sc->form, sc->workers, med[i].raw,
           med[i].tabq, med[i].tabq / med[i].raw, med[i].raw_cpu_us, med[i].tabq_cpu_us);
  }
  printf("target: tabq/raw >= 0.95 (shown, never asserted)\n");
  printf("client CPU: this process's user + system time per row over the drain (connecting "
         "included), which the server's and other processes' load on the machine do not move\n");
  flush_out();

  PQfinish(admin);
  drop_schema();
  free_form(&rowlock);
  free_form(&lease);
  return 0;
}
