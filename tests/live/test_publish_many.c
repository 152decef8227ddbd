/* tabq_publish_many on a real database: a batch arrives whole and once, a bad message anywhere
 * or a database failure halfway writes nothing, a batch of several inserts of many rows and a
 * remainder writes every column of every row in order, subscribers waiting on a long poll wake
 * after the commit, an empty batch writes nothing, and on PostgreSQL each group of a batch is
 * notified once. Rows are counted directly with the database's client library, never through tabq.
 */
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

/* A failure of the database names the messages of the statement that failed: one, or the
 * rows of an insert of many, which must hold message `i`. */
static void names_message(size_t i, size_t n) {
  size_t first = 0, last = 0, of = 0;
  if (sscanf(err.message, "messages %zu to %zu of %zu: ", &first, &last, &of) != 3 &&
      sscanf(err.message, "message %zu of %zu: ", &first, &of) == 2)
    last = first;
  if (!(first <= i && i <= last && of == n))
    fprintf(stderr, "expected message %zu of %zu named, got \"%s\"\n", i, n, err.message);
  CU_ASSERT(first <= i && i <= last && of == n);
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
  names_message(60, BATCH);
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

/* ---- More than one statement of many rows, and a remainder ------------------------------- */

#define WIDE 301 /* chunks of up to 128 rows, then 32, 8, 4 and a single row */

/* Message i of the wide batch: group, priority, a payload with a NUL byte inside, headers on
 * every other message, a data value on four in five, a delay on every tenth. */
typedef struct wide_batch {
  tabq_message m[WIDE];
  const tabq_message *p[WIDE];
  char payload[WIDE][16];
  size_t payload_len[WIDE];
  char trace[WIDE][16];
  tabq_header header[WIDE];
  char tenant[WIDE][16];
  tabq_value data[WIDE];
} wide_batch;

static const char *const abc[] = {"a", "b", "c"};

static void wide_fill(wide_batch *w) {
  for (size_t i = 0; i < WIDE; i++) {
    int len = snprintf(w->payload[i], sizeof w->payload[i], "p%c%zu", '\0', i);
    w->payload_len[i] = (size_t)len;
    snprintf(w->trace[i], sizeof w->trace[i], "t-%zu", i);
    w->header[i] = (tabq_header){.name = "trace", .value = w->trace[i]};
    int tl = snprintf(w->tenant[i], sizeof w->tenant[i], "tenant-%zu", i);
    w->data[i] = tabq_text(w->tenant[i], (size_t)tl);
    w->m[i] = (tabq_message){.size = sizeof(tabq_message),
                             .group = abc[i % 3],
                             .priority = (int64_t)(i % 7),
                             .payload = w->payload[i],
                             .payload_len = w->payload_len[i],
                             .headers = i % 2 ? NULL : &w->header[i],
                             .nheaders = i % 2 ? 0 : 1,
                             .delay_ms = i % 10 ? 0 : 600000,
                             .data = i % 5 ? &w->data[i] : NULL,
                             .ndata = i % 5 ? 1 : 0};
    w->p[i] = &w->m[i];
  }
}

/* jobs with a data column, `tenant`, added. */
static const tabq_table *tenant_table(void) {
  static tabq_col data[] = {{.name = "tenant"}};
  static tabq_table t;
  t = *jobs_table();
  t.data = data;
  t.ndata = 1;
  testdb_exec(&db, test_db_kind() == TEST_MYSQL ? "ALTER TABLE jobs ADD COLUMN tenant VARCHAR(32)"
                                                : "ALTER TABLE jobs ADD COLUMN tenant TEXT");
  return &t;
}

/* `expr` of the k-th row in id order, as text ("" for NULL). */
static void nth(const char *expr, size_t k, char *buf, size_t cap) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT %s FROM jobs ORDER BY id LIMIT 1 OFFSET %zu", expr, k);
  testdb_text(&db, sql, buf, cap);
}

static void expect_nth(const char *expr, size_t k, const char *want) {
  char got[64];
  nth(expr, k, got, sizeof got);
  if (strcmp(got, want))
    fprintf(stderr, "row %zu: %s is \"%s\", not \"%s\"\n", k, expr, got, want);
  CU_ASSERT_STRING_EQUAL(got, want);
}

/* Every row of the batch holds its message's values, in the order given (ids increase). */
static void a_batch_of_many_statements_writes_every_column(void) {
  testdb_create(&db);
  const tabq_table *t = tenant_table();
  tabq_broker *b = connect_broker(&db, 50);
  static wide_batch w;
  wide_fill(&w);
  int rc = tabq_publish_many(b, t, w.p, WIDE, &err);
  if (rc)
    fprintf(stderr, "publish_many: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(rows(), WIDE);
  test_kind kind = test_db_kind();
  const char *hex = kind == TEST_POSTGRES ? "encode(payload, 'hex')"
                    : kind == TEST_MYSQL  ? "LOWER(HEX(payload))"
                                          : "lower(hex(payload))";
  const char *trace = kind == TEST_POSTGRES ? "headers->>'trace'"
                      : kind == TEST_MYSQL  ? "JSON_UNQUOTE(JSON_EXTRACT(headers, '$.trace'))"
                                            : "json_extract(headers, '$.trace')";
  for (size_t i = 0; i < WIDE; i++) {
    char want[64];
    expect_nth("queue", i, abc[i % 3]);
    snprintf(want, sizeof want, "%zu", i % 7);
    expect_nth("priority", i, want);
    expect_nth("attempt", i, "1");
    size_t n = 0;
    for (size_t j = 0; j < w.payload_len[i]; j++)
      n += (size_t)snprintf(want + n, sizeof want - n, "%02x", (unsigned char)w.payload[i][j]);
    expect_nth(hex, i, want);
    expect_nth(trace, i, i % 2 ? "" : w.trace[i]);
    expect_nth("tenant", i, i % 5 ? w.tenant[i] : "");
  }
  /* A row without headers holds an empty object, not NULL. */
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs WHERE headers IS NULL"), 0);
  /* Every tenth row is delayed: due after the others. */
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs WHERE retry_after > "
                                  "(SELECT min(retry_after) FROM jobs)"),
                  (WIDE + 9) / 10);
  tabq_close(b);
  testdb_remove(&db);
}

