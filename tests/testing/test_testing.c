/* The helpers a service tests its handlers with (tabq/testing.h): tabq_test_deliver's answers
 * against what tabq would settle a row as, with no database; tabq_test_open's throwaway SQLite
 * folder; tabq_test_drain running a queue to empty on the test's own thread. Rows are read
 * directly with SQLite's library, never through tabq. */
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <tabq/testing.h>
#include <tabq/trace.h>

#include "cunit_main.h"

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .retry_after = {.name = "retry_after"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .headers = {.name = "headers"},
    .payload = {.name = "payload"},
};

/* The same without a retry_after column. */
static const tabq_table undelayed = {
    .size = sizeof(tabq_table),
    .name = "undelayed",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static const tabq_col order_columns[] = {
    {.name = "customer", .type = TABQ_T_TEXT},
    {.name = "cents", .type = TABQ_T_INT},
};
static const tabq_table orders = {
    .size = sizeof(tabq_table),
    .name = "orders",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .data = order_columns,
    .ndata = 2,
};

static tabq_error err;

/* What the handler saw, and what it is told to return (by payload). */
static struct {
  int calls;
  long attempt;
  char payload[32], header[64], trace_parent[17];
  pthread_t thread;
} saw;

static tabq_outcome by_payload(tabq_delivery *d, void *user) {
  (void)user;
  saw.calls++;
  saw.thread = pthread_self();
  saw.attempt = tabq_delivery_attempt(d);
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  snprintf(saw.payload, sizeof saw.payload, "%.*s", (int)len, p ? p : "");
  const char *h = tabq_delivery_header(d, "tenant");
  snprintf(saw.header, sizeof saw.header, "%s", h ? h : "");
  tabq_trace_context tc = TABQ_TRACE_CONTEXT_INIT;
  snprintf(saw.trace_parent, sizeof saw.trace_parent, "%s",
           tabq_delivery_trace(d, &tc) ? tc.parent_id : "");
  if (!strcmp(saw.payload, "fail"))
    return tabq_retry();
  if (!strcmp(saw.payload, "later"))
    return tabq_retry_after(60000);
  if (!strcmp(saw.payload, "poison"))
    return tabq_dead_letter();
  if (!strcmp(saw.payload, "settle-drop")) {
    tabq_error e;
    CU_ASSERT_EQUAL(tabq_delivery_settle(d, tabq_drop(), &e), TABQ_OK);
    return tabq_ack(); /* ignored: settled already */
  }
  return tabq_ack();
}

static tabq_subscription_options options_for(tabq_handler h) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "work";
  o.handler = h;
  o.max_attempts = 3;
  o.dead_letter_group = "work.dead";
  return o;
}

static tabq_test_message message(const char *payload) {
  tabq_test_message m = TABQ_TEST_MESSAGE_INIT;
  m.message.payload = payload;
  m.message.payload_len = strlen(payload);
  return m;
}

