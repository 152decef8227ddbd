/* LISTEN/NOTIFY without a thundering herd (docs/postgres.md): every broker that listens hears
 * every notification, so one publish wakes them all; each should answer it with one claim, not
 * one per idle worker. Eight brokers (standing in for eight processes: each has its own
 * listening connection) of four idle workers each, polling only once a minute, hear 40 rows
 * published one at a time; the claims they make per notification are counted from their
 * stats. One claim a broker, plus the winner's next (its claim came back full, so it looks for
 * more), is about 10 a row; one claim per idle worker would be up to 32 (30 were measured before
 * the claim window, worker.c). */
#include <stdio.h>
#include <string.h>

#include "cunit_main.h"
#include "support.h"

#define BROKERS 8
#define WORKERS 4
#define ROWS 40

static testdb db;
static tabq_error err;

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static tabq_broker *listening_broker(unsigned pool) {
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.poll_interval_ms = 60000; /* only notifications wake the workers */
  o.pool_size = pool;
  o.listen_notify = true;
  tabq_broker *b = NULL;
  int rc = tabq_connect(db.url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

static unsigned long long claims_of(tabq_subscription *const *subs) {
  unsigned long long n = 0;
  for (int i = 0; i < BROKERS; i++) {
    tabq_stats st;
    tabq_subscription_stats(subs[i], &st, sizeof st);
    n += st.claims;
  }
  return n;
}

static void one_claim_a_broker_per_notification(void) {
  testdb_create(&db);
  tabq_broker *brokers[BROKERS];
  tabq_subscription *subs[BROKERS];
  for (int i = 0; i < BROKERS; i++) {
    brokers[i] = listening_broker(WORKERS + 3);
    tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
    o.queue = "q";
    o.handler = ack_it;
    o.workers = WORKERS;
    CU_ASSERT_EQUAL_FATAL(tabq_subscribe(brokers[i], jobs_table(), &o, &subs[i], &err), TABQ_OK);
  }
  sleep_ms(1000); /* the first claims at start are done, every worker idle */
  unsigned long long before = claims_of(subs);
  tabq_broker *publisher = listening_broker(2);
  for (int i = 0; i < ROWS; i++) {
    publish_n(publisher, "q", 1);
    CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 10000));
    sleep_ms(30); /* every broker's probe is back: each notification is met on its own */
  }
  sleep_ms(200);
  unsigned long long claims = claims_of(subs) - before;
  double per_row = (double)claims / ROWS;
  printf("\n    %d brokers of %d workers: %llu claims for %d notifications, %.1f a row\n", BROKERS,
         WORKERS, claims, ROWS, per_row);
  CU_ASSERT(claims >= ROWS);
  CU_ASSERT(per_row <= BROKERS + 3);
  tabq_close(publisher);
  for (int i = 0; i < BROKERS; i++)
    tabq_close(brokers[i]);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a notification costs each listening broker one claim, not one per idle worker",
       one_claim_a_broker_per_notification},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("LISTEN/NOTIFY without a thundering herd", NULL, NULL, tests);
  return 0;
}
