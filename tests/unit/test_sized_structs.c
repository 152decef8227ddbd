/* The structs a service fills carry their size: tabq reads no byte past it, refuses a size of 0
 * or one larger than its own, and writes no more of tabq_stats than the caller's size. Each
 * struct is placed so that it ends exactly where a page without access begins: a read or write
 * past its size would stop the test with SIGSEGV. A real SQLite file backs the broker. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <tabq/tabq.h>

#include "cunit_main.h"

static tabq_error err;

/* Memory whose last `size` bytes end at a page that cannot be read or written. */
typedef struct guarded {
  unsigned char *base;
  size_t len;
} guarded;

static void *guarded_tail(guarded *g, size_t size) {
  long page = sysconf(_SC_PAGESIZE);
  g->len = (size_t)page * 2;
  g->base = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g->base == MAP_FAILED || mprotect(g->base + page, (size_t)page, PROT_NONE)) {
    perror("guarded page"); /* also runs in the suite's set-up, where CUnit cannot assert */
    abort();
  }
  return g->base + page - size;
}

static void guarded_free(guarded *g) {
  munmap(g->base, g->len);
}

/* The size an older program's compiler gives a struct whose last member is the first layout's:
 * the members' end rounded up to the struct's alignment. */
#define OLD_SIZE(type, size_1_0)                                                                   \
  ((((size_1_0) + _Alignof(type) - 1) / _Alignof(type)) * _Alignof(type))
#define BROKER_OLD OLD_SIZE(tabq_broker_options, TABQ_BROKER_OPTIONS_SIZE_1_0)
#define TABLE_OLD OLD_SIZE(tabq_table, TABQ_TABLE_SIZE_1_0)
#define MESSAGE_OLD OLD_SIZE(tabq_message, TABQ_MESSAGE_SIZE_1_0)
#define SUB_OLD OLD_SIZE(tabq_subscription_options, TABQ_SUBSCRIPTION_OPTIONS_SIZE_1_0)

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

static char db_path[64];
static tabq_broker *broker;

static int open_db(void) {
  snprintf(db_path, sizeof db_path, "/tmp/tabq-sized-%d.db", (int)getpid());
  unlink(db_path);
  char url[96];
  snprintf(url, sizeof url, "sqlite:%s", db_path);
  /* The options themselves sit against the guard page, at their first 1.x size. */
  guarded g;
  tabq_broker_options *o = guarded_tail(&g, BROKER_OLD);
  memset(o, 0, BROKER_OLD);
  o->size = (uint32_t)BROKER_OLD;
  o->poll_interval_ms = 50;
  int rc = tabq_connect(url, o, &broker, &err);
  guarded_free(&g);
  if (rc)
    return rc;
  return tabq_exec(broker,
                   "CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                   " locked_until INTEGER, payload BLOB)",
                   &err);
}

static int close_db(void) {
  tabq_close(broker);
  unlink(db_path);
  return 0;
}

static void table_without_size_is_refused(void) {
  tabq_table t = jobs;
  t.size = 0;
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_DECLARATION);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "sizeof(tabq_table)"));
}

static void table_from_a_newer_tabq_is_refused(void) {
  tabq_table t = jobs;
  t.size = sizeof(tabq_table) + 8;
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "newer tabq"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, TABQ_VERSION_STRING));
}

static void table_smaller_than_1_0_is_refused(void) {
  tabq_table t = jobs;
  t.size = (uint32_t)offsetof(tabq_table, events);
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "smaller than the first 1.x"));
}

static void first_layout_structs_are_read_to_their_size_only(void) {
  guarded gt, gm, go;
  tabq_table *t = guarded_tail(&gt, TABLE_OLD);
  memcpy(t, &jobs, TABLE_OLD);
  t->size = (uint32_t)TABLE_OLD;
  CU_ASSERT_EQUAL(tabq_table_check(t, &err), TABQ_OK);

  tabq_message *m = guarded_tail(&gm, MESSAGE_OLD);
  memset(m, 0, MESSAGE_OLD);
  m->size = (uint32_t)MESSAGE_OLD;
  m->payload = "old";
  m->payload_len = 3;
  CU_ASSERT_EQUAL(tabq_publish(broker, t, m, &err), TABQ_OK);

  tabq_subscription_options *o = guarded_tail(&go, SUB_OLD);
  memset(o, 0, SUB_OLD);
  o->size = (uint32_t)SUB_OLD;
  o->handler = NULL; /* refused below for want of a handler, after reading every member */
  CU_ASSERT_EQUAL(tabq_subscribe(broker, t, o, NULL, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "exactly one of handler and batch_handler"));
  guarded_free(&gt);
  guarded_free(&gm);
  guarded_free(&go);
}

static tabq_outcome ack(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_ack();
}

