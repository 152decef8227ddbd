/* R-DESC-1 without a database: every rule a description can break, each refusal naming the
 * table and the rule. */
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"

static tabq_error err;

static const tabq_table lease_table = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .attempt = {"attempt"},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

static void refused(const tabq_table *t, const char *rule) {
  int rc = tabq_table_check(t, &err);
  CU_ASSERT_EQUAL(rc, TABQ_DECLARATION);
  CU_ASSERT_EQUAL(err.code, TABQ_DECLARATION);
  if (t->name)
    CU_ASSERT_STRING_EQUAL(err.table, t->name);
  if (!strstr(err.message, rule))
    fprintf(stderr, "\nmessage '%s' lacks rule '%s'\n", err.message, rule);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rule));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "R-DESC-1"));
}

static void valid_description_passes(void) {
  CU_ASSERT_EQUAL(tabq_table_check(&lease_table, &err), TABQ_OK);
  static const tabq_col data[] = {{.name = "email"}, {.name = "name"}};
  tabq_table row_mode = {.size = sizeof(tabq_table),
                         .name = "crm.contacts",
                         .id = {"id"},
                         .data = data,
                         .ndata = 2,
                         .advisory_lock = "contact-{id}"};
  CU_ASSERT_EQUAL(tabq_table_check(&row_mode, &err), TABQ_OK);
}

static void no_id(void) {
  tabq_table t = lease_table;
  t.id.name = NULL;
  refused(&t, "id required");
}

static void no_name(void) {
  tabq_table t = lease_table;
  t.name = NULL;
  refused(&t, "table name");
  t.name = "a.b.c";
  refused(&t, "table name");
  t.name = ".jobs";
  refused(&t, "table name");
}

static void column_named_twice(void) {
  tabq_table t = lease_table;
  t.processed_at.name = "locked_until";
  refused(&t, "a column named twice");
  /* case folding: SQLite and MySQL see one column */
  t.processed_at.name = "LOCKED_UNTIL";
  refused(&t, "a column named twice");
  static const tabq_col data[] = {{.name = "payload"}};
  tabq_table d = lease_table;
  d.data = data;
  d.ndata = 1;
  refused(&d, "a column named twice");
}

static void invalid_utf8(void) {
  tabq_table t = lease_table;
  t.name = "jobs\xff";
  refused(&t, "names are UTF-8");
  t = lease_table;
  t.payload.name = "pay\xc3";
  refused(&t, "names are UTF-8");
}

static void fifo_rules(void) {
  tabq_table t = lease_table;
  t.fifo = true;
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_OK);
  t.group.name = NULL;
  refused(&t, "fifo needs group");
  tabq_table a = {.size = sizeof(tabq_table),
                  .name = "jobs",
                  .id = {"id"},
                  .group = {"queue"},
                  .fifo = true,
                  .advisory_lock = "job-{id}"};
  refused(&a, "fifo with an advisory key");
}

static void one_form(void) {
  tabq_table t = lease_table;
  t.advisory_lock = "job-{id}";
  refused(&t, "one form");
}

static void lease_on_database_clock(void) {
  tabq_table t = lease_table;
  t.clock = TABQ_CLOCK_DATABASE;
  refused(&t, "a lease on the database clock");
}

static void advisory_template(void) {
  tabq_table t = {.size = sizeof(tabq_table), .name = "jobs", .id = {"id"}, .group = {"queue"}};
  t.advisory_lock = "job-{nope}";
  refused(&t, "advisory key");
  t.advisory_lock = "job-{id";
  refused(&t, "advisory key");
  t.advisory_lock = "job}";
  refused(&t, "advisory key");
  t.advisory_lock = "job";
  refused(&t, "advisory key");
  t.advisory_lock = "{queue}-{id}";
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_OK);
}

static void isolation_and_mode(void) {
  tabq_table t = lease_table;
  t.isolation = TABQ_ISOLATION_SERIALIZABLE;
  t.mode = TABQ_SQLITE_IMMEDIATE;
  refused(&t, "isolation or mode");
}

static void generated_lease(void) {
  tabq_table t = lease_table;
  t.locked_until.generated = true;
  refused(&t, "locked_until is written by tabq");
}

static void generated_unique_key(void) {
  tabq_table t = lease_table;
  t.unique_key = (tabq_col){.name = "ukey", .generated = true};
  refused(&t, "unique_key is written by the publish");
  t.unique_key.generated = false;
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_OK);
  t.unique_key.name = t.payload.name;
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_DECLARATION);
}

static void data_without_array(void) {
  tabq_table t = lease_table;
  t.ndata = 2;
  refused(&t, "data columns");
}

static void null_description(void) {
  CU_ASSERT_EQUAL(tabq_table_check(NULL, &err), TABQ_INVALID);
}

static void code_names(void) {
  CU_ASSERT_STRING_EQUAL(tabq_code_name(TABQ_LEASE_LOST), "LEASE_LOST");
  CU_ASSERT_STRING_EQUAL(tabq_code_name(TABQ_SERVER_TOO_OLD), "SERVER_TOO_OLD");
  CU_ASSERT_STRING_EQUAL(tabq_code_name((tabq_code)999), "UNKNOWN");
  CU_ASSERT_PTR_NOT_NULL(strstr(tabq_strerror(TABQ_POOL_TIMEOUT), "pooled connection"));
}

static void custom_event_rules(void) {
  tabq_table t = lease_table;
  t.events.ack = "";
  refused(&t, "custom events");
  t = lease_table;
  t.events.lock = "SELECT 1";
  refused(&t, "custom lock without custom unlock");
  t = lease_table;
  t.events.unlock = "SELECT 1";
  refused(&t, "custom lock without custom unlock");
  t.events.lock = "SELECT 1";
  refused(&t, "lock and unlock are advisory events");
  tabq_table advisory = {
      .size = sizeof(tabq_table), .name = "jobs", .id = {"id"}, .advisory_lock = "job-{id}"};
  advisory.events.lock = advisory.events.unlock = "SELECT 1";
  CU_ASSERT_EQUAL(tabq_table_check(&advisory, &err), TABQ_OK);
  advisory.events.extend = "UPDATE jobs SET id = id WHERE id = :id";
  refused(&advisory, "extend is a lease event");
  t = lease_table;
  t.events.extend = advisory.events.extend;
  t.events.claim = "SELECT id FROM jobs";
  CU_ASSERT_EQUAL(tabq_table_check(&t, &err), TABQ_OK);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a valid description passes", valid_description_passes},
      {"no id", no_id},
      {"table name", no_name},
      {"a column named twice", column_named_twice},
      {"names are valid UTF-8", invalid_utf8},
      {"fifo rules", fifo_rules},
      {"one form only", one_form},
      {"lease on the database clock", lease_on_database_clock},
      {"advisory key template", advisory_template},
      {"isolation and mode together", isolation_and_mode},
      {"generated locked_until", generated_lease},
      {"generated unique_key, and one column for two roles", generated_unique_key},
      {"custom event rules", custom_event_rules},
      {"data count without columns", data_without_array},
      {"NULL description", null_description},
      {"code names", code_names},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("table description rules", NULL, NULL, tests);
  return 0;
}
