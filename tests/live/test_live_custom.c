/* Statements of the service's own (SPEC 8) against a real database: a claim and a fetch of its
 * own, a settlement of its own in each form, and the refusals at startup that leave every row as
 * it was. */
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

/* The newest rows first: an order no built-in claim takes, so the test sees whose claim ran. */
static const char *own_claim(void) {
  if (test_form() == TABQ_FORM_ROWLOCK)
    return "SELECT id FROM jobs WHERE queue = :queue ORDER BY id DESC LIMIT :limit FOR UPDATE "
           "SKIP LOCKED";
  return "SELECT id FROM jobs WHERE queue = :queue AND (locked_until IS NULL OR locked_until <= "
         ":now) ORDER BY id DESC LIMIT :limit";
}

/* The projection of the jobs table: id, attempt, group, headers, payload. */
static const char *const own_fetch =
    "SELECT id, attempt, queue, headers, payload FROM jobs WHERE id = :id";

static void unchanged(void) {
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs WHERE queue = 'q'"), 3);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs WHERE attempt <> 1"), 0);
}

/* A claim of the service's own with no fetch of its own: PostgreSQL reads the rows with its
 * fetch by a list of ids; MySQL and SQLite have none and stop the subscription at startup. */
static void claim_without_fetch(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 3);
  tabq_table t = *jobs_table();
  t.events.claim = own_claim();
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  int rc = tabq_subscribe(b, &t, &o, NULL, &err);
  if (test_db_kind() == TEST_POSTGRES) {
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
    CU_ASSERT(recorder_wait(&r, 3, 20000));
    CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 20000));
    CU_ASSERT_EQUAL(r.ids[0], 3); /* the service's order */
    CU_ASSERT_STRING_EQUAL(r.payloads[0], "job-3");
  } else {
    CU_ASSERT_EQUAL(rc, TABQ_DIALECT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "table jobs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no fetch by a list of ids"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "events.fetch"));
    sleep_ms(100);
    CU_ASSERT_EQUAL(r.calls, 0);
    unchanged();
  }
  tabq_close(b);
  recorder_free(&r);
  testdb_remove(&db);
}

static tabq_outcome retry_first(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r;
  (void)d;
  return call == 0 ? tabq_retry() : tabq_ack();
}

/* A claim and a fetch of the service's own: its order, the attempt counted by the form. */
static void claim_and_fetch(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 3);
  tabq_table t = *jobs_table();
  t.events.claim = own_claim();
  t.events.fetch = own_fetch;
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  r.script = retry_first;
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 4, 20000));
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 20000));
  tabq_close(b);
  /* 3 first and retried, then 3 again on its second attempt, then 2 and 1 */
  CU_ASSERT_EQUAL(r.calls, 4);
  CU_ASSERT_EQUAL(r.ids[0], 3);
  CU_ASSERT_STRING_EQUAL(r.payloads[0], "job-3");
  CU_ASSERT_EQUAL(r.ids[1], 3);
  CU_ASSERT_EQUAL(r.attempts[1], r.attempts[0] + 1);
  CU_ASSERT_EQUAL(r.ids[2], 2);
  CU_ASSERT_EQUAL(r.ids[3], 1);
  recorder_free(&r);
  testdb_remove(&db);
}

/* A fetch of the service's own after tabq's claim: the payload is the service's, and a claimed
 * id without a row is dropped, not claimed again and again. */
static void fetch_after_builtin_claim(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 2);
  tabq_table t = *jobs_table();
  t.events.fetch = "SELECT id, attempt, queue, headers, payload FROM jobs WHERE id = :id AND id "
                   "<> 2";
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 20000));
  tabq_close(b);
  CU_ASSERT_EQUAL(r.calls, 1);
  CU_ASSERT_EQUAL(r.ids[0], 1);
  recorder_free(&r);
  testdb_remove(&db);
}

/* An acknowledgement of the service's own keeps the row, moved to another queue. */
static void own_ack(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 3);
  tabq_table t = *jobs_table();
  t.events.ack = "UPDATE jobs SET queue = 'done' WHERE id = :id";
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs WHERE queue = 'done'", 3, 20000));
  tabq_close(b);
  CU_ASSERT_EQUAL(r.calls, 3);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 3);
  recorder_free(&r);
  testdb_remove(&db);
}

