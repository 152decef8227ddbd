/* A URL that declares a transaction pooler (pooler=transaction, docs/postgres.md), on a direct
 * PostgreSQL connection, where the server's own catalog can be read: nothing is prepared by
 * name (pg_prepared_statements stays empty on tabq's connections while rows are published and
 * drained, where without the setting it is not), what needs a server session is refused with
 * the reason (listen_notify at connect, the advisory form at subscribe), nothing changed, and a
 * value the setting does not take is refused naming it. The kit runs every form through a real
 * PgBouncer (conformance_pgbouncer_*). */
#include <stdio.h>
#include <string.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

/* The test database's URL with `setting` added to its query. */
static void url_with(char *out, size_t cap, const char *setting) {
  snprintf(out, cap, "%s%c%s", db.url, strchr(db.url, '?') ? '&' : '?', setting);
}

static tabq_broker *broker_on(const char *url, bool listen) {
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.poll_interval_ms = 20;
  o.pool_size = 2;
  o.listen_notify = listen;
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

static int take_count(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  *(long long *)user = cells[0].u.i;
  return 0;
}

/* The named statements on the connection a transaction of `b` gets. */
static long long named_statements(tabq_broker *b) {
  tabq_tx *tx;
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  long long n = -1;
  int rc = tabq_tx_query(tx, "SELECT count(*)::bigint FROM pg_prepared_statements", NULL, 0, 1,
                         take_count, &n, &err);
  if (rc)
    fprintf(stderr, "query: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  tabq_rollback(tx, &err);
  return n;
}

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static long long drain_and_count(const char *url) {
  tabq_broker *b = broker_on(url, false);
  publish_n(b, "q", 20);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = ack_it;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 20000));
  long long n = named_statements(b);
  tabq_close(b);
  return n;
}

static void nothing_is_prepared_by_name(void) {
  testdb_create(&db);
  char url[700];
  url_with(url, sizeof url, "pooler=transaction");
  CU_ASSERT_EQUAL(drain_and_count(url), 0);
  /* The control: the same work on a plain URL leaves its statements prepared. */
  CU_ASSERT(drain_and_count(db.url) > 0);
  url_with(url, sizeof url, "pooler=session");
  CU_ASSERT(drain_and_count(url) > 0);
  testdb_remove(&db);
}

static void what_needs_a_session_is_refused(void) {
  testdb_create(&db);
  char url[700];
  url_with(url, sizeof url, "pooler=transaction");
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.listen_notify = true;
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL(tabq_connect(url, &o, &b, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(b);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "pooler=transaction"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "session pooling"));

  b = broker_on(url, false);
  publish_n(b, "q", 3);
  tabq_table t = *jobs_table();
  t.locked_until.name = NULL;
  t.advisory_lock = "pooled-{id}";
  tabq_subscription_options so = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  so.queue = "q";
  so.handler = ack_it;
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &so, NULL, &err), TABQ_DIALECT);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "transaction pooler"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "lease or row lock form"));
  sleep_ms(100);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs WHERE attempt = 1"), 3);
  tabq_close(b);
  testdb_remove(&db);
}

static void an_unknown_pooler_is_refused(void) {
  testdb_create(&db);
  char url[700];
  url_with(url, sizeof url, "pooler=statement");
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL(tabq_connect(url, NULL, &b, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "pooler=statement"));
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"behind a declared transaction pooler nothing is prepared by name",
       nothing_is_prepared_by_name},
      {"what needs a server session is refused with the reason", what_needs_a_session_is_refused},
      {"an unknown pooler setting is refused", an_unknown_pooler_is_refused},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("a declared transaction pooler", NULL, NULL, tests);
  return 0;
}
