/* What only one database does, beside the conformance kit (tabq-conformance), which checks
 * every dialect alike: the server's own view of advisory locks after a crash and a shutdown,
 * MySQL's hashed lock names, and PostgreSQL's listener, channel names, ended sessions and
 * repeatable read. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <poll.h>
#include <pthread.h>
#include <tabq/tabq.h>
#include <unistd.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

/* PostgreSQL, row lock and advisory: the server ends a SIGKILLed client's session, and no lock
 * of it remains (the kit checks that the row returns). */
static void killed_child_leaves_no_lock(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  publish_n(b, "q", 1);
  child c;
  child_start(&c, "crash", &db);
  char line[64];
  CU_ASSERT_FATAL(child_line(&c, line, sizeof line, 10000));
  CU_ASSERT(!strncmp(line, "claimed", 7));
  kill(c.pid, SIGKILL);
  int status = child_wait(&c);
  CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  CU_ASSERT(wait_count(&db,
                       "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                       "WHERE a.datname = current_database() AND l.locktype = 'advisory'",
                       0, 10000));
  tabq_close(b);
  testdb_remove(&db);
}

static tabq_broker *listening_broker(void) {
  tabq_broker_options o = {.size = sizeof(tabq_broker_options),
                           .poll_interval_ms = 60000,
                           .pool_size = 6,
                           .listen_notify = true};
  tabq_broker *b = NULL;
  int rc = tabq_connect(db.url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return b;
}

static void wait_claims(tabq_subscription *s, uint64_t at_least) {
  tabq_stats st = {0};
  for (int i = 0; i < 1000 && st.claims < at_least; i++) {
    tabq_subscription_stats(s, &st, sizeof st);
    sleep_ms(10);
  }
  CU_ASSERT(st.claims >= at_least);
}

static void lost_listener_reconnects_and_wakes(void) {
  testdb_create(&db);
  tabq_broker *b = listening_broker();
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  wait_claims(s, 1);
  tabq_stats before;
  tabq_subscription_stats(s, &before, sizeof before);
  /* A row written without a notification, then the listener's session killed: the reconnect
   * wakes the subscription, which finds the row. */
  testdb_exec(&db, "INSERT INTO jobs (queue, payload) VALUES ('q', 'silent')");
  CU_ASSERT(testdb_int(&db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND query LIKE 'LISTEN%'") >= 1);
  CU_ASSERT(recorder_wait(&r, 1, 15000));
  tabq_close(b);
  recorder_free(&r);
  testdb_remove(&db);
}

typedef struct held {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool claimed, go;
  int settle_rc;
} held;

/* Marks the handler in, then waits until the test lets it go. */
static void wait_for_go(held *h) {
  pthread_mutex_lock(&h->mu);
  h->claimed = true;
  pthread_cond_broadcast(&h->cv);
  while (!h->go)
    pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
}

static tabq_outcome hold_then_settle(tabq_delivery *d, void *user) {
  held *h = user;
  wait_for_go(h);
  tabq_error e;
  h->settle_rc = tabq_delivery_settle(d, tabq_ack(), &e);
  return tabq_no_outcome();
}

/* As hold_then_settle, noting first whether the delivery believes its hold still stands. */
static void hold_then_settle_check(tabq_delivery *d, held *h, atomic_bool *held_after) {
  wait_for_go(h);
  atomic_store(held_after, tabq_delivery_held(d));
  tabq_error e;
  h->settle_rc = tabq_delivery_settle(d, tabq_ack(), &e);
}

static void *shut_down(void *broker) {
  tabq_shutdown(broker);
  return NULL;
}

static void shutdown_releases_advisory_locks(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  publish_n(b, "q", 1);
  held h = {.settle_rc = -1};
  pthread_mutex_init(&h.mu, NULL);
  pthread_cond_init(&h.cv, NULL);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = hold_then_settle,
                                 .user = &h};
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  pthread_mutex_lock(&h.mu);
  while (!h.claimed)
    pthread_cond_wait(&h.cv, &h.mu);
  pthread_mutex_unlock(&h.mu);
  /* the key's lock, as the server sees it (the row is id 1 of a fresh table) */
  const char *locks = db.kind == TEST_POSTGRES
                          ? "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                            "WHERE a.datname = current_database() AND l.locktype = 'advisory'"
                          : "SELECT IS_USED_LOCK(CONCAT(LOWER(DATABASE()), '.job-1')) IS NOT NULL";
  CU_ASSERT_EQUAL(testdb_int(&db, locks), 1);
  pthread_t t;
  pthread_create(&t, NULL, shut_down, b);
  /* Shutdown releases the lock while the handler still runs, and says so in the stats. */
  tabq_stats st = {0};
  for (int i = 0; i < 500 && st.shutdown_released + st.shutdown_closed == 0; i++) {
    tabq_subscription_stats(s, &st, sizeof st);
    sleep_ms(10);
  }
  CU_ASSERT_EQUAL(st.shutdown_released, 1);
  CU_ASSERT_EQUAL(st.shutdown_closed, 0);
  CU_ASSERT(wait_count(&db, locks, 0, 5000));
  pthread_mutex_lock(&h.mu);
  h.go = true;
  pthread_cond_broadcast(&h.cv);
  pthread_mutex_unlock(&h.mu);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(h.settle_rc, TABQ_CLOSED);
  /* the row is back, its attempt spent */
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT attempt FROM jobs"), 2);
  tabq_close(b);
  testdb_remove(&db);
}

/* The server ends the session that holds a row lock or advisory delivery while its handler
 * still runs: the row is free on the server again, and the subscription's other worker claims it
 * a moment later. It must not hand it out a second time; the running handler learns from
 * tabq_delivery_held that its hold is gone, and its settlement fails. Once it has left work, the
 * row is claimed again and handled. */
typedef struct ended_hold {
  held h;
  atomic_int calls;
  atomic_bool held_after;
} ended_hold;

static tabq_outcome hold_first(tabq_delivery *d, void *user) {
  ended_hold *e = user;
  if (atomic_fetch_add(&e->calls, 1) > 0)
    return tabq_ack();
  hold_then_settle_check(d, &e->h, &e->held_after);
  return tabq_no_outcome();
}

static void ended_session_is_not_handed_out_twice(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  publish_n(b, "q", 1);
  ended_hold e = {.h = {.settle_rc = -1}};
  pthread_mutex_init(&e.h.mu, NULL);
  pthread_cond_init(&e.h.cv, NULL);
  atomic_store(&e.held_after, true);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = hold_first,
                                 .user = &e,
                                 .workers = 2};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  pthread_mutex_lock(&e.h.mu);
  while (!e.h.claimed)
    pthread_cond_wait(&e.h.cv, &e.h.mu);
  pthread_mutex_unlock(&e.h.mu);
  const char *holder =
      test_form() == TABQ_FORM_ROWLOCK
          /* The claim that wrote the row's attempt (a transaction id), not another worker's claim
           * caught between two statements. */
          ? "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
            "current_database() AND application_name = 'tabq' AND state = 'idle in transaction' "
            "AND backend_xid IS NOT NULL"
          : "SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l JOIN pg_stat_activity a "
            "USING (pid) WHERE a.datname = current_database() AND l.locktype = 'advisory'";
  CU_ASSERT_EQUAL(testdb_int(&db, holder), 1);
  /* Many claims' worth of time: the free worker's claims find the row and pass it over. */
  sleep_ms(800);
  CU_ASSERT_EQUAL(atomic_load(&e.calls), 1);
  pthread_mutex_lock(&e.h.mu);
  e.h.go = true;
  pthread_cond_broadcast(&e.h.cv);
  pthread_mutex_unlock(&e.h.mu);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 10000));
  CU_ASSERT_EQUAL(atomic_load(&e.calls), 2);
  CU_ASSERT_FALSE(atomic_load(&e.held_after));
  CU_ASSERT_NOT_EQUAL(e.h.settle_rc, TABQ_OK);
  tabq_close(b);
  testdb_remove(&db);
}

