/* Pausing a queue across processes (tabq/controls.h, docs/pause.md) on a real database: two
 * processes (pause_child.c) subscribed to one queue stop claiming within one poll interval of a
 * pause written by a third broker, a row in work when the pause came finishes and settles, and
 * a resume drains what waited; with listen_notify (PostgreSQL) the pause reaches processes whose
 * poll interval is 30 s at once. Also a pause in the broker's own process, a shutdown while
 * paused, and every refusal, each changing nothing. Rows are counted directly with the
 * database's client library, never through tabq. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <tabq/controls.h>
#include <time.h>

#include "cunit_main.h"
#include "support.h"

#define POLL_MS 200

static testdb db;
static tabq_error err;

static void controls_table(const char *name, bool with_paused) {
  char sql[512];
  const char *paused = with_paused ? "paused INTEGER NOT NULL DEFAULT 0, " : "";
  if (db.kind == TEST_SQLITE)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (queue_table TEXT NOT NULL, queue TEXT NOT NULL, %spaused_at TEXT, "
             "PRIMARY KEY (queue_table, queue))",
             name, paused);
  else if (db.kind == TEST_POSTGRES)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (queue_table TEXT NOT NULL, queue TEXT NOT NULL, %spaused_at "
             "TIMESTAMPTZ, PRIMARY KEY (queue_table, queue))",
             name, paused);
  else
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (queue_table VARCHAR(191) NOT NULL, queue VARCHAR(191) NOT NULL, "
             "%spaused_at DATETIME(6) NULL, PRIMARY KEY (queue_table, queue)) ENGINE=InnoDB",
             name, paused);
  testdb_exec(&db, sql);
}

static tabq_controls controls(void) {
  tabq_controls c = TABQ_CONTROLS_INIT;
  c.name = "queue_controls";
  c.table_column = "queue_table";
  c.queue_column = "queue";
  c.paused_column = "paused";
  c.paused_at_column = "paused_at";
  return c;
}

static void setup(void) {
  testdb_create(&db);
  controls_table("queue_controls", true);
}

static tabq_broker *controlled(unsigned poll_ms, bool listen) {
  tabq_broker_options o = {.size = sizeof(tabq_broker_options),
                           .poll_interval_ms = poll_ms,
                           .pool_size = 6,
                           .listen_notify = listen};
  tabq_broker *b = NULL;
  int rc = tabq_connect(db.url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  tabq_controls c = controls();
  rc = tabq_set_controls(b, &c, &err);
  if (rc)
    fprintf(stderr, "set_controls: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return b;
}

static long long publish(tabq_broker *b, const char *payload) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = payload;
  m.payload_len = strlen(payload);
  int rc = tabq_publish(b, jobs_table(), &m, &err);
  if (rc)
    fprintf(stderr, "publish: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return testdb_int(&db, "SELECT MAX(id) FROM jobs");
}

static long long due_rows(void) {
  return testdb_int(&db, "SELECT COUNT(*) FROM jobs");
}

static bool paused_now(tabq_broker *b) {
  bool paused = false;
  int rc = tabq_paused(b, jobs_table(), "q", &paused, &err);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  return paused;
}

/* ---- the children ------------------------------------------------------------------------ */

#define NCHILD 2

/* What the children said: every "start" and "end" with its id, in the order read. */
typedef struct said {
  long long starts[256], ends[256];
  int nstarts, nends;
} said;

static child kids[NCHILD];

static void kids_start(unsigned poll_ms, bool listen) {
  char poll[16];
  snprintf(poll, sizeof poll, "%u", poll_ms);
  for (int i = 0; i < NCHILD; i++) {
    char *const argv[] = {TABQ_PAUSE_CHILD, db.url, poll, listen ? "1" : "0", NULL};
    child_spawn(&kids[i], argv);
  }
  for (int i = 0; i < NCHILD; i++) {
    char line[512] = "";
    bool got = child_line(&kids[i], line, sizeof line, 20000);
    if (!got || strcmp(line, "subscribed"))
      fprintf(stderr, "child %d: %s\n", i, got ? line : "(nothing)");
    CU_ASSERT_FATAL(got && !strcmp(line, "subscribed"));
  }
}

