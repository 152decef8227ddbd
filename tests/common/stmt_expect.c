/* tabq — checks of built statements: see stmt_expect.h. */
#include "stmt_expect.h"

#include <stdarg.h>

void build(tabq_build_fn fn, const tabq_build *b, tabq_stmt *st) {
  tabq_sql_init(st, &test_host);
  int rc = fn(b, st);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  if (rc != TABQ_OK)
    fprintf(stderr, "\nbuild failed: %s\n", g_msg);
}

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

void expect_built(tabq_build_fn fn, const tabq_build *b, const char *sql, ...) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  int rc = fn(b, &st);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  if (rc != TABQ_OK) {
    /* No text to compare: checking it would only stop the test at its first failure. */
    fprintf(stderr, "\nbuild failed: %s\n", g_msg);
  } else {
    va_list ap;
    va_start(ap, sql);
    expect_stmt_v(&st, sql, ap);
    va_end(ap);
  }
  tabq_sql_free(&st);
}

void expect_built_end(tabq_build_fn fn, const tabq_build *b, const char *end, unsigned nparams) {
  tabq_stmt st;
  build(fn, b, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st.sql);
  size_t n = strlen(end);
  bool ends = st.len >= n && !strcmp(st.sql + st.len - n, end);
  CU_ASSERT(ends);
  if (!ends)
    fprintf(stderr, "\n got: ...%s\nwant: ...%s\n", st.len > n ? st.sql + st.len - n : st.sql, end);
  CU_ASSERT_EQUAL(st.nparams, nparams);
  tabq_sql_free(&st);
}

void expect_none(tabq_build_fn fn, const tabq_build *b) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL(fn(b, &st), TABQ_OK);
  CU_ASSERT_PTR_NULL(st.sql);
  CU_ASSERT_EQUAL(st.nparams, 0);
  tabq_sql_free(&st);
}

void expect_refused(tabq_build_fn fn, const tabq_build *b, int code) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  test_host_reset();
  CU_ASSERT_EQUAL(fn(b, &st), code);
  tabq_sql_free(&st);
}

void expect_dead_letter(tabq_dead_letter_fn fn, const tabq_build *b, const char *copy_sql,
                        const char *remove_sql, int token) {
  tabq_stmt copy, remove;
  tabq_sql_init(&copy, &test_host);
  tabq_sql_init(&remove, &test_host);
  CU_ASSERT_EQUAL_FATAL(fn(b, &copy, &remove), TABQ_OK);
  expect_stmt(&copy, copy_sql, TABQ_P_ID, token, 0);
  expect_stmt(&remove, remove_sql, TABQ_P_ID, token, 0);
  tabq_sql_free(&copy);
  tabq_sql_free(&remove);
}

void expect_dead_letter_refused(tabq_dead_letter_fn fn, const tabq_build *b, int code) {
  tabq_stmt copy, remove;
  tabq_sql_init(&copy, &test_host);
  tabq_sql_init(&remove, &test_host);
  test_host_reset();
  CU_ASSERT_EQUAL(fn(b, &copy, &remove), code);
  tabq_sql_free(&copy);
  tabq_sql_free(&remove);
}

/* Occurrences of `needle` in `hay`. */
static unsigned count_of(const char *hay, const char *needle) {
  unsigned n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle))
    n++;
  return n;
}

void expect_due_appended(tabq_build_fn fn, const tabq_build *b, const char *last, const char *due) {
  tabq_build with = *b;
  with.project_due = true;
  tabq_stmt plain, dated;
  build(fn, b, &plain);
  build(fn, &with, &dated);
  CU_ASSERT_PTR_NOT_NULL_FATAL(plain.sql);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dated.sql);
  /* The statement with each `last` followed by ", due", built from the plain one. */
  char want[4096] = "", joined[256];
  snprintf(joined, sizeof joined, "%s, %s", last, due);
  unsigned n = 0;
  for (const char *p = plain.sql, *hit; *p; p = hit + strlen(last), n++) {
    hit = strstr(p, last);
    if (!hit) {
      strncat(want, p, sizeof want - strlen(want) - 1);
      break;
    }
    strncat(want, p,
            (size_t)(hit - p) < sizeof want - strlen(want) - 1 ? (size_t)(hit - p)
                                                               : sizeof want - strlen(want) - 1);
    strncat(want, joined, sizeof want - strlen(want) - 1);
  }
  CU_ASSERT(n > 0);
  CU_ASSERT_EQUAL(count_of(dated.sql, joined), n);
  CU_ASSERT_STRING_EQUAL(dated.sql, want);
  if (strcmp(dated.sql, want) != 0)
    fprintf(stderr, "\n got: %s\nwant: %s\n", dated.sql, want);
  CU_ASSERT_EQUAL(dated.nparams, plain.nparams);
  CU_ASSERT(!memcmp(dated.params, plain.params, plain.nparams * sizeof plain.params[0]));
  tabq_sql_free(&plain);
  tabq_sql_free(&dated);
}
