/* prefetch (lease form): a claim takes rows ahead of the idle workers, which wait their turn in
 * the process with their leases extended; every row is still handled once, rows still waiting
 * at shutdown go back at once, and misuse is refused at subscribe with nothing claimed. The
 * default, adaptive look-ahead claims ahead while handlers are fast and not while they are
 * slow; turned off, a claim takes rows for idle workers only. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

static tabq_error err;

#define ROWS 300

/* Two workers with 8 rows ahead drain ROWS rows, each handled and acked once, in about one
 * claim per ten rows: without prefetch a lease claim takes a row per idle worker (two at most),
 * so the claims would number 150 or more. */
static void prefetch_each_row_once_in_fewer_claims(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", ROWS);
  once_reset(ROWS);
  tabq_subscription_options o = sub_options("q", once_handler, NULL);
  o.workers = 2;
  o.prefetch = 8;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 60000));
  tabq_shutdown(b);
  once_check();
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.claimed, ROWS);
  CU_ASSERT_EQUAL(st.acked, ROWS);
  CU_ASSERT_EQUAL(st.lease_lost + st.failed + st.released, 0);
  if (st.claims >= ROWS / 3)
    fprintf(stderr, "\n%llu claims for %d rows\n", (unsigned long long)st.claims, ROWS);
  CU_ASSERT(st.claims < ROWS / 3);
  close_broker(b);
}

/* Rows claimed ahead and still waiting when the broker shuts down go back unsettled, at once:
 * another broker takes them without waiting out their leases (30 s). */
static void prefetch_waiting_rows_released_at_shutdown(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 4);
  static held_first h;
  memset(&h, 0, sizeof h);
  gate_init(&h.g);
  tabq_subscription_options o = sub_options("q", hold_first, &h);
  o.prefetch = 3;
  tabq_subscription *sub = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &sub, &err), TABQ_OK);
  gate_wait_in(&h.g);
  /* The first claim took the row in the handler and three more, now waiting for the worker. */
  held_until_claimed(&h, sub, 4);
  shutdown_while_held(b, &h);
  CU_ASSERT_EQUAL(atomic_load(&h.calls), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 3);
  tabq_stats st;
  stats_of(sub, &st);
  CU_ASSERT_EQUAL(st.released, 3);
  close_broker(b);
  tabq_broker *next = connect_broker(20);
  recorder r;
  recorder_init(&r);
  o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(next, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  close_broker(next);
  CU_ASSERT_EQUAL(recorder_calls(&r), 3);
  for (unsigned i = 0; i < 3 && i < recorder_calls(&r); i++) {
    char want[16];
    snprintf(want, sizeof want, "job-%u", i + 2);
    CU_ASSERT_STRING_EQUAL(r.payloads[i], want);
  }
  recorder_free(&r);
}

/* The lease of a row waiting its turn is extended as the running row's is. */
static void prefetch_waiting_lease_extended(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 2);
  static held_first h;
  tabq_subscription_options o = sub_options("q", hold_first, &h);
  o.prefetch = 1;
  waiting_row_keeps_its_lease(b, jobs_table(), &o, &h);
}

/* The defaults, fast handlers: each row handled once, and claims take rows ahead (the claims
 * number far fewer than a claim per idle worker's row would). */
static void adaptive_fast_handlers_claim_ahead(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", ROWS);
  once_reset(ROWS);
  tabq_subscription_options o = sub_options("q", once_handler, NULL);
  o.workers = 2;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 60000));
  tabq_shutdown(b);
  once_check();
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.claimed, ROWS);
  CU_ASSERT_EQUAL(st.acked, ROWS);
  CU_ASSERT_EQUAL(st.lease_lost + st.failed + st.released, 0);
  if (!st.claimed_ahead || st.claims >= ROWS / 3)
    fprintf(stderr, "\n%llu claims, %llu rows ahead, for %d rows\n", (unsigned long long)st.claims,
            (unsigned long long)st.claimed_ahead, ROWS);
  CU_ASSERT(st.claimed_ahead > 0);
  CU_ASSERT(st.claims < ROWS / 3);
  close_broker(b);
}

static tabq_outcome sleep_then_ack(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  usleep(300 * 1000);
  return tabq_ack();
}

/* Handlers slower than the longest a row may wait (a tenth of a 2 s lease: 200 ms): no row is
 * claimed ahead, each claim takes the one row the idle worker runs. */
