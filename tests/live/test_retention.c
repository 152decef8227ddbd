/* Retention (tabq_retain) on a real database: a table that keeps growing stays under a bound
 * while its finished rows are pruned (the rate printed each second, never asserted); old
 * finished rows and dead letters (group and table) go, young ones and unfinished rows stay;
 * the rows go in batches; on PostgreSQL and MariaDB a session holding the election key keeps
 * every broker's pruner off the table; shutdown stops the pruner; and every misuse is refused
 * naming the table and the rule, with nothing registered; a round that gets no connection
 * leaves the pool alone. Rows are counted with the database's
 * client library, never through tabq. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/metrics.h>
#include <tabq/retention.h>

#include "cunit_main.h"
#include "support.h"

#define WAIT_MS 20000

static testdb db;
static tabq_error err;

/* The jobs table with processed_at: acks mark rows finished rather than delete them. */
static const tabq_table *marked(void) {
  static tabq_table t;
  t = *jobs_table();
  t.processed_at.name = "processed_at";
  return &t;
}

static long long count(const char *where) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs%s%s", where ? " WHERE " : "",
           where ? where : "");
  return testdb_int(&db, sql);
}

/* An SQL expression of the time `seconds` ago, as the database's time columns hold it (UTC). */
static void ago(int seconds, char *out, size_t cap) {
  if (db.kind == TEST_SQLITE)
    snprintf(out, cap, "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', '-%d seconds')", seconds);
  else if (db.kind == TEST_POSTGRES)
    snprintf(out, cap, "now() - interval '%d seconds'", seconds);
  else
    snprintf(out, cap, "UTC_TIMESTAMP(6) - INTERVAL %d SECOND", seconds);
}

/* n rows into `table` of `queue`, retry_after `due_s` ago, processed_at `done_s` ago (or NULL
 * when done_s < 0). Ids from `first` on (jobs_dead has no generated id). */
static void insert(const char *table, const char *queue, int n, int first, int due_s, int done_s) {
  char due[96], done[96], sql[512];
  ago(due_s, due, sizeof due);
  if (done_s >= 0)
    ago(done_s, done, sizeof done);
  else
    snprintf(done, sizeof done, "NULL");
  for (int i = 0; i < n; i++) {
    snprintf(sql, sizeof sql,
             "INSERT INTO %s (id, queue, retry_after, processed_at, payload) VALUES (%d, '%s', "
             "%s, %s, %s)",
             table, first + i, queue, due, done,
             db.kind == TEST_POSTGRES ? "'\\x6a6f62'::bytea" : "'job'");
    testdb_exec(&db, sql);
  }
}

static tabq_retention_stats stats(tabq_broker *b) {
  tabq_retention_stats st = {0};
  CU_ASSERT_EQUAL(tabq_retention_stats_read(b, "jobs", &st, sizeof st, &err), TABQ_OK);
  return st;
}

/* Waits until the broker ran `rounds` rounds more than `since` on jobs. */
static bool wait_rounds(tabq_broker *b, uint64_t since, uint64_t rounds) {
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    if (stats(b).rounds >= since + rounds)
      return true;
    sleep_ms(10);
  }
  return false;
}

static int retain(tabq_broker *b, const tabq_table *t, const tabq_retention_options *o) {
  int rc = tabq_retain(b, t, o, &err);
  if (rc)
    fprintf(stderr, "retain: %s\n", err.message);
  return rc;
}

/* ---- A table that keeps growing ------------------------------------------------------------ */

#define TICK_MS 50
#define ROWS_A_TICK 20 /* 400 rows a second */
#define SECONDS 5
#define BOUND 800 /* rows in the table at any time; without pruning it reaches 2,000 */

typedef struct publisher {
  tabq_broker *b;
  atomic_int published;
  atomic_bool failed;
} publisher;

static void *publish_loop(void *arg) {
  publisher *p = arg;
  tabq_message m[ROWS_A_TICK];
  const tabq_message *ms[ROWS_A_TICK];
  for (int i = 0; i < ROWS_A_TICK; i++) {
    m[i] = (tabq_message){
        .size = sizeof(tabq_message), .group = "q", .payload = "job", .payload_len = 3};
    ms[i] = &m[i];
  }
  tabq_error e;
  for (int tick = 0; tick < SECONDS * 1000 / TICK_MS; tick++) {
    if (tabq_publish_many(p->b, marked(), ms, ROWS_A_TICK, &e)) {
      fprintf(stderr, "publish: %s\n", e.message);
      atomic_store(&p->failed, true);
      break;
    }
    atomic_fetch_add(&p->published, ROWS_A_TICK);
    sleep_ms(TICK_MS);
  }
  return NULL;
}

