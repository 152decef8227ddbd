/* tabq_bench — how close tabq comes to the plainest loop that does its work.
 *
 * One SQLite table of ROWS rows is drained again and again in one run, in turns: a raw loop on a
 * plain sqlite3 connection, then tabq, then the raw loop again... so both sides see the same
 * machine state. The raw loop runs the very statements the SQLite dialect renders (obtained from
 * its builders, bound by parameter id as the core binds them), one row per claim as tabq does
 * with one worker; the difference between the two is what tabq itself costs. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include <tabq/sql.h>
#include <tabq/tabq.h>

#include "sqlite_plugin.h"

#define ROWS 20000
#define PAYLOAD_LEN 64
#define QUEUE "bench"
#define LEASE_S 30 /* the broker's default lease, which the tabq side runs with */
#define BUSY_MS 5000
#define POLL_MS 1000

static const tabq_table jobs = {
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

/* Every error ends the run; atexit removes the file. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tabq_bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void check_sqlite(sqlite3 *db, int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    die("%s: %s", what, sqlite3_errmsg(db));
}

/* ---- A tiny host for the dialect's builders ------------------------------------------------- */

static int host_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  (void)sqlstate;
  (void)native;
  va_list ap;
  va_start(ap, fmt);
  fputs("tabq_bench: dialect: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

static void host_log(int level, const char *fmt, ...) {
  if (level > TABQ_LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static const tabq_host bench_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = malloc,
    .realloc = realloc,
    .free = free,
    .fail = host_fail,
    .log = host_log,
};

static void build(tabq_build_fn fn, const char *what, tabq_stmt *st) {
  tabq_build b = {.table = &jobs, .form = TABQ_FORM_LEASE};
  tabq_sql_init(st, &bench_host);
  int rc = fn(&b, st);
  if (rc == TABQ_OK)
    rc = st->status;
  if (rc != TABQ_OK || !st->sql)
    die("the sqlite dialect built no %s statement (%s)", what, tabq_code_name((tabq_code)rc));
}

/* Where id, attempt and payload sit in the claim's projection, in the order the ABI fixes. */
typedef struct projection {
  int id, attempt, payload, n;
} projection;

static void locate(tabq_stmt *st, const tabq_col *c, int is_attempt, void *ctx) {
  (void)st;
  (void)is_attempt;
  projection *p = ctx;
  if (c == &jobs.id)
    p->id = p->n;
  else if (c == &jobs.attempt)
    p->attempt = p->n;
  else if (c == &jobs.payload)
    p->payload = p->n;
  p->n++;
}

/* ---- Clocks --------------------------------------------------------------------------------- */

/* The core's "now": wall-clock microseconds. */
static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Plain connections ---------------------------------------------------------------------- */

/* The settings the plugin gives every connection for this URL. */
static sqlite3 *open_plain(void) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(db_path, &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK)
    die("cannot open %s: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
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
    die("%s: %d placeholders, not %u", sql, sqlite3_bind_parameter_count(st), nparams);
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
  char payload[PAYLOAD_LEN];
  for (int i = 0; i < ROWS; i++) {
    memset(payload, 'a' + i % 26, sizeof payload);
    snprintf(payload, sizeof payload, "job-%d", i); /* the rest keeps the filler */
    sqlite3_bind_text(ins, 1, QUEUE, -1, SQLITE_STATIC);
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
    die("%s: %lld rows left in the table after the drain", side, (long long)left);
}

/* What a drain read back, to check both sides saw every row exactly once. */
typedef struct tally {
  int64_t rows, id_sum, attempt_sum, bytes;
} tally;

static void expect_tally(const tally *t, int64_t id_sum, const char *side) {
  if (t->rows != ROWS || t->id_sum != id_sum || t->attempt_sum != ROWS ||
      t->bytes != (int64_t)ROWS * PAYLOAD_LEN)
    die("%s read %lld rows (id sum %lld, want %lld; attempts %lld; %lld bytes)", side,
        (long long)t->rows, (long long)t->id_sum, (long long)id_sum, (long long)t->attempt_sum,
        (long long)t->bytes);
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
      rc = sqlite3_bind_text(st, at, QUEUE, sizeof QUEUE - 1, SQLITE_STATIC);
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
        die("time %lld us out of range", (long long)at_us);
      rc = sqlite3_bind_text(st, at, times[i], TABQ_SQLITE_TIME_LEN, SQLITE_STATIC);
      break;
    default:
      die("the raw loop binds no parameter id %u", def->params[i]);
    }
    check_sqlite(db, rc, "bind");
  }
}

static double drain_raw(const tabq_stmt *claim_def, const tabq_stmt *ack_def, const projection *pr,
                        tally *t) {
  sqlite3 *db = open_plain();
  sqlite3_stmt *claim = prepare(db, claim_def->sql, claim_def->nparams);
  sqlite3_stmt *ack = prepare(db, ack_def->sql, ack_def->nparams);
  char claim_times[TABQ_STMT_MAX_PARAMS][TABQ_SQLITE_TIME_LEN + 1];
  char ack_times[TABQ_STMT_MAX_PARAMS][TABQ_SQLITE_TIME_LEN + 1];
  memset(t, 0, sizeof *t);

  double t0 = mono_s();
  for (;;) {
    raw_values v = {.now = now_us()};
    v.lease_until = v.now + (int64_t)LEASE_S * 1000000;
    bind_by_id(db, claim, claim_def, &v, claim_times);
    int rc = sqlite3_step(claim);
    if (rc == SQLITE_DONE) {
      sqlite3_reset(claim);
      break; /* the queue is empty */
    }
    if (rc != SQLITE_ROW)
      die("claim: %s", sqlite3_errmsg(db));
    /* What a handler reads: id, the attempt as it stood before this claim, the payload. */
    v.id = sqlite3_column_int64(claim, pr->id);
    int64_t attempt = sqlite3_column_int64(claim, pr->attempt) - 1;
    const void *payload = sqlite3_column_blob(claim, pr->payload);
    int len = sqlite3_column_bytes(claim, pr->payload);
    if (!payload)
      die("claim: row %lld has no payload", (long long)v.id);
    t->rows++;
    t->id_sum += v.id;
    t->attempt_sum += attempt;
    t->bytes += len;
    sqlite3_reset(claim); /* commits the claim, as the driver's reset does */

    v.token = v.lease_until;
    bind_by_id(db, ack, ack_def, &v, ack_times);
    check_sqlite(db, sqlite3_step(ack), "ack");
    if (sqlite3_changes(db) != 1)
      die("ack of row %lld changed %d rows", (long long)v.id, sqlite3_changes(db));
    sqlite3_reset(ack);
  }
  double elapsed = mono_s() - t0;

  sqlite3_finalize(claim);
  sqlite3_finalize(ack);
  sqlite3_close(db);
  return elapsed;
}

typedef struct raw_job {
  const tabq_stmt *claim_def, *ack_def;
  const projection *pr;
  tally *t;
  double elapsed;
} raw_job;

static void *raw_main(void *arg) {
  raw_job *j = arg;
  j->elapsed = drain_raw(j->claim_def, j->ack_def, j->pr, j->t);
  return NULL;
}

/* On a thread of its own, as tabq's worker is: the main thread's malloc arena (brk) and a
 * thread's arena (mmap) trim and fault differently, and that alone moved results by 10%. */
static double run_raw(const tabq_stmt *claim_def, const tabq_stmt *ack_def, const projection *pr,
                      tally *t) {
  raw_job j = {claim_def, ack_def, pr, t, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, raw_main, &j))
    die("cannot start the raw loop's thread");
  pthread_join(th, NULL);
  return j.elapsed;
}

/* ---- tabq ----------------------------------------------------------------------------------- */

typedef struct drain {
  atomic_int_fast64_t rows, id_sum, attempt_sum, bytes;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
} drain;

static tabq_outcome on_job(tabq_delivery *d, void *user) {
  drain *dr = user;
  size_t len = 0;
  const void *payload = tabq_delivery_payload(d, &len);
  atomic_fetch_add_explicit(&dr->id_sum, tabq_delivery_id(d), memory_order_relaxed);
  atomic_fetch_add_explicit(&dr->attempt_sum, tabq_delivery_attempt(d), memory_order_relaxed);
  atomic_fetch_add_explicit(&dr->bytes, payload ? (int64_t)len : 0, memory_order_relaxed);
  if (atomic_fetch_add(&dr->rows, 1) + 1 == ROWS) {
    pthread_mutex_lock(&dr->mu);
    dr->done = true;
    pthread_cond_signal(&dr->cv);
    pthread_mutex_unlock(&dr->mu);
  }
  return tabq_ack();
}

static void sleep_us(long us) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};
  nanosleep(&ts, NULL);
}

