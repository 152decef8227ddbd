/* tabq — what the PostgreSQL statement tests share beyond the common host and checks: the
 * dialect, the table with double quotes in its names, and a build in a table's own form (no
 * server). */
#ifndef TABQ_TEST_POSTGRES_FIXTURE_H
#define TABQ_TEST_POSTGRES_FIXTURE_H

#include <CUnit/Basic.h>

#include "postgres_plugin.h"
#include "server_tables.h"
#include "stmt_expect.h"

static const tabq_dialect_v1 *const dia = &tabq_pg_dialect;
/* Double quotes in every name. */
extern const tabq_table weird;

/* A build of `t` in its own form. */
tabq_build on(const tabq_table *t);

/* The suite of test_postgres_settlements.c. */
extern CU_TestInfo tabq_pg_settlement_tests[];

#endif