static tabq_outcome ack(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_ack();
}

static void a_growing_table_stays_bounded(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  tabq_subscription_options so = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  so.queue = "q";
  so.handler = ack;
  so.workers = 2;
  tabq_subscription *s = NULL;
  CU_ASSERT_FATAL(tabq_subscribe(b, marked(), &so, &s, &err) == TABQ_OK);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  o.processed_age_ms = 300;
  o.interval_ms = 100;
  o.batch = 200;
  CU_ASSERT_FATAL(retain(b, marked(), &o) == TABQ_OK);
  publisher p = {.b = b};
  pthread_t th;
  CU_ASSERT_FATAL(pthread_create(&th, NULL, publish_loop, &p) == 0);
  long long most = 0;
  uint64_t last_deleted = 0;
  printf("\n  %s: second, rows published, rows in the table, finished rows pruned that second\n",
         test_db_name());
  for (int tick = 1; tick <= SECONDS * 4; tick++) {
    sleep_ms(250);
    long long rows = count(NULL);
    most = rows > most ? rows : most;
    if (tick % 4 == 0) {
      uint64_t deleted = stats(b).processed_deleted;
      printf("  %s: %d s, %d published, %lld rows, %llu pruned/s\n", test_db_name(), tick / 4,
             atomic_load(&p.published), rows, (unsigned long long)(deleted - last_deleted));
      last_deleted = deleted;
    }
  }
  pthread_join(th, NULL);
  CU_ASSERT_FALSE(atomic_load(&p.failed));
  int published = atomic_load(&p.published);
  printf("  %s: %d rows published, at most %lld in the table (bound %d)\n", test_db_name(),
         published, most, BOUND);
  CU_ASSERT(published > 2 * BOUND); /* the bound means something: the inflow alone passes it */
  CU_ASSERT(most < BOUND);
  /* The inflow ends: every row is handled and then pruned. */
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, WAIT_MS));
  tabq_retention_stats st = stats(b);
  CU_ASSERT_EQUAL(st.processed_deleted, (uint64_t)published);
  CU_ASSERT_EQUAL(st.failures, 0);
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- What goes and what stays -------------------------------------------------------------- */

static void old_rows_go_young_and_unfinished_stay(void) {
  testdb_create(&db);
  insert("jobs", "q", 5, 1, 7200, 3600);      /* finished an hour ago: go */
  insert("jobs", "q", 4, 101, 7200, 1);       /* finished a second ago: stay */
  insert("jobs", "q", 3, 201, 7200, -1);      /* unfinished, due long ago: stay */
  insert("jobs", "q.dead", 6, 301, 3600, -1); /* dead letters an hour old: go */
  insert("jobs", "q.dead", 2, 401, 1, -1);    /* a second old: stay */
  insert("jobs", "other", 2, 501, 3600, -1);  /* another group's, as old: stay */
  insert("jobs_dead", "q", 7, 1, 3600, -1);   /* dead letter table, an hour old: go */
  insert("jobs_dead", "q", 1, 101, 1, -1);    /* a second old: stay */
  tabq_broker *b = connect_broker(&db, 1000);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  o.processed_age_ms = 60000;
  o.dead_letter_age_ms = 60000;
  o.dead_letter_groups = (const char *[]){"q.dead"};
  o.ndead_letter_groups = 1;
  o.dead_letter_tables = (const char *[]){"jobs_dead"};
  o.ndead_letter_tables = 1;
  o.interval_ms = 50;
  o.batch = 2; /* several batches a rule */
  CU_ASSERT_FATAL(retain(b, marked(), &o) == TABQ_OK);
  CU_ASSERT(wait_rounds(b, 0, 2));
  CU_ASSERT_EQUAL(count("processed_at IS NOT NULL"), 4);
  CU_ASSERT_EQUAL(count("processed_at IS NULL AND queue = 'q'"), 3);
  CU_ASSERT_EQUAL(count("queue = 'q.dead'"), 2);
  CU_ASSERT_EQUAL(count("queue = 'other'"), 2);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs_dead"), 1);
  tabq_retention_stats st = stats(b);
  CU_ASSERT_EQUAL(st.processed_deleted, 5);
  CU_ASSERT_EQUAL(st.dead_deleted, 13);
  /* 5 rows 2 a batch: 3 batches; 6: 4 (the last finds none); 7: 4; and each later round one
   * empty batch a rule. */
  CU_ASSERT(st.batches >= 11);
  CU_ASSERT_EQUAL(st.failures, 0);
  /* The metrics carry the counts. */
  char *text = NULL;
  CU_ASSERT_FATAL(tabq_metrics_write(b, &text, &err) == TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "tabq_retention_deleted_total{table=\"jobs\",kind=\"processed\"} 5\n"));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "tabq_retention_deleted_total{table=\"jobs\",kind=\"dead_letter\"} 13\n"));
  free(text);
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- Shutdown ------------------------------------------------------------------------------ */