static void adaptive_slow_handlers_claim_nothing_ahead(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 4);
  tabq_subscription_options o = sub_options("q", sleep_then_ack, NULL);
  o.lease_s = 2;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
  tabq_shutdown(b); /* the subscription stays readable until the broker closes */
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.acked, 4);
  CU_ASSERT_EQUAL(st.claimed_ahead, 0);
  CU_ASSERT(st.claims >= 4);
  close_broker(b);
}

/* Turned off: fast handlers all the same, no row claimed ahead. (The other forms never claim
 * ahead; the test would hold nothing there, and the README's matrix would mark them.) */
static void lookahead_off_claims_nothing_ahead(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 100);
  once_reset(100);
  tabq_subscription_options o = sub_options("q", once_handler, NULL);
  o.workers = 2;
  o.lookahead = TABQ_LOOKAHEAD_OFF;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 60000));
  tabq_shutdown(b);
  once_check();
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.acked, 100);
  CU_ASSERT_EQUAL(st.claimed_ahead, 0);
  close_broker(b);
}

static void prefetch_misused_is_refused(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 1);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.lookahead = (tabq_lookahead)7;
  expect_refused(b, jobs_table(), &o, "lookahead is TABQ_LOOKAHEAD_ADAPTIVE or TABQ_LOOKAHEAD_OFF");
  o.lookahead = TABQ_LOOKAHEAD_ADAPTIVE;
  o.acks = (tabq_acks)5;
  expect_refused(b, jobs_table(), &o, "acks is TABQ_ACKS_DEFAULT or TABQ_ACKS_ALONE");
  o.acks = TABQ_ACKS_DEFAULT;
  o.lookahead_wait_ms = 60001;
  expect_refused(b, jobs_table(), &o, "lookahead_wait_ms is at most 60,000");
  o.lookahead_wait_ms = 0;
  o.prefetch = 4;
  if (kit.form != TABQ_FORM_LEASE) {
    expect_refused(b, jobs_table(), &o, "prefetch serves the lease form");
  } else {
    o.prefetch = 1001;
    expect_refused(b, jobs_table(), &o, "prefetch is at most 1,000 rows");
    o.prefetch = 4;
    o.transactional = true;
    expect_refused(b, jobs_table(), &o, "transactional and prefetch exclude each other");
    tabq_table fifo = *jobs_table();
    fifo.fifo = true;
    o = sub_options("q", recorder_handler, &r);
    o.prefetch = 4;
    expect_refused(b, &fifo, &o, "a FIFO table hands out one row of a group at a time");
    if (!needs_key_column()) {
      o.workers_by_key = 2;
      expect_refused(b, keyed_table(), &o, "workers_by_key keeps rows waiting");
    }
  }
  tabq_subscription_options batch = batch_options("q", ack_every_row, NULL, 4);
  batch.prefetch = 4;
  expect_refused(b, jobs_table(), &batch, "a batch handler's claim takes its batch already");
  /* Nothing was claimed by any of them. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE locked_until IS NULL"), 1);
  CU_ASSERT_EQUAL(recorder_calls(&r), 0);
  close_broker(b);
  recorder_free(&r);
}

const kit_test prefetch_tests[] = {
    {"prefetch: each row handled once, several rows a claim",
     prefetch_each_row_once_in_fewer_claims, TABQ_FORM_LEASE, NULL, NULL},
    {"prefetch: rows waiting their turn are released at shutdown",
     prefetch_waiting_rows_released_at_shutdown, TABQ_FORM_LEASE, NULL, NULL},
    {"prefetch: a row waiting its turn keeps its lease", prefetch_waiting_lease_extended,
     TABQ_FORM_LEASE, NULL, NULL},
    {"look-ahead by default: fast handlers, rows claimed ahead, each handled once",
     adaptive_fast_handlers_claim_ahead, TABQ_FORM_LEASE, NULL, NULL},
    {"look-ahead by default: slow handlers, no row claimed ahead",
     adaptive_slow_handlers_claim_nothing_ahead, TABQ_FORM_LEASE, NULL, NULL},
    {"look-ahead off: no row claimed ahead", lookahead_off_claims_nothing_ahead, TABQ_FORM_LEASE,
     NULL, NULL},
    {"prefetch misused is refused at subscribe", prefetch_misused_is_refused, ALL_FORMS, NULL,
     "refusals at subscribe, nothing claimed"},
    {NULL, NULL, 0, NULL, NULL},
};
