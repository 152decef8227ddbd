/* SQLite under contention (docs/sqlite.md): another process writing to the same file while tabq
 * drains it, and a disk that fills up under it.
 *
 * - Another process (plain sqlite3, no tabq) takes the write lock over and over, for less than
 *   tabq's busy timeout: every row is handled exactly once and no settlement fails.
 * - It holds the lock for longer than the busy timeout: claims and settlements fail with a clear
 *   error (logged, counted), and no row is lost: once the other writer stops, every row ends
 *   handled, at least once.
 * - The file sits on a small tmpfs that fills up: a publish that finds no room fails with an
 *   error that says so, and every row written before it stays; a drain then may not settle
 *   (a delete in WAL mode needs room too) and loses nothing; `PRAGMA integrity_check` is ok
 *   throughout, and once the tmpfs is made larger the drain finishes.
 *
 * The tmpfs needs root (./dev test runs as root, as CI does). */
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cunit_main.h"
#include "support.h"

static tabq_error err;

static const char jobs_ddl[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, priority INTEGER NOT NULL "
    "DEFAULT 0, retry_after TEXT, attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, "
    "locked_until TEXT, headers TEXT, payload BLOB NOT NULL);"
    "CREATE INDEX jobs_claim ON jobs (queue, priority, retry_after, id);"
    "CREATE TABLE other (n INTEGER PRIMARY KEY, note TEXT);";

static sqlite3 *open_file(const char *path) {
  sqlite3 *db = NULL;
  CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, 30000);
  return db;
}

static void exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK)
    fprintf(stderr, "sqlite: %s: %s\n", sql, msg ? msg : sqlite3_errstr(rc));
  sqlite3_free(msg);
  CU_ASSERT_EQUAL_FATAL(rc, SQLITE_OK);
}

static long long count_of(const char *path, const char *sql) {
  sqlite3 *db = open_file(path);
  sqlite3_stmt *st = NULL;
  long long n = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static bool integrity_ok(const char *path) {
  sqlite3 *db = open_file(path);
  sqlite3_stmt *st = NULL;
  bool ok = false;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    ok = !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
  return ok;
}

static void make_file(const char *path) {
  unlink(path);
  sqlite3 *db = open_file(path);
  exec(db, jobs_ddl);
  sqlite3_close(db);
}

/* The claim failures the broker logged, and whether it said they ended. */
static atomic_int claim_lines, recovered_lines;

static void count_lines(int level, const char *message, void *user) {
  (void)user;
  if (strstr(message, "claim on table") || strstr(message, "claims on table jobs still"))
    atomic_fetch_add(&claim_lines, 1);
  if (strstr(message, "succeed again"))
    atomic_fetch_add(&recovered_lines, 1);
  if (level <= TABQ_LOG_WARN)
    fprintf(stderr, "tabq: %s\n", message);
}

static tabq_broker *broker_on(const char *path, int busy_ms) {
  char url[600];
  snprintf(url, sizeof url, "sqlite:%s?synchronous=normal&busy_timeout=%d", path, busy_ms);
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.poll_interval_ms = 20;
  o.pool_size = 8;
  o.lease_s = 2;
  o.log = count_lines;
  o.log_level = TABQ_LOG_INFO;
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

/* ---- Another process writing ------------------------------------------------------------ */

/* The other writer: a child that takes the write lock for `hold_ms`, commits a row of its own,
 * rests `rest_ms`, and again, until killed. Its own rows are counted to show it got through. */
static pid_t other_writer(const char *path, int hold_ms, int rest_ms) {
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid)
    return pid;
  sqlite3 *db = NULL;
  if (sqlite3_open(path, &db) != SQLITE_OK)
    _exit(2);
  sqlite3_busy_timeout(db, 60000);
  for (;;) {
    if (sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO other (note) VALUES ('theirs')", NULL, NULL,
                     NULL) != SQLITE_OK)
      _exit(3);
    usleep((useconds_t)hold_ms * 1000);
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
      _exit(4);
    usleep((useconds_t)rest_ms * 1000);
  }
}