static tabq_outcome deliver(const tabq_table *t, const tabq_subscription_options *o,
                            const tabq_test_message *m) {
  tabq_outcome out = {.kind = (tabq_outcome_kind)99};
  int rc = tabq_test_deliver(t, o, m, &out, &err);
  if (rc)
    fprintf(stderr, "deliver: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  return out;
}

static void the_handler_reads_its_message(void) {
  memset(&saw, 0, sizeof saw);
  tabq_subscription_options o = options_for(by_payload);
  tabq_test_message m = message("resize 7");
  const tabq_header h[] = {
      {"tenant", "acme"},
      {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}};
  m.message.headers = h;
  m.message.nheaders = 2;
  m.attempt = 2;
  tabq_outcome out = deliver(&jobs, &o, &m);
  CU_ASSERT_EQUAL(out.kind, TABQ_OUTCOME_ACK);
  CU_ASSERT_EQUAL(saw.calls, 1);
  CU_ASSERT_STRING_EQUAL(saw.payload, "resize 7");
  CU_ASSERT_STRING_EQUAL(saw.header, "acme");
  CU_ASSERT_STRING_EQUAL(saw.trace_parent, "00f067aa0ba902b7");
  CU_ASSERT_EQUAL(saw.attempt, 2);
}

static void the_outcome_is_what_tabq_would_settle(void) {
  tabq_subscription_options o = options_for(by_payload);
  tabq_test_message fail = message("fail");
  fail.attempt = 1;
  CU_ASSERT_EQUAL(deliver(&jobs, &o, &fail).kind, TABQ_OUTCOME_RETRY);
  fail.attempt = 3; /* max_attempts: the retry becomes the dead letter */
  CU_ASSERT_EQUAL(deliver(&jobs, &o, &fail).kind, TABQ_OUTCOME_DEAD_LETTER);
  tabq_test_message later = message("later");
  tabq_outcome out = deliver(&jobs, &o, &later);
  CU_ASSERT_EQUAL(out.kind, TABQ_OUTCOME_RETRY_AFTER);
  CU_ASSERT_EQUAL(out.delay_ms, 60000);
  /* Without a retry_after column the delay cannot be kept: a plain retry. */
  tabq_subscription_options plain = options_for(by_payload);
  plain.queue = NULL;
  plain.max_attempts = 0;
  plain.dead_letter_group = NULL;
  CU_ASSERT_EQUAL(deliver(&undelayed, &plain, &later).kind, TABQ_OUTCOME_RETRY);
  tabq_test_message poison = message("poison");
  CU_ASSERT_EQUAL(deliver(&jobs, &o, &poison).kind, TABQ_OUTCOME_DEAD_LETTER);
  /* Settled inside the handler: that settlement counts, the returned ack does not. */
  tabq_test_message drop = message("settle-drop");
  CU_ASSERT_EQUAL(deliver(&jobs, &o, &drop).kind, TABQ_OUTCOME_DROP);
}

static int json_calls;
static tabq_outcome read_json(tabq_delivery *d, void *user) {
  (void)user;
  json_calls++;
  json_t *j = tabq_delivery_decoded(d);
  return json_integer_value(json_object_get(j, "n")) == 5 ? tabq_ack() : tabq_retry();
}

static void a_message_that_does_not_decode_meets_the_policy(void) {
  tabq_subscription_options o = options_for(read_json);
  o.codec = tabq_json_codec();
  o.on_decode_failure = TABQ_DECODE_DEAD_LETTER;
  json_calls = 0;
  tabq_test_message good = message("{\"n\": 5}"), bad = message("{\"n\": ");
  CU_ASSERT_EQUAL(deliver(&jobs, &o, &good).kind, TABQ_OUTCOME_ACK);
  CU_ASSERT_EQUAL(deliver(&jobs, &o, &bad).kind, TABQ_OUTCOME_DEAD_LETTER);
  CU_ASSERT_EQUAL(json_calls, 1); /* the handler never saw the bad one */
}

static tabq_outcome read_columns(tabq_delivery *d, void *user) {
  (void)user;
  tabq_value customer, cents;
  CU_ASSERT_EQUAL(tabq_delivery_column(d, "customer", &customer), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_delivery_column(d, "cents", &cents), TABQ_OK);
  bool ok = customer.type == TABQ_T_TEXT && customer.u.buf.len == 3 &&
            !memcmp(customer.u.buf.ptr, "ada", 3) && cents.type == TABQ_T_INT && cents.u.i == 1250;
  return ok ? tabq_ack() : tabq_drop();
}

static void row_mode_columns_read_by_name(void) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "orders";
  o.handler = read_columns;
  const tabq_value data[] = {tabq_text("ada", 3), tabq_int(1250)};
  tabq_test_message m = TABQ_TEST_MESSAGE_INIT;
  m.message.data = data;
  m.message.ndata = 2;
  CU_ASSERT_EQUAL(deliver(&orders, &o, &m).kind, TABQ_OUTCOME_ACK);
  /* A value that is not its column's declared type is refused as tabq_publish refuses it. */
  const tabq_value wrong[] = {tabq_int(3), tabq_int(1250)};
  m.message.data = wrong;
  tabq_outcome out;
  CU_ASSERT_EQUAL(tabq_test_deliver(&orders, &o, &m, &out, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "customer"));
}

