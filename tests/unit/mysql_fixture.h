/* tabq — what the MySQL/MariaDB statement tests share: a tiny host that records the last
 * failure, the test tables, and helpers that build and check statements (no server). */
#ifndef TABQ_TEST_MYSQL_FIXTURE_H
#define TABQ_TEST_MYSQL_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <tabq/sql.h>

#include "mysql_plugin.h"

/* ---- A tiny host --------------------------------------------------------------------------- */

/* The message of the last failure reported through the host. */
extern char g_msg[1024];
extern const tabq_host test_host;
/* A realloc that always fails, for a starved host. */
void *no_realloc(void *p, size_t n);

#define MSG_HAS(text)                                                                              \
  do {                                                                                             \
    CU_ASSERT_PTR_NOT_NULL(strstr(g_msg, (text)));                                                 \
    if (!strstr(g_msg, (text)))                                                                    \
      fprintf(stderr, "\nmessage \"%s\" lacks \"%s\"\n", g_msg, (text));                           \
  } while (0)

/* ---- Tables -------------------------------------------------------------------------------- */

/* Every role but locked_until, and one generated data column: the row lock form. */
extern const tabq_table jobs;
/* jobs' projection, as every claim returns it: the attempt plus one. */
#define JOBS_COLS "`id`, `attempt` + 1, `queue`, `pkey`, `headers`, `payload`, `title`, `size`"
/* The seed's thumbnail table, database qualified ("app.thumbs"): a lease and nothing else. */
extern const tabq_table thumbs;
/* plain_jobs: id and payload only. bare: id and a lease (lu). ev: every column generated. */
extern const tabq_table plain, bare, all_generated;
/* Backticks in every name. */
extern const tabq_table weird;
/* adv_jobs: the advisory form keyed on "acct-{account}", with every condition. */
extern const tabq_table advj;
/* k: the advisory form keyed on "k-{id}", with no conditions. */
extern const tabq_table adv_min;

/* jobs with a lease: every role. */
tabq_table leased_jobs(void);

/* A build of `t` in its own form, on a connection whose database is "tabq_test". */
tabq_build on(const tabq_table *t);

/* ---- Checks -------------------------------------------------------------------------------- */

/* Checks a statement's text and its parameter ids (a 0-terminated list). */
void expect_stmt(const tabq_stmt *st, const char *sql, ...);
/* Builds with `fn` and checks the text and the parameter ids (a 0-terminated list). */
void expect_built(tabq_build_fn fn, const tabq_build *b, const char *sql, ...);
/* Builds with `fn` and expects success with no statement at all. */
void expect_none(tabq_build_fn fn, const tabq_build *b);
/* Builds with `fn`, expects `code`, and leaves the message in g_msg. */
void expect_refused(tabq_build_fn fn, const tabq_build *b, int code);

/* The suites of test_mysql_settlements.c. */
extern CU_TestInfo tabq_my_settlement_tests[];

#endif
