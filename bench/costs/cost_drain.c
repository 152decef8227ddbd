/* tabq_cost_drain — one drain of a SQLite queue table through tabq, for counting what each
 * message costs (costs.sh runs it under valgrind's DHAT and callgrind at two lengths).
 *
 * A temporary SQLite file gets N rows from plain sqlite3, then one tabq worker with a handler
 * that only acks drains them, and tabq_close ends the run. The fill and the final check run in
 * child processes: their work grows with N as the drain's does, so in this process it would not
 * cancel in costs.sh's slopes; a profiler writes a child's counts to a file of its own. */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>
#include <tabq/tabq.h>

#define QUEUE "costs"
#define PAYLOAD_LEN 64
#define MAX_ROWS 10000000
/* A drain whose handler saw no row for this long is stuck: under valgrind a row takes
 * milliseconds, so this is far beyond any slow run. */
#define STALL_S 120
/* The lease extender runs by the clock, every half lease, not by message: under valgrind a drain
 * runs some fifty times slower, and a round (which may connect a pooled slot) would land in one
 * measured length and not the other. A lease longer than any drain keeps it out of the slopes. */
#define LEASE_S 3600

static const tabq_table lease_jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

/* The same table in the advisory lock form (no locked_until), for a dialect that builds it. */
static const tabq_table advisory_jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .payload = {.name = "payload"},
    .advisory_lock = "jobs-{id}",
};

static const char *const schema =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, "
    "attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL);"
    "CREATE INDEX jobs_claim ON jobs (queue, id);";

/* ---- Errors and the temporary database ----------------------------------------------------- */

static char db_path[256];
static char db_files[3][272]; /* the file, its -wal and its -shm, named once for remove_db */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tabq_cost_drain: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* Async-signal-safe: unlink only, on paths written before any handler was set. */
static void remove_db(void) {
  for (int i = 0; i < 3; i++)
    if (db_files[i][0])
      unlink(db_files[i]);
}

static void on_signal(int sig) {
  remove_db();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void create_db(void) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  if (snprintf(db_path, sizeof db_path, "%s/tabq-cost-XXXXXX", dir) >= (int)sizeof db_path)
    die("TMPDIR is too long");
  int fd = mkstemp(db_path);
  if (fd < 0)
    die("mkstemp in %s: %s", dir, strerror(errno));
  close(fd);
  const char *suffix[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++)
    snprintf(db_files[i], sizeof db_files[i], "%s%s", db_path, suffix[i]);
  atexit(remove_db);
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    signal(sigs[i], on_signal);
}

/* ---- Plain sqlite3, in child processes ----------------------------------------------------- */

static void check_sqlite(sqlite3 *db, int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    die("%s: %s", what, sqlite3_errmsg(db));
}

static sqlite3 *open_plain(void) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    die("cannot open %s: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
  sqlite3_busy_timeout(db, 5000);
  return db;
}

