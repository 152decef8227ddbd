/* tabq_publish_many on a real database: a batch arrives whole and once, a bad message anywhere
 * or a database failure halfway writes nothing, subscribers waiting on a long poll wake after
 * the commit, an empty batch writes nothing, and on PostgreSQL each group of a batch is notified
 * once. Rows are counted directly with the database's client library, never through tabq. */
#include <libpq-fe.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"
#include "support.h"

#define BATCH 100
#define LONG_POLL_MS 120000 /* far beyond every wait below: only a wake-up can end it in time */
#define WAIT_MS 20000

static testdb db;
static tabq_error err;

/* A batch's messages: payload "msg-<i>", groups from `groups` in turn. */
typedef struct batch {
  tabq_message m[BATCH];
  const tabq_message *p[BATCH];
  char payload[BATCH][16];
} batch;

static void batch_fill(batch *b, size_t n, const char *const *groups, size_t ngroups) {
  for (size_t i = 0; i < n; i++) {
    int len = snprintf(b->payload[i], sizeof b->payload[i], "msg-%zu", i);
    b->m[i] = (tabq_message){.size = sizeof(tabq_message),
                             .group = groups[i % ngroups],
                             .payload = b->payload[i],
                             .payload_len = (size_t)len};
    b->p[i] = &b->m[i];
  }
}

static const char *const just_q[] = {"q"};

static long long rows(void) {
  return testdb_int(&db, "SELECT count(*) FROM jobs");
}

/* Counts each payload "msg-<i>" it is handed, and any other payload as foreign. */
typedef struct seen {
  atomic_int count[BATCH];
  atomic_int total, foreign;
} seen;

static tabq_outcome count_payload(tabq_delivery *d, void *user) {
  seen *s = user;
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  char text[32], again[32];
  snprintf(text, sizeof text, "%.*s", (int)(len < 31 ? len : 31), p ? p : "");
  unsigned i = 0;
  if (sscanf(text, "msg-%u", &i) == 1 && i < BATCH &&
      (size_t)snprintf(again, sizeof again, "msg-%u", i) == len && !strcmp(again, text))
    atomic_fetch_add(&s->count[i], 1);
  else
    atomic_fetch_add(&s->foreign, 1);
  atomic_fetch_add(&s->total, 1);
  return tabq_ack();
}

static bool wait_total(seen *s, int want) {
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    if (atomic_load(&s->total) >= want)
      return true;
    sleep_ms(10);
  }
  return false;
}

static tabq_subscription *subscribe(tabq_broker *b, const char *queue, seen *s, unsigned poll_ms) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = queue;
  o.handler = count_payload;
  o.user = s;
  o.poll_interval_ms = poll_ms;
  tabq_subscription *sub = NULL;
  int rc = tabq_subscribe(b, jobs_table(), &o, &sub, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return sub;
}

/* Until the subscription's first claim found the queue empty: from then on it sleeps its poll. */
static void wait_first_claim(tabq_subscription *s) {
  tabq_stats st = {0};
  for (int i = 0; i < 2000 && st.claims < 1; i++) {
    tabq_subscription_stats(s, &st, sizeof st);
    sleep_ms(5);
  }
  CU_ASSERT_FATAL(st.claims >= 1);
}

static void starts_with(const char *prefix) {
  if (strncmp(err.message, prefix, strlen(prefix)))
    fprintf(stderr, "expected \"%s...\", got \"%s\"\n", prefix, err.message);
  CU_ASSERT(!strncmp(err.message, prefix, strlen(prefix)));
}

static void hundred_in_one_call_all_arrive(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  static batch bt;
  batch_fill(&bt, BATCH, just_q, 1);
  int rc = tabq_publish_many(b, jobs_table(), bt.p, BATCH, &err);
  if (rc)
    fprintf(stderr, "publish_many: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(rows(), BATCH);
  static seen s;
  memset(&s, 0, sizeof s);
  subscribe(b, "q", &s, 50);
  CU_ASSERT(wait_total(&s, BATCH));
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, WAIT_MS));
  for (int i = 0; i < BATCH; i++)
    CU_ASSERT_EQUAL(atomic_load(&s.count[i]), 1);
  CU_ASSERT_EQUAL(atomic_load(&s.foreign), 0);
  CU_ASSERT_EQUAL(atomic_load(&s.total), BATCH);
  tabq_close(b);
  testdb_remove(&db);
}

