/* tabq — calls into a live driver under test (PostgreSQL, MySQL/MariaDB) through its vtable,
 * and checks of the cells they read. A call that must succeed prints the host's message and
 * stops the test when it fails: every later step would only fail for the same reason. */
#ifndef TABQ_TEST_DRIVER_CALLS_H
#define TABQ_TEST_DRIVER_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#include <tabq/sys/dialect.h>

#include "test_host.h"

/* The driver the calls below go to: set once, before the first test. */
void driver_calls_use(const tabq_driver_v1 *driver);

tabq_conn *connect_url(const char *url);
/* A connect that must fail with `code` (printing the message otherwise): returns how many
 * milliseconds it took. */
int64_t connect_fails(const char *url, int code);
void exec_ok(tabq_conn *c, const char *sql);
/* Prepares under the statement name "test". */
tabq_prepared *prep(tabq_conn *c, const char *sql, unsigned nparams);
void run_ok(tabq_prepared *p, const tabq_value *v, unsigned n);
bool next_row(tabq_prepared *p);
tabq_value cell(tabq_prepared *p, unsigned col);

void expect_int(tabq_prepared *p, unsigned col, int64_t want);
void expect_buf(tabq_prepared *p, unsigned col, tabq_type type, const char *want, size_t n);
void expect_text(tabq_prepared *p, unsigned col, const char *want);

/* Runs a one-row query with the given parameters and returns its first cell as an integer
 * (INT64_MIN when there is no row or no integer). */
int64_t query_int(tabq_conn *c, const char *sql, const tabq_value *v, unsigned n);

/* Builds the dialect's column_default query for `column` of `table` and runs it: the default's
 * text into buf, "NULL" for a column without one, "-" when the query returns no row. */
void column_default_of(const tabq_dialect_v1 *dl, tabq_conn *c, const char *table,
                       const char *column, char *buf, size_t cap);
/* Expects column_default_of to give `want`. */
void expect_column_default(const tabq_dialect_v1 *dl, tabq_conn *c, const char *table,
                           const char *column, const char *want);

tabq_value text(const char *s);
tabq_value json(const char *s);

#endif
