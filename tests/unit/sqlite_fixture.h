/* tabq — what the SQLite dialect's statement tests and its live driver tests share: a tiny host
 * that records the last failure, the test tables, and helpers that build and check statements. */
#ifndef TABQ_TEST_SQLITE_FIXTURE_H
#define TABQ_TEST_SQLITE_FIXTURE_H

#include <string.h>

#include <CUnit/Basic.h>
#include <tabq/sql.h>

#include "sqlite_plugin.h"

/* ---- A tiny host --------------------------------------------------------------------------- */

/* The message of the last failure reported through the host, per thread. */
extern _Thread_local char g_msg[1024];

/* The host's fail: records the message in g_msg and returns `code`. */
int test_fail(int code, const char *sqlstate, long native, const char *fmt, ...);

extern const tabq_host test_host;

static const tabq_driver_v1 *const drv = &tabq_sqlite_driver;
static const tabq_dialect_v1 *const dia = &tabq_sqlite_dialect;
static const tabq_lease_v1 *const lease = &tabq_sqlite_lease;

#define MSG_HAS(text) CU_ASSERT_PTR_NOT_NULL(strstr(g_msg, (text)))

/* ---- Tables -------------------------------------------------------------------------------- */

/* Every role, and one generated data column. */
extern const tabq_table jobs;
/* The seed's thumbnail table, schema qualified. */
extern const tabq_table thumbs;
extern const tabq_table bare;
extern const tabq_table all_generated;
extern const tabq_table plain;
extern const tabq_table adv;

tabq_build lease_of(const tabq_table *t);

/* Builds with `fn` into `st` (initialised here); the caller frees it. */
void build(tabq_build_fn fn, const tabq_build *b, tabq_stmt *st);

/* Checks a statement's text and its parameter ids (a 0-terminated list). */
void expect_stmt(const tabq_stmt *st, const char *sql, ...);

/* Builds with `fn` and checks the result as expect_stmt does. */
void expect_built(tabq_build_fn fn, const tabq_build *b, const char *sql, ...);

#endif
