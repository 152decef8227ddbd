/* The core's own behaviour on a real SQLite file, whatever the dialect: a plugin's log lines
 * reach the log callback of the broker they work for, and publish refuses text a database could
 * store but never match (groups and partition keys that are not UTF-8), writing nothing. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include <tabq/tabq.h>

#include "cunit_main.h"

static tabq_error err;

typedef struct log_lines {
  pthread_mutex_t mu;
  char text[4096];
} log_lines;

static void collect(int level, const char *message, void *user) {
  (void)level;
  log_lines *l = user;
  pthread_mutex_lock(&l->mu);
  size_t len = strlen(l->text);
  snprintf(l->text + len, sizeof l->text - len, "%s\n", message);
  pthread_mutex_unlock(&l->mu);
}

static void temp_url(char *path, size_t pcap, char *url, size_t ucap, const char *tag) {
  snprintf(path, pcap, "/tmp/tabq-core-%s-%d.db", tag, (int)getpid());
  unlink(path);
  snprintf(url, ucap, "sqlite:%s", path);
}

static void plugin_logs_reach_their_brokers_callback(void) {
  log_lines a = {.mu = PTHREAD_MUTEX_INITIALIZER}, b = {.mu = PTHREAD_MUTEX_INITIALIZER};
  char pa[64], ua[96], pb[64], ub[96];
  temp_url(pa, sizeof pa, ua, sizeof ua, "a");
  temp_url(pb, sizeof pb, ub, sizeof ub, "b");
  tabq_broker_options oa = TABQ_BROKER_OPTIONS_INIT, ob = TABQ_BROKER_OPTIONS_INIT;
  oa.log = ob.log = collect;
  oa.log_user = &a;
  ob.log_user = &b;
  oa.log_level = ob.log_level = TABQ_LOG_DEBUG;
  tabq_broker *ba = NULL, *bb = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_connect(ua, &oa, &ba, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_connect(ub, &ob, &bb, &err), TABQ_OK);
  /* The SQLite driver logs each file it opens at debug level: each broker hears its own. */
  CU_ASSERT_PTR_NOT_NULL(strstr(a.text, pa));
  CU_ASSERT_PTR_NULL(strstr(a.text, pb));
  CU_ASSERT_PTR_NOT_NULL(strstr(b.text, pb));
  CU_ASSERT_PTR_NULL(strstr(b.text, pa));
  tabq_close(ba);
  tabq_close(bb);
  unlink(pa);
  unlink(pb);
}

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .partition_key = {"pkey"},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

