/* Pausing a queue across brokers (docs/pause.md): the controls table of the DDL's [controls]
 * section, written by one broker's tabq_pause and read by another's subscription before its
 * claims, through the statements tabq builds with the dialect's quoting and placeholders. Past
 * one poll interval of a pause nothing is claimed from the queue; a resume drains what waited;
 * where the plugin notifies, a subscription polling every 30 s learns both at once. Refusals
 * change nothing. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <tabq/controls.h>

#include "kit.h"

#define POLL_MS 50

static tabq_error err;

static tabq_controls controls(void) {
  tabq_controls c = TABQ_CONTROLS_INIT;
  c.name = controls_name();
  c.table_column = "queue_table";
  c.queue_column = "queue";
  c.paused_column = "paused";
  c.paused_at_column = "paused_at";
  return c;
}

static tabq_broker *controlled(unsigned poll_ms, bool listen) {
  tabq_broker_options o = broker_options(poll_ms, 4);
  o.listen_notify = listen;
  tabq_broker *b = connect_broker_with(&o);
  tabq_controls c = controls();
  int rc = tabq_set_controls(b, &c, &err);
  if (rc)
    fprintf(stderr, "\nset_controls: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static const char *needs_pause_listen(void) {
  const char *why = needs_listen();
  return why ? why : needs_controls();
}

static uint64_t claimed(const tabq_subscription *s) {
  tabq_stats st;
  stats_of(s, &st);
  return st.claimed;
}

static void a_pause_stops_every_broker(void) {
  fresh_db();
  db_make_controls();
  tabq_broker *worker = controlled(POLL_MS, false), *operator= controlled(POLL_MS, false);
  tabq_subscription_options o = sub_options("q", ack_it, NULL);
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(worker, jobs_table(), &o, &s, &err), TABQ_OK);
  publish_n(operator, "q", 3);
  CU_ASSERT_FATAL(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));

  CU_ASSERT_EQUAL_FATAL(tabq_pause(operator, jobs_table(), "q", &err), TABQ_OK);
  bool paused = false;
  CU_ASSERT_EQUAL(tabq_paused(worker, jobs_table(), "q", &paused, &err), TABQ_OK);
  CU_ASSERT_TRUE(paused);
  CU_ASSERT_EQUAL(db_int("SELECT paused FROM {controls}"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {controls} WHERE paused_at IS NOT NULL"), 1);
  sleep_ms(3 * POLL_MS); /* a poll interval, and slack */
  uint64_t before = claimed(s);
  publish_n(operator, "q", 5);
  sleep_ms(10 * POLL_MS);
  CU_ASSERT_EQUAL(claimed(s), before);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 5);

  /* Paused again: the same one row. Resumed: the five drain. */
  CU_ASSERT_EQUAL(tabq_pause(operator, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {controls}"), 1);
  CU_ASSERT_EQUAL_FATAL(tabq_resume(operator, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT paused FROM {controls}"), 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {controls} WHERE paused_at IS NULL"), 1);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  CU_ASSERT_EQUAL(claimed(s), before + 5);
}

/* Notified: a subscription whose poll interval is 30 s stops at once, and drains at once. */
static void a_notified_pause_is_at_once(void) {
  fresh_db();
  db_make_controls();
  tabq_broker *worker = controlled(30000, true), *operator= controlled(30000, true);
  tabq_subscription_options o = sub_options("q", ack_it, NULL);
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(worker, jobs_table(), &o, &s, &err), TABQ_OK);
  publish_n(operator, "q", 2); /* the publish's notification wakes the worker */
  CU_ASSERT_FATAL(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  CU_ASSERT_EQUAL_FATAL(tabq_pause(operator, jobs_table(), "q", &err), TABQ_OK);
  sleep_ms(1000);
  uint64_t before = claimed(s);
  publish_n(operator, "q", 4); /* each wakes the worker, which must not claim */
  sleep_ms(1000);
  CU_ASSERT_EQUAL(claimed(s), before);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 4);
  CU_ASSERT_EQUAL_FATAL(tabq_resume(operator, jobs_table(), "q", &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000)); /* not 30 s */
}

static void pause_refusals_change_nothing(void) {
  fresh_db();
  db_make_controls();
  tabq_broker *b = connect_broker(POLL_MS);
  CU_ASSERT_EQUAL(tabq_pause(b, jobs_table(), "q", &err), TABQ_INVALID);
  tabq_controls c = controls();
  c.paused_column = "lease_ends"; /* no such column */
  CU_ASSERT_EQUAL(tabq_set_controls(b, &c, &err), TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, controls_name()));
  c = controls();
  CU_ASSERT_EQUAL_FATAL(tabq_set_controls(b, &c, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_pause(b, jobs_table(), NULL, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_name()));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {controls}"), 0);
  bool paused = true;
  CU_ASSERT_EQUAL(tabq_paused(b, jobs_table(), "q", &paused, &err), TABQ_OK);
  CU_ASSERT_FALSE(paused);
}

const kit_test pause_tests[] = {
    {"a pause stops every broker's claims within a poll interval, a resume drains",
     a_pause_stops_every_broker, ALL_FORMS, needs_controls, NULL},
    {"a notified pause and resume are at once", a_notified_pause_is_at_once, ALL_FORMS,
     needs_pause_listen, NULL},
    {"pause refusals change nothing", pause_refusals_change_nothing, ALL_FORMS, needs_controls,
     NULL},
    {NULL, NULL, 0, NULL, NULL},
};