static void stop(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

#define ROWS 600
#define BUSY_ROWS 3000 /* enough for the drain to meet the other writer many times */

static void a_writer_within_the_busy_timeout_costs_nothing(void) {
  char path[] = "/tmp/tabq-contention-XXXXXX";
  CU_ASSERT_FATAL(mkdtemp(path) != NULL);
  char file[128];
  snprintf(file, sizeof file, "%s/jobs.db", path);
  make_file(file);
  pid_t other = other_writer(file, 30, 5);
  tabq_broker *b = broker_on(file, 5000);
  publish_n(b, "q", BUSY_ROWS);
  once_reset(BUSY_ROWS);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = once_handler;
  o.workers = 4;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  for (int waited = 0; waited < 60000 && count_of(file, "SELECT count(*) FROM jobs"); waited += 50)
    sleep_ms(50);
  stop(other);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(b);
  CU_ASSERT_EQUAL(count_of(file, "SELECT count(*) FROM jobs"), 0);
  once_check();
  CU_ASSERT_EQUAL(st.failed, 0);
  CU_ASSERT_EQUAL(st.lease_lost, 0);
  CU_ASSERT(count_of(file, "SELECT count(*) FROM other") > 3); /* it did write meanwhile */
  CU_ASSERT(integrity_ok(file));
  printf("\n  %d rows exactly once beside %lld commits of another process\n", BUSY_ROWS,
         count_of(file, "SELECT count(*) FROM other"));
}

/* Handled ids, with repeats (a lease that ran out while its ack waited comes back). */
static atomic_int seen[ROWS + 1];

static tabq_outcome count_and_ack(tabq_delivery *d, void *user) {
  (void)user;
  int64_t id = tabq_delivery_id(d);
  if (id >= 1 && id <= ROWS)
    atomic_fetch_add(&seen[id], 1);
  return tabq_ack();
}

static void a_writer_past_the_busy_timeout_loses_nothing(void) {
  char path[] = "/tmp/tabq-contention-XXXXXX";
  CU_ASSERT_FATAL(mkdtemp(path) != NULL);
  char file[128];
  snprintf(file, sizeof file, "%s/jobs.db", path);
  make_file(file);
  tabq_broker *b = broker_on(file, 100);
  publish_n(b, "q", ROWS);
  for (int i = 0; i <= ROWS; i++)
    atomic_store(&seen[i], 0);
  /* The other writer holds the lock 400 ms at a time, four times tabq's busy timeout. */
  pid_t other = other_writer(file, 400, 50);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = count_and_ack;
  o.workers = 4;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  sleep_ms(3000);
  stop(other);
  for (int waited = 0; waited < 60000 && count_of(file, "SELECT count(*) FROM jobs"); waited += 50)
    sleep_ms(50);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(b);
  CU_ASSERT_EQUAL(count_of(file, "SELECT count(*) FROM jobs"), 0);
  int never = 0, again = 0;
  for (int i = 1; i <= ROWS; i++) {
    never += atomic_load(&seen[i]) == 0;
    again += atomic_load(&seen[i]) > 1;
  }
  CU_ASSERT_EQUAL(never, 0);
  CU_ASSERT(integrity_ok(file));
  printf("\n  %d rows handled, %d of them twice, %llu settlements failed on the lock and came "
         "back\n",
         ROWS, again, (unsigned long long)st.failed);
}

/* ---- A full disk -------------------------------------------------------------------------- */

#define PAYLOAD 4096

static void a_full_disk_is_a_clear_error_and_loses_nothing(void) {
  CU_ASSERT_EQUAL_FATAL(geteuid(), 0); /* mounting a tmpfs needs root, as ./dev test runs */
  char dir[] = "/tmp/tabq-fulldisk-XXXXXX";
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
  if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
    fprintf(stderr, "mount tmpfs on %s: %s\n", dir, strerror(errno));
    CU_FAIL_FATAL("cannot mount a tmpfs");
  }
  char file[128];
  snprintf(file, sizeof file, "%s/jobs.db", dir);
  make_file(file);
  tabq_broker *b = broker_on(file, 5000);
  static char payload[PAYLOAD];
  memset(payload, 'x', sizeof payload);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = payload;
  m.payload_len = sizeof payload;
  int written = 0, rc = TABQ_OK;
  while (written < 10000 && (rc = tabq_publish(b, jobs_table(), &m, &err)) == TABQ_OK)
    written++;
  CU_ASSERT_NOT_EQUAL(rc, TABQ_OK);
  printf("\n  full after %d rows: %s: %s\n", written, tabq_code_name((tabq_code)rc), err.message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "full"));
  CU_ASSERT(written > 10);
  CU_ASSERT(integrity_ok(file));
  CU_ASSERT_EQUAL(count_of(file, "SELECT count(*) FROM jobs"), written);

  /* Drained while full: whatever settles, nothing is lost and the file stays whole. */
  for (int i = 0; i <= ROWS; i++)
    atomic_store(&seen[i], 0);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = count_and_ack;
  o.workers = 2;
  tabq_subscription *s;
  atomic_store(&claim_lines, 0);
  atomic_store(&recovered_lines, 0);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  sleep_ms(1500);
  long long left = count_of(file, "SELECT count(*) FROM jobs");
  CU_ASSERT(integrity_ok(file));
  /* Claims failing all along, every 20 ms unless they back off: one line says so. */
  int lines = atomic_load(&claim_lines);
  CU_ASSERT(lines >= 1 && lines <= 2);

  /* Room again: the drain finishes, every row handled. */
  CU_ASSERT_EQUAL_FATAL(mount("tmpfs", dir, "tmpfs", MS_REMOUNT, "size=16m"), 0);
  for (int waited = 0; waited < 60000 && count_of(file, "SELECT count(*) FROM jobs"); waited += 50)
    sleep_ms(50);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(b);
  CU_ASSERT_EQUAL(count_of(file, "SELECT count(*) FROM jobs"), 0);
  CU_ASSERT(atomic_load(&recovered_lines) >= 1);
  int never = 0;
  for (int i = 1; i <= written && i <= ROWS; i++)
    never += atomic_load(&seen[i]) == 0;
  CU_ASSERT_EQUAL(never, 0);
  CU_ASSERT(integrity_ok(file));
  printf("  while full %lld of %d rows were still there, failed claims logged in %d line(s); "
         "%llu settlements failed, then all drained\n",
         left, written, lines, (unsigned long long)st.failed);
  umount2(dir, MNT_DETACH);
  rmdir(dir);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"another process's writes within the busy timeout cost nothing",
       a_writer_within_the_busy_timeout_costs_nothing},
      {"another process's writes past the busy timeout lose nothing",
       a_writer_past_the_busy_timeout_loses_nothing},
      {"a full disk is a clear error and loses nothing",
       a_full_disk_is_a_clear_error_and_loses_nothing},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("sqlite under contention", NULL, NULL, tests);
  return 0;
}
