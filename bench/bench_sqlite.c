/* tabq_bench — one drain of a SQLite queue table (lease form) per run, by one side:
 *
 *   tabq  tabq itself, a no-op handler that acks (a batch handler with --batch N > 1);
 *   own   plain sqlite3 loops of the very statements the SQLite dialect renders (from its
 *         builders, bound by parameter id as the core binds them): tabq with nothing of its own;
 *   best  plain sqlite3 loops of the best SQL written by hand for the same guarantee:
 *           claim  UPDATE jobs SET attempt = attempt + 1, locked_until = ?2 WHERE id = (SELECT id
 *                  FROM jobs WHERE queue = ?1 AND (locked_until IS NULL OR locked_until <= ?3)
 *                  ORDER BY id LIMIT 1) RETURNING id, attempt, payload
 *                  (a batch: id IN (SELECT ... LIMIT ?4))
 *           ack    DELETE FROM jobs WHERE id = ?1 AND locked_until = ?2
 *                  (a batch: the deletes in one BEGIN IMMEDIATE ... COMMIT)
 *         on a processed_at table the claim adds "AND processed_at IS NULL" and the ack is
 *           UPDATE jobs SET processed_at = ?3, locked_until = NULL WHERE id = ?1 AND
 *           locked_until = ?2   (?3 the host's time, as tabq writes it)
 *
 * --table processed keeps finished rows (acks set processed_at) with the partial claim index
 * docs/table-description.md recommends; processed-naive keeps them with the plain index.
 *
 * A temporary database file (WAL, synchronous=NORMAL, as tabq's URL sets) is filled untimed with
 * --rows rows, then drained by --workers threads, each raw loop on a connection of its own. The
 * run prints one JSON line (bench_emit); bench/run.py interleaves the sides in rounds. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <tabq/sys/sql.h>
#include <tabq/tabq.h>

#include "bench_common.h"
#include "sqlite_plugin.h"

#define DEFAULT_ROWS 20000
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

/* The %s are the processed_at column and the claim index's predicate. */
static const char *const schema =
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, "
    "attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT,%s payload BLOB NOT NULL);"
    "CREATE INDEX jobs_claim ON jobs (queue, id)%s;";

/* The description the run drains: jobs, with processed_at on a table that keeps its rows. */
static tabq_table drained;

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

/* Deletes every row and inserts `rows` fresh ones in one transaction, then empties the WAL.
 * Returns the sum of the ids, which each side must read back exactly. */
static int64_t refill(sqlite3 *db, int64_t rows) {
  check_sqlite(db, sqlite3_exec(db, "BEGIN; DELETE FROM jobs", NULL, NULL, NULL), "delete");
  sqlite3_stmt *ins = prepare(db, "INSERT INTO jobs (queue, payload) VALUES (?1, ?2)", 2);
  char payload[BENCH_PAYLOAD_LEN];
  for (int64_t i = 0; i < rows; i++) {
    memset(payload, 'a' + (int)(i % 26), sizeof payload);
    snprintf(payload, sizeof payload, "job-%lld", (long long)i); /* the rest keeps the filler */
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

/* After a drain: nothing may be left, not even a leased row; of a processed_at table every row,
 * each finished and none leased. */
static void expect_drained(sqlite3 *db, const bench_args *a) {
  const char *side = bench_side_name(a->side);
  int64_t left = query_int(db, "SELECT count(*) FROM jobs");
  if (bench_processed_at(a))
    bench_expect_finished(left,
                          query_int(db, "SELECT count(*) FROM jobs WHERE processed_at IS NOT NULL "
                                        "AND locked_until IS NULL"),
                          a->rows, side);
  else if (left != 0)
    bench_die("%s: %lld rows left in the table after the drain", side, (long long)left);
}

/* ---- Loops on plain connections -------------------------------------------------------------- */

typedef struct raw_values {
  int64_t now, lease_until, token, id, limit;
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
      rc = sqlite3_bind_int64(st, at, v->limit);
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
      bench_die("the own loop binds no parameter id %u", def->params[i]);
    }
    check_sqlite(db, rc, "bind");
  }
}

