/* Trace context through the queue and the delivery hooks (tabq/trace.h) on a real database, in
 * each form: a traceparent published reaches the handler as sent, a malformed one is refused
 * with nothing written, and the hooks see every delivery a handler gets — start on the
 * handler's thread before it, end after the row's settlement (checked in the database from the
 * hook) with what the row was settled as, the token start returned, and the durations. Rows are
 * read directly with the database's client library, never through tabq. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/trace.h>

#include "cunit_main.h"
#include "support.h"

#define WAIT_MS 20000
#define MAX_ROWS 16

static testdb db;
static tabq_error err;

static const char *const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
static const char *const STATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

/* What one row's handler and hooks saw, by the row's payload index "r<i>". */
typedef struct row_seen {
  atomic_int starts, handled, ends;
  int start_seq, handler_seq, end_seq;
  pthread_t start_thread, handler_thread, end_thread;
  bool token_matches;
  tabq_outcome_kind outcome;
  tabq_code code;
  int64_t handler_us, total_us;
  long long due_after_end; /* rows of its id still due in its queue, read from the end hook */
  bool traced;
  tabq_trace_context trace;
  char tracestate[64];
} row_seen;

static row_seen seen[MAX_ROWS];
static atomic_int seq, ended;
static pthread_mutex_t checking = PTHREAD_MUTEX_INITIALIZER; /* one checking connection */

static int index_of(tabq_delivery *d) {
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  int i = -1;
  char text[16];
  snprintf(text, sizeof text, "%.*s", (int)(len < 15 ? len : 15), p ? p : "");
  return sscanf(text, "r%d", &i) == 1 && i >= 0 && i < MAX_ROWS ? i : -1;
}

/* Each row's handler: r0..r3 acked, r4 dropped, r5 retried once then acked, r6 retried after
 * 10 ms once then acked, r7 dead-lettered. Every call takes about 5 ms. */
static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  int i = index_of(d);
  if (i < 0)
    return tabq_ack();
  row_seen *r = &seen[i];
  r->handler_seq = atomic_fetch_add(&seq, 1);
  r->handler_thread = pthread_self();
  r->traced = tabq_delivery_trace(d, &r->trace);
  if (r->traced && r->trace.tracestate)
    snprintf(r->tracestate, sizeof r->tracestate, "%s", r->trace.tracestate);
  r->trace.tracestate = NULL; /* borrowed: copied above */
  atomic_fetch_add(&r->handled, 1);
  sleep_ms(5);
  long attempt = tabq_delivery_attempt(d);
  switch (i) {
  case 4:
    return tabq_drop();
  case 5:
    return attempt == 1 ? tabq_retry() : tabq_ack();
  case 6:
    return attempt == 1 ? tabq_retry_after(10) : tabq_ack();
  case 7:
    return tabq_dead_letter();
  default:
    return tabq_ack();
  }
}

static void *on_start(tabq_delivery *d, void *user) {
  (void)user;
  int i = index_of(d);
  if (i < 0)
    return NULL;
  seen[i].start_seq = atomic_fetch_add(&seq, 1);
  seen[i].start_thread = pthread_self();
  atomic_fetch_add(&seen[i].starts, 1);
  return &seen[i];
}

static void on_end(tabq_delivery *d, const tabq_delivery_end *e, void *token, void *user) {
  (void)user;
  int i = index_of(d);
  if (i < 0)
    return;
  row_seen *r = &seen[i];
  r->end_seq = atomic_fetch_add(&seq, 1);
  r->end_thread = pthread_self();
  r->token_matches = token == r;
  r->outcome = e->outcome;
  r->code = e->code;
  r->handler_us = e->handler_us;
  r->total_us = e->total_us;
  char sql[160];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE id = %lld AND queue = 'q'",
           (long long)tabq_delivery_id(d));
  pthread_mutex_lock(&checking);
  r->due_after_end = testdb_int(&db, sql);
  pthread_mutex_unlock(&checking);
  atomic_fetch_add(&r->ends, 1);
  atomic_fetch_add(&ended, 1);
}

static void setup(void) {
  memset(seen, 0, sizeof seen);
  atomic_store(&seq, 0);
  atomic_store(&ended, 0);
  testdb_create(&db);
}

static int publish_row(tabq_broker *b, int i, const tabq_header *h, size_t nh) {
  char payload[8];
  int len = snprintf(payload, sizeof payload, "r%d", i);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = payload;
  m.payload_len = (size_t)len;
  m.headers = h;
  m.nheaders = nh;
  return tabq_publish(b, jobs_table(), &m, &err);
}