static double run_tabq(const char *url, unsigned workers, tally *t) {
  tabq_broker_options bo = {.poll_interval_ms = POLL_MS,
                            .pool_size = workers + 2 > 8 ? workers + 2 : 8};
  tabq_broker *b = NULL;
  tabq_error err;
  if (tabq_connect(url, &bo, &b, &err))
    die("tabq_connect %s: %s", url, err.message);
  drain dr = {.done = false};
  pthread_mutex_init(&dr.mu, NULL);
  pthread_cond_init(&dr.cv, NULL);
  tabq_subscription_options so = {
      .queue = QUEUE,
      .handler = on_job,
      .user = &dr,
      .workers = workers,
      .poll_interval_ms = POLL_MS,
  };
  tabq_subscription *sub = NULL;

  double t0 = mono_s();
  if (tabq_subscribe(b, &jobs, &so, &sub, &err))
    die("tabq_subscribe: %s", err.message);
  pthread_mutex_lock(&dr.mu);
  while (!dr.done)
    pthread_cond_wait(&dr.cv, &dr.mu);
  pthread_mutex_unlock(&dr.mu);
  /* The last handler has returned; its ack runs right after, so wait for the settlement too. */
  tabq_stats st;
  for (;;) {
    tabq_subscription_stats(sub, &st);
    if (st.acked + st.failed + st.lease_lost + st.retried + st.released >= ROWS)
      break;
    sleep_us(20);
  }
  double elapsed = mono_s() - t0;

  if (st.acked != ROWS)
    die("tabq acked %llu rows of %d (failed %llu, lease lost %llu)", (unsigned long long)st.acked,
        ROWS, (unsigned long long)st.failed, (unsigned long long)st.lease_lost);
  tabq_close(b);
  *t = (tally){atomic_load(&dr.rows), atomic_load(&dr.id_sum), atomic_load(&dr.attempt_sum),
               atomic_load(&dr.bytes)};
  pthread_mutex_destroy(&dr.mu);
  pthread_cond_destroy(&dr.cv);
  return elapsed;
}