/* The two sides' statements: the dialect's (bound by parameter id) or the hand-written ones
 * (bound by position: ?1 queue or id, ?2 lease or token, ?3 now, ?4 limit). The processed_
 * ones are for a processed_at table. */
static tabq_stmt own_claim, own_ack;
static bench_projection own_pr;

#define BEST_DUE "WHERE queue = ?1 AND (locked_until IS NULL OR locked_until <= ?3) ORDER BY id "
static const char *const best_claim_one =
    "UPDATE jobs SET attempt = attempt + 1, locked_until = ?2 WHERE id = (SELECT id FROM "
    "jobs " BEST_DUE "LIMIT 1) RETURNING id, attempt, payload";
static const char *const best_claim_many =
    "UPDATE jobs SET attempt = attempt + 1, locked_until = ?2 WHERE id IN (SELECT id FROM "
    "jobs " BEST_DUE "LIMIT ?4) RETURNING id, attempt, payload";
static const char *const best_ack = "DELETE FROM jobs WHERE id = ?1 AND locked_until = ?2";
#define BEST_OPEN_DUE                                                                              \
  "WHERE queue = ?1 AND (locked_until IS NULL OR locked_until <= ?3) AND processed_at IS NULL "    \
  "ORDER BY id "
static const char *const best_processed_claim_one =
    "UPDATE jobs SET attempt = attempt + 1, locked_until = ?2 WHERE id = (SELECT id FROM "
    "jobs " BEST_OPEN_DUE "LIMIT 1) RETURNING id, attempt, payload";
static const char *const best_processed_claim_many =
    "UPDATE jobs SET attempt = attempt + 1, locked_until = ?2 WHERE id IN (SELECT id FROM "
    "jobs " BEST_OPEN_DUE "LIMIT ?4) RETURNING id, attempt, payload";
static const char *const best_processed_ack =
    "UPDATE jobs SET processed_at = ?3, locked_until = NULL WHERE id = ?1 AND locked_until = ?2";

/* The hand-written statements of the run's table. */
static const char *best_claim_sql(const bench_args *a) {
  bool many = a->batch > 1;
  if (bench_processed_at(a))
    return many ? best_processed_claim_many : best_processed_claim_one;
  return many ? best_claim_many : best_claim_one;
}

static const char *best_ack_sql(const bench_args *a) {
  return bench_processed_at(a) ? best_processed_ack : best_ack;
}

typedef struct loop {
  const bench_args *a;
  bench_tally t;
  double start, end;
} loop;

/* Binds the hand-written claim's parameters. */
static void bind_best_claim(sqlite3 *db, sqlite3_stmt *st, const raw_values *v, bool many,
                            char (*times)[TABQ_SQLITE_TIME_LEN + 1]) {
  if (!tabq_sqlite_time_format(v->lease_until, times[0]) ||
      !tabq_sqlite_time_format(v->now, times[1]))
    bench_die("time out of range");
  check_sqlite(db, sqlite3_bind_text(st, 1, BENCH_QUEUE, sizeof BENCH_QUEUE - 1, SQLITE_STATIC),
               "bind");
  check_sqlite(db, sqlite3_bind_text(st, 2, times[0], TABQ_SQLITE_TIME_LEN, SQLITE_STATIC), "bind");
  check_sqlite(db, sqlite3_bind_text(st, 3, times[1], TABQ_SQLITE_TIME_LEN, SQLITE_STATIC), "bind");
  if (many)
    check_sqlite(db, sqlite3_bind_int64(st, 4, v->limit), "bind");
}

/* One connection draining until its claim comes back empty: a claim of --batch rows, then their
 * acks (own: one statement each, as the core settles; best: in one transaction). */
