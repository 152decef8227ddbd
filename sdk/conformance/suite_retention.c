/* Retention (docs/retention.md): a table handed to the broker's pruner loses its rows finished
 * longer ago than the declared age, a few rows a statement, while the rows finished since and the
 * unfinished ones stay; a misuse registers nothing. The deletes are tabq's, built with the
 * dialect's quoting, placeholders and limits. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <tabq/retention.h>

#include "kit.h"

#define AGE_MS 2000

static tabq_error err;

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static bool finished_become(long long n) {
  return wait_count("SELECT count(*) FROM {jobs} WHERE processed_at IS NOT NULL", n, 10000);
}

static void old_finished_rows_go_in_batches(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  tabq_subscription_options o = sub_options("q", ack_it, NULL);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, marked_table(), &o, NULL, &err), TABQ_OK);
  publish_n(b, "q", 6);
  CU_ASSERT_FATAL(finished_become(6));
  sleep_ms(AGE_MS + 200); /* the six are old now */
  publish_n(b, "q", 3);
  CU_ASSERT_FATAL(finished_become(9));
  publish_n(b, "idle", 4); /* nobody claims them: never finished */

  tabq_retention_options r = TABQ_RETENTION_OPTIONS_INIT;
  r.processed_age_ms = AGE_MS;
  r.batch = 2;
  r.interval_ms = 50;
  int rc = tabq_retain(b, marked_table(), &r, &err);
  if (rc)
    fprintf(stderr, "\nretain: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  /* The old six go well before the young three come of age. */
  CU_ASSERT(
      wait_count("SELECT count(*) FROM {jobs} WHERE processed_at IS NOT NULL", 3, AGE_MS / 2));
  tabq_retention_stats st = {0};
  CU_ASSERT_EQUAL(tabq_retention_stats_read(b, jobs_name(), &st, sizeof st, &err), TABQ_OK);
  CU_ASSERT_EQUAL(st.processed_deleted, 6);
  CU_ASSERT(st.batches >= 3); /* two rows a statement */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE processed_at IS NULL"), 4);
  /* Then the young ones, and still never an unfinished row. */
  CU_ASSERT(finished_become(0));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE processed_at IS NULL"), 4);
}

static void retention_refusals_register_nothing(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  tabq_retention_options r = TABQ_RETENTION_OPTIONS_INIT;
  r.processed_age_ms = 1000;
  /* No processed_at role: acks delete, there is nothing to prune. */
  CU_ASSERT_EQUAL(tabq_retain(b, jobs_table(), &r, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_name()));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "processed_at"));
  r.processed_age_ms = -1;
  CU_ASSERT_EQUAL(tabq_retain(b, marked_table(), &r, &err), TABQ_INVALID);
  r.processed_age_ms = 1000;
  r.batch = 100001;
  CU_ASSERT_EQUAL(tabq_retain(b, marked_table(), &r, &err), TABQ_INVALID);
  tabq_retention_stats st = {0};
  CU_ASSERT_NOT_EQUAL(tabq_retention_stats_read(b, jobs_name(), &st, sizeof st, &err), TABQ_OK);
}

const kit_test retention_tests[] = {
    {"rows finished longer ago than the age go in batches, young and unfinished rows stay",
     old_finished_rows_go_in_batches, ALL_FORMS, NULL, NULL},
    {"retention refusals register nothing", retention_refusals_register_nothing, ALL_FORMS, NULL,
     NULL},
    {NULL, NULL, 0, NULL, NULL},
};