static void a_bad_message_writes_nothing(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  static batch bt;
  batch_fill(&bt, BATCH, just_q, 1);

  /* a group that is not UTF-8, in the middle */
  bt.m[50].group = "q\xff\xfe";
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), bt.p, BATCH, &err), TABQ_INVALID);
  starts_with("message 50 of 100: ");
  CU_ASSERT(strstr(err.message, "UTF-8") != NULL);
  CU_ASSERT_EQUAL(rows(), 0);
  bt.m[50].group = "q";

  /* a delay into a table described without retry_after */
  tabq_table no_retry_after = *jobs_table();
  no_retry_after.retry_after = (tabq_col){0};
  bt.m[30].delay_ms = 5000;
  CU_ASSERT_EQUAL(tabq_publish_many(b, &no_retry_after, bt.p, BATCH, &err), TABQ_INVALID);
  starts_with("message 30 of 100: ");
  CU_ASSERT(strstr(err.message, "retry_after") != NULL);
  CU_ASSERT_EQUAL(rows(), 0);
  bt.m[30].delay_ms = 0;

  /* the last one, with a size never set */
  bt.m[99].size = 0;
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), bt.p, BATCH, &err), TABQ_INVALID);
  starts_with("message 99 of 100: ");
  CU_ASSERT_EQUAL(rows(), 0);
  bt.m[99].size = sizeof(tabq_message);

  /* a header without a value */
  tabq_header bad_header = {.name = "trace", .value = NULL};
  bt.m[1].headers = &bad_header;
  bt.m[1].nheaders = 1;
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), bt.p, BATCH, &err), TABQ_HEADER);
  starts_with("message 1 of 100: ");
  CU_ASSERT_EQUAL(rows(), 0);
  bt.m[1].nheaders = 0;

  /* a NULL element, and no array at all */
  bt.p[7] = NULL;
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), bt.p, BATCH, &err), TABQ_INVALID);
  starts_with("message 7 of 100: ");
  bt.p[7] = &bt.m[7];
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), NULL, 3, &err), TABQ_INVALID);
  starts_with("message 0 of 3: ");
  CU_ASSERT_EQUAL(rows(), 0);

  /* the same batch repaired is written whole */
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), bt.p, BATCH, &err), TABQ_OK);
  CU_ASSERT_EQUAL(rows(), BATCH);
  tabq_close(b);
  testdb_remove(&db);
}

/* The database refuses row 60 (its id repeats row 10's): the 60 rows before it roll back. */
static void a_database_failure_halfway_rolls_back(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  tabq_table given_ids = *jobs_table();
  given_ids.id.generated = false;
  static batch bt;
  batch_fill(&bt, BATCH, just_q, 1);
  for (int i = 0; i < BATCH; i++)
    bt.m[i].id = tabq_int(i + 1);
  bt.m[60].id = tabq_int(10);
  int rc = tabq_publish_many(b, &given_ids, bt.p, BATCH, &err);
  CU_ASSERT_NOT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_NOT_EQUAL(rc, TABQ_INVALID); /* not refused by the checks: the database failed */
  starts_with("message 60 of 100: ");
  CU_ASSERT_EQUAL(rows(), 0);
  /* The connection came back usable: the repaired batch commits on it. */
  bt.m[60].id = tabq_int(61);
  rc = tabq_publish_many(b, &given_ids, bt.p, BATCH, &err);
  if (rc)
    fprintf(stderr, "publish_many: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(rows(), BATCH);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT sum(id) FROM jobs"), BATCH * (BATCH + 1) / 2);
  tabq_close(b);
  testdb_remove(&db);
}

static void an_empty_batch_writes_nothing(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  static batch bt;
  batch_fill(&bt, 1, just_q, 1);
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), NULL, 0, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), bt.p, 0, &err), TABQ_OK);
  CU_ASSERT_EQUAL(rows(), 0);
  tabq_close(b);
  testdb_remove(&db);
}

