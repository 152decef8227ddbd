/* Deadlines (docs/deadlines.md) on a real database, in each form: a handler that sleeps past its
 * deadline leaves its row settled by the policy exactly once (retried after the delay, or dead
 * lettered) while it still runs, learns it from tabq_delivery_held() and from its own refused
 * settlement; a handler that returns in time is unaffected; a row's own budget wins where it is
 * smaller; the lease is not extended past the deadline; and every misuse is refused at
 * subscribe, naming the table and the rule, with nothing claimed. Rows are read directly with
 * the database's client library, never through tabq. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/metrics.h>
#include <sys/time.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

static int64_t now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* What the handlers saw, under `mu`. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int calls, returned;
  int64_t called_at, deadline, held_false_at, max_token, first_token;
  int settle_rc;
  bool saw_deadline_gone; /* held() false, and not before the deadline */
  int64_t budget_ms[8];   /* a row's deadline less its call, by payload "job-<i>" */
} seen;

static void reset(void) {
  pthread_mutex_lock(&mu);
  memset(&seen, 0, sizeof seen);
  seen.settle_rc = -1;
  pthread_mutex_unlock(&mu);
}

static int index_of(tabq_delivery *d) {
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  char text[16];
  snprintf(text, sizeof text, "%.*s", (int)(len < 15 ? len : 15), p ? p : "");
  int i = -1;
  return sscanf(text, "job-%d", &i) == 1 && i >= 0 && i < 8 ? i : -1;
}

/* Runs far past its deadline, as a stuck handler would, but watches tabq_delivery_held() (and
 * the lease token) to stop once the core settled its row; then tries to ack, which must be
 * refused. Gives up after `user` milliseconds. */
static tabq_outcome sleeper(tabq_delivery *d, void *user) {
  int64_t limit = (int64_t)(intptr_t)user * 1000, start = now_us();
  int64_t deadline = tabq_delivery_deadline(d);
  pthread_mutex_lock(&mu);
  seen.calls++;
  seen.called_at = start;
  seen.deadline = deadline;
  seen.first_token = tabq_delivery_lease_token(d);
  pthread_mutex_unlock(&mu);
  while (tabq_delivery_held(d) && now_us() - start < limit) {
    int64_t token = tabq_delivery_lease_token(d);
    pthread_mutex_lock(&mu);
    if (token > seen.max_token)
      seen.max_token = token;
    pthread_mutex_unlock(&mu);
    sleep_ms(20);
  }
  int64_t gone = now_us();
  tabq_error e;
  int rc = tabq_delivery_settle(d, tabq_ack(), &e);
  pthread_mutex_lock(&mu);
  seen.held_false_at = gone;
  seen.saw_deadline_gone = !tabq_delivery_held(d) && deadline && gone >= deadline;
  seen.settle_rc = rc;
  seen.returned++;
  pthread_mutex_unlock(&mu);
  return tabq_ack(); /* ignored: settled already */
}

static tabq_outcome quick(tabq_delivery *d, void *user) {
  (void)user;
  int64_t t = now_us(), deadline = tabq_delivery_deadline(d);
  pthread_mutex_lock(&mu);
  seen.calls++;
  if (!deadline || deadline < t || deadline > t + 2100000)
    seen.settle_rc = 99; /* a deadline that is not the call plus the budget */
  pthread_mutex_unlock(&mu);
  return tabq_ack();
}

static bool wait_returned(int n, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    pthread_mutex_lock(&mu);
    bool done = seen.returned >= n;
    pthread_mutex_unlock(&mu);
    if (done)
      return true;
    sleep_ms(20);
  }
  return false;
}

