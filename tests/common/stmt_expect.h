/* tabq — checks of what a dialect's statement builders produce: the exact SQL text and the
 * parameter ids, or the refusal. Built on test_host; a mismatch prints got and want, since
 * CUnit shows only the assertion's text. */
#ifndef TABQ_TEST_STMT_EXPECT_H
#define TABQ_TEST_STMT_EXPECT_H

#include <tabq/sys/sql.h>

#include "test_host.h"

/* Builds with `fn` into `st` (initialised here) and expects success; the caller frees it. */
void build(tabq_build_fn fn, const tabq_build *b, tabq_stmt *st);

/* Checks a statement's text and its parameter ids (a 0-terminated list). */
void expect_stmt(const tabq_stmt *st, const char *sql, ...);

/* Builds with `fn` and checks the text and the parameter ids (a 0-terminated list). */
void expect_built(tabq_build_fn fn, const tabq_build *b, const char *sql, ...);

/* Builds with `fn` and checks that the text ends with `end` and lists `nparams` parameters: for
 * statements too long to spell out (insert_rows of many rows). */
void expect_built_end(tabq_build_fn fn, const tabq_build *b, const char *end, unsigned nparams);

/* Builds with `fn` without and with b->project_due (ABI 1.8) and checks that the due time is the
 * one change: every `last` (the projection's last column, quoted, named nowhere else in the
 * statement) is followed by `due` (the quoted retry_after), and the parameters are the same. */
void expect_due_appended(tabq_build_fn fn, const tabq_build *b, const char *last, const char *due);

/* Builds with `fn` and expects success with no statement at all. */
void expect_none(tabq_build_fn fn, const tabq_build *b);

/* Builds with `fn`, expects `code`, and leaves the message in g_msg. */
void expect_refused(tabq_build_fn fn, const tabq_build *b, int code);

/* How a dialect builds a dead letter into a table: a copy, then a delete. */
typedef int (*tabq_dead_letter_fn)(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove);

/* Builds both dead letter statements and checks their text; each binds the id, then `token`
 * (0 for none). */
void expect_dead_letter(tabq_dead_letter_fn fn, const tabq_build *b, const char *copy_sql,
                        const char *remove_sql, int token);

/* Builds both dead letter statements, expects `code`, and leaves the message in g_msg. */
void expect_dead_letter_refused(tabq_dead_letter_fn fn, const tabq_build *b, int code);

#endif
