/* tabq_bench — how close tabq comes to the plainest loop that does its work.
 *
 * One SQLite table of ROWS rows is drained again and again in one run, in turns: a raw loop on a
 * plain sqlite3 connection, then tabq, then the raw loop again... so both sides see the same
 * machine state. The raw loop runs the very statements the SQLite dialect renders (obtained from
 * its builders, bound by parameter id as the core binds them), one row per claim as tabq does
 * with one worker; the difference between the two is what tabq itself costs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <tabq/sql.h>
#include <tabq/tabq.h>

#include "bench_common.h"
#include "sqlite_plugin.h"

#define ROWS 20000
#define BUSY_MS 5000

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static const char *const schema =
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, "
    "attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL);"
    "CREATE INDEX jobs_claim ON jobs (queue, id);";

/* ---- Errors and the temporary database ----------------------------------------------------- */

static char db_path[64];
static char db_files[3][80]; /* the file, its -wal and its -shm, named once for remove_db */

/* Async-signal-safe: unlink only, on paths written before any signal handler was set. */
static void remove_db(void) {
  for (int i = 0; i < 3; i++)
    if (db_files[i][0])
      unlink(db_files[i]);
}

/* Interrupted (Ctrl-C, a closed pipe): the temporary files go too, then the signal's default. */
static void on_signal(int sig) {
  remove_db();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void track_db(void) {
  const char *suffix[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++)
    snprintf(db_files[i], sizeof db_files[i], "%s%s", db_path, suffix[i]);
  atexit(remove_db);
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    signal(sigs[i], on_signal);
}

static void check_sqlite(sqlite3 *db, int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    bench_die("%s: %s", what, sqlite3_errmsg(db));
}

/* ---- Plain connections ---------------------------------------------------------------------- */

/* The settings the plugin gives every connection for this URL. */
static sqlite3 *open_plain(void) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(db_path, &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK)
    bench_die("cannot open %s: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, BUSY_MS);
  check_sqlite(db, sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), "WAL");
  check_sqlite(db, sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL), "synchronous");
  return db;
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql, unsigned nparams) {
  sqlite3_stmt *st = NULL;
  check_sqlite(db, sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL), sql);
  if ((unsigned)sqlite3_bind_parameter_count(st) != nparams)
    bench_die("%s: %d placeholders, not %u", sql, sqlite3_bind_parameter_count(st), nparams);
  return st;
}

static int64_t query_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = prepare(db, sql, 0);
  int rc = sqlite3_step(st);
  check_sqlite(db, rc, sql);
  int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

/* Deletes every row and inserts ROWS fresh ones in one transaction, then empties the WAL so
 * every round starts from the same file state. Returns the sum of the ids, which each side
 * must read back exactly. */