static void ended_connections_are_replaced(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = recorder_handler,
                                 .user = &r};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  publish_n(b, "q", 1);
  CU_ASSERT(recorder_wait(&r, 1, 10000));
  /* The server ends every session of the broker's pool while they sit idle... */
  CU_ASSERT(testdb_int(&db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND application_name = 'tabq' "
                            "AND pid <> pg_backend_pid()") >= 1);
  sleep_ms(1200);
  /* ... and the pool finds out before using them: publishing and claiming go on. */
  tabq_message m = {
      .size = sizeof(tabq_message), .group = "q", .payload = "again", .payload_len = 5};
  CU_ASSERT_EQUAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 2, 10000));
  tabq_close(b);
  recorder_free(&r);
  testdb_remove(&db);
}

static void long_channel_stops_at_startup(void) {
  testdb_create(&db);
  char sql[256], name[160];
  const char *long_table = "a_table_name_long_enough_that_with_its_schema_it_passes_63";
  snprintf(sql, sizeof sql, "CREATE TABLE %s (LIKE jobs INCLUDING ALL)", long_table);
  testdb_exec(&db, sql);
  snprintf(name, sizeof name, "%s.%s", db.schema, long_table);
  tabq_table t = *jobs_table();
  t.name = name;
  tabq_broker *b = listening_broker();
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .handler = recorder_handler};
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_STRING_EQUAL(err.table, name);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "63"));
  tabq_close(b);
  testdb_remove(&db);
}