/* A refusal in the second statement's rows, or in the remainder, writes nothing at all. */
static void a_refusal_past_the_first_statement_writes_nothing(void) {
  testdb_create(&db);
  const tabq_table *t = tenant_table();
  tabq_broker *b = connect_broker(&db, 50);
  static wide_batch w;
  wide_fill(&w);
  w.m[200].group = NULL;
  CU_ASSERT_EQUAL(tabq_publish_many(b, t, w.p, WIDE, &err), TABQ_INVALID);
  starts_with("message 200 of 301: ");
  CU_ASSERT_EQUAL(rows(), 0);
  w.m[200].group = "a";
  w.header[300].value = NULL;
  CU_ASSERT_EQUAL(tabq_publish_many(b, t, w.p, WIDE, &err), TABQ_HEADER);
  starts_with("message 300 of 301: ");
  CU_ASSERT_EQUAL(rows(), 0);
  w.header[300].value = w.trace[300];
  CU_ASSERT_EQUAL(tabq_publish_many(b, t, w.p, WIDE, &err), TABQ_OK);
  CU_ASSERT_EQUAL(rows(), WIDE);
  tabq_close(b);
  testdb_remove(&db);
}

/* The database refuses a row of the third statement, then the single row left over: each time
 * the rows written before it roll back, and the failure names the rows of its statement. */
static void a_database_failure_past_the_first_statement_rolls_back(void) {
  testdb_create(&db);
  tabq_table given_ids = *tenant_table();
  given_ids.id.generated = false;
  tabq_broker *b = connect_broker(&db, 50);
  static wide_batch w;
  wide_fill(&w);
  for (size_t i = 0; i < WIDE; i++)
    w.m[i].id = tabq_int((int64_t)i + 1);
  w.m[270].id = tabq_int(5);
  CU_ASSERT_NOT_EQUAL(tabq_publish_many(b, &given_ids, w.p, WIDE, &err), TABQ_OK);
  names_message(270, WIDE);
  CU_ASSERT_EQUAL(rows(), 0);
  w.m[270].id = tabq_int(271);
  w.m[300].id = tabq_int(7);
  CU_ASSERT_NOT_EQUAL(tabq_publish_many(b, &given_ids, w.p, WIDE, &err), TABQ_OK);
  starts_with("message 300 of 301: ");
  CU_ASSERT_EQUAL(rows(), 0);
  w.m[300].id = tabq_int(301);
  CU_ASSERT_EQUAL(tabq_publish_many(b, &given_ids, w.p, WIDE, &err), TABQ_OK);
  CU_ASSERT_EQUAL(rows(), WIDE);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT sum(id) FROM jobs"), WIDE * (WIDE + 1) / 2);
  tabq_close(b);
  testdb_remove(&db);
}

/* A table whose insert writes no column (DEFAULT VALUES, one row a statement): the dialect
 * declines its inserts of many rows, and the batch goes one insert a row. */
static void a_table_of_defaults_goes_row_by_row(void) {
  testdb_create(&db);
  test_kind kind = test_db_kind();
  testdb_exec(&db, kind == TEST_POSTGRES ? "CREATE TABLE ticks (id BIGSERIAL PRIMARY KEY)"
                   : kind == TEST_MYSQL
                       ? "CREATE TABLE ticks (id BIGINT AUTO_INCREMENT PRIMARY KEY)"
                       : "CREATE TABLE ticks (id INTEGER PRIMARY KEY, locked_until TEXT)");
  /* On SQLite a lease table (the insert leaves locked_until out): a row lock table there is
   * refused, since nothing could claim its rows. */
  static const tabq_table ticks = {
      .size = sizeof(tabq_table), .name = "ticks", .id = {.name = "id", .generated = true}};
  static const tabq_table lease_ticks = {.size = sizeof(tabq_table),
                                         .name = "ticks",
                                         .id = {.name = "id", .generated = true},
                                         .locked_until = {"locked_until"}};
  const tabq_table *t = kind == TEST_SQLITE ? &lease_ticks : &ticks;
  tabq_broker *b = connect_broker(&db, 50);
  static tabq_message m[7];
  static const tabq_message *p[7];
  for (size_t i = 0; i < 7; i++) {
    m[i] = (tabq_message){.size = sizeof(tabq_message)};
    p[i] = &m[i];
  }
  int rc = tabq_publish_many(b, t, p, 7, &err);
  if (rc)
    fprintf(stderr, "publish_many: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM ticks"), 7);
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
      {"301 messages: every column of every row, in order",
       a_batch_of_many_statements_writes_every_column},
      {"a refusal past the first statement writes nothing",
       a_refusal_past_the_first_statement_writes_nothing},
      {"a database failure past the first statement rolls back",
       a_database_failure_past_the_first_statement_rolls_back},
      {"a table of defaults goes one insert a row", a_table_of_defaults_goes_row_by_row},
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