static int64_t refill(sqlite3 *db) {
  check_sqlite(db, sqlite3_exec(db, "BEGIN; DELETE FROM jobs", NULL, NULL, NULL), "delete");
  sqlite3_stmt *ins = prepare(db, "INSERT INTO jobs (queue, payload) VALUES (?1, ?2)", 2);
  char payload[BENCH_PAYLOAD_LEN];
  for (int i = 0; i < ROWS; i++) {
    memset(payload, 'a' + i % 26, sizeof payload);
    snprintf(payload, sizeof payload, "job-%d", i); /* the rest keeps the filler */
    sqlite3_bind_text(ins, 1, BENCH_QUEUE, -1, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 2, payload, sizeof payload, SQLITE_STATIC);
    check_sqlite(db, sqlite3_step(ins), "insert");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  check_sqlite(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
  check_sqlite(db, sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
               "checkpoint");
  return query_int(db, "SELECT sum(id) FROM jobs");
}

/* After a drain: nothing may be left, not even a leased row. */
static void expect_empty(sqlite3 *db, const char *side) {
  int64_t left = query_int(db, "SELECT count(*) FROM jobs");
  if (left != 0)
    bench_die("%s: %lld rows left in the table after the drain", side, (long long)left);
}

/* ---- The raw loop --------------------------------------------------------------------------- */

typedef struct raw_values {
  int64_t now, lease_until, token, id;
} raw_values;

/* Binds every placeholder by the parameter id the dialect put there, as the core's statement
 * runner does; times become the driver's fixed-width text. */
static void bind_by_id(sqlite3 *db, sqlite3_stmt *st, const tabq_stmt *def, const raw_values *v,
                       char (*times)[TABQ_SQLITE_TIME_LEN + 1]) {
  for (unsigned i = 0; i < def->nparams; i++) {
    int at = (int)i + 1, rc;
    int64_t at_us;
    switch (def->params[i]) {
    case TABQ_P_ID:
      rc = sqlite3_bind_int64(st, at, v->id);
      break;
    case TABQ_P_GROUP:
      rc = sqlite3_bind_text(st, at, BENCH_QUEUE, sizeof BENCH_QUEUE - 1, SQLITE_STATIC);
      break;
    case TABQ_P_LIMIT:
      rc = sqlite3_bind_int64(st, at, 1); /* one worker: one row per claim */
      break;
    case TABQ_P_NOW:
    case TABQ_P_LEASE_UNTIL:
    case TABQ_P_TOKEN:
      at_us = def->params[i] == TABQ_P_NOW           ? v->now
              : def->params[i] == TABQ_P_LEASE_UNTIL ? v->lease_until
                                                     : v->token;
      if (!tabq_sqlite_time_format(at_us, times[i]))
        bench_die("time %lld us out of range", (long long)at_us);
      rc = sqlite3_bind_text(st, at, times[i], TABQ_SQLITE_TIME_LEN, SQLITE_STATIC);
      break;
    default:
      bench_die("the raw loop binds no parameter id %u", def->params[i]);
    }
    check_sqlite(db, rc, "bind");
  }
}

static double drain_raw(const tabq_stmt *claim_def, const tabq_stmt *ack_def,
                        const bench_projection *pr, bench_tally *t) {
  sqlite3 *db = open_plain();
  sqlite3_stmt *claim = prepare(db, claim_def->sql, claim_def->nparams);
  sqlite3_stmt *ack = prepare(db, ack_def->sql, ack_def->nparams);
  char claim_times[TABQ_STMT_MAX_PARAMS][TABQ_SQLITE_TIME_LEN + 1];
  char ack_times[TABQ_STMT_MAX_PARAMS][TABQ_SQLITE_TIME_LEN + 1];
  memset(t, 0, sizeof *t);

  double t0 = bench_mono_s();
  for (;;) {
    raw_values v = {.now = bench_now_us()};
    v.lease_until = v.now + (int64_t)BENCH_LEASE_S * 1000000;
    bind_by_id(db, claim, claim_def, &v, claim_times);
    int rc = sqlite3_step(claim);
    if (rc == SQLITE_DONE) {
      sqlite3_reset(claim);
      break; /* the queue is empty */
    }
    if (rc != SQLITE_ROW)
      bench_die("claim: %s", sqlite3_errmsg(db));
    /* What a handler reads: id, the attempt as it stood before this claim, the payload. */
    v.id = sqlite3_column_int64(claim, pr->id);
    int64_t attempt = sqlite3_column_int64(claim, pr->attempt) - 1;
    const void *payload = sqlite3_column_blob(claim, pr->payload);
    int len = sqlite3_column_bytes(claim, pr->payload);
    if (!payload)
      bench_die("claim: row %lld has no payload", (long long)v.id);
    t->rows++;
    t->id_sum += v.id;
    t->attempt_sum += attempt;
    t->bytes += len;
    sqlite3_reset(claim); /* commits the claim, as the driver's reset does */

    v.token = v.lease_until;
    bind_by_id(db, ack, ack_def, &v, ack_times);
    check_sqlite(db, sqlite3_step(ack), "ack");
    if (sqlite3_changes(db) != 1)
      bench_die("ack of row %lld changed %d rows", (long long)v.id, sqlite3_changes(db));
    sqlite3_reset(ack);
  }
  double elapsed = bench_mono_s() - t0;

  sqlite3_finalize(claim);
  sqlite3_finalize(ack);
  sqlite3_close(db);
  return elapsed;
}

typedef struct raw_job {
  const tabq_stmt *claim_def, *ack_def;
  const bench_projection *pr;
  bench_tally *t;
  double elapsed;
} raw_job;

static void *raw_main(void *arg) {
  raw_job *j = arg;
  j->elapsed = drain_raw(j->claim_def, j->ack_def, j->pr, j->t);
  return NULL;
}

static double run_raw(const tabq_stmt *claim_def, const tabq_stmt *ack_def,
                      const bench_projection *pr, bench_tally *t) {
  raw_job j = {claim_def, ack_def, pr, t, 0};
  bench_threads(1, raw_main, &j, sizeof j);
  return j.elapsed;
}

/* ---- Main ----------------------------------------------------------------------------------- */

static void usage(FILE *to) {
  fprintf(to, "usage: tabq_bench [--rounds N] [--workers N] [--sql]\n"
              "  --rounds N   rounds per side, alternating raw and tabq (default 3)\n"
              "  --workers N  tabq's workers (default 1; the raw loop is one thread)\n"
              "  --sql        print the claim and ack statements both sides run\n");
}

int main(int argc, char **argv) {
  unsigned rounds = 3, workers = 1;
  bool show_sql = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds"))
      rounds = bench_parse_count("--rounds", i + 1 < argc ? argv[++i] : NULL, 1000);
    else if (!strcmp(argv[i], "--workers"))
      workers = bench_parse_count("--workers", i + 1 < argc ? argv[++i] : NULL, 256);
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

  /* The builders report failures through the host the core would have lent. */
  bench_init("tabq_bench");
  tabq_sqlite_set_host(&bench_host);
  tabq_stmt claim_def, ack_def;
  bench_build(tabq_sqlite_lease.claim, &jobs, TABQ_FORM_LEASE, "claim", &claim_def);
  bench_build(tabq_sqlite_dialect.ack, &jobs, TABQ_FORM_LEASE, "ack", &ack_def);
  bench_projection pr = bench_project(&claim_def, &jobs);

  snprintf(db_path, sizeof db_path, "/tmp/tabq-bench-XXXXXX");
  int fd = mkstemp(db_path);
  if (fd < 0)
    bench_die("mkstemp: %s", strerror(errno));
  close(fd);
  track_db();
  /* Stays open all run, so the WAL file is never dropped and re-created between rounds. */
  sqlite3 *admin = open_plain();
  check_sqlite(admin, sqlite3_exec(admin, schema, NULL, NULL, NULL), "schema");
  char url[128];
  snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", db_path);

  printf("tabq_bench: SQLite %s, WAL, synchronous=NORMAL, busy_timeout %d ms\n",
         sqlite3_libversion(), BUSY_MS);
  printf("  database %s: %d rows, %d-byte payloads\n", db_path, ROWS, BENCH_PAYLOAD_LEN);
  printf("  %u rounds per side (after one uncounted raw drain), tabq workers %u\n", rounds,
         workers);
  if (show_sql)
    printf("  claim: %s\n  ack:   %s\n", claim_def.sql, ack_def.sql);
  fflush(stdout);

  double *raw = calloc(rounds, sizeof *raw), *tq = calloc(rounds, sizeof *tq);
  if (!raw || !tq)
    bench_die("out of memory");
  /* The process's first drain runs cold (fresh heap, first faults): it would always fall on the
   * raw side, so one raw drain goes first and is not counted. */
  bench_tally t;
  int64_t ids = refill(admin);
  run_raw(&claim_def, &ack_def, &pr, &t);
  bench_expect_tally(&t, ROWS, ids, "raw warm-up");
  for (unsigned r = 0; r < rounds; r++) {
    ids = refill(admin);
    raw[r] = ROWS / run_raw(&claim_def, &ack_def, &pr, &t);
    bench_expect_tally(&t, ROWS, ids, "raw");
    expect_empty(admin, "raw");
    printf("round %u  raw   %6.0f msg/s\n", r + 1, raw[r]);
    fflush(stdout);

    ids = refill(admin);
    tq[r] = ROWS / bench_run_tabq(url, &jobs, workers, ROWS, &t);
    bench_expect_tally(&t, ROWS, ids, "tabq");
    expect_empty(admin, "tabq");
    printf("round %u  tabq  %6.0f msg/s\n", r + 1, tq[r]);
    fflush(stdout);
  }
  double mr = bench_median(raw, rounds), mt = bench_median(tq, rounds);
  printf("median   raw   %6.0f msg/s\n", mr);
  printf("median   tabq  %6.0f msg/s\n", mt);
  printf("tabq/raw = %.2f\n", mt / mr);
  printf("target: tabq/raw >= 0.95 at one worker (shown, never asserted)\n");

  free(raw);
  free(tq);
  tabq_sql_free(&claim_def);
  tabq_sql_free(&ack_def);
  sqlite3_close(admin);
  return 0;
}
