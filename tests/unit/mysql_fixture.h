/* tabq — what the MySQL/MariaDB statement tests share beyond the common host and checks: the
 * table with backticks in its names, the build on a connection's database, and jobs'
 * projection (no server). */
#ifndef TABQ_TEST_MYSQL_FIXTURE_H
#define TABQ_TEST_MYSQL_FIXTURE_H

#include <CUnit/Basic.h>

#include "mysql_plugin.h"
#include "server_tables.h"
#include "stmt_expect.h"

/* jobs' projection, as every claim returns it: the attempt plus one. */
#define JOBS_COLS "`id`, `attempt` + 1, `queue`, `pkey`, `headers`, `payload`, `title`, `size`"
/* Backticks in every name. */
extern const tabq_table weird;

/* A build of `t` in its own form, on a connection whose database is "tabq_test". */
tabq_build on(const tabq_table *t);

/* The suites of test_mysql_settlements.c. */
extern CU_TestInfo tabq_my_settlement_tests[];
extern CU_TestInfo tabq_my_bind_tests[]; /* test_mysql_binds.c */

#endif
