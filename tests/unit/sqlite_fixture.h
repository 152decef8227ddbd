/* tabq — what the SQLite dialect's statement tests and its live driver tests share beyond the
 * common host and checks: the plugin's vtables and the test tables. */
#ifndef TABQ_TEST_SQLITE_FIXTURE_H
#define TABQ_TEST_SQLITE_FIXTURE_H

#include <CUnit/Basic.h>

#include "sqlite_plugin.h"
#include "stmt_expect.h"

static const tabq_driver_v1 *const drv = &tabq_sqlite_driver;
static const tabq_dialect_v1 *const dia = &tabq_sqlite_dialect;
static const tabq_lease_v1 *const lease = &tabq_sqlite_lease;

/* Every role, and one generated data column. */
extern const tabq_table jobs;
/* The seed's thumbnail table, schema qualified. */
extern const tabq_table thumbs;
extern const tabq_table bare;
extern const tabq_table all_generated;
extern const tabq_table plain;
extern const tabq_table adv;

/* A build of `t` in the lease form, the one SQLite builds. */
tabq_build lease_of(const tabq_table *t);

#endif
