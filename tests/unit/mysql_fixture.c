/* tabq — the MySQL/MariaDB statement tests' host, tables and checks (mysql_fixture.h). */
#include "mysql_fixture.h"

#include <stdarg.h>
#include <stdlib.h>

/* ---- A tiny host --------------------------------------------------------------------------- */

char g_msg[1024];

static int test_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  (void)sqlstate;
  (void)native;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  return code;
}

static void test_log(int level, const char *fmt, ...) {
  (void)level;
  (void)fmt;
}

const tabq_host test_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = malloc,
    .realloc = realloc,
    .free = free,
    .fail = test_fail,
    .log = test_log,
};

void *no_realloc(void *p, size_t n) {
  (void)p;
  (void)n;
  return NULL;
}

/* ---- Tables -------------------------------------------------------------------------------- */

static const tabq_col job_data[] = {{.name = "title"}, {.name = "size", .generated = true}};

/* Every role but locked_until, and one generated data column: the row lock form. */
const tabq_table jobs = {
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .priority = {"priority"},
    .partition_key = {"pkey"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt"},
    .processed_at = {"processed_at"},
    .headers = {"headers"},
    .payload = {"payload"},
    .data = job_data,
    .ndata = 2,
};

/* The seed's thumbnail table, database qualified: a lease and nothing else. */
const tabq_table thumbs = {
    .name = "app.thumbs",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

/* No attempt, no group, no time. */
const tabq_table plain = {.name = "plain_jobs", .id = {"id"}, .payload = {"payload"}};
const tabq_table bare = {.name = "bare", .id = {"id"}, .locked_until = {"lu"}};
const tabq_table all_generated = {
    .name = "ev", .id = {"id", .generated = true}, .locked_until = {"lu"}};
/* Backticks in every name. */
const tabq_table weird = {
    .name = "a`pp.we`ird", .id = {"i`d"}, .attempt = {"att`empt"}, .payload = {"payload"}};

static const tabq_col adv_data[] = {{.name = "account"}};
const tabq_table advj = {
    .name = "adv_jobs",
    .id = {"id"},
    .group = {"queue"},
    .priority = {"priority"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt"},
    .processed_at = {"processed_at"},
    .data = adv_data,
    .ndata = 1,
    .advisory_lock = "acct-{account}",
};
const tabq_table adv_min = {
    .name = "k", .id = {"id"}, .payload = {"payload"}, .advisory_lock = "k-{id}"};

/* jobs with a lease: every role. */
tabq_table leased_jobs(void) {
  tabq_table t = jobs;
  t.locked_until = (tabq_col){.name = "locked_until"};
  return t;
}

tabq_build on(const tabq_table *t) {
  tabq_build b = {.table = t, .form = tabq_table_form(t), .database = "tabq_test"};
  return b;
}

/* ---- Helpers ------------------------------------------------------------------------------- */

/* Checks a statement's text and its parameter ids (a 0-terminated list). */
static void expect_stmt_v(const tabq_stmt *st, const char *sql, va_list ap) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(st->sql);
  CU_ASSERT_STRING_EQUAL(st->sql, sql);
  if (strcmp(st->sql, sql) != 0)
    fprintf(stderr, "\n got: %s\nwant: %s\n", st->sql, sql);
  unsigned n = 0;
  for (int id = va_arg(ap, int); id != 0; id = va_arg(ap, int), n++) {
    CU_ASSERT_FATAL(n < st->nparams);
    CU_ASSERT_EQUAL(st->params[n], id);
  }
  CU_ASSERT_EQUAL(st->nparams, n);
}

void expect_stmt(const tabq_stmt *st, const char *sql, ...) {
  va_list ap;
  va_start(ap, sql);
  expect_stmt_v(st, sql, ap);
  va_end(ap);
}

/* Builds with `fn` and checks the text and the parameter ids. */
void expect_built(tabq_build_fn fn, const tabq_build *b, const char *sql, ...) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  int rc = fn(b, &st);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  if (rc != TABQ_OK)
    fprintf(stderr, "\nbuild failed: %s\n", g_msg);
  else {
    va_list ap;
    va_start(ap, sql);
    expect_stmt_v(&st, sql, ap);
    va_end(ap);
  }
  tabq_sql_free(&st);
}

/* Builds with `fn` and expects success with no statement at all. */
void expect_none(tabq_build_fn fn, const tabq_build *b) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL(fn(b, &st), TABQ_OK);
  CU_ASSERT_PTR_NULL(st.sql);
  CU_ASSERT_EQUAL(st.nparams, 0);
  tabq_sql_free(&st);
}

/* Builds with `fn`, expects `code`, and leaves the message in g_msg. */
void expect_refused(tabq_build_fn fn, const tabq_build *b, int code) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  g_msg[0] = '\0';
  CU_ASSERT_EQUAL(fn(b, &st), code);
  tabq_sql_free(&st);
}