static void *loop_main(void *arg) {
  loop *l = arg;
  bool best = l->a->side == BENCH_BEST, many = l->a->batch > 1;
  sqlite3 *db = open_plain();
  sqlite3_stmt *claim, *ack;
  bool processed = bench_processed_at(l->a);
  if (best) {
    claim = prepare(db, best_claim_sql(l->a), many ? 4 : 3);
    ack = prepare(db, best_ack_sql(l->a), processed ? 3 : 2);
  } else {
    claim = prepare(db, own_claim.sql, own_claim.nparams);
    ack = prepare(db, own_ack.sql, own_ack.nparams);
  }
  bench_projection pr = best ? (bench_projection){0, 1, 2, 3} : own_pr;
  char claim_times[TABQ_STMT_MAX_PARAMS][TABQ_SQLITE_TIME_LEN + 1];
  char ack_times[TABQ_STMT_MAX_PARAMS][TABQ_SQLITE_TIME_LEN + 1];
  int64_t *ids = calloc(l->a->batch, sizeof *ids);
  if (!ids)
    bench_die("out of memory");
  memset(&l->t, 0, sizeof l->t);

  l->start = bench_mono_s();
  for (;;) {
    raw_values v = {.now = bench_now_us(), .limit = l->a->batch};
    v.lease_until = v.now + (int64_t)BENCH_LEASE_S * 1000000;
    if (best)
      bind_best_claim(db, claim, &v, many, claim_times);
    else
      bind_by_id(db, claim, &own_claim, &v, claim_times);
    unsigned n = 0;
    int rc;
    while ((rc = sqlite3_step(claim)) == SQLITE_ROW) {
      /* What a handler reads: id, the attempt as it stood before this claim, the payload. */
      ids[n] = sqlite3_column_int64(claim, pr.id);
      const void *payload = sqlite3_column_blob(claim, pr.payload);
      if (!payload)
        bench_die("claim: row %lld has no payload", (long long)ids[n]);
      l->t.rows++;
      l->t.id_sum += ids[n];
      l->t.attempt_sum += sqlite3_column_int64(claim, pr.attempt) - 1;
      l->t.bytes += sqlite3_column_bytes(claim, pr.payload);
      n++;
    }
    if (rc != SQLITE_DONE)
      bench_die("claim: %s", sqlite3_errmsg(db));
    sqlite3_reset(claim); /* commits the claim, as the driver's reset does */
    if (n == 0)
      break; /* the queue is empty */

    v.token = v.lease_until;
    v.now = bench_now_us(); /* what a processed_at ack writes: the time of the ack */
    if (best && many)
      check_sqlite(db, sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), "begin");
    for (unsigned i = 0; i < n; i++) {
      v.id = ids[i];
      if (best) {
        tabq_sqlite_time_format(v.token, ack_times[0]);
        sqlite3_bind_int64(ack, 1, v.id);
        sqlite3_bind_text(ack, 2, ack_times[0], TABQ_SQLITE_TIME_LEN, SQLITE_STATIC);
        if (processed) {
          tabq_sqlite_time_format(v.now, ack_times[1]);
          sqlite3_bind_text(ack, 3, ack_times[1], TABQ_SQLITE_TIME_LEN, SQLITE_STATIC);
        }
      } else {
        bind_by_id(db, ack, &own_ack, &v, ack_times);
      }
      check_sqlite(db, sqlite3_step(ack), "ack");
      if (sqlite3_changes(db) != 1)
        bench_die("ack of row %lld changed %d rows", (long long)v.id, sqlite3_changes(db));
      sqlite3_reset(ack);
    }
    if (best && many)
      check_sqlite(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
  }
  l->end = bench_mono_s();

  free(ids);
  sqlite3_finalize(claim);
  sqlite3_finalize(ack);
  sqlite3_close(db);
  return NULL;
}

/* Runs the loops on --workers threads; the time from the first start to the last end. */
static double run_loops(const bench_args *a, bench_tally *t) {
  loop *ls = calloc(a->workers, sizeof *ls);
  if (!ls)
    bench_die("out of memory");
  for (unsigned i = 0; i < a->workers; i++)
    ls[i].a = a;
  bench_threads(a->workers, loop_main, ls, sizeof ls[0]);
  double start = ls[0].start, end = ls[0].end;
  memset(t, 0, sizeof *t);
  for (unsigned i = 0; i < a->workers; i++) {
    start = ls[i].start < start ? ls[i].start : start;
    end = ls[i].end > end ? ls[i].end : end;
    bench_tally_add(t, &ls[i].t);
  }
  free(ls);
  return end - start;
}

