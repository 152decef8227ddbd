/* FIFO groups: at most one row of a group in work, in claim order, across two subscriptions; a
 * retry keeps the row at the head. The advisory form takes no FIFO table (R-DESC-1). */
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <string.h>

#include "kit.h"

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
  fresh_db();
  tabq_table t = *jobs_table();
  t.fifo = true;
  tabq_broker *a = connect_broker(20), *b = connect_broker(20);
  for (int i = 0; i < 4; i++) {
    tabq_message m = message("g", "x", 1);
    CU_ASSERT_EQUAL_FATAL(tabq_publish(a, &t, &m, &err), TABQ_OK);
  }
  tabq_message other = message("other", "y", 1);
  CU_ASSERT_EQUAL_FATAL(tabq_publish(a, &t, &other, &err), TABQ_OK);
  static fifo_seen f;
  memset(&f, 0, sizeof f);
  pthread_mutex_init(&f.mu, NULL);
  tabq_subscription_options o = sub_options("g", one_at_a_time, &f);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(a, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'g'", 0, 20000));
  close_broker(a);
  close_broker(b);
  CU_ASSERT_EQUAL(atomic_load(&f.most_in_flight), 1);
  /* 1 retried stays the head, then 2, 3, 4 in order */
  CU_ASSERT_EQUAL(f.n, 5);
  int64_t want[] = {1, 1, 2, 3, 4};
  for (unsigned i = 0; i < 5 && i < f.n; i++)
    CU_ASSERT_EQUAL(f.order[i], want[i]);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'other'"), 1);
}

static void fifo_needs_one_worker(void) {
  fresh_db();
  tabq_table t = *jobs_table();
  t.fifo = true;
  tabq_broker *a = connect_broker(20);
  tabq_subscription_options o = sub_options("g", one_at_a_time, NULL);
  o.workers = 2;
  CU_ASSERT_EQUAL(tabq_subscribe(a, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "one worker"));
  close_broker(a);
}

/* FIFO groups are a feature a dialect may decline: its own check, asked directly, says whether
 * it builds a FIFO table in this form (a refusal there is TABQ_DIALECT, as at open). */
static const char *needs_fifo(void) {
  tabq_table t = *jobs_table();
  t.fifo = true;
  tabq_build b = {.table = &t, .form = kit.form};
  int rc = kit.plugin.desc->dialect->check(&b);
  if (rc == TABQ_DIALECT)
    return "the dialect's check refuses FIFO tables (TABQ_DIALECT)";
  return NULL;
}

const kit_test fifo_tests[] = {
    {"FIFO: one row of a group in work, in order, across two subscriptions",
     one_row_of_a_group_in_work, TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, needs_fifo, NULL},
    {"FIFO: a FIFO subscription has one worker", fifo_needs_one_worker,
     TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