static void kids_stop(void) {
  for (int i = 0; i < NCHILD; i++) {
    child_say(&kids[i], "quit");
    int status = child_reap(&kids[i]);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool has(const long long *ids, int n, long long id) {
  for (int i = 0; i < n; i++)
    if (ids[i] == id)
      return true;
  return false;
}

/* Reads what the children say for `ms`, or until `until_starts` starts or `until_ends` ends
 * were read in all (0: the whole time) or the end of row `end_of` (0: none) was. */
static void listen_kids(said *s, int ms, int until_starts, int until_ends, long long end_of) {
  int64_t deadline = now_ms() + ms;
  while (now_ms() < deadline) {
    if (until_starts && s->nstarts >= until_starts)
      return;
    if (until_ends && s->nends >= until_ends)
      return;
    if (end_of && has(s->ends, s->nends, end_of))
      return;
    for (int i = 0; i < NCHILD; i++) {
      char line[128];
      if (!child_line(&kids[i], line, sizeof line, 10))
        continue;
      long long id = 0;
      if (sscanf(line, "start %lld", &id) == 1 && s->nstarts < 256)
        s->starts[s->nstarts++] = id;
      else if (sscanf(line, "end %lld", &id) == 1 && s->nends < 256)
        s->ends[s->nends++] = id;
    }
  }
}

/* Two processes on queue q, paused and resumed by a third broker (this one). */
static void test_two_processes(void) {
  setup();
  kids_start(POLL_MS, false);
  tabq_broker *b = controlled(POLL_MS, false);
  CU_ASSERT_FALSE(paused_now(b));

  /* Running: rows are handled. */
  said before = {0};
  for (int i = 0; i < 4; i++)
    publish(b, "job");
  listen_kids(&before, 10000, 0, 4, 0);
  CU_ASSERT_EQUAL(before.nends, 4);
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 0, 10000));

  /* A row in work when the pause comes. */
  said during = {0};
  long long slow = publish(b, "slow");
  listen_kids(&during, 10000, 1, 0, 0);
  CU_ASSERT_FATAL(during.nstarts == 1 && during.starts[0] == slow);

  CU_ASSERT_EQUAL_FATAL(tabq_pause(b, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT_TRUE(paused_now(b));
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT paused FROM queue_controls WHERE queue_table = 'jobs' "
                                  "AND queue = 'q'"),
                  1);
  CU_ASSERT_EQUAL(
      testdb_int(&db, "SELECT COUNT(*) FROM queue_controls WHERE paused_at IS NOT NULL"), 1);
  /* One poll interval and slack for the pause to reach both processes. */
  listen_kids(&during, 2 * POLL_MS + 300, 0, 0, 0);

  /* From now on nothing is claimed: ten rows published wait, while four poll intervals pass. */
  said paused = {0};
  for (int i = 0; i < 10; i++)
    publish(b, "job");
  listen_kids(&paused, 4 * POLL_MS + 400, 0, 0, 0);
  CU_ASSERT_EQUAL(paused.nstarts, 0);
  char others[96];
  snprintf(others, sizeof others, "SELECT COUNT(*) FROM jobs WHERE id <> %lld", slow);
  CU_ASSERT_EQUAL(testdb_int(&db, others), 10);

  /* The row in work finished and settled: its end said, its row gone. */
  if (!has(during.ends, during.nends, slow))
    listen_kids(&paused, 10000, 0, 0, slow);
  CU_ASSERT(has(during.ends, during.nends, slow) || has(paused.ends, paused.nends, slow));
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 10, 5000));
  listen_kids(&paused, 2 * POLL_MS, 0, 0, 0);
  CU_ASSERT_EQUAL(paused.nstarts, 0);
  CU_ASSERT_EQUAL(due_rows(), 10);

  /* Pausing again changes nothing more; resume drains what waited. */
  CU_ASSERT_EQUAL(tabq_pause(b, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM queue_controls"), 1);
  CU_ASSERT_EQUAL_FATAL(tabq_resume(b, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT_FALSE(paused_now(b));
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM queue_controls WHERE paused_at IS NULL"),
                  1);
  said after = {0};
  listen_kids(&after, 15000, 0, 10, 0);
  CU_ASSERT_EQUAL(after.nends, 10);
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 0, 5000));
  tabq_close(b);
  kids_stop();
  testdb_remove(&db);
}