static void shutdown_stops_the_pruner(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 1000);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  o.processed_age_ms = 1000;
  o.interval_ms = 20;
  CU_ASSERT_FATAL(retain(b, marked(), &o) == TABQ_OK);
  CU_ASSERT(wait_rounds(b, 0, 1));
  tabq_shutdown(b);
  uint64_t rounds = stats(b).rounds;
  insert("jobs", "q", 3, 1, 7200, 3600);
  sleep_ms(300); /* fifteen intervals */
  CU_ASSERT_EQUAL(count(NULL), 3);
  CU_ASSERT_EQUAL(stats(b).rounds, rounds);
  /* And a table retained after shutdown is refused. */
  CU_ASSERT_EQUAL(tabq_retain(b, marked(), &o, &err), TABQ_CLOSED);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "jobs"));
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- A round without a connection ----------------------------------------------------------- */

/* A round that gets no connection (the pool's only one held by a transaction of the service's
 * own, its wait short) counts a failure and leaves the pool alone: the transaction still holds
 * its connection and commits. Before the fix such a round released its previous round's
 * connection, the one the transaction held by then (where it elects, after unlocking the key
 * on it): the pool handed one connection to two users, and with the server gone a round
 * crashed on a closed one. The soak found it (docs/reliability.md). */
static void a_round_without_a_connection_leaves_the_pool_alone(void) {
  testdb_create(&db);
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.pool_size = 1;
  bo.acquire_timeout_ms = 50;
  tabq_broker *b = NULL;
  CU_ASSERT_FATAL(tabq_connect(db.url, &bo, &b, &err) == TABQ_OK);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  o.processed_age_ms = 1000;
  o.interval_ms = 10;
  CU_ASSERT_FATAL(retain(b, marked(), &o) == TABQ_OK);
  CU_ASSERT(wait_rounds(b, 0, 1));
  tabq_tx *tx = NULL;
  int rc = TABQ_POOL_TIMEOUT;
  for (int i = 0; i < 200 && rc == TABQ_POOL_TIMEOUT; i++)
    rc = tabq_begin(b, &tx, &err); /* a round may hold the connection a moment */
  CU_ASSERT_FATAL(rc == TABQ_OK);
  uint64_t failures = stats(b).failures;
  for (int waited = 0; stats(b).failures < failures + 3 && waited < WAIT_MS; waited += 10)
    sleep_ms(10);
  CU_ASSERT(stats(b).failures >= failures + 3);
  tabq_pool_stats ps;
  tabq_broker_pool_stats(b, &ps, sizeof ps);
  CU_ASSERT_EQUAL(ps.in_use, 1); /* the transaction's, still */
  CU_ASSERT_EQUAL(tabq_tx_exec(tx, "DELETE FROM jobs", NULL, 0, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_commit(tx, &err), TABQ_OK);
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- Refusals ------------------------------------------------------------------------------ */

/* tabq_retain refuses with `code`, the message naming the table and holding `rule`, and the
 * broker retains nothing afterwards. */
static void refused(tabq_broker *b, const tabq_table *t, const tabq_retention_options *o, int code,
                    const char *rule) {
  int rc = tabq_retain(b, t, o, &err);
  CU_ASSERT_EQUAL(rc, code);
  if (rc != code || !strstr(err.message, rule) || (t && !strstr(err.message, t->name)))
    fprintf(stderr, "refusal (%s, wanted %s with \"%s\"): %s\n", tabq_code_name(rc),
            tabq_code_name(code), rule, err.message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rule));
  if (t)
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, t->name));
  tabq_retention_stats st;
  CU_ASSERT_EQUAL(tabq_retention_stats_read(b, t ? t->name : "jobs", &st, sizeof st, &err),
                  TABQ_INVALID);
}

