/* The PostgreSQL driver's live suite, on transaction control: BEGIN, COMMIT and ROLLBACK run as
 * statements the connection prepares by name (registered with the driver's suite,
 * test_postgres_driver.c). */
#include <CUnit/CUnit.h>
#include <stdio.h>

#include <tabq/sys/dialect.h>

#include "driver_calls.h"
#include "postgres_driver_suite.h"
#include "postgres_plugin.h"
#include "test_host.h"

static const tabq_driver_v1 *const drv = &tabq_pg_driver;

/* The transaction control statements a connection prepared, in the order it prepared them. */
static void prepared_controls(tabq_conn *c, char *buf, size_t cap) {
  query_text(c,
             "SELECT coalesce(string_agg(statement, ' | ' ORDER BY name), '') FROM "
             "pg_prepared_statements WHERE name LIKE 'tabq\\_tx%'",
             buf, cap);
}

/* BEGIN, COMMIT and ROLLBACK run prepared by name from their first use (no copy of their text
 * per transaction in libpq), also when the first ROLLBACK or COMMIT meets a failed transaction;
 * a text of several statements goes as text. */
void test_transaction_control_prepared(void) {
  NEED_DB();
  tabq_conn *c = connect_test();
  char got[256];
  prepared_controls(c, got, sizeof got);
  CU_ASSERT_STRING_EQUAL(got, "");
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL_FATAL(drv->begin(c, NULL), TABQ_OK);
    CU_ASSERT_EQUAL(query_int(c, "SELECT 1", NULL, 0), 1);
    CU_ASSERT_EQUAL_FATAL(drv->commit(c), TABQ_OK);
  }
  prepared_controls(c, got, sizeof got);
  CU_ASSERT_STRING_EQUAL(got, "BEGIN | COMMIT");
  /* The first ROLLBACK, inside a failed transaction. */
  CU_ASSERT_EQUAL_FATAL(drv->begin(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"), TABQ_OK);
  CU_ASSERT_EQUAL(drv->exec(c, "SELECT 1/0"), TABQ_BACKEND);
  CU_ASSERT_EQUAL(drv->rollback(c), TABQ_OK);
  /* COMMIT of a failed transaction still says it rolled back. */
  CU_ASSERT_EQUAL_FATAL(drv->begin(c, NULL), TABQ_OK);
  CU_ASSERT_EQUAL(drv->exec(c, "SELECT 1/0"), TABQ_BACKEND);
  CU_ASSERT_EQUAL(drv->commit(c), TABQ_BACKEND);
  STATE_IS("25P02");
  /* Several statements cannot be prepared: they go as text, and nothing more is kept. */
  CU_ASSERT_EQUAL_FATAL(drv->begin(c, "BEGIN; SET LOCAL statement_timeout = 5000"), TABQ_OK);
  char timeout[32];
  query_text(c, "SELECT current_setting('statement_timeout')", timeout, sizeof timeout);
  CU_ASSERT_STRING_EQUAL(timeout, "5s");
  CU_ASSERT_EQUAL(drv->commit(c), TABQ_OK);
  prepared_controls(c, got, sizeof got);
  CU_ASSERT_STRING_EQUAL(got, "BEGIN | COMMIT | BEGIN ISOLATION LEVEL REPEATABLE READ | ROLLBACK");
  CU_ASSERT(drv->alive(c));
  drv->close(c);
}