static long long count_rows_of(const char *path, const char *table) {
  sqlite3 *db = NULL;
  long long n = -1;
  sqlite3_stmt *st = NULL;
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static long long count_rows(const char *path) {
  return count_rows_of(path, "jobs");
}

/* A broker on a fresh file (its path into `path`) with the schema given. */
static tabq_broker *broker_with(const char *tag, const char *schema, char *path, size_t cap) {
  char url[96];
  temp_url(path, cap, url, sizeof url, tag);
  tabq_broker *b = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_connect(url, NULL, &b, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_exec(b, schema, &err), TABQ_OK);
  return b;
}

#define JOBS_COLUMNS                                                                               \
  "id INTEGER PRIMARY KEY, queue TEXT NOT NULL, pkey TEXT, locked_until INTEGER, payload BLOB, "

static void groups_and_keys_must_be_utf8(void) {
  char path[64];
  tabq_broker *b =
      broker_with("utf8", "CREATE TABLE jobs (" JOBS_COLUMNS "attempt INTEGER NOT NULL DEFAULT 1)",
                  path, sizeof path);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "caf\xc3"; /* a UTF-8 sequence cut short */
  m.payload = "x";
  m.payload_len = 1;
  CU_ASSERT_EQUAL(tabq_publish(b, &jobs, &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "group is not valid UTF-8"));
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  m.group = "café";
  m.partition_key = "\xff\xfe";
  CU_ASSERT_EQUAL(tabq_publish(b, &jobs, &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "partition key is not valid UTF-8"));
  /* Nothing was written: the only row is the valid one published now. */
  m.partition_key = "k";
  CU_ASSERT_EQUAL(tabq_publish(b, &jobs, &m, &err), TABQ_OK);
  tabq_close(b);
  CU_ASSERT_EQUAL(count_rows(path), 1);
  unlink(path);
}

/* A publisher is found by its description's address and name: one struct, reused on the stack
 * for two tables, writes each row into the table it names at the call (before, the second
 * table's rows went into the first's). */
static void one_description_address_two_tables(void) {
  char path[64];
  tabq_broker *b = broker_with(
      "reused", "CREATE TABLE jobs (" JOBS_COLUMNS "attempt INTEGER NOT NULL DEFAULT 1)", path,
      sizeof path);
  CU_ASSERT_EQUAL(
      tabq_exec(b, "CREATE TABLE other (" JOBS_COLUMNS "attempt INTEGER NOT NULL DEFAULT 1)", &err),
      TABQ_OK);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = "x";
  m.payload_len = 1;
  const char *names[] = {"jobs", "other", "other", "jobs", "other"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    tabq_table t = jobs; /* one address each time round */
    t.name = names[i];
    CU_ASSERT_EQUAL(tabq_publish(b, &t, &m, &err), TABQ_OK);
  }
  tabq_close(b);
  CU_ASSERT_EQUAL(count_rows_of(path, "jobs"), 2);
  CU_ASSERT_EQUAL(count_rows_of(path, "other"), 3);
  unlink(path);
}

/* A delay needs a retry_after column the insert writes: otherwise it would be lost silently. */
static void delay_needs_a_written_retry_after(void) {
  char path[64];
  tabq_broker *b = broker_with("delay",
                               "CREATE TABLE jobs (" JOBS_COLUMNS
                               "attempt INTEGER NOT NULL DEFAULT 1, retry_after INTEGER DEFAULT 0)",
                               path, sizeof path);
  tabq_table generated = jobs;
  generated.retry_after = (tabq_col){.name = "retry_after", .generated = true};
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = "x";
  m.payload_len = 1;
  m.delay_ms = 5000;
  CU_ASSERT_EQUAL(tabq_publish(b, &generated, &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "retry_after is generated"));
  CU_ASSERT_EQUAL(tabq_publish(b, &jobs, &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no retry_after column"));
  m.delay_ms = 0; /* without a delay both write */
  CU_ASSERT_EQUAL(tabq_publish(b, &generated, &m, &err), TABQ_OK);
  tabq_close(b);
  CU_ASSERT_EQUAL(count_rows(path), 1);
  unlink(path);
}

static tabq_outcome ack(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

/* Drains 400 rows with four workers on a fresh file, `acks` as given, and returns the acks that
 * settled in one commit with another's. */
static uint64_t acks_together(tabq_acks acks) {
  char path[64];
  tabq_broker *b =
      broker_with("acks", "CREATE TABLE jobs (" JOBS_COLUMNS "attempt INTEGER NOT NULL DEFAULT 1)",
                  path, sizeof path);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = "x";
  m.payload_len = 1;
  for (int i = 0; i < 400; i++)
    CU_ASSERT_EQUAL_FATAL(tabq_publish(b, &jobs, &m, &err), TABQ_OK);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = ack;
  o.workers = 4;
  o.acks = acks;
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &jobs, &o, &s, &err), TABQ_OK);
  tabq_stats st = {0};
  for (int i = 0; i < 3000 && st.acked < 400; i++) {
    usleep(10000);
    tabq_subscription_stats(s, &st, sizeof st);
  }
  tabq_close(b);
  CU_ASSERT_EQUAL(st.acked, 400);
  CU_ASSERT_EQUAL(st.lease_lost + st.failed, 0);
  CU_ASSERT_EQUAL(count_rows(path), 0);
  unlink(path);
  return st.coalesced;
}

/* SQLite has one writer: by default the acks of several workers gather into shared commits;
 * TABQ_ACKS_ALONE keeps each in its own. */
static void acks_gather_by_default_on_one_writer(void) {
  uint64_t together = acks_together(TABQ_ACKS_DEFAULT);
  if (!together)
    fprintf(stderr, "\nno ack of 400 went with another\n");
  CU_ASSERT(together > 0);
  CU_ASSERT_EQUAL(acks_together(TABQ_ACKS_ALONE), 0);
}

/* A generated attempt must start at 1: the catalog's default is read at open. */
static void generated_attempt_must_default_to_one(void) {
  char path[64];
  tabq_broker *b =
      broker_with("attempt",
                  "CREATE TABLE jobs (" JOBS_COLUMNS "attempt INTEGER NOT NULL DEFAULT 0);"
                  "CREATE TABLE jobs_one (" JOBS_COLUMNS "ATTEMPT INTEGER NOT NULL "
                  "DEFAULT ('1'));"
                  "CREATE TABLE jobs_none (" JOBS_COLUMNS "attempt INTEGER)",
                  path, sizeof path);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = ack;
  CU_ASSERT_EQUAL(tabq_subscribe(b, &jobs, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "its default is 0, not 1"));
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  tabq_table none = jobs;
  none.name = "jobs_none";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &none, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "its default is none"));
  tabq_table one = jobs; /* DEFAULT ('1'), the column named in another case */
  one.name = "jobs_one";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &one, &o, NULL, &err), TABQ_OK);
  tabq_table counted = jobs; /* an attempt tabq writes itself needs no default */
  counted.attempt.generated = false;
  CU_ASSERT_EQUAL(tabq_subscribe(b, &counted, &o, NULL, &err), TABQ_OK);
  tabq_close(b);
  unlink(path);
}