static tabq_subscription *subscribe(tabq_broker *b, const tabq_table *t,
                                    const tabq_subscription_options *o) {
  tabq_subscription *s = NULL;
  int rc = tabq_subscribe(b, t, o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return s;
}

static void a_sleeper_past_its_deadline_is_retried_after_the_delay_once(void) {
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 100);
  publish_n(b, "q", 1);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = sleeper;
  o.user = (void *)(intptr_t)6000;
  o.deadline_ms = 500;
  o.deadline_retry_ms = 60000; /* hidden long after the test: a second call would be a bug */
  tabq_subscription *s = subscribe(b, jobs_table(), &o);
  CU_ASSERT_TRUE(wait_returned(1, 10000));
  sleep_ms(800); /* a retry at once would be claimed again within this */
  tabq_stats st = {0};
  tabq_subscription_stats(s, &st, sizeof st);
  pthread_mutex_lock(&mu);
  CU_ASSERT_EQUAL(seen.calls, 1);
  CU_ASSERT_TRUE(seen.deadline >= seen.called_at + 450000 &&
                 seen.deadline <= seen.called_at + 600000);
  /* The handler stopped because its hold ended at the deadline, not because it gave up. */
  CU_ASSERT_TRUE(seen.saw_deadline_gone);
  CU_ASSERT_TRUE(seen.held_false_at < seen.called_at + 5000000);
  CU_ASSERT_EQUAL(seen.settle_rc, TABQ_LEASE_LOST);
  pthread_mutex_unlock(&mu);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  CU_ASSERT_EQUAL(st.delayed, 1);
  CU_ASSERT_EQUAL(st.acked, 0);
  CU_ASSERT_EQUAL(st.lease_lost, 0); /* the handler's refused ack is no lost lease */
  char *text = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_metrics_write(b, &text, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "tabq_deadline_expired_total{table=\"jobs\",queue=\"q\"} 1\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(
      text, "tabq_deliveries_total{table=\"jobs\",queue=\"q\",outcome=\"retry_after\"} 1\n"));
  free(text);
  /* The row is still there, hidden, its attempt spent once. */
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 1);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT attempt FROM jobs"), 2);
  tabq_close(b);
  testdb_remove(&db);
}

static void a_sleeper_past_its_deadline_is_dead_lettered_once(void) {
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 100);
  publish_n(b, "q", 1);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = sleeper;
  o.user = (void *)(intptr_t)6000;
  o.deadline_ms = 400;
  o.on_deadline = TABQ_DEADLINE_DEAD_LETTER;
  o.max_attempts = 5;
  o.dead_letter_table = "jobs_dead";
  tabq_subscription *s = subscribe(b, jobs_table(), &o);
  CU_ASSERT_TRUE(wait_returned(1, 10000));
  sleep_ms(300);
  tabq_stats st = {0};
  tabq_subscription_stats(s, &st, sizeof st);
  pthread_mutex_lock(&mu);
  CU_ASSERT_EQUAL(seen.calls, 1);
  CU_ASSERT_TRUE(seen.saw_deadline_gone);
  CU_ASSERT_EQUAL(seen.settle_rc, TABQ_LEASE_LOST);
  pthread_mutex_unlock(&mu);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  CU_ASSERT_EQUAL(st.dead_lettered, 1);
  CU_ASSERT_EQUAL(st.acked, 0);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 0);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs_dead"), 1);
  tabq_close(b);
  testdb_remove(&db);
}

static void handlers_that_return_in_time_are_unaffected(void) {
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 100);
  publish_n(b, "q", 6);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = quick;
  o.workers = 2;
  o.deadline_ms = 2000;
  tabq_subscription *s = subscribe(b, jobs_table(), &o);
  CU_ASSERT_TRUE(wait_count(&db, "SELECT count(*) FROM jobs", 0, 10000));
  sleep_ms(2300); /* past every deadline: nothing may fire for a row settled in time */
  tabq_stats st = {0};
  tabq_subscription_stats(s, &st, sizeof st);
  CU_ASSERT_EQUAL(st.acked, 6);
  CU_ASSERT_EQUAL(st.deadline_expired, 0);
  CU_ASSERT_EQUAL(st.retried, 0);
  pthread_mutex_lock(&mu);
  CU_ASSERT_EQUAL(seen.calls, 6);
  CU_ASSERT_EQUAL(seen.settle_rc, -1);
  pthread_mutex_unlock(&mu);
  tabq_close(b);
  testdb_remove(&db);
}

/* jobs_budget: the run's form, every role jobs has, and a data column with each row's budget. */
static const tabq_col budget_cols[] = {{.name = "budget_ms", .type = TABQ_T_INT}};
static tabq_table budget_table(void) {
  tabq_table t = *jobs_table();
  t.name = "jobs_budget";
  t.data = budget_cols;
  t.ndata = 1;
  t.deadline_column = "budget_ms";
  return t;
}

static tabq_outcome budget_sleeper(tabq_delivery *d, void *user) {
  int i = index_of(d);
  int64_t left = tabq_delivery_deadline(d) - now_us();
  pthread_mutex_lock(&mu);
  if (i >= 0)
    seen.budget_ms[i] = left / 1000;
  pthread_mutex_unlock(&mu);
  if (i == 0) /* the row with a budget of its own runs past it */
    return sleeper(d, user);
  pthread_mutex_lock(&mu);
  seen.returned++;
  pthread_mutex_unlock(&mu);
  return tabq_ack();
}