/* A name tabq does not know, and a database placeholder, stop the subscription at startup. */
static void bad_names(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 3);
  tabq_broker *b = connect_broker(&db, 20);
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .handler = recorder_handler};
  tabq_table t = *jobs_table();
  t.events.ack = "DELETE FROM jobs WHERE id = :row";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "events.ack"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, ":row"));
  t.events.ack = "DELETE FROM jobs WHERE id = ?";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "database placeholder"));
  t.events.ack = NULL;
  t.events.retry_after = "UPDATE jobs SET retry_after = :destination WHERE id = :id";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "not a parameter of this statement"));
  t.events.retry_after = NULL;
  t.events.ack = "UPDATE no_such_table SET queue = 'x' WHERE id = :id";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.statement, "ack"));
  sleep_ms(100);
  unchanged();
  tabq_close(b);
  testdb_remove(&db);
}

static tabq_outcome always_retry(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r;
  (void)d;
  (void)call;
  return tabq_retry();
}

/* A dead letter of the service's own: one statement, given the destination. */
static void own_dead_letter(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 2);
  tabq_table t = *jobs_table();
  t.events.dead_letter = "UPDATE jobs SET queue = :destination WHERE id = :id";
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  r.script = always_retry;
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r,
                                 .max_attempts = 1,
                                 .dead_letter_group = "q.dead"};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs WHERE queue = 'q.dead'", 2, 20000));
  tabq_close(b);
  CU_ASSERT_EQUAL(r.calls, 2);
  recorder_free(&r);
  testdb_remove(&db);
}

static tabq_outcome slow_ack(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r;
  (void)d;
  (void)call;
  sleep_ms(1600); /* past three half leases of one second */
  return tabq_ack();
}

/* Lease form: an extension of the service's own keeps a slow handler's lease, and confirms it
 * before an acknowledgement of the service's own. */
static void own_extend(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", 1);
  tabq_table t = *jobs_table();
  t.events.extend = "UPDATE jobs SET locked_until = :until WHERE id = :id AND locked_until = :held";
  t.events.ack = "UPDATE jobs SET queue = 'done' WHERE id = :id";
  tabq_broker *b = connect_broker(&db, 20);
  recorder r;
  recorder_init(&r);
  r.script = slow_ack;
  tabq_subscription *sub = NULL;
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r,
                                 .lease_s = 1};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, &sub, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs WHERE queue = 'done'", 1, 20000));
  tabq_stats st;
  tabq_subscription_stats(sub, &st, sizeof st);
  CU_ASSERT(st.extensions >= 2);
  CU_ASSERT_EQUAL(st.lease_lost, 0);
  CU_ASSERT_EQUAL(st.acked, 1);
  tabq_close(b);
  CU_ASSERT_EQUAL(r.calls, 1);
  recorder_free(&r);
  testdb_remove(&db);
}

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
  static CU_TestInfo claims[] = {
      {"a claim of its own without a fetch of its own", claim_without_fetch},
      {"a claim and a fetch of its own", claim_and_fetch},
      {"a fetch of its own after tabq's claim", fetch_after_builtin_claim},
      {"an ack of its own", own_ack},
      {"unknown names and placeholders stop it at startup", bad_names},
      {"a dead letter of its own", own_dead_letter},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo lease[] = {
      {"an extension of its own", own_extend},
      CU_TEST_INFO_NULL,
  };
  /* The advisory form's claim of its own returns rendered keys, which differ per database: the
   * settlements and the fetch are what these tests cover there. */
  static CU_TestInfo advisory[] = {
      {"a fetch of its own after tabq's claim", fetch_after_builtin_claim},
      {"an ack of its own", own_ack},
      {"unknown names and placeholders stop it at startup", bad_names},
      {"a dead letter of its own", own_dead_letter},
      {"a lock and an unlock of its own", own_lock},
      CU_TEST_INFO_NULL,
  };
  static char suite[64];
  snprintf(suite, sizeof suite, "custom events on %s, %s form", test_db_name(), test_form_name());
  if (test_form() == TABQ_FORM_ADVISORY)
    ADD_SUITE(suite, NULL, NULL, advisory);
  else
    ADD_SUITE(suite, NULL, NULL, claims);
  static char lease_suite[64];
  snprintf(lease_suite, sizeof lease_suite, "custom lease events on %s", test_db_name());
  if (test_form() == TABQ_FORM_LEASE)
    ADD_SUITE(lease_suite, NULL, NULL, lease);
  return 0;
}
