/* The advisory form on SQLite, whose keys live in the process (TABQ_ADVISORY_PROCESS_KEYS): a
 * second process subscribing advisory to the same file is refused, naming the file, its lock
 * file and the rule, and may subscribe once the first has closed; and two brokers of one
 * process share the file's keys, so no row is delivered twice across them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <tabq/tabq.h>
#include <unistd.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

static tabq_subscription_options acking(tabq_handler h, unsigned workers) {
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .handler = h, .workers = workers};
  return o;
}

static tabq_outcome ack(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

/* Starts the child in "subscribe" mode and reads its first line. */
static void child_subscribes(child *c, char *line, size_t cap) {
  child_start(c, "subscribe", &db);
  CU_ASSERT_FATAL(child_line(c, line, cap, 10000));
}

static void second_process_is_refused(void) {
  testdb_create(&db);
  tabq_broker *b = connect_broker(&db, 50);
  tabq_subscription_options o = acking(ack, 1);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);

  child c;
  char line[1024], lock_file[PATH_MAX + 16], real[PATH_MAX];
  child_subscribes(&c, line, sizeof line);
  int status = child_wait(&c);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 4);
  char want[32];
  snprintf(want, sizeof want, "refused %d ", (int)TABQ_DIALECT);
  CU_ASSERT(!strncmp(line, want, strlen(want)));
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(db.path, real));
  snprintf(lock_file, sizeof lock_file, "%s-tabq-advisory", real);
  CU_ASSERT_PTR_NOT_NULL(strstr(line, real));
  CU_ASSERT_PTR_NOT_NULL(strstr(line, lock_file));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(line, "one process at a time serves advisory subscriptions on a SQLite file"));

  /* The first closes: the second process now serves the file, and this one is refused. */
  tabq_close(b);
  child_subscribes(&c, line, sizeof line);
  CU_ASSERT_STRING_EQUAL(line, "subscribed");
  b = connect_broker(&db, 50);
  publish_n(b, "q", 5); /* publishing needs no key */
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 10000));
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DIALECT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, lock_file));
  child_say(&c, "stop");
  status = child_wait(&c);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  tabq_close(b);
  testdb_remove(&db);
}

/* Holds each row a moment, so the other broker's claims meet keys in work. */
static tabq_outcome held_once(tabq_delivery *d, void *user) {
  sleep_ms(1);
  return once_handler(d, user);
}

#define ROWS 2000

static void two_brokers_share_keys(void) {
  testdb_create(&db);
  testdb_fill(&db, "q", ROWS);
  once_reset(ROWS);
  /* The second broker reaches the file by another spelling of its path: one file, one registry. */
  tabq_broker_options bo = {
      .size = sizeof(tabq_broker_options), .poll_interval_ms = 20, .pool_size = 6};
  char other[600];
  const char *slash = strrchr(db.path, '/');
  snprintf(other, sizeof other, "sqlite:%.*s/./%s?synchronous=normal", (int)(slash - db.path),
           db.path, slash + 1);
  tabq_broker *b[2];
  CU_ASSERT_EQUAL_FATAL(tabq_connect(db.url, &bo, &b[0], &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_connect(other, &bo, &b[1], &err), TABQ_OK);
  tabq_subscription_options o = acking(held_once, 4);
  for (int i = 0; i < 2; i++)
    CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b[i], jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 120000));
  tabq_close(b[0]);
  tabq_close(b[1]);
  once_check();
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a second process is refused, and serves once the first closed", second_process_is_refused},
      {"two brokers of one process share the file's keys", two_brokers_share_keys},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("advisory keys kept in the process", NULL, NULL, tests);
  return 0;
}