static void long_lock_names_are_hashed(void) {
  testdb_create(&db);
  tabq_table t = *jobs_table();
  t.advisory_lock =
      "a-key-template-long-enough-to-pass-sixty-four-characters-with-its-database-{id}";
  tabq_broker *b = connect_broker(&db, 20);
  tabq_message m = {.size = sizeof(tabq_message), .group = "q", .payload = "x", .payload_len = 1};
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, &t, &m, &err), TABQ_OK);
  gate g;
  gate_init(&g);
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .handler = wait_at_gate, .user = &g};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  gate_wait_in(&g);
  /* While the handler runs its key's lock is held, under the SHA-256 of the long name (the
   * check runs here: the checking connection is this thread's). */
  CU_ASSERT_EQUAL(testdb_int(&db,
                             "SELECT IS_USED_LOCK(SHA2(CONCAT(LOWER(DATABASE()), '.', "
                             "'a-key-template-long-enough-to-pass-sixty-four-characters-with-its-"
                             "database-', 1), 256)) IS NOT NULL"),
                  1);
  gate_open(&g);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 10000));
  tabq_close(b);
  testdb_remove(&db);
}

static atomic_int serialization_errors;

static void count_serialization(int level, const char *message, void *user) {
  (void)user;
  if (strstr(message, "serialize"))
    atomic_fetch_add(&serialization_errors, 1);
  else if (level <= TABQ_LOG_ERROR)
    fprintf(stderr, "tabq: %s\n", message);
}

#define RR_ROWS 2000

static void repeatable_read_fails_claims_not_rows(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", RR_ROWS);
  tabq_table t = *jobs_table();
  t.isolation = TABQ_ISOLATION_REPEATABLE_READ;
  tabq_broker_options bo = {.size = sizeof(tabq_broker_options),
                            .poll_interval_ms = 20,
                            .pool_size = 8,
                            .log = count_serialization};
  tabq_broker *b;
  CU_ASSERT_EQUAL_FATAL(tabq_connect(db.url, &bo, &b, &err), TABQ_OK);
  once_reset(RR_ROWS);
  atomic_store(&serialization_errors, 0);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = once_handler,
                                 .workers = 4};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 120000));
  tabq_close(b);
  once_check();
  printf("(%d serialization failures surfaced as errors) ", atomic_load(&serialization_errors));
  testdb_remove(&db);
}

/* Transactional mode in the lease and advisory forms: the handler's transaction opens at the
 * table's level. At serializable, a business row another session changed after the handler's
 * transaction read it fails the handler's update (40001): an error the handler sees, and its
 * ack then fails too, the row kept. At the database's default level (read committed) the update
 * would go through and the row be acked. */
typedef struct iso_probe {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stage; /* 1: the handler read; 2: the test wrote; 3: the handler settled */
  unsigned calls;
  int exec_rc, settle_rc;
  char sqlstate[8];
} iso_probe;

static int ignore_row(void *user, const tabq_value *cells, unsigned n) {
  (void)user, (void)cells, (void)n;
  return 0;
}

static void iso_stage(iso_probe *p, int set, int wait) {
  pthread_mutex_lock(&p->mu);
  if (set) {
    p->stage = set;
    pthread_cond_broadcast(&p->cv);
  }
  for (int i = 0; wait && p->stage < wait && i < 200; i++) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += 1;
    pthread_cond_timedwait(&p->cv, &p->mu, &t);
  }
  pthread_mutex_unlock(&p->mu);
}

static tabq_outcome serializable_handler(tabq_delivery *d, void *user) {
  iso_probe *p = user;
  pthread_mutex_lock(&p->mu);
  bool first = p->calls++ == 0;
  pthread_mutex_unlock(&p->mu);
  if (!first)
    return tabq_retry_after(60000);
  tabq_tx *tx = tabq_delivery_tx(d);
  tabq_error e;
  CU_ASSERT_EQUAL(
      tabq_tx_query(tx, "SELECT n FROM acct WHERE id = 1", NULL, 0, 1, ignore_row, NULL, &e),
      TABQ_OK);
  iso_stage(p, 1, 2);
  p->exec_rc = tabq_tx_exec(tx, "UPDATE acct SET n = n + 10 WHERE id = 1", NULL, 0, NULL, &e);
  snprintf(p->sqlstate, sizeof p->sqlstate, "%s", p->exec_rc ? e.sqlstate : "");
  p->settle_rc = tabq_delivery_settle(d, tabq_ack(), &e);
  iso_stage(p, 3, 0);
  return tabq_no_outcome();
}

