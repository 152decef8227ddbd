/* tabq_test_drain on a real database, in each form: a queue run to empty on the calling thread,
 * every row handled there exactly once (a retried row again, in the same drain), nothing left in
 * work or locked, and a batch handler's rows in batches. Rows are read directly with the
 * database's client library, never through tabq. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <tabq/testing.h>

#include "cunit_main.h"
#include "support.h"

#define ROWS 40

static testdb db;
static tabq_error err;
static int handled[ROWS], calls, off_thread;
static pthread_t caller;

static int index_of(tabq_delivery *d) {
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  char text[16];
  snprintf(text, sizeof text, "%.*s", (int)(len < 15 ? len : 15), p ? p : "");
  int i = -1;
  return sscanf(text, "job-%d", &i) == 1 && i >= 0 && i < ROWS ? i : -1;
}

/* job-3 fails at its first attempt; every other row is acked. */
static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  calls++;
  if (!pthread_equal(pthread_self(), caller))
    off_thread++;
  int i = index_of(d);
  if (i >= 0)
    handled[i]++;
  return i == 3 && tabq_delivery_attempt(d) == 1 ? tabq_retry() : tabq_ack();
}

static void reset(void) {
  memset(handled, 0, sizeof handled);
  calls = off_thread = 0;
  caller = pthread_self();
}

static void a_drain_handles_every_row_on_the_calling_thread(void) {
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 60000); /* a poll interval no drain waits for */
  publish_n(b, "q", ROWS);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = handle;
  o.workers = 4; /* ignored: one row at a time */
  tabq_stats st = {0};
  int rc = tabq_test_drain(b, jobs_table(), &o, &st, sizeof st, &err);
  if (rc)
    fprintf(stderr, "drain: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(off_thread, 0);
  CU_ASSERT_EQUAL(calls, ROWS + 1);
  for (int i = 0; i < ROWS; i++)
    CU_ASSERT_EQUAL(handled[i], i == 3 ? 2 : 1);
  CU_ASSERT_EQUAL(st.acked, ROWS);
  CU_ASSERT_EQUAL(st.retried, 1);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 0);
  /* Nothing is held: a drain of another subscription of the queue finds it empty at once. */
  reset();
  CU_ASSERT_EQUAL(tabq_test_drain(b, jobs_table(), &o, &st, sizeof st, &err), TABQ_OK);
  CU_ASSERT_EQUAL(calls, 0);
  tabq_close(b);
  testdb_remove(&db);
}

static int batches, batch_rows;
static void handle_batch(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)user;
  batches++;
  batch_rows += (int)n;
  for (size_t i = 0; i < n; i++) {
    int k = index_of(ds[i]);
    if (k >= 0)
      handled[k]++;
    out[i] = tabq_ack();
  }
}

static void a_batch_handler_drains_in_batches(void) {
  testdb_create(&db);
  reset();
  batches = batch_rows = 0;
  tabq_broker *b = connect_broker(&db, 60000);
  publish_n(b, "q", ROWS);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.batch_handler = handle_batch;
  o.batch = 16;
  CU_ASSERT_EQUAL(tabq_test_drain(b, jobs_table(), &o, NULL, 0, &err), TABQ_OK);
  CU_ASSERT_EQUAL(batch_rows, ROWS);
  CU_ASSERT_TRUE(batches >= 3 && batches <= ROWS);
  for (int i = 0; i < ROWS; i++)
    CU_ASSERT_EQUAL(handled[i], 1);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 0);
  tabq_close(b);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a drain handles every row on the calling thread",
       a_drain_handles_every_row_on_the_calling_thread},
      {"a batch handler drains in batches", a_batch_handler_drains_in_batches},
      CU_TEST_INFO_NULL,
  };
  char suite[64];
  snprintf(suite, sizeof suite, "tabq_test_drain on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
