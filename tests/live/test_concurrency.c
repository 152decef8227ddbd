/* Concurrency limits across processes (tabq/concurrency.h, docs/concurrency.md) on a real
 * database: three processes (concurrency_child.c) of four workers each, subscribed to one queue
 * with at most two handlers of a partition key at once, drain rows of four keys. Their handlers'
 * start and end times (one monotonic clock for the machine) never show three of a key at once,
 * every key is served, every row handled once, and no slot is left behind. Then a process holding
 * a key's one slot is killed (SIGKILL): the slot, no longer kept, frees itself once it expires,
 * and another process handles the key's next row. Rows are counted directly with the database's
 * client library, never through tabq. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <tabq/concurrency.h>
#include <time.h>

#include "cunit_main.h"
#include "support.h"

#define POLL_MS 100
#define NCHILD 3
#define KEYS 4
#define PER_KEY 12
#define LIMIT 2
#define TOTAL (KEYS * PER_KEY)

static testdb db;
static tabq_error err;
static tabq_table keyed;

static void setup(void) {
  testdb_create(&db);
  if (db.kind == TEST_MYSQL) {
    testdb_exec(&db, "ALTER TABLE jobs ADD COLUMN partition_key VARCHAR(191) NULL");
    testdb_exec(&db, "CREATE TABLE concurrency_slots (slot VARCHAR(191) CHARACTER SET utf8mb4 NOT "
                     "NULL PRIMARY KEY, holder VARCHAR(191) NOT NULL, expires DATETIME(6) NOT "
                     "NULL) ENGINE=InnoDB");
  } else {
    testdb_exec(&db, "ALTER TABLE jobs ADD COLUMN partition_key TEXT");
    testdb_exec(&db, db.kind == TEST_SQLITE
                         ? "CREATE TABLE concurrency_slots (slot TEXT PRIMARY KEY, holder TEXT "
                           "NOT NULL, expires TEXT NOT NULL)"
                         : "CREATE TABLE concurrency_slots (slot TEXT PRIMARY KEY, holder TEXT "
                           "NOT NULL, expires TIMESTAMPTZ NOT NULL)");
  }
  keyed = *jobs_table();
  keyed.partition_key.name = "partition_key";
}

static void publish(tabq_broker *b, const char *key, const char *payload) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = payload;
  m.payload_len = strlen(payload);
  m.partition_key = key;
  int rc = tabq_publish(b, &keyed, &m, &err);
  if (rc)
    fprintf(stderr, "publish: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
}

static void spawn(child *c, const char *ttl_ms, int n, const char *hangs) {
  char poll[16];
  snprintf(poll, sizeof poll, "%d", POLL_MS);
  char limit[8];
  snprintf(limit, sizeof limit, "%d", n);
  char *const argv[] = {TABQ_CONCURRENCY_CHILD, db.url, poll, (char *)ttl_ms, limit,
                        (char *)hangs,          NULL};
  child_spawn(c, argv);
  char line[512] = "";
  bool got = child_line(c, line, sizeof line, 20000);
  if (!got || strcmp(line, "subscribed"))
    fprintf(stderr, "child: %s\n", got ? line : "(nothing)");
  CU_ASSERT_FATAL(got && !strcmp(line, "subscribed"));
}

static void stop(child *c) {
  child_say(c, "quit");
  int status = child_reap(c);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

typedef struct event {
  long long t;
  int key, delta; /* +1 a start, -1 an end */
  long long id;
} event;

