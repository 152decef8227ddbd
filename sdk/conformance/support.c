/* What the tests share: brokers closed at the test's end and child processes (this executable
 * again, with the hidden --child argument); the handlers are in handlers.c. */
#include <CUnit/CUnit.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

#define MAX_BROKERS 8
#define MAX_CHILDREN 4

static tabq_broker *brokers[MAX_BROKERS];
static child *children[MAX_CHILDREN];

tabq_broker *connect_broker_with(const tabq_broker_options *o) {
  tabq_broker *b = NULL;
  tabq_error err;
  int rc = tabq_connect(kit.url, o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  for (int i = 0; i < MAX_BROKERS; i++)
    if (!brokers[i]) {
      brokers[i] = b;
      return b;
    }
  CU_FAIL_FATAL("more brokers than the kit tracks");
  return b;
}

tabq_broker *connect_broker(unsigned poll_ms) {
  tabq_broker_options o = broker_options(poll_ms, 6);
  return connect_broker_with(&o);
}

void close_broker(tabq_broker *b) {
  for (int i = 0; i < MAX_BROKERS; i++)
    if (brokers[i] == b)
      brokers[i] = NULL;
  tabq_close(b);
}

void support_end_test(void) {
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (children[i]) {
      kill(children[i]->pid, SIGKILL);
      child_wait(children[i]);
    }
  for (int i = 0; i < MAX_BROKERS; i++)
    if (brokers[i]) {
      tabq_close(brokers[i]);
      brokers[i] = NULL;
    }
}

void publish_n(tabq_broker *b, const char *queue, int n) {
  for (int i = 0; i < n; i++) {
    char payload[32];
    int len = snprintf(payload, sizeof payload, "job-%d", i);
    tabq_message m = message(queue, payload, (size_t)len);
    tabq_error err;
    int rc = tabq_publish(b, jobs_table(), &m, &err);
    if (rc)
      fprintf(stderr, "publish: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
}

uint64_t claimed_within(const tabq_subscription *sub, uint64_t n) {
  tabq_stats st;
  for (int waited = 0; waited < 10000; waited += 5) {
    stats_of(sub, &st);
    if (st.claimed >= n)
      break;
    sleep_ms(5);
  }
  return st.claimed;
}

void expect_refused(tabq_broker *b, const tabq_table *t, const tabq_subscription_options *o,
                    const char *rule) {
  tabq_error err;
  CU_ASSERT_EQUAL(tabq_subscribe(b, t, o, NULL, &err), TABQ_DECLARATION);
  if (!strstr(err.message, rule))
    fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err.message, rule);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rule));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, t->name));
  CU_ASSERT_STRING_EQUAL(err.table, t->name);
}

tabq_outcome hold_first(tabq_delivery *d, void *user) {
  held_first *h = user;
  atomic_fetch_add(&h->calls, 1);
  return wait_at_gate(d, &h->g);
}

void held_until_claimed(held_first *h, const tabq_subscription *sub, uint64_t n) {
  uint64_t claimed = claimed_within(sub, n);
  if (claimed != n)
    gate_open(&h->g);
  CU_ASSERT_EQUAL_FATAL(claimed, n);
}

void waiting_row_keeps_its_lease(tabq_broker *b, const tabq_table *t, tabq_subscription_options *o,
                                 held_first *h) {
  memset(h, 0, sizeof *h);
  gate_init(&h->g);
  o->lease_s = 1;
  tabq_subscription *sub = NULL;
  tabq_error err;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, t, o, &sub, &err), TABQ_OK);
  gate_wait_in(&h->g);
  held_until_claimed(h, sub, 2);
  /* Three leases long: unextended, the waiting row's lease would have ended two seconds ago. */
  sleep_ms(3000);
  CU_ASSERT(db_ms_from_now("SELECT locked_until FROM {jobs} WHERE id = (SELECT max(id) FROM "
                           "{jobs})") > 0);
  gate_open(&h->g);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  tabq_stats st;
  stats_after(sub, 2, &st);
  CU_ASSERT_EQUAL(st.acked, 2);
  CU_ASSERT_EQUAL(st.lease_lost, 0);
  CU_ASSERT_EQUAL(st.claimed, 2);
  close_broker(b);
  CU_ASSERT_EQUAL(atomic_load(&h->calls), 2);
}

static void *shut_down(void *b) {
  tabq_shutdown(b);
  return NULL;
}

void shutdown_while_held(tabq_broker *b, held_first *h) {
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, shut_down, b), 0);
  /* Once the broker answers a subscription with CLOSED it is stopping, and the held row may
   * settle. (The probe names a table the database lacks: before the shutdown it fails with
   * SCHEMA, having claimed nothing.) */
  tabq_table missing = table_for_refusal(TABLE_MISSING);
  tabq_subscription_options probe = sub_options("q", recorder_handler, NULL);
  tabq_error err;
  while (tabq_subscribe(b, &missing, &probe, NULL, &err) != TABQ_CLOSED)
    sleep_ms(1);
  sleep_ms(20);
  gate_open(&h->g);
  pthread_join(t, NULL);
}

void child_start(child *c, const char *mode) {
  char *const argv[] = {"/proc/self/exe",
                        "--child",
                        (char *)mode,
                        "--url",
                        (char *)kit.url,
                        "--form",
                        (char *)form_name(kit.form),
                        "--table",
                        (char *)jobs_name(),
                        NULL};
  child_spawn(c, argv);
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (!children[i]) {
      children[i] = c;
      break;
    }
}

tabq_broker *child_claims_one_row(child *c, const char *mode) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  publish_n(b, "q", 1);
  child_start(c, mode);
  char line[64];
  CU_ASSERT_FATAL(child_line(c, line, sizeof line, 10000));
  CU_ASSERT(!strncmp(line, "claimed", 7));
  return b;
}

int child_wait(child *c) {
  int status = child_reap(c);
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (children[i] == c)
      children[i] = NULL;
  return status;
}

/* The tests that write keys need the column in the DDL (a third party's file may predate it). */
const char *needs_key_column(void) {
  for (unsigned i = 0; i < kit.ddl.jobs.n; i++)
    if (strstr(kit.ddl.jobs.stmts[i], "partition_key"))
      return NULL;
  return "the DDL's [jobs] table has no partition_key column (docs/conformance.md)";
}

const char *needs_custom_events(void) {
  static char why[96];
  if (kit.plugin.placeholder)
    return NULL;
  snprintf(why, sizeof why, "custom events: plugin ABI %u.%u (they need 1.1)",
           TABQ_ABI_MAJOR_OF(kit.plugin.desc->abi), TABQ_ABI_MINOR_OF(kit.plugin.desc->abi));
  return why;
}

const char *needs_schema(void) {
  static char why[128];
  if (kit.plugin.schema && kit.plugin.indexes)
    return NULL;
  snprintf(why, sizeof why, "schema: plugin ABI %u.%u has no Dialect.%s (ABI 1.7)",
           TABQ_ABI_MAJOR_OF(kit.plugin.desc->abi), TABQ_ABI_MINOR_OF(kit.plugin.desc->abi),
           kit.plugin.schema ? "indexes" : "schema");
  return why;
}

const char *needs_listen(void) {
  if (kit.per_transaction)
    return "LISTEN/NOTIFY: the URL declares a transaction pooler, through which LISTEN cannot "
           "hold (it needs a server session of its own)";
  return kit.plugin.listen
             ? NULL
             : "LISTEN/NOTIFY: the plugin has no Driver.listen/wait_notify or no Dialect.channel";
}
