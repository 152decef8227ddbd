/* tabq — checked calls into a driver under test: see driver_calls.h. */
#include "driver_calls.h"

#include <time.h>
#include <tabq/sys/sql.h>

static const tabq_driver_v1 *drv;

void driver_calls_use(const tabq_driver_v1 *driver) {
  drv = driver;
}

tabq_conn *connect_url(const char *url) {
  tabq_conn *c = NULL;
  int rc = drv->connect(url, &c);
  if (rc != TABQ_OK)
    fprintf(stderr, "connect: %s\n", g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  return c;
}

int64_t connect_fails(const char *url, int code) {
  struct timespec t0, t1;
  tabq_conn *c = NULL;
  test_host_reset();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = drv->connect(url, &c);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc != code)
    fprintf(stderr, "connect %s: code %d, not %d: %s\n", url, rc, code, g_msg);
  CU_ASSERT_EQUAL(rc, code);
  CU_ASSERT_PTR_NULL(c);
  if (c)
    drv->close(c);
  return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
}

void exec_ok(tabq_conn *c, const char *sql) {
  int rc = drv->exec(c, sql);
  if (rc != TABQ_OK)
    fprintf(stderr, "exec %s: %s\n", sql, g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

tabq_prepared *prep(tabq_conn *c, const char *sql, unsigned nparams) {
  tabq_prepared *p = NULL;
  int rc = drv->prepare(c, sql, nparams, "test", &p);
  if (rc != TABQ_OK)
    fprintf(stderr, "prepare %s: %s\n", sql, g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return p;
}

void run_ok(tabq_prepared *p, const tabq_value *v, unsigned n) {
  int rc = drv->execute(p, v, n);
  if (rc != TABQ_OK)
    fprintf(stderr, "execute: %s\n", g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

bool next_row(tabq_prepared *p) {
  bool row = false;
  int rc = drv->next(p, &row);
  if (rc != TABQ_OK)
    fprintf(stderr, "next: %s\n", g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return row;
}

tabq_value cell(tabq_prepared *p, unsigned col) {
  tabq_value v = tabq_null();
  int rc = drv->cell(p, col, &v);
  if (rc != TABQ_OK)
    fprintf(stderr, "cell %u: %s\n", col, g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return v;
}

void expect_int(tabq_prepared *p, unsigned col, int64_t want) {
  tabq_value v = cell(p, col);
  CU_ASSERT_EQUAL(v.type, TABQ_T_INT);
  CU_ASSERT_EQUAL(v.u.i, want);
}

void expect_buf(tabq_prepared *p, unsigned col, tabq_type type, const char *want, size_t n) {
  tabq_value v = cell(p, col);
  CU_ASSERT_EQUAL(v.type, type);
  CU_ASSERT_EQUAL_FATAL(v.u.buf.len, n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v.u.buf.ptr);
  CU_ASSERT(memcmp(v.u.buf.ptr, want, n) == 0);
}

void expect_text(tabq_prepared *p, unsigned col, const char *want) {
  expect_buf(p, col, TABQ_T_TEXT, want, strlen(want));
}

int64_t query_int(tabq_conn *c, const char *sql, const tabq_value *v, unsigned n) {
  tabq_prepared *p = prep(c, sql, n);
  run_ok(p, v, n);
  int64_t out = INT64_MIN;
  if (next_row(p)) {
    tabq_value got = cell(p, 0);
    CU_ASSERT_EQUAL(got.type, TABQ_T_INT);
    out = got.type == TABQ_T_INT ? got.u.i : INT64_MIN;
  }
  drv->finalize(p);
  return out;
}

tabq_value text(const char *s) {
  return tabq_text(s, strlen(s));
}

tabq_value json(const char *s) {
  tabq_value v = text(s);
  v.type = TABQ_T_JSON;
  return v;
}

void column_default_of(const tabq_dialect_v1 *dl, tabq_conn *c, const char *table,
                       const char *column, char *buf, size_t cap) {
  tabq_table t = {.size = sizeof(tabq_table), .name = table, .id = {"id"}};
  tabq_build b = {.table = &t, .form = TABQ_FORM_ROWLOCK};
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL_FATAL(dl->column_default(&b, column, &st), TABQ_OK);
  tabq_prepared *p = prep(c, st.sql, 0);
  run_ok(p, NULL, 0);
  snprintf(buf, cap, "-");
  if (next_row(p)) {
    tabq_value v = cell(p, 0);
    if (v.type == TABQ_T_NULL)
      snprintf(buf, cap, "NULL");
    else
      snprintf(buf, cap, "%.*s", (int)v.u.buf.len, (const char *)v.u.buf.ptr);
  }
  drv->finalize(p);
  tabq_sql_free(&st);
}

void expect_column_default(const tabq_dialect_v1 *dl, tabq_conn *c, const char *table,
                           const char *column, const char *want) {
  char got[128];
  column_default_of(dl, c, table, column, got, sizeof got);
  if (strcmp(got, want))
    fprintf(stderr, "\ncolumn_default of %s.%s: got '%s', want '%s'\n", table, column, got, want);
  CU_ASSERT_STRING_EQUAL(got, want);
}
