/* Deadlines (docs/deadlines.md): a handler that outlives its time budget leaves its row settled
 * by the subscription's policy at the deadline, exactly once, with the delivery's own hold —
 * retried after the delay, or dead lettered — while the handler still runs; the handler learns it
 * (its hold ends, its own settlement is refused); a handler that returns in time is unaffected;
 * and what cannot be honoured is refused at subscribe. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kit.h"

static tabq_error err;

static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* What the sleeper saw. */
static struct {
  atomic_int calls, returned, settle_rc;
  atomic_bool gone_after_deadline; /* its hold ended, not before its deadline */
} slept;

/* Runs up to 8 s, as a stuck handler would, but stops once its hold ends; then tries to ack. */
static tabq_outcome sleeper(tabq_delivery *d, void *user) {
  (void)user;
  atomic_fetch_add(&slept.calls, 1);
  int64_t deadline = tabq_delivery_deadline(d), start = wall_us();
  while (tabq_delivery_held(d) && wall_us() - start < 8000000)
    sleep_ms(20);
  int64_t gone = wall_us();
  atomic_store(&slept.gone_after_deadline, !tabq_delivery_held(d) && deadline > start &&
                                               gone >= deadline && gone < start + 7000000);
  tabq_error e;
  atomic_store(&slept.settle_rc, tabq_delivery_settle(d, tabq_ack(), &e));
  atomic_fetch_add(&slept.returned, 1);
  return tabq_ack(); /* ignored: the row is settled already */
}

static void reset(void) {
  atomic_store(&slept.calls, 0);
  atomic_store(&slept.returned, 0);
  atomic_store(&slept.settle_rc, -1);
  atomic_store(&slept.gone_after_deadline, false);
}

static bool wait_returned(int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (atomic_load(&slept.returned))
      return true;
    sleep_ms(20);
  }
  return false;
}

static void deadline_retries_after_the_delay_once(void) {
  fresh_db();
  reset();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  tabq_subscription_options o = sub_options("q", sleeper, NULL);
  o.deadline_ms = 500;
  o.deadline_retry_ms = 60000;
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT_FATAL(wait_returned(12000));
  sleep_ms(500); /* a row retried at once would be claimed again meanwhile */
  tabq_stats st;
  stats_after(s, 1, &st);
  CU_ASSERT_EQUAL(atomic_load(&slept.calls), 1);
  CU_ASSERT(atomic_load(&slept.gone_after_deadline));
  CU_ASSERT_EQUAL(atomic_load(&slept.settle_rc), TABQ_LEASE_LOST);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  CU_ASSERT_EQUAL(st.delayed, 1);
  CU_ASSERT_EQUAL(st.acked + st.lease_lost + st.failed, 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 1);
  CU_ASSERT_EQUAL(db_due_after(30000), 1); /* hidden for the policy's delay */
  close_broker(b);
}

static void deadline_dead_letters_once(void) {
  fresh_db();
  reset();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  tabq_subscription_options o = sub_options("q", sleeper, NULL);
  o.deadline_ms = 400;
  o.on_deadline = TABQ_DEADLINE_DEAD_LETTER;
  o.max_attempts = 5;
  o.dead_letter_table = dead_name();
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT_FATAL(wait_returned(12000));
  tabq_stats st;
  stats_after(s, 1, &st);
  CU_ASSERT_EQUAL(atomic_load(&slept.calls), 1);
  CU_ASSERT(atomic_load(&slept.gone_after_deadline));
  CU_ASSERT_EQUAL(atomic_load(&slept.settle_rc), TABQ_LEASE_LOST);
  CU_ASSERT_EQUAL(st.deadline_expired, 1);
  CU_ASSERT_EQUAL(st.dead_lettered, 1);
  CU_ASSERT_EQUAL(st.acked, 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 1);
  close_broker(b);
}

/* Handlers that return well within their budget: every row acked, no deadline fires after. */
static void deadline_in_time_unaffected(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 20);
  once_reset(20);
  tabq_subscription_options o = sub_options("q", once_handler, NULL);
  o.workers = 2;
  o.deadline_ms = 1000;
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
  sleep_ms(1200); /* past every deadline */
  once_check();
  tabq_stats st;
  stats_after(s, 20, &st);
  CU_ASSERT_EQUAL(st.acked, 20);
  CU_ASSERT_EQUAL(st.deadline_expired + st.retried + st.dead_lettered, 0);
  close_broker(b);
}

static void deadline_misused_is_refused(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 1);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.deadline_ms = 1000;
  o.transactional = true;
  expect_refused(b, jobs_table(), &o, "(not in transactional mode)");
  o.transactional = false;
  o.on_deadline = TABQ_DEADLINE_DEAD_LETTER;
  expect_refused(b, jobs_table(), &o, "(dead_letter needs a dead letter)");
  tabq_subscription_options batch = batch_options("q", ack_every_row, NULL, 4);
  batch.deadline_ms = 1000;
  expect_refused(b, jobs_table(), &batch, "(a handler of one delivery)");
  /* Nothing was claimed by any of them. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 1);
  CU_ASSERT_EQUAL(recorder_calls(&r), 0);
  close_broker(b);
  recorder_free(&r);
}

const kit_test deadline_tests[] = {
    {"deadlines: a handler past its deadline, its row retried after the delay once",
     deadline_retries_after_the_delay_once, ALL_FORMS, NULL, NULL},
    {"deadlines: a handler past its deadline, its row dead lettered once",
     deadline_dead_letters_once, ALL_FORMS, NULL, NULL},
    {"deadlines: handlers that return in time are unaffected", deadline_in_time_unaffected,
     ALL_FORMS, NULL, NULL},
    {"deadlines misused are refused at subscribe", deadline_misused_is_refused, ALL_FORMS, NULL,
     "refusals at subscribe, nothing claimed"},
    {NULL, NULL, 0, NULL, NULL},
};
