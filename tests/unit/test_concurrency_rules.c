/* Concurrency limits' refusals (docs/concurrency.md), on an SQLite file: the slots table given to
 * a broker (a member missing, a ttl too short, a column the database lacks, given twice, given
 * after a subscription) and the subscription's options (a limit without the slots table, a key
 * without a limit, a key the claim does not read, a limit over 32, a batch handler, a table
 * without retry_after), each refusal naming the table and the rule, nothing written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/concurrency.h>
#include <unistd.h>

#include "cunit_main.h"

static tabq_error err;
static char dir[] = "/tmp/tabq-conc-XXXXXX";
static char url[256];

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt"},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .partition_key = {"partition_key"},
};

static tabq_broker *broker(void) {
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.pool_size = 4;
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "\nconnect: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

static void make_tables(void) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(url, sizeof url, "sqlite://%s/q.db", dir);
  tabq_broker *b = broker();
  CU_ASSERT_EQUAL(
      tabq_exec(b,
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, retry_after TEXT, "
                "attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL, "
                "partition_key TEXT)",
                &err),
      TABQ_OK);
  CU_ASSERT_EQUAL(tabq_exec(b,
                            "CREATE TABLE slots (slot TEXT PRIMARY KEY, holder TEXT NOT NULL, "
                            "expires TEXT NOT NULL)",
                            &err),
                  TABQ_OK);
  tabq_close(b);
}

static tabq_concurrency_slots slots(void) {
  tabq_concurrency_slots c = TABQ_CONCURRENCY_SLOTS_INIT;
  c.name = "slots";
  c.key_column = "slot";
  c.holder_column = "holder";
  c.expires_column = "expires";
  return c;
}

static tabq_outcome ack(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static void ack_all(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)ds, (void)user;
  for (size_t i = 0; i < n; i++)
    out[i] = tabq_ack();
}

static tabq_subscription_options options(unsigned limit, const char *key) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = ack;
  o.concurrency_limit = limit;
  o.concurrency_key = key;
  return o;
}

static void refused(tabq_broker *b, const tabq_table *t, const tabq_subscription_options *o,
                    const char *rule) {
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL(tabq_subscribe(b, t, o, &s, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_STRING_EQUAL(err.table, t->name);
  if (!strstr(err.message, rule))
    fprintf(stderr, "\nmessage '%s' lacks rule '%s'\n", err.message, rule);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rule));
}

static void slots_table_refusals(void) {
  tabq_broker *b = broker();
  CU_ASSERT_STRING_EQUAL(tabq_concurrency_holder(b), "");
  const char *const members[] = {"name", "key_column", "holder_column", "expires_column"};
  for (int i = 0; i < 4; i++) {
    tabq_concurrency_slots c = slots();
    const char **m[] = {&c.name, &c.key_column, &c.holder_column, &c.expires_column};
    *m[i] = NULL;
    CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, members[i]));
  }
  tabq_concurrency_slots c = slots();
  c.ttl_ms = 100;
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "ttl_ms"));
  c = slots();
  c.holder_column = "owner"; /* no such column */
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_SCHEMA);
  CU_ASSERT_STRING_EQUAL(err.table, "slots");
  c = slots();
  c.name = "nope";
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_SCHEMA);
  c = slots();
  CU_ASSERT_EQUAL_FATAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_OK);
  CU_ASSERT_NOT_EQUAL(tabq_concurrency_holder(b)[0], '\0');
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "once"));
  tabq_close(b);
  /* After a subscription: too late. */
  b = broker();
  tabq_subscription_options o = options(0, NULL);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &jobs, &o, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "before subscribing"));
  tabq_close(b);
}

static void subscription_refusals(void) {
  tabq_broker *b = broker();
  tabq_subscription_options o = options(2, NULL);
  refused(b, &jobs, &o, "a limit needs the slots table");
  tabq_concurrency_slots c = slots();
  CU_ASSERT_EQUAL_FATAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_OK);
  o = options(0, "partition_key");
  refused(b, &jobs, &o, "a key needs a limit");
  o = options(2, "customer");
  refused(b, &jobs, &o, "the key is a column of the table");
  o = options(33, "partition_key");
  refused(b, &jobs, &o, "at most 32");
  o = options(2, NULL);
  o.handler = NULL;
  o.batch_handler = ack_all;
  refused(b, &jobs, &o, "a handler of one delivery");
  tabq_table no_retry = jobs;
  no_retry.retry_after.name = NULL;
  o = options(2, NULL);
  refused(b, &no_retry, &o, "retry_after");
  /* What is allowed: the whole queue, a key of the partition key, the group. */
  o = options(2, NULL);
  CU_ASSERT_EQUAL(tabq_subscribe(b, &jobs, &o, NULL, &err), TABQ_OK);
  o = options(1, "partition_key");
  CU_ASSERT_EQUAL(tabq_subscribe(b, &jobs, &o, NULL, &err), TABQ_OK);
  o = options(32, "queue");
  CU_ASSERT_EQUAL(tabq_subscribe(b, &jobs, &o, NULL, &err), TABQ_OK);
  tabq_close(b);
}

static void remove_tables(void) {
  char path[300];
  const char *const files[] = {"q.db", "q.db-wal", "q.db-shm", "q.db-journal"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"the tables", make_tables},
      {"the slots table's refusals", slots_table_refusals},
      {"a subscription's refusals", subscription_refusals},
      {"clean up", remove_tables},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("concurrency rules", NULL, NULL, tests);
  return 0;
}