/* ---- Main ----------------------------------------------------------------------------------- */

static const char *const usage =
    "usage: tabq_bench [--side tabq|own|best] [--form lease] [--workers N] [--batch N]\n"
    "                  [--rows N] [--sql] [--table plain|processed|processed-naive]\n"
    "                  [--coalesce-us US]\n"
    "  one drain of --rows rows (default 20000) of a temporary SQLite file by one side,\n"
    "  printed as one JSON line; --table processed keeps finished rows (processed_at) with\n"
    "  a partial claim index, processed-naive with the plain one; --coalesce-us turns on\n"
    "  coalesce_acks (tabq side) with that window\n";

int main(int argc, char **argv) {
  bench_init("tabq_bench");
  bench_args a;
  bench_parse_args(argc, argv, TABQ_FORM_LEASE, DEFAULT_ROWS, usage, &a);
  drained = jobs;
  drained.processed_at.name = bench_processed_at(&a);
  /* The builders report failures through the host the core would have lent. */
  tabq_sqlite_set_host(&bench_host);
  if (a.side == BENCH_OWN) {
    /* The claim tabq runs: claim_one for claims of one row, claim for a batch. */
    bench_build(a.batch == 1 && tabq_sqlite_lease.claim_one ? tabq_sqlite_lease.claim_one
                                                            : tabq_sqlite_lease.claim,
                &drained, TABQ_FORM_LEASE, "claim", &own_claim);
    bench_build(tabq_sqlite_dialect.ack, &drained, TABQ_FORM_LEASE, "ack", &own_ack);
    own_pr = bench_project(&own_claim, &drained);
    if (a.show_sql)
      fprintf(stderr, "own claim: %s\nown ack:   %s\n", own_claim.sql, own_ack.sql);
  } else if (a.side == BENCH_BEST && a.show_sql) {
    fprintf(stderr, "best claim: %s\nbest ack:   %s%s\n", best_claim_sql(&a), best_ack_sql(&a),
            a.batch > 1 ? " (a batch's in one transaction)" : "");
  }

  snprintf(db_path, sizeof db_path, "/tmp/tabq-bench-XXXXXX");
  int fd = mkstemp(db_path);
  if (fd < 0)
    bench_die("mkstemp: %s", strerror(errno));
  close(fd);
  track_db();
  /* Stays open all run, so the WAL file is never dropped and re-created during the drain. */
  sqlite3 *admin = open_plain();
  char ddl[512];
  snprintf(ddl, sizeof ddl, schema, bench_processed_at(&a) ? " processed_at TEXT," : "",
           a.table == BENCH_TABLE_PROCESSED ? " WHERE processed_at IS NULL" : "");
  check_sqlite(admin, sqlite3_exec(admin, ddl, NULL, NULL, NULL), "schema");
  char url[128];
  snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", db_path);
  int64_t ids = refill(admin, a.rows);

  bench_tally t;
  double cpu = bench_cpu_s(), seconds;
  if (a.side == BENCH_TABQ)
    seconds = bench_run_tabq(url, &drained, &a, &t);
  else
    seconds = run_loops(&a, &t);
  cpu = bench_cpu_s() - cpu;
  bench_expect_tally(&t, a.rows, ids, bench_side_name(a.side));
  expect_drained(admin, &a);

  /* The database is in this process: its CPU is the client's. */
  bench_result r = {.db = "sqlite",
                    .server_version = sqlite3_libversion(),
                    .seconds = seconds,
                    .client_cpu_s = cpu,
                    .server_cpu_s = -1};
  bench_emit(&a, &r);
  if (a.side == BENCH_OWN) {
    tabq_sql_free(&own_claim);
    tabq_sql_free(&own_ack);
  }
  sqlite3_close(admin);
  return 0;
}
