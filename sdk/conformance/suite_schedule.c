/* Periodic jobs (docs/schedule.md): two brokers scheduling one job publish each of its slots
 * exactly once between them, through the unique key of the slot ("NAME:<UTC minute>") and the
 * table's unique index the dialect's schema renders; a spec that does not parse, or a table
 * without a unique key, is refused with nothing written. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <tabq/schedule.h>
#include <tabq/schema.h>

#include "kit.h"

static tabq_error err;

static const char *needs_schedule(void) {
  if (!TABQ_HAS_MEMBER(kit.plugin.desc->dialect, tabq_dialect_v1, find_unique))
    return "the plugin has no Dialect.find_unique (ABI 1.9): it writes no unique keys";
  return needs_schema();
}

static tabq_schedule_options every_second(const tabq_message *m) {
  tabq_schedule_options o = TABQ_SCHEDULE_OPTIONS_INIT;
  o.name = "tick";
  o.spec = "every 1s";
  o.message = m;
  o.lead_ms = 300;
  return o;
}

static void two_brokers_publish_each_slot_once(void) {
  tabq_broker *one = connect_broker(20), *two = connect_broker(20);
  fresh_names();
  int rc = tabq_schema_apply(one, unique_table(), NULL, &err);
  if (rc)
    fprintf(stderr, "\nschema: %s\n", err.message);
  db_made(DB_JOBS);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  tabq_message m = message("q", "tick", 4);
  tabq_schedule_options o = every_second(&m);
  CU_ASSERT_EQUAL_FATAL(tabq_schedule(one, unique_table(), &o, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_schedule(two, unique_table(), &o, &err), TABQ_OK);
  sleep_ms(3500);
  close_broker(one);
  close_broker(two);
  long long rows = db_int("SELECT count(*) FROM {jobs}");
  CU_ASSERT(rows >= 3);
  CU_ASSERT_EQUAL(db_int("SELECT count(DISTINCT ukey) FROM {jobs}"), rows);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE ukey LIKE 'tick:%'"), rows);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q'"), rows);
}

static void schedule_refusals_write_nothing(void) {
  tabq_broker *b = connect_broker(20);
  fresh_names();
  CU_ASSERT_EQUAL_FATAL(tabq_schema_apply(b, unique_table(), NULL, &err), TABQ_OK);
  db_made(DB_JOBS);
  tabq_message m = message("q", "tick", 4);
  tabq_schedule_options o = every_second(&m);
  /* Without a unique key no slot could be told from another process's. */
  CU_ASSERT_EQUAL(tabq_schedule(b, marked_table(), &o, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_name()));
  o.spec = "*/5 * * *"; /* four fields */
  CU_ASSERT_EQUAL(tabq_schedule(b, unique_table(), &o, &err), TABQ_INVALID);
  o.spec = "*/5 * 32 * *"; /* no 32nd day */
  CU_ASSERT_EQUAL(tabq_schedule(b, unique_table(), &o, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(err.position, 7);
  sleep_ms(1500);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
}

const kit_test schedule_tests[] = {
    {"two brokers scheduling one job publish each slot once", two_brokers_publish_each_slot_once,
     ALL_FORMS, needs_schedule, NULL},
    {"schedule refusals write nothing", schedule_refusals_write_nothing, ALL_FORMS, needs_schedule,
     NULL},
    {NULL, NULL, 0, NULL, NULL},
};