static int by_time(const void *a, const void *b) {
  const event *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->delta - y->delta; /* an end before a start at the same time */
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void never_more_than_the_limit(void) {
  setup();
  tabq_broker *b = connect_broker(&db, POLL_MS);
  child kids[NCHILD];
  for (int i = 0; i < NCHILD; i++)
    spawn(&kids[i], "2000", LIMIT, "0");
  char key[8];
  for (int i = 0; i < PER_KEY; i++) /* the keys' rows interleaved, as a service's would be */
    for (int k = 0; k < KEYS; k++) {
      snprintf(key, sizeof key, "k%d", k);
      publish(b, key, "job");
    }
  static event ev[2 * TOTAL + 64];
  int nev = 0, ends = 0;
  int starts_of[TOTAL + 1] = {0}, ends_of[TOTAL + 1] = {0};
  int64_t until = mono_ms() + 60000;
  while (ends < TOTAL && mono_ms() < until)
    for (int i = 0; i < NCHILD; i++) {
      char line[256];
      if (!child_line(&kids[i], line, sizeof line, 10))
        continue;
      char what[8];
      long long id, t;
      int k;
      if (sscanf(line, "%7s %lld k%d %lld", what, &id, &k, &t) != 4 || id < 1 || id > TOTAL ||
          k < 0 || k >= KEYS || nev >= (int)(sizeof ev / sizeof ev[0])) {
        fprintf(stderr, "child said: %s\n", line);
        CU_FAIL("a line the test cannot read");
        continue;
      }
      bool start = !strcmp(what, "start");
      ev[nev++] = (event){.t = t, .key = k, .delta = start ? 1 : -1, .id = id};
      if (start)
        starts_of[id]++;
      else {
        ends_of[id]++;
        ends++;
      }
    }
  CU_ASSERT_EQUAL(ends, TOTAL);
  for (int id = 1; id <= TOTAL; id++)
    if (starts_of[id] != 1 || ends_of[id] != 1) {
      fprintf(stderr, "row %d: %d starts, %d ends\n", id, starts_of[id], ends_of[id]);
      CU_FAIL("a row not handled exactly once");
    }
  qsort(ev, (size_t)nev, sizeof ev[0], by_time);
  int in_work[KEYS] = {0}, most[KEYS] = {0}, handled[KEYS] = {0};
  for (int i = 0; i < nev; i++) {
    int k = ev[i].key;
    in_work[k] += ev[i].delta;
    if (in_work[k] > most[k])
      most[k] = in_work[k];
    if (ev[i].delta < 0)
      handled[k]++;
  }
  bool reached = false;
  for (int k = 0; k < KEYS; k++) {
    if (most[k] > LIMIT)
      fprintf(stderr, "key k%d: %d handlers at once, over the limit %d\n", k, most[k], LIMIT);
    CU_ASSERT(most[k] <= LIMIT);
    CU_ASSERT_EQUAL(handled[k], PER_KEY); /* every key served */
    reached |= most[k] == LIMIT;
  }
  CU_ASSERT(reached); /* twelve workers on four keys: the limit was reached, not only kept */
  CU_ASSERT(wait_count(&db, "SELECT COUNT(*) FROM jobs", 0, 10000));
  for (int i = 0; i < NCHILD; i++)
    stop(&kids[i]);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM concurrency_slots"), 0);
  tabq_close(b);
  testdb_remove(&db);
}

/* Reads the child's lines for ms; true once it said it started row `id`. */
static bool started(child *c, long long id, int ms) {
  int64_t until = mono_ms() + ms;
  char line[256];
  while (mono_ms() < until)
    if (child_line(c, line, sizeof line, 20)) {
      long long seen;
      if (sscanf(line, "start %lld", &seen) == 1 && seen == id)
        return true;
    }
  return false;
}

static void a_killed_holders_slot_frees_itself(void) {
  setup();
  tabq_broker *b = connect_broker(&db, POLL_MS);
  child holder, other;
  spawn(&holder, "1000", 1, "1"); /* one slot a key */
  publish(b, "kx", "hang");       /* row 1: its handler never returns */
  CU_ASSERT_FATAL(started(&holder, 1, 20000));
  spawn(&other, "1000", 1, "0");
  publish(b, "kx", "job"); /* row 2: the same key */
  /* The holder's keeper keeps the slot past its ttl: the other process steps aside. */
  CU_ASSERT_FALSE(started(&other, 2, 2500));
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM jobs WHERE id = 2"), 1);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT COUNT(*) FROM concurrency_slots"), 1);
  kill(holder.pid, SIGKILL);
  child_reap(&holder);
  int64_t killed = mono_ms();
  CU_ASSERT(started(&other, 2, 20000)); /* once the slot expired */
  int64_t waited = mono_ms() - killed;
  fprintf(stderr, "(row 2 started %lld ms after the kill) ", (long long)waited);
  CU_ASSERT(waited >= 300); /* not at once: the slot had a ttl to run */
  stop(&other);
  tabq_close(b);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"three processes never run more than the limit of a key at once, every key served",
       never_more_than_the_limit},
      {"a killed holder's slot frees itself once it expires", a_killed_holders_slot_frees_itself},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("concurrency limits across processes", NULL, NULL, tests);
  return 0;
}