static void transactional_delivery_takes_table_level(void) {
  testdb_create(&db);
  testdb_exec(&db, "CREATE TABLE acct (id INT PRIMARY KEY, n INT NOT NULL)");
  testdb_exec(&db, "INSERT INTO acct VALUES (1, 0)");
  tabq_broker *b = connect_broker(&db, 50);
  publish_n(b, "q", 1);
  tabq_table t = *jobs_table();
  t.isolation = TABQ_ISOLATION_SERIALIZABLE;
  iso_probe p = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .handler = serializable_handler,
                                 .user = &p,
                                 .transactional = true};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  iso_stage(&p, 0, 1);
  CU_ASSERT_FATAL(p.stage == 1);
  testdb_exec(&db, "UPDATE acct SET n = n + 1 WHERE id = 1");
  iso_stage(&p, 2, 3);
  CU_ASSERT_FATAL(p.stage == 3);
  CU_ASSERT_NOT_EQUAL(p.exec_rc, TABQ_OK);
  CU_ASSERT_STRING_EQUAL(p.sqlstate, "40001");
  CU_ASSERT_NOT_EQUAL(p.settle_rc, TABQ_OK);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs"), 1); /* not lost */
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT n FROM acct WHERE id = 1"), 1);
  tabq_close(b);
  testdb_remove(&db);
}

/* Each broker's host (ABI 1.6): a line the driver logs on a connection goes to the broker that
 * connection serves, whatever thread runs the statement. Two brokers with log callbacks of their
 * own each run, from a thread of the test's, a statement that makes the server send a warning;
 * each warning reaches its own broker's callback alone. */
typedef struct heard {
  pthread_mutex_t mu;
  char lines[1024];
} heard;

static void keep_line(int level, const char *message, void *user) {
  (void)level;
  heard *h = user;
  pthread_mutex_lock(&h->mu);
  size_t len = strlen(h->lines);
  snprintf(h->lines + len, sizeof h->lines - len, "%s\n", message);
  pthread_mutex_unlock(&h->mu);
}

typedef struct warn_job {
  tabq_broker *b;
  const char *sql;
  int rc;
} warn_job;

static void *warn_from_thread(void *arg) {
  warn_job *j = arg;
  tabq_tx *tx = NULL;
  tabq_error e;
  j->rc = tabq_begin(j->b, &tx, &e);
  if (!j->rc) {
    j->rc = tabq_tx_exec(tx, j->sql, NULL, 0, NULL, &e);
    tabq_rollback(tx, &e);
  }
  return NULL;
}

static void driver_lines_reach_their_broker(void) {
  testdb_create(&db);
  heard h1 = {.mu = PTHREAD_MUTEX_INITIALIZER}, h2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
  tabq_broker_options o1 = TABQ_BROKER_OPTIONS_INIT, o2 = TABQ_BROKER_OPTIONS_INIT;
  o1.log = o2.log = keep_line;
  o1.log_user = &h1;
  o2.log_user = &h2;
  tabq_broker *b1 = NULL, *b2 = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_connect(db.url, &o1, &b1, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_connect(db.url, &o2, &b2, &err), TABQ_OK);
  warn_job j1 = {b1, "DO $$ BEGIN RAISE WARNING 'for-broker-one'; END $$", -1};
  warn_job j2 = {b2, "DO $$ BEGIN RAISE WARNING 'for-broker-two'; END $$", -1};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, warn_from_thread, &j1);
  pthread_create(&t2, NULL, warn_from_thread, &j2);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CU_ASSERT_EQUAL(j1.rc, TABQ_OK);
  CU_ASSERT_EQUAL(j2.rc, TABQ_OK);
  tabq_close(b1);
  tabq_close(b2);
  CU_ASSERT_PTR_NOT_NULL(strstr(h1.lines, "for-broker-one"));
  CU_ASSERT_PTR_NULL(strstr(h1.lines, "for-broker-two"));
  CU_ASSERT_PTR_NOT_NULL(strstr(h2.lines, "for-broker-two"));
  CU_ASSERT_PTR_NULL(strstr(h2.lines, "for-broker-one"));
  testdb_remove(&db);
}