/* With listen_notify: processes polling every 30 s learn the pause and the resume at once. */
static void test_notified(void) {
  if (db.kind != TEST_POSTGRES && test_db_kind() != TEST_POSTGRES) {
    CU_PASS("notifications are PostgreSQL's");
    return;
  }
  setup();
  kids_start(30000, true);
  tabq_broker *b = controlled(30000, true);
  said before = {0};
  publish(b, "job");
  publish(b, "job");
  listen_kids(&before, 10000, 0, 2, 0); /* woken by the publish's notification */
  CU_ASSERT_EQUAL_FATAL(before.nends, 2);

  CU_ASSERT_EQUAL_FATAL(tabq_pause(b, jobs_table(), "q", &err), TABQ_OK);
  said paused = {0};
  listen_kids(&paused, 1000, 0, 0, 0);
  /* Each publish notifies the children: woken, they must not claim. */
  for (int i = 0; i < 5; i++)
    publish(b, "job");
  listen_kids(&paused, 1500, 0, 0, 0);
  CU_ASSERT_EQUAL(paused.nstarts, 0);
  CU_ASSERT_EQUAL(due_rows(), 5);

  CU_ASSERT_EQUAL_FATAL(tabq_resume(b, jobs_table(), "q", &err), TABQ_OK);
  said after = {0};
  listen_kids(&after, 10000, 0, 5, 0); /* well before the 30 s poll interval */
  CU_ASSERT_EQUAL(after.nends, 5);
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 0, 5000));
  tabq_close(b);
  kids_stop();
  testdb_remove(&db);
}

/* ---- in one process ------------------------------------------------------------------------ */

static atomic_int handled;

static tabq_outcome count_handler(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  atomic_fetch_add(&handled, 1);
  return tabq_ack();
}

/* The pausing broker's own subscription stops at once, a paused broker shuts down, and a
 * subscription opened while paused claims nothing until resumed. */
static void test_own_process(void) {
  setup();
  tabq_broker *b = controlled(POLL_MS, false);
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .handler = count_handler};
  atomic_store(&handled, 0);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_pause(b, jobs_table(), "q", &err), TABQ_OK);
  for (int i = 0; i < 3; i++)
    publish(b, "job"); /* each wakes the subscription: it stays paused */
  struct timespec ts = {.tv_sec = 0, .tv_nsec = 4 * POLL_MS * 1000000L};
  nanosleep(&ts, NULL);
  CU_ASSERT_EQUAL(atomic_load(&handled), 0);
  CU_ASSERT_EQUAL(due_rows(), 3);
  tabq_close(b); /* returns while paused */

  /* Another broker opens paused, claims nothing; resumed, drains. */
  b = controlled(POLL_MS, false);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  nanosleep(&ts, NULL);
  CU_ASSERT_EQUAL(atomic_load(&handled), 0);
  CU_ASSERT_EQUAL_FATAL(tabq_resume(b, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 0, 10000));
  CU_ASSERT_EQUAL(atomic_load(&handled), 3);
  /* Another queue of the table is not paused by q's pause. */
  tabq_close(b);
  testdb_remove(&db);
}

/* A table described without a group column: its pause (no queue) stops the whole table, its row
 * keyed by the empty queue. */
static void test_whole_table(void) {
  setup();
  tabq_table plain = *jobs_table();
  plain.group.name = NULL;
  tabq_broker *b = controlled(POLL_MS, false);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .handler = count_handler};
  atomic_store(&handled, 0);
  CU_ASSERT_EQUAL_FATAL(tabq_pause(b, &plain, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM queue_controls WHERE queue_table = 'jobs' "
                                  "AND queue = '' AND paused = 1"),
                  1);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &plain, &o, NULL, &err), TABQ_OK);
  for (int i = 0; i < 3; i++)
    publish(b, "job"); /* into queue q of the grouped description: the same rows */
  struct timespec ts = {.tv_sec = 0, .tv_nsec = 4 * POLL_MS * 1000000L};
  nanosleep(&ts, NULL);
  CU_ASSERT_EQUAL(atomic_load(&handled), 0);
  /* The grouped description's queue q is another row: its resume leaves the table paused. */
  CU_ASSERT_EQUAL(tabq_resume(b, jobs_table(), "q", &err), TABQ_OK);
  nanosleep(&ts, NULL);
  CU_ASSERT_EQUAL(atomic_load(&handled), 0);
  CU_ASSERT_EQUAL_FATAL(tabq_resume(b, &plain, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 0, 10000));
  CU_ASSERT_EQUAL(atomic_load(&handled), 3);
  tabq_close(b);
  testdb_remove(&db);
}

/* Brokers writing the first row of a key at once: each call succeeds, one row a key (the one
 * that loses the race on the primary key tries again and finds the row). */
typedef struct racer {
  tabq_broker *b;
  pthread_barrier_t *start;
  int fails;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  tabq_error e;
  for (int i = 0; i < 20; i++) {
    char queue[16];
    snprintf(queue, sizeof queue, "race%d", i);
    pthread_barrier_wait(r->start);
    if (tabq_pause(r->b, jobs_table(), queue, &e)) {
      fprintf(stderr, "race: %s\n", e.message);
      r->fails++;
    }
  }
  return NULL;
}