static void stats_are_written_to_the_callers_size_only(void) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = ack;
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(broker, &jobs, &o, &s, &err), TABQ_OK);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = "x";
  m.payload_len = 1;
  CU_ASSERT_EQUAL(tabq_publish(broker, &jobs, &m, &err), TABQ_OK);
  /* An older program's tabq_stats that ends before the advisory shutdown counters (8-byte
   * members: the size is aligned as its compiler would make it). */
  size_t old_size = offsetof(tabq_stats, shutdown_released);
  guarded g;
  tabq_stats *st = guarded_tail(&g, old_size);
  for (int i = 0; i < 400; i++) {
    memset(st, 0, old_size);
    tabq_subscription_stats(s, st, old_size);
    if (st->acked >= 2)
      break;
    usleep(10000);
  }
  CU_ASSERT(st->acked >= 2); /* this test's row and the one published above */
  guarded_free(&g);
}

static void options_without_size_are_refused(void) {
  tabq_subscription_options o = {0};
  o.handler = ack;
  CU_ASSERT_EQUAL(tabq_subscribe(broker, &jobs, &o, NULL, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tabq_subscription_options.size is 0"));
  tabq_message m = {0};
  CU_ASSERT_EQUAL(tabq_publish(broker, &jobs, &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tabq_message.size is 0"));
  tabq_broker_options bo = {0};
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL(tabq_connect("sqlite::memory:", &bo, &b, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(b);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tabq_broker_options.size is 0"));
}

/* Drains `rows` rows of a table of its own with options of `size` bytes (the defaults, four
 * workers) and returns its counters. */
static tabq_stats drained(const char *table, size_t size, int rows) {
  char sql[160];
  snprintf(sql, sizeof sql,
           "CREATE TABLE %s (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
           " locked_until INTEGER, payload BLOB)",
           table);
  tabq_stats st = {0};
  CU_ASSERT_EQUAL_FATAL(tabq_exec(broker, sql, &err), TABQ_OK);
  tabq_table t = jobs;
  t.name = table;
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = "x";
  m.payload_len = 1;
  for (int i = 0; i < rows; i++)
    CU_ASSERT_EQUAL_FATAL(tabq_publish(broker, &t, &m, &err), TABQ_OK);
  guarded g;
  tabq_subscription_options *o = guarded_tail(&g, size);
  memset(o, 0, size);
  o->size = (uint32_t)size;
  o->handler = ack;
  o->workers = 4;
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(broker, &t, o, &s, &err), TABQ_OK);
  guarded_free(&g);
  for (int i = 0; i < 1000 && st.acked < (uint64_t)rows; i++) {
    usleep(10000);
    tabq_subscription_stats(s, &st, sizeof st);
  }
  if (st.acked != (uint64_t)rows)
    fprintf(stderr, "\n%s: %llu acked, %llu claimed, %llu claims, %llu ahead\n", table,
            (unsigned long long)st.acked, (unsigned long long)st.claimed,
            (unsigned long long)st.claims, (unsigned long long)st.claimed_ahead);
  CU_ASSERT_EQUAL(st.acked, (uint64_t)rows);
  return st;
}

/* The adaptive look-ahead and acks gathered on SQLite are defaults of the struct that has
 * `lookahead` and `acks`: a program built before them (its options end at concurrency_limit)
 * claims a row per idle worker and commits each ack alone, as it did. */
static void options_before_lookahead_keep_what_they_had(void) {
  size_t before =
      OLD_SIZE(tabq_subscription_options,
               offsetof(tabq_subscription_options, concurrency_limit) + sizeof(unsigned));
  CU_ASSERT_FATAL(before <= offsetof(tabq_subscription_options, lookahead_wait_ms));
  tabq_stats newer = drained("newer", sizeof(tabq_subscription_options), 400);
  CU_ASSERT(newer.claimed_ahead > 0);
  tabq_stats older = drained("older", before, 400);
  CU_ASSERT_EQUAL(older.claimed_ahead, 0);
  CU_ASSERT_EQUAL(older.coalesced, 0);
}

static void version_matches_the_headers(void) {
  CU_ASSERT_EQUAL(tabq_version(), TABQ_VERSION_NUMBER);
  CU_ASSERT_STRING_EQUAL(tabq_version_string(), TABQ_VERSION_STRING);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a table without its size is refused", table_without_size_is_refused},
      {"a table from a newer tabq is refused", table_from_a_newer_tabq_is_refused},
      {"a table smaller than 1.0 is refused", table_smaller_than_1_0_is_refused},
      {"first-layout structs are read to their size only",
       first_layout_structs_are_read_to_their_size_only},
      {"stats are written to the caller's size only", stats_are_written_to_the_callers_size_only},
      {"options and messages without a size are refused", options_without_size_are_refused},
      {"options from before lookahead keep what they had",
       options_before_lookahead_keep_what_they_had},
      {"the library's version matches the headers", version_matches_the_headers},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("sized structs", open_db, close_db, tests);
  return 0;
}