static void misuse_is_refused(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 1000);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  refused(b, marked(), &o, TABQ_INVALID, "neither processed_age_ms nor dead_letter_age_ms");
  o.processed_age_ms = -5;
  refused(b, marked(), &o, TABQ_INVALID, "processed_age_ms is -5");
  o.processed_age_ms = 1000;
  refused(b, jobs_table(), &o, TABQ_INVALID, "processed_age_ms needs a processed_at column");
  o.dead_letter_age_ms = -1;
  refused(b, marked(), &o, TABQ_INVALID, "dead_letter_age_ms is -1");
  o.dead_letter_age_ms = 1000;
  refused(b, marked(), &o, TABQ_INVALID, "dead_letter_age_ms needs a dead letter destination");
  o.dead_letter_groups = (const char *[]){"q.dead", ""};
  o.ndead_letter_groups = 2;
  refused(b, marked(), &o, TABQ_INVALID, "dead_letter_groups[1] is empty");
  o.ndead_letter_groups = 1;
  tabq_table no_retry = *marked();
  no_retry.retry_after.name = NULL;
  refused(b, &no_retry, &o, TABQ_INVALID, "needs a retry_after column");
  tabq_table no_group = *marked();
  no_group.group.name = NULL;
  refused(b, &no_group, &o, TABQ_INVALID, "dead_letter_groups needs a group column");
  o.dead_letter_age_ms = 0;
  refused(b, marked(), &o, TABQ_INVALID, "without dead_letter_age_ms");
  o.ndead_letter_groups = 0;
  o.batch = 100001;
  refused(b, marked(), &o, TABQ_INVALID, "batch is 100001");
  o.batch = 0;
  o.interval_ms = 5;
  refused(b, marked(), &o, TABQ_INVALID, "interval_ms is 5");
  o.interval_ms = 0;
  tabq_retention_options zero = {0};
  refused(b, marked(), &zero, TABQ_INVALID, "size is 0");
  /* Columns the database lacks: refused on the database, naming the statement's table. */
  tabq_table missing = *marked();
  missing.processed_at.name = "finished_at";
  refused(b, &missing, &o, TABQ_SCHEMA, "does not prepare");
  o.dead_letter_age_ms = 1000;
  o.dead_letter_tables = (const char *[]){"jobs_gone"};
  o.ndead_letter_tables = 1;
  refused(b, marked(), &o, TABQ_SCHEMA, "jobs_gone");
  /* Retained once, then refused a second time. */
  o.ndead_letter_tables = 0;
  o.dead_letter_age_ms = 0;
  CU_ASSERT_EQUAL_FATAL(retain(b, marked(), &o), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_retain(b, marked(), &o, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "retains the table already"));
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- The election (PostgreSQL, MariaDB) ---------------------------------------------------- */