static void a_rows_own_smaller_budget_wins(void) {
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 100);
  tabq_table t = budget_table();
  int rc = tabq_schema_apply(b, &t, NULL, &err);
  if (rc)
    fprintf(stderr, "schema: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  /* job-0 brings 300 ms, job-1 nothing (NULL): the subscription's 30 s */
  tabq_value own = tabq_int(300);
  for (int i = 0; i < 2; i++) {
    char payload[16];
    int len = snprintf(payload, sizeof payload, "job-%d", i);
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = "q";
    m.payload = payload;
    m.payload_len = (size_t)len;
    m.data = i == 0 ? &own : NULL;
    m.ndata = i == 0 ? 1 : 0;
    CU_ASSERT_EQUAL_FATAL(tabq_publish(b, &t, &m, &err), TABQ_OK);
  }
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = budget_sleeper;
  o.user = (void *)(intptr_t)6000;
  o.workers = 2;
  o.deadline_ms = 30000;
  o.deadline_retry_ms = 60000;
  tabq_subscription *s = subscribe(b, &t, &o);
  CU_ASSERT_TRUE(wait_returned(2, 10000));
  tabq_stats st = {0};
  tabq_subscription_stats(s, &st, sizeof st);
  pthread_mutex_lock(&mu);
  CU_ASSERT_TRUE(seen.budget_ms[0] > 0 && seen.budget_ms[0] <= 300);
  CU_ASSERT_TRUE(seen.budget_ms[1] > 20000 && seen.budget_ms[1] <= 30000);
  CU_ASSERT_TRUE(seen.saw_deadline_gone);
  CU_ASSERT_EQUAL(seen.settle_rc, TABQ_LEASE_LOST);
  pthread_mutex_unlock(&mu);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  CU_ASSERT_EQUAL(st.acked, 1);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs_budget"), 1);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT budget_ms FROM jobs_budget"), 300);
  tabq_close(b);
  testdb_remove(&db);
}

/* Lease form: a lease of 6 s is extended every 3 s; the deadline at 4 s is covered by the
 * claim's lease (plus the guard), so no extension may move it. */
static void the_lease_is_not_extended_past_the_deadline(void) {
  if (test_form() != TABQ_FORM_LEASE)
    return;
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 100);
  publish_n(b, "q", 1);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = sleeper;
  o.user = (void *)(intptr_t)8000;
  o.lease_s = 6;
  o.deadline_ms = 4000;
  o.deadline_retry_ms = 60000;
  tabq_subscription *s = subscribe(b, jobs_table(), &o);
  CU_ASSERT_TRUE(wait_returned(1, 12000));
  tabq_stats st = {0};
  tabq_subscription_stats(s, &st, sizeof st);
  CU_ASSERT_EQUAL(st.extensions, 0);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  pthread_mutex_lock(&mu);
  CU_ASSERT_TRUE(seen.max_token <= seen.first_token);
  CU_ASSERT_TRUE(seen.saw_deadline_gone);
  pthread_mutex_unlock(&mu);
  tabq_close(b);
  testdb_remove(&db);
}

/* job-0 sleeps past its deadline; every other row is acked at once. */
static tabq_outcome first_sleeps(tabq_delivery *d, void *user) {
  if (index_of(d) == 0)
    return sleeper(d, user);
  pthread_mutex_lock(&mu);
  seen.calls++;
  pthread_mutex_unlock(&mu);
  return tabq_ack();
}

/* Lease form with coalesce_acks: the acks of the handlers in time settle together, the sleeper's
 * row by the policy, and the sleeper's late ack (which goes through the coalescer) is refused. */