/* ---- Main ----------------------------------------------------------------------------------- */

static unsigned parse_count(const char *opt, const char *s, unsigned max) {
  char *end;
  errno = 0;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || errno || *end || v < 1 || v > (long)max)
    die("%s takes a whole number from 1 to %u", opt, max);
  return (unsigned)v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, unsigned n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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
      rounds = parse_count("--rounds", i + 1 < argc ? argv[++i] : NULL, 1000);
    else if (!strcmp(argv[i], "--workers"))
      workers = parse_count("--workers", i + 1 < argc ? argv[++i] : NULL, 256);
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
  tabq_sqlite_set_host(&bench_host);
  tabq_stmt claim_def, ack_def;
  build(tabq_sqlite_lease.claim, "claim", &claim_def);
  build(tabq_sqlite_dialect.ack, "ack", &ack_def);
  projection pr = {-1, -1, -1, 0};
  tabq_sql_each_projected(&claim_def, &jobs, locate, &pr);
  if (pr.id < 0 || pr.attempt < 0 || pr.payload < 0)
    die("the claim's projection lacks id, attempt or payload");

  snprintf(db_path, sizeof db_path, "/tmp/tabq-bench-XXXXXX");
  int fd = mkstemp(db_path);
  if (fd < 0)
    die("mkstemp: %s", strerror(errno));
  close(fd);
  track_db();
  /* Stays open all run, so the WAL file is never dropped and re-created between rounds. */
  sqlite3 *admin = open_plain();
  check_sqlite(admin, sqlite3_exec(admin, schema, NULL, NULL, NULL), "schema");
  char url[128];
  snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", db_path);

  printf("tabq_bench: SQLite %s, WAL, synchronous=NORMAL, busy_timeout %d ms\n",
         sqlite3_libversion(), BUSY_MS);
  printf("  database %s: %d rows, %d-byte payloads\n", db_path, ROWS, PAYLOAD_LEN);
  printf("  %u rounds per side (after one uncounted raw drain), tabq workers %u\n", rounds,
         workers);
  if (show_sql)
    printf("  claim: %s\n  ack:   %s\n", claim_def.sql, ack_def.sql);
  fflush(stdout);

  double *raw = calloc(rounds, sizeof *raw), *tq = calloc(rounds, sizeof *tq);
  if (!raw || !tq)
    die("out of memory");
  /* The process's first drain runs cold (fresh heap, first faults): it would always fall on the
   * raw side, so one raw drain goes first and is not counted. */
  tally t;
  int64_t ids = refill(admin);
  run_raw(&claim_def, &ack_def, &pr, &t);
  expect_tally(&t, ids, "raw warm-up");
  for (unsigned r = 0; r < rounds; r++) {
    ids = refill(admin);
    raw[r] = ROWS / run_raw(&claim_def, &ack_def, &pr, &t);
    expect_tally(&t, ids, "raw");
    expect_empty(admin, "raw");
    printf("round %u  raw   %6.0f msg/s\n", r + 1, raw[r]);
    fflush(stdout);

    ids = refill(admin);
    tq[r] = ROWS / run_tabq(url, workers, &t);
    expect_tally(&t, ids, "tabq");
    expect_empty(admin, "tabq");
    printf("round %u  tabq  %6.0f msg/s\n", r + 1, tq[r]);
    fflush(stdout);
  }
  double mr = median(raw, rounds), mt = median(tq, rounds);
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
