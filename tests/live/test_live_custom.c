/* A lock and an unlock of the service's own (SPEC 8) on PostgreSQL and MySQL: their SQL is the
 * database's own advisory lock functions. Every other custom event is in the conformance kit
 * (tabq-conformance), which runs them on any dialect. */
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

/* Advisory form: a lock and an unlock of the service's own, on the key tabq renders; its lock
 * refuses row 2's key, which is then never claimed. */
static void own_lock(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 3);
  tabq_table t = *jobs_table();
  if (test_db_kind() == TEST_POSTGRES) {
    t.events.lock = "SELECT CASE WHEN :key LIKE '%job-2' THEN 0 WHEN "
                    "pg_try_advisory_lock(hashtext(:key)) THEN 1 ELSE 0 END";
    t.events.unlock = "SELECT CASE WHEN pg_advisory_unlock(hashtext(:key)) THEN 1 ELSE 0 END";
  } else {
    t.events.lock = "SELECT CASE WHEN :key LIKE '%job-2' THEN 0 ELSE GET_LOCK(CONCAT('own.', "
                    ":key), 0) END";
    t.events.unlock = "SELECT RELEASE_LOCK(CONCAT('own.', :key))";
  }
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 1, 20000));
  sleep_ms(200);
  tabq_close(b);
  CU_ASSERT_EQUAL(r.calls, 2);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT id FROM jobs"), 2);
  recorder_free(&r);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo advisory[] = {
      {"a lock and an unlock of its own", own_lock},
      CU_TEST_INFO_NULL,
  };
  static char suite[64];
  snprintf(suite, sizeof suite, "custom lock events on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, advisory);
  return 0;
}