/* Two brokers of two workers race for the same rows: a claim that read a row as a candidate
 * finds it settled by the other broker once it holds the key (the lock taken, the row not), and
 * must give the key back. Every row is handled once, and with both brokers still open the server
 * holds no advisory lock. */
#define RACE_ROWS 400
static void racing_claims_leave_no_lock(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", RACE_ROWS);
  once_reset(RACE_ROWS);
  tabq_broker *b[2];
  tabq_subscription *s[2];
  for (int i = 0; i < 2; i++) {
    b[i] = connect_broker(&db, 20);
    tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                   .queue = "q",
                                   .handler = once_handler,
                                   .workers = 2};
    CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b[i], jobs_table(), &o, &s[i], &err), TABQ_OK);
  }
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 120000));
  /* Settlements release before they are counted: wait for the last counts, then look. */
  for (int i = 0; i < 2; i++) {
    tabq_stats st;
    for (int k = 0; k < 500; k++) {
      tabq_subscription_stats(s[i], &st, sizeof st);
      if (st.claimed == st.acked + st.failed)
        break;
      sleep_ms(10);
    }
  }
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING "
                                  "(pid) WHERE a.datname = current_database() AND l.locktype = "
                                  "'advisory'"),
                  0);
  tabq_close(b[0]);
  tabq_close(b[1]);
  once_check();
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo postgres_tests[] = {
      {"a lost listener reconnects and wakes", lost_listener_reconnects_and_wakes},
      {"a channel over 63 bytes stops the subscription at startup", long_channel_stops_at_startup},
      {"connections the server ended are replaced", ended_connections_are_replaced},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo postgres_lock_tests[] = {
      {"a SIGKILLed child leaves no lock on the server", killed_child_leaves_no_lock},
      {"a session ended under its handler: the row is not handed out twice, held reads false",
       ended_session_is_not_handed_out_twice},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo mysql_advisory_tests[] = {
      {"lock names over 64 characters are hashed with SHA-256", long_lock_names_are_hashed},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo postgres_advisory_tests[] = {
      {"racing claims of two brokers handle each row once and leave no lock",
       racing_claims_leave_no_lock},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo advisory_tests[] = {
      {"shutdown releases advisory locks; a late settlement fails CLOSED",
       shutdown_releases_advisory_locks},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo host_tests[] = {
      {"a driver's log lines reach the broker its connection serves, from any thread",
       driver_lines_reach_their_broker},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo transactional_level_tests[] = {
      {"transactional: the handler's transaction opens at the table's level (serializable)",
       transactional_delivery_takes_table_level},
      CU_TEST_INFO_NULL,
  };
  static CU_TestInfo rowlock_tests[] = {
      {"repeatable read: serialization failures are errors, no row lost",
       repeatable_read_fails_claims_not_rows},
      CU_TEST_INFO_NULL,
  };
  if (test_db_kind() == TEST_POSTGRES && test_form() == TABQ_FORM_LEASE)
    ADD_SUITE("wake-ups and sessions on postgres", NULL, NULL, postgres_tests);
  if (test_db_kind() == TEST_POSTGRES && test_form() != TABQ_FORM_LEASE)
    ADD_SUITE("crashed sessions on postgres", NULL, NULL, postgres_lock_tests);
  if (test_db_kind() == TEST_POSTGRES && test_form() == TABQ_FORM_ROWLOCK)
    ADD_SUITE("isolation on postgres", NULL, NULL, rowlock_tests);
  if (test_db_kind() == TEST_POSTGRES && test_form() != TABQ_FORM_ROWLOCK)
    ADD_SUITE("isolation of transactional deliveries on postgres", NULL, NULL,
              transactional_level_tests);
  if (test_db_kind() == TEST_POSTGRES && test_form() == TABQ_FORM_LEASE)
    ADD_SUITE("each broker's host on postgres", NULL, NULL, host_tests);
  if (test_db_kind() != TEST_SQLITE && test_form() == TABQ_FORM_ADVISORY)
    ADD_SUITE("advisory shutdown", NULL, NULL, advisory_tests);
  if (test_db_kind() == TEST_POSTGRES && test_form() == TABQ_FORM_ADVISORY)
    ADD_SUITE("advisory locks on postgres", NULL, NULL, postgres_advisory_tests);
  if (test_db_kind() == TEST_MYSQL && test_form() == TABQ_FORM_ADVISORY)
    ADD_SUITE("GET_LOCK names on mysql", NULL, NULL, mysql_advisory_tests);
  return 0;
}