static tabq_subscription *subscribe(tabq_broker *b) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = handle;
  o.workers = 2;
  o.dead_letter_group = "q.dead";
  o.max_attempts = 5;
  tabq_subscription *s = NULL;
  int rc = tabq_subscribe(b, jobs_table(), &o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return s;
}

static bool wait_ended(int want) {
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    if (atomic_load(&ended) >= want)
      return true;
    sleep_ms(10);
  }
  return false;
}

static void a_traceparent_reaches_the_handler(void) {
  setup();
  tabq_broker *b = connect_broker(&db, 50);
  tabq_header both[] = {{"traceparent", PARENT}, {"tracestate", STATE}};
  tabq_header alone[] = {{"traceparent", PARENT}};
  CU_ASSERT_EQUAL(publish_row(b, 0, both, 2), TABQ_OK);
  CU_ASSERT_EQUAL(publish_row(b, 1, alone, 1), TABQ_OK);
  CU_ASSERT_EQUAL(publish_row(b, 2, NULL, 0), TABQ_OK);
  tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
  hooks.on_delivery_end = on_end;
  CU_ASSERT_EQUAL(tabq_set_delivery_hooks(b, &hooks, &err), TABQ_OK);
  subscribe(b);
  CU_ASSERT_FATAL(wait_ended(3));
  tabq_close(b);
  CU_ASSERT_TRUE(seen[0].traced);
  CU_ASSERT_STRING_EQUAL(seen[0].trace.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  CU_ASSERT_STRING_EQUAL(seen[0].trace.parent_id, "00f067aa0ba902b7");
  CU_ASSERT_EQUAL(seen[0].trace.flags, 1);
  CU_ASSERT_EQUAL(seen[0].trace.version, 0);
  CU_ASSERT_STRING_EQUAL(seen[0].tracestate, STATE);
  CU_ASSERT_TRUE(seen[1].traced);
  CU_ASSERT_STRING_EQUAL(seen[1].trace.parent_id, "00f067aa0ba902b7");
  CU_ASSERT_STRING_EQUAL(seen[1].tracestate, "");
  CU_ASSERT_FALSE(seen[2].traced);
  testdb_remove(&db);
}

static void a_malformed_traceparent_writes_nothing(void) {
  setup();
  tabq_broker *b = connect_broker(&db, 50);
  static const char *const bad[] = {
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",   /* upper case */
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* a zero trace id */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* a zero parent id */
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 with more */
      "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   /* a dash misplaced */
      "",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tabq_header h[] = {{"traceparent", bad[i]}};
    CU_ASSERT_EQUAL(publish_row(b, 0, h, 1), TABQ_HEADER);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "traceparent"));
  }
  /* In a batch: one bad message anywhere writes none of them. */
  tabq_header good[] = {{"traceparent", PARENT}}, worse[] = {{"traceparent", bad[0]}};
  tabq_message m[2];
  const tabq_message *p[2];
  for (int i = 0; i < 2; i++) {
    m[i] = (tabq_message)TABQ_MESSAGE_INIT;
    m[i].group = "q";
    m[i].payload = "r0";
    m[i].payload_len = 2;
    m[i].headers = i ? worse : good;
    m[i].nheaders = 1;
    p[i] = &m[i];
  }
  CU_ASSERT_NOT_EQUAL(tabq_publish_many(b, jobs_table(), p, 2, &err), TABQ_OK);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 0);
  /* A later version may append fields after its flags. */
  tabq_trace_context tc = TABQ_TRACE_CONTEXT_INIT;
  CU_ASSERT_TRUE(
      tabq_trace_parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what", NULL, &tc));
  CU_ASSERT_EQUAL(tc.version, 0xcc);
  CU_ASSERT_EQUAL(tc.flags, 0);
  tabq_close(b);
  testdb_remove(&db);
}