static void test_first_writes_race(void) {
  setup();
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 3);
  racer rs[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    rs[i] = (racer){.b = controlled(POLL_MS, false), .start = &start};
    pthread_create(&th[i], NULL, race, &rs[i]);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(rs[i].fails, 0);
    tabq_close(rs[i].b);
  }
  pthread_barrier_destroy(&start);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM queue_controls"), 20);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM queue_controls WHERE paused = 1"), 20);
  testdb_remove(&db);
}

/* ---- refusals ------------------------------------------------------------------------------ */

static long long control_rows(void) {
  return testdb_int(&db, "SELECT COUNT(*) FROM queue_controls");
}

static void expect(int rc, int code, const char *part) {
  CU_ASSERT_EQUAL(rc, code);
  if (rc != code || !strstr(err.message, part))
    fprintf(stderr, "expected %d with \"%s\", got %d: %s\n", code, part, rc, err.message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, part));
}

static void test_refusals(void) {
  setup();
  controls_table("bad_controls", false);
  tabq_broker *b = connect_broker(&db, POLL_MS);
  bool paused = true;

  /* No controls yet: every call refused. */
  expect(tabq_pause(b, jobs_table(), "q", &err), TABQ_INVALID, "no controls table");
  expect(tabq_resume(b, jobs_table(), "q", &err), TABQ_INVALID, "no controls table");
  expect(tabq_paused(b, jobs_table(), "q", &paused, &err), TABQ_INVALID, "no controls table");
  CU_ASSERT_FALSE(paused);

  /* A description missing a member, then a table missing a column. */
  const char *const members[] = {"name", "table_column", "queue_column", "paused_column"};
  for (int i = 0; i < 4; i++) {
    tabq_controls c = controls();
    const char **m[] = {&c.name, &c.table_column, &c.queue_column, &c.paused_column};
    *m[i] = NULL;
    expect(tabq_set_controls(b, &c, &err), TABQ_INVALID, members[i]);
  }
  tabq_controls c = controls();
  c.name = "bad_controls";
  expect(tabq_set_controls(b, &c, &err), TABQ_SCHEMA, "bad_controls");
  c = controls();
  c.name = "no_such_controls";
  expect(tabq_set_controls(b, &c, &err), TABQ_SCHEMA, "no_such_controls");
  c = controls();
  c.paused_at_column = "no_such_column";
  expect(tabq_set_controls(b, &c, &err), TABQ_SCHEMA, "queue_controls");
  expect(tabq_pause(b, jobs_table(), "q", &err), TABQ_INVALID, "no controls table");

  /* Given; then not twice. */
  c = controls();
  CU_ASSERT_EQUAL_FATAL(tabq_set_controls(b, &c, &err), TABQ_OK);
  expect(tabq_set_controls(b, &c, &err), TABQ_INVALID, "already");

  /* The queue's rules: named where the table has a group column, absent where it has none. */
  expect(tabq_pause(b, jobs_table(), NULL, &err), TABQ_INVALID, "name the queue");
  expect(tabq_pause(b, jobs_table(), "", &err), TABQ_INVALID, "jobs");
  tabq_table plain = *jobs_table();
  plain.group.name = NULL;
  expect(tabq_pause(b, &plain, "q", &err), TABQ_INVALID, "no group column");
  tabq_table missing = *jobs_table();
  missing.name = "no_such_jobs";
  expect(tabq_pause(b, &missing, "q", &err), TABQ_SCHEMA, "no_such_jobs");
  CU_ASSERT_EQUAL(tabq_paused(b, jobs_table(), "q", &paused, &err), TABQ_OK);
  CU_ASSERT_FALSE(paused);
  CU_ASSERT_EQUAL(control_rows(), 0);
  tabq_close(b);

  /* After a subscription: refused, the subscription would not honour it. */
  b = connect_broker(&db, POLL_MS);
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .handler = count_handler};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  expect(tabq_set_controls(b, &c, &err), TABQ_INVALID, "first subscription");
  tabq_shutdown(b);
  expect(tabq_set_controls(b, &c, &err), TABQ_CLOSED, "shut down");
  tabq_close(b);
  CU_ASSERT_EQUAL(control_rows(), 0);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"refusals, each changing nothing", test_refusals},
      {"the pausing process and a shutdown while paused", test_own_process},
      {"a table without a group column pauses whole", test_whole_table},
      {"brokers writing a key's first row at once: one row", test_first_writes_race},
      {"two processes stop within a poll interval and drain on resume", test_two_processes},
      {"with listen_notify the pause is at once (PostgreSQL)", test_notified},
      CU_TEST_INFO_NULL,
  };
  static char suite[64];
  snprintf(suite, sizeof suite, "pause on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