typedef struct watchdog {
  tabq_broker *b;
  atomic_bool fired, cancel;
} watchdog;

/* Stops tabq_run after 20 s if the signal never reached it (a liveness bound). */
static void *watch(void *arg) {
  watchdog *w = arg;
  for (int i = 0; i < 2000 && !atomic_load(&w->cancel); i++)
    usleep(10000);
  if (!atomic_load(&w->cancel)) {
    atomic_store(&w->fired, true);
    tabq_stop(w->b);
  }
  return NULL;
}

/* A SIGTERM that comes before tabq_run, with SIGINT and SIGTERM blocked as tabq.h advises, stays
 * pending instead of ending the process, and tabq_run takes it at once. */
static void sigterm_before_run_waits_for_it(void) {
  sigset_t stops, old;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, &old);
  char path[64];
  tabq_broker *b = broker_with("signal", "CREATE TABLE jobs (" JOBS_COLUMNS "attempt INTEGER)",
                               path, sizeof path);
  kill(getpid(), SIGTERM); /* pending: every thread of the process blocks it */
  watchdog w = {.b = b};
  pthread_t t;
  pthread_create(&t, NULL, watch, &w);
  CU_ASSERT_EQUAL(tabq_run(b), TABQ_OK);
  atomic_store(&w.cancel, true);
  pthread_join(t, NULL);
  CU_ASSERT_FALSE(atomic_load(&w.fired));
  tabq_close(b);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  unlink(path);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"plugin log lines reach their broker's callback", plugin_logs_reach_their_brokers_callback},
      {"groups and partition keys must be UTF-8", groups_and_keys_must_be_utf8},
      {"a delay needs a retry_after the insert writes", delay_needs_a_written_retry_after},
      {"acks of several workers gather by default on one writer",
       acks_gather_by_default_on_one_writer},
      {"one description address, two tables: each row in its own",
       one_description_address_two_tables},
      {"a generated attempt must default to 1", generated_attempt_must_default_to_one},
      {"a SIGTERM before tabq_run waits for it", sigterm_before_run_waits_for_it},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("core on SQLite", NULL, NULL, tests);
  return 0;
}