static void the_hooks_see_every_delivery(void) {
  setup();
  tabq_broker *b = connect_broker(&db, 50);
  tabq_header h[] = {{"traceparent", PARENT}};
  for (int i = 0; i < 8; i++)
    CU_ASSERT_EQUAL(publish_row(b, i, h, 1), TABQ_OK);
  tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
  hooks.on_delivery_start = on_start;
  hooks.on_delivery_end = on_end;
  CU_ASSERT_EQUAL(tabq_set_delivery_hooks(b, &hooks, &err), TABQ_OK);
  subscribe(b);
  /* Set after the first subscription: refused, the hooks set before stay. */
  CU_ASSERT_EQUAL(tabq_set_delivery_hooks(b, NULL, &err), TABQ_INVALID);
  /* 8 rows, two of them handled twice */
  CU_ASSERT_FATAL(wait_ended(10));
  tabq_close(b);
  static const tabq_outcome_kind last[] = {
      TABQ_OUTCOME_ACK,  TABQ_OUTCOME_ACK, TABQ_OUTCOME_ACK, TABQ_OUTCOME_ACK,
      TABQ_OUTCOME_DROP, TABQ_OUTCOME_ACK, TABQ_OUTCOME_ACK, TABQ_OUTCOME_DEAD_LETTER};
  for (int i = 0; i < 8; i++) {
    row_seen *r = &seen[i];
    int calls = i == 5 || i == 6 ? 2 : 1;
    CU_ASSERT_EQUAL(atomic_load(&r->starts), calls);
    CU_ASSERT_EQUAL(atomic_load(&r->handled), calls);
    CU_ASSERT_EQUAL(atomic_load(&r->ends), calls);
    /* The last call's order: start, handler, end; all on one thread. */
    CU_ASSERT_TRUE(r->start_seq < r->handler_seq && r->handler_seq < r->end_seq);
    CU_ASSERT_TRUE(pthread_equal(r->start_thread, r->handler_thread));
    CU_ASSERT_TRUE(pthread_equal(r->end_thread, r->handler_thread));
    CU_ASSERT_TRUE(r->token_matches);
    CU_ASSERT_EQUAL(r->outcome, last[i]);
    CU_ASSERT_EQUAL(r->code, TABQ_OK);
    CU_ASSERT_TRUE(r->handler_us >= 4000);
    CU_ASSERT_TRUE(r->total_us >= r->handler_us);
    /* Settled before the end hook: the row is no longer in its queue. */
    CU_ASSERT_EQUAL(r->due_after_end, 0);
    CU_ASSERT_TRUE(r->traced);
  }
  CU_ASSERT_STRING_EQUAL(tabq_outcome_name(TABQ_OUTCOME_RETRY_AFTER), "retry_after");
  testdb_remove(&db);
}

/* A batch handler's rows: each gets its start before the call and its end after the batch. */
static atomic_int batch_calls;

static void handle_batch(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)user;
  atomic_fetch_add(&batch_calls, 1);
  for (size_t i = 0; i < n; i++) {
    int k = index_of(ds[i]);
    if (k >= 0) {
      seen[k].handler_seq = atomic_fetch_add(&seq, 1);
      seen[k].handler_thread = pthread_self();
      atomic_fetch_add(&seen[k].handled, 1);
    }
    out[i] = k == 4 ? tabq_drop() : tabq_ack();
  }
}

static void the_hooks_see_each_row_of_a_batch(void) {
  setup();
  atomic_store(&batch_calls, 0);
  tabq_broker *b = connect_broker(&db, 50);
  for (int i = 0; i < 6; i++)
    CU_ASSERT_EQUAL(publish_row(b, i, NULL, 0), TABQ_OK);
  tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
  hooks.on_delivery_start = on_start;
  hooks.on_delivery_end = on_end;
  CU_ASSERT_EQUAL(tabq_set_delivery_hooks(b, &hooks, &err), TABQ_OK);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.batch_handler = handle_batch;
  o.batch = 8;
  tabq_subscription *s = NULL;
  CU_ASSERT_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err) == TABQ_OK);
  CU_ASSERT_FATAL(wait_ended(6));
  tabq_close(b);
  for (int i = 0; i < 6; i++) {
    CU_ASSERT_EQUAL(atomic_load(&seen[i].starts), 1);
    CU_ASSERT_EQUAL(atomic_load(&seen[i].ends), 1);
    CU_ASSERT_TRUE(seen[i].start_seq < seen[i].handler_seq &&
                   seen[i].handler_seq < seen[i].end_seq);
    CU_ASSERT_EQUAL(seen[i].outcome, i == 4 ? TABQ_OUTCOME_DROP : TABQ_OUTCOME_ACK);
    CU_ASSERT_EQUAL(seen[i].due_after_end, 0);
    CU_ASSERT_FALSE(seen[i].traced);
  }
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a traceparent published reaches the handler as sent", a_traceparent_reaches_the_handler},
      {"a malformed traceparent is refused, nothing written",
       a_malformed_traceparent_writes_nothing},
      {"the hooks see every delivery: start, handler, settlement, end",
       the_hooks_see_every_delivery},
      {"the hooks see each row of a batch", the_hooks_see_each_row_of_a_batch},
      CU_TEST_INFO_NULL,
  };
  char suite[64];
  snprintf(suite, sizeof suite, "trace context and delivery hooks on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
