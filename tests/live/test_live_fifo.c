/* FIFO groups (SPEC 5) against a real database, in the row lock and lease forms: however many
 * subscriptions read a group, at most one of its rows is in work, in claim order; a retry keeps
 * the row at the head. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;

typedef struct fifo_seen {
  pthread_mutex_t mu;
  atomic_int in_flight, most_in_flight;
  int64_t order[32];
  unsigned n;
  bool retried_first;
} fifo_seen;

static tabq_outcome one_at_a_time(tabq_delivery *d, void *user) {
  fifo_seen *f = user;
  int now = atomic_fetch_add(&f->in_flight, 1) + 1;
  int most = atomic_load(&f->most_in_flight);
  while (now > most && !atomic_compare_exchange_weak(&f->most_in_flight, &most, now)) {
  }
  sleep_ms(40); /* long enough for the other subscription to try the group meanwhile */
  pthread_mutex_lock(&f->mu);
  bool retry = !f->retried_first;
  f->retried_first = true;
  if (f->n < 32)
    f->order[f->n++] = tabq_delivery_id(d);
  pthread_mutex_unlock(&f->mu);
  atomic_fetch_sub(&f->in_flight, 1);
  return retry ? tabq_retry() : tabq_ack();
}

static void one_row_of_a_group_in_work(void) {
  testdb_create(&db);
  tabq_table t = *jobs_table();
  t.fifo = true;
  tabq_broker *a = connect_broker(&db, 20), *b = connect_broker(&db, 20);
  for (int i = 0; i < 4; i++) {
    tabq_message m = {.size = sizeof(tabq_message), .group = "g", .payload = "x", .payload_len = 1};
    CU_ASSERT_EQUAL_FATAL(tabq_publish(a, &t, &m, &err), TABQ_OK);
  }
  tabq_message other = {
      .size = sizeof(tabq_message), .group = "other", .payload = "y", .payload_len = 1};
  CU_ASSERT_EQUAL_FATAL(tabq_publish(a, &t, &other, &err), TABQ_OK);
  fifo_seen f = {.n = 0};
  pthread_mutex_init(&f.mu, NULL);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "g",
                                 .handler = one_at_a_time,
                                 .user = &f};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(a, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs WHERE queue = 'g'", 0, 20000));
  tabq_close(a);
  tabq_close(b);
  CU_ASSERT_EQUAL(atomic_load(&f.most_in_flight), 1);
  /* 1 retried stays the head, then 2, 3, 4 in order */
  CU_ASSERT_EQUAL(f.n, 5);
  int64_t want[] = {1, 1, 2, 3, 4};
  for (unsigned i = 0; i < 5 && i < f.n; i++)
    CU_ASSERT_EQUAL(f.order[i], want[i]);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM jobs WHERE queue = 'other'"), 1);
  testdb_remove(&db);
}

static void fifo_needs_one_worker(void) {
  testdb_create(&db);
  tabq_table t = *jobs_table();
  t.fifo = true;
  tabq_broker *a = connect_broker(&db, 20);
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "g",
                                 .handler = one_at_a_time,
                                 .workers = 2};
  CU_ASSERT_EQUAL(tabq_subscribe(a, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "one worker"));
  tabq_close(a);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"one row of a group in work, in order, across two subscriptions",
       one_row_of_a_group_in_work},
      {"a FIFO subscription has one worker", fifo_needs_one_worker},
      CU_TEST_INFO_NULL,
  };
  static char suite[64];
  snprintf(suite, sizeof suite, "FIFO groups on %s, %s form", test_db_name(), test_form_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