/* Subscribers of two groups sleeping a long poll both wake when one batch writes to both. */
static void waiting_subscribers_wake(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, LONG_POLL_MS);
  static seen sa, sb;
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  wait_first_claim(subscribe(b, "a", &sa, LONG_POLL_MS));
  wait_first_claim(subscribe(b, "b", &sb, LONG_POLL_MS));
  static const char *const ab[] = {"a", "b"};
  static batch bt;
  batch_fill(&bt, 20, ab, 2);
  CU_ASSERT_EQUAL_FATAL(tabq_publish_many(b, jobs_table(), bt.p, 20, &err), TABQ_OK);
  CU_ASSERT(wait_total(&sa, 10));
  CU_ASSERT(wait_total(&sb, 10));
  for (int i = 0; i < 20; i++)
    CU_ASSERT_EQUAL(atomic_load(i % 2 ? &sb.count[i] : &sa.count[i]), 1);
  tabq_close(b);
  testdb_remove(&db);
}

static tabq_broker *listening_broker(void) {
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.poll_interval_ms = LONG_POLL_MS;
  o.pool_size = 6;
  o.listen_notify = true;
  tabq_broker *b = NULL;
  int rc = tabq_connect(db.url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return b;
}

/* Reads the notifications that arrive within ms on a LISTENing connection; counts each payload
 * "a", "b" and any other. */
static void read_notifications(PGconn *c, int ms, int *a, int *b, int *other) {
  for (int waited = 0; waited < ms; waited += 50) {
    struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN};
    poll(&pfd, 1, 50);
    PQconsumeInput(c);
    PGnotify *n;
    while ((n = PQnotifies(c))) {
      if (!strcmp(n->extra, "a"))
        ++*a;
      else if (!strcmp(n->extra, "b"))
        ++*b;
      else
        ++*other;
      PQfreemem(n);
    }
  }
}

/* PostgreSQL: another broker's subscribers wake by NOTIFY, and a batch of 40 rows in two groups
 * sends two notifications, one per group. */
static void each_group_is_notified_once(void) {
  testdb_create(&db);
  PGconn *listener = PQconnectdb(db.url);
  CU_ASSERT_FATAL(PQstatus(listener) == CONNECTION_OK);
  PQclear(PQexec(listener, "LISTEN jobs"));
  tabq_broker *reader = listening_broker();
  tabq_broker *writer = listening_broker();
  static seen sa, sb;
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  wait_first_claim(subscribe(reader, "a", &sa, LONG_POLL_MS));
  wait_first_claim(subscribe(reader, "b", &sb, LONG_POLL_MS));
  static const char *const ab[] = {"a", "b"};
  static batch bt;
  batch_fill(&bt, 40, ab, 2);
  CU_ASSERT_EQUAL_FATAL(tabq_publish_many(writer, jobs_table(), bt.p, 40, &err), TABQ_OK);
  CU_ASSERT(wait_total(&sa, 20));
  CU_ASSERT(wait_total(&sb, 20));
  int a = 0, b = 0, other = 0;
  read_notifications(listener, 1000, &a, &b, &other);
  CU_ASSERT_EQUAL(a, 1);
  CU_ASSERT_EQUAL(b, 1);
  CU_ASSERT_EQUAL(other, 0);
  tabq_close(writer);
  tabq_close(reader);
  PQfinish(listener);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"100 messages in one call all arrive", hundred_in_one_call_all_arrive},
      {"a bad message anywhere writes nothing", a_bad_message_writes_nothing},
      {"a database failure halfway rolls every row back", a_database_failure_halfway_rolls_back},
      {"an empty batch writes nothing", an_empty_batch_writes_nothing},
      {"subscribers on a long poll wake after the commit", waiting_subscribers_wake},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo postgres_tests[] = {
      {"each group of a batch is notified once", each_group_is_notified_once},
      CU_TEST_INFO_NULL,
  };
  char suite[64];
  snprintf(suite, sizeof suite, "publish_many on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  if (test_db_kind() == TEST_POSTGRES)
    ADD_SUITE("publish_many: LISTEN/NOTIFY", NULL, NULL, postgres_tests);
  return 0;
}