static void coalesced_acks_and_a_deadline(void) {
  if (test_form() != TABQ_FORM_LEASE)
    return;
  testdb_create(&db);
  reset();
  tabq_broker *b = connect_broker(&db, 50);
  publish_n(b, "q", 6);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = first_sleeps;
  o.user = (void *)(intptr_t)6000;
  o.workers = 3;
  o.coalesce_acks = true;
  o.coalesce_window_us = 2000;
  o.deadline_ms = 500;
  o.deadline_retry_ms = 60000;
  tabq_subscription *s = subscribe(b, jobs_table(), &o);
  CU_ASSERT_TRUE(wait_returned(1, 10000));
  CU_ASSERT_TRUE(wait_count(&db, "SELECT count(*) FROM jobs", 1, 10000));
  sleep_ms(300);
  tabq_stats st = {0};
  tabq_subscription_stats(s, &st, sizeof st);
  CU_ASSERT_EQUAL(st.acked, 5);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  CU_ASSERT_EQUAL(st.delayed, 1);
  CU_ASSERT_EQUAL(st.lease_lost + st.failed, 0);
  pthread_mutex_lock(&mu);
  CU_ASSERT_EQUAL(seen.calls, 6);
  CU_ASSERT_TRUE(seen.saw_deadline_gone);
  CU_ASSERT_EQUAL(seen.settle_rc, TABQ_LEASE_LOST);
  pthread_mutex_unlock(&mu);
  tabq_close(b);
  testdb_remove(&db);
}

static tabq_outcome never(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  CU_FAIL("a refused subscription claimed a row");
  return tabq_ack();
}
static void never_batch(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)ds;
  (void)n;
  (void)out;
  never(NULL, user);
}

/* Subscribes with o on t, expects TABQ_DECLARATION naming the table and `rule`. */
static void refused(tabq_broker *b, const tabq_table *t, const tabq_subscription_options *o,
                    const char *rule) {
  tabq_subscription *s = NULL;
  int rc = tabq_subscribe(b, t, o, &s, &err);
  CU_ASSERT_EQUAL(rc, TABQ_DECLARATION);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_STRING_EQUAL(err.table, t->name);
  if (!strstr(err.message, rule) || !strstr(err.message, t->name)) {
    fprintf(stderr, "refusal without '%s': %s\n", rule, err.message);
    CU_FAIL("the refusal names the table and the rule");
  }
}

static void misuse_is_refused_at_subscribe(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  publish_n(b, "q", 1);
  tabq_subscription_options base = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  base.queue = "q";
  base.handler = never;
  base.deadline_ms = 1000;
  tabq_subscription_options o = base;
  o.transactional = true;
  refused(b, jobs_table(), &o, "(not in transactional mode)");
  o = base;
  o.handler = NULL;
  o.batch_handler = never_batch;
  refused(b, jobs_table(), &o, "(a handler of one delivery)");
  o = base;
  o.on_deadline = TABQ_DEADLINE_DEAD_LETTER;
  refused(b, jobs_table(), &o, "(dead_letter needs a dead letter)");
  o = base;
  o.on_deadline = (tabq_deadline_policy)7;
  refused(b, jobs_table(), &o, "(on_deadline)");
  o = base;
  o.deadline_ms = 0;
  o.deadline_retry_ms = 500;
  refused(b, jobs_table(), &o, "(a policy needs a deadline)");
  o = base;
  o.deadline_ms = 700000000;
  refused(b, jobs_table(), &o, "(deadline_ms)");
  tabq_table no_retry = *jobs_table();
  no_retry.retry_after.name = NULL;
  refused(b, &no_retry, &base, "(retry_after needs its column)");
  tabq_table t = budget_table();
  t.deadline_column = "budget";
  o = base;
  o.deadline_ms = 0;
  refused(b, &t, &o, "(deadline column)");
  tabq_col text_col = {.name = "budget_ms", .type = TABQ_T_TEXT};
  t.deadline_column = "budget_ms";
  t.data = &text_col;
  refused(b, &t, &o, "(deadline column)");
  /* A table whose rows carry a budget refuses the transactional mode too. */
  t = budget_table();
  o.transactional = true;
  refused(b, &t, &o, "(not in transactional mode)");
  sleep_ms(200);
  /* Nothing was claimed. */
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT attempt FROM jobs"), 1);
  tabq_close(b);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a sleeper past its deadline is retried after the delay, once",
       a_sleeper_past_its_deadline_is_retried_after_the_delay_once},
      {"a sleeper past its deadline is dead lettered, once",
       a_sleeper_past_its_deadline_is_dead_lettered_once},
      {"handlers that return in time are unaffected", handlers_that_return_in_time_are_unaffected},
      {"a row's own smaller budget wins", a_rows_own_smaller_budget_wins},
      {"the lease is not extended past the deadline", the_lease_is_not_extended_past_the_deadline},
      {"coalesced acks and a deadline", coalesced_acks_and_a_deadline},
      {"misuse is refused at subscribe", misuse_is_refused_at_subscribe},
      CU_TEST_INFO_NULL,
  };
  char suite[96];
  snprintf(suite, sizeof suite, "deadlines on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