static void a_held_key_keeps_every_pruner_off(void) {
  testdb_create(&db);
  tabq_broker *b1 = connect_broker(&db, 1000), *b2 = connect_broker(&db, 1000);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  o.processed_age_ms = 1000;
  o.interval_ms = 20;
  CU_ASSERT_FATAL(retain(b1, marked(), &o) == TABQ_OK);
  CU_ASSERT_FATAL(retain(b2, marked(), &o) == TABQ_OK);
  char key[80], key2[80], sql[256];
  CU_ASSERT_FATAL(tabq_retention_key(b1, "jobs", key, sizeof key, &err) == TABQ_OK);
  CU_ASSERT_FATAL(tabq_retention_key(b2, "jobs", key2, sizeof key2, &err) == TABQ_OK);
  CU_ASSERT_STRING_EQUAL(key, key2);
  printf("\n  %s: election key %s\n", test_db_name(), key);
  /* The test's own session holds the key, as another process's pruner would. */
  if (db.kind == TEST_POSTGRES)
    snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(hashtextextended('%s', 0))", key);
  else
    snprintf(sql, sizeof sql, "SELECT GET_LOCK('%s', 5)", key);
  testdb_exec(&db, sql);
  uint64_t r1 = stats(b1).rounds, r2 = stats(b2).rounds;
  uint64_t s1 = stats(b1).rounds_skipped, s2 = stats(b2).rounds_skipped;
  insert("jobs", "q", 30, 1, 7200, 3600);
  sleep_ms(500); /* 25 intervals */
  CU_ASSERT_EQUAL(count(NULL), 30);
  CU_ASSERT_EQUAL(stats(b1).rounds, r1);
  CU_ASSERT_EQUAL(stats(b2).rounds, r2);
  CU_ASSERT(stats(b1).rounds_skipped > s1 + 5);
  CU_ASSERT(stats(b2).rounds_skipped > s2 + 5);
  printf("  %s: key held by the test: %llu and %llu rounds skipped, none ran\n", test_db_name(),
         (unsigned long long)(stats(b1).rounds_skipped - s1),
         (unsigned long long)(stats(b2).rounds_skipped - s2));
  /* Released: one of them prunes, and the rows go once. */
  if (db.kind == TEST_POSTGRES)
    snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(hashtextextended('%s', 0))", key);
  else
    snprintf(sql, sizeof sql, "SELECT RELEASE_LOCK('%s')", key);
  testdb_exec(&db, sql);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, WAIT_MS));
  CU_ASSERT_EQUAL(stats(b1).processed_deleted + stats(b2).processed_deleted, 30);
  printf("  %s: released: broker 1 ran %llu rounds and deleted %llu, broker 2 ran %llu and "
         "deleted %llu\n",
         test_db_name(), (unsigned long long)(stats(b1).rounds - r1),
         (unsigned long long)stats(b1).processed_deleted,
         (unsigned long long)(stats(b2).rounds - r2),
         (unsigned long long)stats(b2).processed_deleted);
  tabq_close(b1);
  tabq_close(b2);
  testdb_remove(&db);
}

/* Two brokers with the key free: each releases it after its round, so neither keeps the table
 * to itself, and both run rounds without a failure. */
static void rounds_take_turns(void) {
  testdb_create(&db);
  tabq_broker *b1 = connect_broker(&db, 1000), *b2 = connect_broker(&db, 1000);
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  o.processed_age_ms = 1000;
  o.interval_ms = 10;
  CU_ASSERT_FATAL(retain(b1, marked(), &o) == TABQ_OK);
  CU_ASSERT_FATAL(retain(b2, marked(), &o) == TABQ_OK);
  sleep_ms(1000);
  tabq_retention_stats a = stats(b1), c = stats(b2);
  printf("\n  %s: in a second, broker 1 ran %llu rounds and skipped %llu, broker 2 ran %llu and "
         "skipped %llu\n",
         test_db_name(), (unsigned long long)a.rounds, (unsigned long long)a.rounds_skipped,
         (unsigned long long)c.rounds, (unsigned long long)c.rounds_skipped);
  CU_ASSERT(a.rounds > 0 && c.rounds > 0);
  CU_ASSERT_EQUAL(a.failures + c.failures, 0);
  tabq_close(b1);
  tabq_close(b2);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a table that keeps growing stays under its bound", a_growing_table_stays_bounded},
      {"old rows go, young and unfinished ones stay", old_rows_go_young_and_unfinished_stay},
      {"shutdown stops the pruner", shutdown_stops_the_pruner},
      {"misuse is refused, naming the table and the rule", misuse_is_refused},
      {"a round without a connection leaves the pool alone",
       a_round_without_a_connection_leaves_the_pool_alone},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo election[] = {
      {"a held election key keeps every pruner off the table", a_held_key_keeps_every_pruner_off},
      {"two brokers both prune in turn", rounds_take_turns},
      CU_TEST_INFO_NULL,
  };
  char suite[64];
  snprintf(suite, sizeof suite, "retention on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  if (test_db_kind() != TEST_SQLITE)
    ADD_SUITE("retention: the election", NULL, NULL, election);
  return 0;
}