/* The schema and `rows` rows in one transaction, then the WAL emptied into the file. */
static void fill(int64_t rows) {
  sqlite3 *db = open_plain();
  check_sqlite(db, sqlite3_exec(db, schema, NULL, NULL, NULL), "schema");
  check_sqlite(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
  sqlite3_stmt *ins = NULL;
  check_sqlite(
      db,
      sqlite3_prepare_v2(db, "INSERT INTO jobs (queue, payload) VALUES (?1, ?2)", -1, &ins, NULL),
      "insert");
  char payload[PAYLOAD_LEN];
  for (int64_t i = 0; i < rows; i++) {
    memset(payload, 'a' + (int)(i % 26), sizeof payload);
    sqlite3_bind_text(ins, 1, QUEUE, -1, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 2, payload, sizeof payload, SQLITE_STATIC);
    check_sqlite(db, sqlite3_step(ins), "insert");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  check_sqlite(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
  check_sqlite(db, sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
               "checkpoint");
  sqlite3_close(db);
}

/* After the drain nothing may be left, not even a leased row. */
static void expect_empty(int64_t rows) {
  (void)rows;
  sqlite3 *db = open_plain();
  sqlite3_stmt *st = NULL;
  check_sqlite(db, sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &st, NULL), "count");
  check_sqlite(db, sqlite3_step(st), "count");
  int64_t left = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (left != 0)
    die("%lld rows left in the table after the drain", (long long)left);
}

/* Runs fn(rows) in a child process and waits for it; the child skips this process's atexit
 * handlers, which would remove the database. */
static void in_child(void (*fn)(int64_t), int64_t rows, const char *what) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    die("fork: %s", strerror(errno));
  if (pid == 0) {
    fn(rows);
    fflush(NULL);
    _exit(0);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      die("waitpid: %s", strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("the %s failed", what);
}

/* ---- The drain ------------------------------------------------------------------------------ */

typedef struct drain {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t rows, target, id_sum;
  bool wrong; /* a row came at another attempt or with another payload length */
} drain;

static tabq_outcome on_job(tabq_delivery *d, void *user) {
  drain *dr = user;
  size_t len = 0;
  const void *payload = tabq_delivery_payload(d, &len);
  pthread_mutex_lock(&dr->mu);
  if (!payload || len != PAYLOAD_LEN || tabq_delivery_attempt(d) != 1)
    dr->wrong = true;
  dr->id_sum += tabq_delivery_id(d);
  if (++dr->rows == dr->target)
    pthread_cond_signal(&dr->cv);
  pthread_mutex_unlock(&dr->mu);
  return tabq_ack();
}

/* Until the handler has seen every row; a drain that stops moving ends the run. */
static void wait_handled(drain *dr) {
  int64_t seen = -1;
  pthread_mutex_lock(&dr->mu);
  while (dr->rows < dr->target) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STALL_S;
    if (pthread_cond_timedwait(&dr->cv, &dr->mu, &until) == ETIMEDOUT && dr->rows < dr->target) {
      if (dr->rows == seen)
        die("tabq handled no row for %d s (%lld of %lld)", STALL_S, (long long)dr->rows,
            (long long)dr->target);
      seen = dr->rows;
    }
  }
  pthread_mutex_unlock(&dr->mu);
}

static void drain_rows(const tabq_table *table, int64_t rows) {
  char url[300];
  snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", db_path);
  tabq_broker *b = NULL;
  tabq_error err;
  if (tabq_connect(url, NULL, &b, &err))
    die("tabq_connect: %s", err.message);
  drain dr = {.target = rows};
  pthread_mutex_init(&dr.mu, NULL);
  pthread_cond_init(&dr.cv, NULL);
  tabq_subscription_options so = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  so.queue = QUEUE;
  so.handler = on_job;
  so.user = &dr;
  so.workers = 1;
  so.lease_s = LEASE_S;
  tabq_subscription *sub = NULL;
  if (tabq_subscribe(b, table, &so, &sub, &err)) {
    tabq_close(b);
    die("tabq_subscribe: %s", err.message);
  }
  wait_handled(&dr);
  /* The last ack runs after its handler returned: closing lets it settle. */
  tabq_close(b);
  if (dr.wrong)
    die("a row came at an attempt other than 1 or without its %d-byte payload", PAYLOAD_LEN);
  if (dr.id_sum != rows * (rows + 1) / 2)
    die("the handler saw ids summing to %lld, not %lld", (long long)dr.id_sum,
        (long long)(rows * (rows + 1) / 2));
  pthread_mutex_destroy(&dr.mu);
  pthread_cond_destroy(&dr.cv);
}

/* ---- Main ----------------------------------------------------------------------------------- */

static void usage(FILE *to) {
  fprintf(to, "usage: tabq_cost_drain --rows N [--form lease|advisory]\n"
              "  fills a temporary SQLite file with N rows, drains them through tabq with one\n"
              "  worker and a handler that acks, and exits\n");
}

int main(int argc, char **argv) {
  int64_t rows = 0;
  const tabq_table *table = &lease_jobs;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(arg, "--rows") && val) {
      char *end;
      errno = 0;
      long long v = strtoll(val, &end, 10);
      if (errno || *end || v < 1 || v > MAX_ROWS)
        die("--rows takes a whole number from 1 to %d", MAX_ROWS);
      rows = v;
      i++;
    } else if (!strcmp(arg, "--form") && val) {
      if (!strcmp(val, "lease"))
        table = &lease_jobs;
      else if (!strcmp(val, "advisory"))
        table = &advisory_jobs;
      else
        die("--form takes lease or advisory, not '%s'", val);
      i++;
    } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (rows == 0) {
    usage(stderr);
    return 2;
  }

  create_db();
  in_child(fill, rows, "fill");
  drain_rows(table, rows);
  in_child(expect_empty, rows, "check");
  return 0;
}