static void bad_input_is_refused_by_name(void) {
  tabq_subscription_options o = options_for(by_payload);
  tabq_outcome out;
  tabq_test_message m = message("x");
  const tabq_header bad[] = {{"traceparent", "00-zz"}};
  m.message.headers = bad;
  m.message.nheaders = 1;
  CU_ASSERT_EQUAL(tabq_test_deliver(&jobs, &o, &m, &out, &err), TABQ_HEADER);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "traceparent"));
  /* A dead letter without max_attempts: the mount's rule, as at subscribe. */
  o.max_attempts = 0;
  m.message.nheaders = 0;
  CU_ASSERT_EQUAL(tabq_test_deliver(&jobs, &o, &m, &out, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "jobs"));
  o = options_for(by_payload);
  o.transactional = true;
  CU_ASSERT_EQUAL(tabq_test_deliver(&jobs, &o, &m, &out, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "transactional"));
  /* A batch handler: tabq_test_drain runs those. */
  o = options_for(NULL);
  CU_ASSERT_EQUAL(tabq_test_deliver(&jobs, &o, &m, &out, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tabq_test_drain"));
}

/* ---- tabq_test_open and tabq_test_drain ---- */

static long long count(tabq_broker *b, const char *where) {
  (void)b;
  extern char test_db_path[];
  sqlite3 *db;
  long long n = -1;
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE %s", where);
  if (sqlite3_open_v2(test_db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return n;
}
char test_db_path[512];

static void publish(tabq_broker *b, const char *payload) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "work";
  m.payload = payload;
  m.payload_len = strlen(payload);
  CU_ASSERT_EQUAL(tabq_publish(b, &jobs, &m, &err), TABQ_OK);
}

static void a_drain_runs_the_queue_to_empty_on_this_thread(void) {
  const tabq_table *tables[] = {&jobs};
  tabq_broker *b = NULL;
  int rc = tabq_test_open(tables, 1, NULL, &b, &err);
  if (rc)
    fprintf(stderr, "open: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  /* The database is queue.db in a folder of its own. */
  char folder[480];
  snprintf(folder, sizeof folder, "%s", tabq_test_folder(b));
  snprintf(test_db_path, sizeof test_db_path, "%s/queue.db", folder);
  struct stat sb;
  CU_ASSERT_EQUAL_FATAL(stat(test_db_path, &sb), 0);

  publish(b, "one");
  publish(b, "two");
  publish(b, "fail");  /* retried at once: attempts 1 and 2, dead at 3 */
  publish(b, "later"); /* retried in a minute: left after the drain */
  publish(b, "poison");
  memset(&saw, 0, sizeof saw);
  tabq_subscription_options o = options_for(by_payload);
  tabq_stats st = {0};
  CU_ASSERT_EQUAL(tabq_test_drain(b, &jobs, &o, &st, sizeof st, &err), TABQ_OK);
  CU_ASSERT_TRUE(pthread_equal(saw.thread, pthread_self()));
  CU_ASSERT_EQUAL(saw.calls, 7);
  CU_ASSERT_EQUAL(st.claimed, 7);
  CU_ASSERT_EQUAL(st.acked, 2);
  CU_ASSERT_EQUAL(st.retried, 3);
  CU_ASSERT_EQUAL(st.delayed, 1);
  CU_ASSERT_EQUAL(st.dead_lettered, 2);
  CU_ASSERT_EQUAL(count(b, "queue = 'work'"), 1);
  CU_ASSERT_EQUAL(count(b, "queue = 'work.dead'"), 2);
  /* A second drain finds nothing due: the delayed row stays. */
  saw.calls = 0;
  CU_ASSERT_EQUAL(tabq_test_drain(b, &jobs, &o, &st, sizeof st, &err), TABQ_OK);
  CU_ASSERT_EQUAL(saw.calls, 0);
  CU_ASSERT_EQUAL(st.claimed, 0);
  CU_ASSERT_EQUAL(count(b, "queue = 'work'"), 1);
  tabq_test_close(b);
  CU_ASSERT_NOT_EQUAL(stat(folder, &sb), 0); /* the folder is gone */
}

int register_tests(void) {
  static CU_TestInfo deliver_tests[] = {
      {"the handler reads its message", the_handler_reads_its_message},
      {"the outcome is what tabq would settle the row as", the_outcome_is_what_tabq_would_settle},
      {"a message that does not decode meets the policy",
       a_message_that_does_not_decode_meets_the_policy},
      {"row mode columns read by name", row_mode_columns_read_by_name},
      {"bad input is refused by name", bad_input_is_refused_by_name},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo drain_tests[] = {
      {"a drain runs the queue to empty on this thread",
       a_drain_runs_the_queue_to_empty_on_this_thread},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("tabq_test_deliver", NULL, NULL, deliver_tests);
  ADD_SUITE("tabq_test_open and tabq_test_drain", NULL, NULL, drain_tests);
  return 0;
}
