/* tabq — the SQLite dialect tests' shared fixture: see sqlite_fixture.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_fixture.h"

/* ---- A tiny host --------------------------------------------------------------------------- */

_Thread_local char g_msg[1024];
static _Thread_local int g_code;

int test_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  (void)sqlstate;
  (void)native;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  g_code = code;
  return code;
}

static void test_log(int level, const char *fmt, ...) {
  if (level > TABQ_LOG_INFO)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
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

/* ---- Tables -------------------------------------------------------------------------------- */

static const tabq_col job_data[] = {{.name = "title"}, {.name = "size", .generated = true}};

/* Every role, and one generated data column. */
const tabq_table jobs = {
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .priority = {"priority"},
    .partition_key = {"pkey"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt"},
    .processed_at = {"processed_at"},
    .locked_until = {"locked_until"},
    .headers = {"headers"},
    .payload = {"payload"},
    .data = job_data,
    .ndata = 2,
};

/* The seed's thumbnail table, schema qualified. */
const tabq_table thumbs = {
    .name = "main.thumbs",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

const tabq_table bare = {.name = "bare", .id = {"id"}, .locked_until = {"lu"}};
const tabq_table all_generated = {
    .name = "ev", .id = {"id", .generated = true}, .locked_until = {"lu"}};
const tabq_table plain = {.name = "plain_jobs", .id = {"id"}, .payload = {"payload"}};
const tabq_table adv = {.name = "adv_jobs", .id = {"id"}, .advisory_lock = "k-{id}"};

tabq_build lease_of(const tabq_table *t) {
  tabq_build b = {.table = t, .form = TABQ_FORM_LEASE};
  return b;
}

/* Builds with `fn` into `st` (initialised here); the caller frees it. */
void build(tabq_build_fn fn, const tabq_build *b, tabq_stmt *st) {
  tabq_sql_init(st, &test_host);
  int rc = fn(b, st);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  if (rc != TABQ_OK)
    fprintf(stderr, "build failed: %s\n", g_msg);
}

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

/* Builds with `fn` and checks the result as expect_stmt does. */
void expect_built(tabq_build_fn fn, const tabq_build *b, const char *sql, ...) {
  tabq_stmt st;
  build(fn, b, &st);
  va_list ap;
  va_start(ap, sql);
  expect_stmt_v(&st, sql, ap);
  va_end(ap);
  tabq_sql_free(&st);
}
