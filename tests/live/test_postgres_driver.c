/* tabq — tests of the PostgreSQL driver against a live server (TABQ_TEST_POSTGRES_URL), through
 * its vtable only: URL forms, bounded connects, every type both ways, affected counts, schema
 * errors, row locks, advisory locks, serialization failures, LISTEN/NOTIFY, a connection killed
 * by the server; statements bounded on a server that stops answering, keepalives and the
 * unbounded wait for notifications are in postgres_bounds.c, transaction control run prepared in
 * postgres_tx_control.c.
 *
 * Every run works in a schema of its own (drv_<pid>), dropped at the end, and suffixes its
 * advisory key and channel with the pid, so runs side by side do not meet. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <tabq/sys/dialect.h>
#include <tabq/sys/sql.h>

#include "cunit_main.h"
#include "driver_calls.h"
#include "loopback.h"
#include "postgres_driver_suite.h"
#include "postgres_plugin.h"

static const tabq_driver_v1 *const drv = &tabq_pg_driver;

/* ---- Connections and helpers --------------------------------------------------------------- */

const char *g_url;
static char g_schema[32], g_key[32];
char g_channel[48];
tabq_conn *g_c1, *g_c2;

tabq_conn *connect_test(void) {
  tabq_conn *c = connect_url(g_url);
  char sql[96];
  snprintf(sql, sizeof sql, "SET search_path = %s", g_schema);
  exec_ok(c, sql);
  return c;
}

void query_text(tabq_conn *c, const char *sql, char *buf, size_t cap) {
  tabq_prepared *p = prep(c, sql, 0);
  run_ok(p, NULL, 0);
  buf[0] = '\0';
  if (next_row(p)) {
    tabq_value v = cell(p, 0);
    CU_ASSERT_EQUAL(v.type, TABQ_T_TEXT);
    snprintf(buf, cap, "%.*s", (int)v.u.buf.len, (const char *)v.u.buf.ptr);
  }
  drv->finalize(p);
}

static tabq_value list(const int64_t *items, size_t n) {
  return (tabq_value){.type = TABQ_T_INT_LIST, .u.list = {items, n}};
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Setup --------------------------------------------------------------------------------- */

/* The first test of the suite rather than its init: a failing init would skip the suite
 * without failing the run. Every later test needs the server. */
static void test_open(void) {
  g_url = getenv("TABQ_TEST_POSTGRES_URL");
  if (!g_url || !*g_url)
    CU_FAIL_FATAL("TABQ_TEST_POSTGRES_URL is not set (postgres://user@host:port/db)");
  unsetenv("PGAPPNAME"); /* the application_name test reads the driver's own fallback */
  snprintf(g_schema, sizeof g_schema, "drv_%ld", (long)getpid());
  snprintf(g_key, sizeof g_key, "drv-key-%ld", (long)getpid());
  snprintf(g_channel, sizeof g_channel, "drv \"chan\" %ld", (long)getpid());
  tabq_conn *c = connect_url(g_url);
  char sql[1024];
  snprintf(sql, sizeof sql,
           "SET client_min_messages = warning; DROP SCHEMA IF EXISTS %s CASCADE; "
           "CREATE SCHEMA %s; SET search_path = %s;"
           "CREATE TABLE types (id int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, small int2, "
           "i4 int4, t text, vc varchar(20), b bytea, ts timestamptz, tsn timestamp, j jsonb, "
           "js json, flag bool);"
           "CREATE TABLE q (id int4 PRIMARY KEY, queue text NOT NULL);"
           "CREATE TABLE ser (id int4 PRIMARY KEY, n int4 NOT NULL);",
           g_schema, g_schema, g_schema);
  exec_ok(c, sql);
  drv->close(c);
  g_c1 = connect_test();
  g_c2 = connect_test();
}

static void test_close(void) {
  NEED_DB();
  char sql[128];
  snprintf(sql, sizeof sql, "SET client_min_messages = warning; DROP SCHEMA %s CASCADE", g_schema);
  exec_ok(g_c1, sql);
}

static int suite_clean(void) {
  drv->close(g_c1);
  drv->close(g_c2);
  g_c1 = g_c2 = NULL;
  return 0;
}

/* ---- URLs and the server ------------------------------------------------------------------ */

/* The test URL with its scheme swapped between postgres:// and postgresql://. */
static void other_scheme(char *buf, size_t cap) {
  if (strncmp(g_url, "postgres://", 11) == 0)
    snprintf(buf, cap, "postgresql://%s", g_url + 11);
  else if (strncmp(g_url, "postgresql://", 13) == 0)
    snprintf(buf, cap, "postgres://%s", g_url + 13);
  else
    snprintf(buf, cap, "%s", g_url);
}

/* The test URL as postgres:KEY=VALUE ..., through libpq's own parser. */
void keyword_form(char *buf, size_t cap) {
  char *err = NULL;
  const char *conninfo = strncmp(g_url, "postgres:", 9) == 0 && g_url[9] != '/' ? g_url + 9 : g_url;
  PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(opts);
  size_t len = (size_t)snprintf(buf, cap, "postgres:");
  for (PQconninfoOption *o = opts; o->keyword; o++)
    if (o->val && *o->val && len < cap)
      len += (size_t)snprintf(buf + len, cap - len, " %s='%s'", o->keyword, o->val);
  PQconninfoFree(opts);
}

static void expect_app_name(const char *url, const char *want) {
  tabq_conn *c = connect_url(url);
  char name[64];
  query_text(c, "SELECT current_setting('application_name')", name, sizeof name);
  CU_ASSERT_STRING_EQUAL(name, want);
  drv->close(c);
}

static void test_urls(void) {
  NEED_DB();
  char url[1024];
  expect_app_name(g_url, "tabq");
  other_scheme(url, sizeof url);
  expect_app_name(url, "tabq");
  keyword_form(url, sizeof url);
  expect_app_name(url, "tabq");
  snprintf(url, sizeof url, "%s%sapplication_name=drv_custom", g_url,
           strchr(g_url, '?') ? "&" : "?");
  expect_app_name(url, "drv_custom");

  /* Nothing listens on port 1: BACKEND, naming the address but never the password. */
  tabq_conn *c = NULL;
  CU_ASSERT_EQUAL(
      drv->connect("postgres://tabq:s3cretpw@127.0.0.1:1/tabq_test?password=s3cretpw", &c),
      TABQ_BACKEND);
  CU_ASSERT_PTR_NULL(c);
  MSG_HAS("127.0.0.1");
  MSG_HAS("postgres://tabq:***@127.0.0.1:1/tabq_test?password=***");
  MSG_LACKS("s3cretpw");
  MSG_LACKS("\n");
  CU_ASSERT_EQUAL(drv->connect("postgresql:host=127.0.0.1 port=1 user=tabq password='s3cret pw' "
                               "dbname=tabq_test",
                               &c),
                  TABQ_BACKEND);
  MSG_HAS("password=***");
  MSG_LACKS("s3cret");
  CU_ASSERT_EQUAL(drv->connect("mysql://tabq@127.0.0.1/x", &c), TABQ_INVALID);
}

/* ---- Bounded connects --------------------------------------------------------------------- */

/* Well past every timeout below, and far short of the hang they prevent: a liveness bound, not
 * a speed assertion. */
#define LIVENESS_MS 15000

/* A connect to a server that accepts and never answers ends with BACKEND, saying it timed out
 * `after` ("after 2 s") and naming the setting and the URL with its password `masked`. */
static void expect_timeout(const char *url, const char *after, const char *masked) {
  int64_t took = connect_fails(url, TABQ_BACKEND);
  MSG_HAS("the connect timed out");
  MSG_HAS(after);
  MSG_HAS("connect_timeout=SECONDS");
  MSG_HAS(masked);
  MSG_LACKS("s3cretpw");
  CU_ASSERT(took < LIVENESS_MS);
}

static void test_connect_timeout(void) {
  silent_listener l;
  CU_ASSERT_FATAL(silent_listener_start(&l));
  unsetenv("PGCONNECT_TIMEOUT"); /* set only where the test says */
  char url[256];
  /* The URL's value wins over the default; libpq raises 1 to its minimum, 2. */
  snprintf(url, sizeof url, "postgres://tabq:s3cretpw@127.0.0.1:%u/tabq_test?connect_timeout=1",
           l.port);
  expect_timeout(url, "after 2 s", "postgres://tabq:***@127.0.0.1");
  /* In the key=value form too. */
  snprintf(url, sizeof url,
           "postgres:host=127.0.0.1 port=%u user=tabq password=s3cretpw dbname=tabq_test "
           "connect_timeout=2",
           l.port);
  expect_timeout(url, "after 2 s", "password=***");
  /* PGCONNECT_TIMEOUT stands in for a URL without one. */
  snprintf(url, sizeof url, "postgresql://tabq:s3cretpw@127.0.0.1:%u/tabq_test", l.port);
  setenv("PGCONNECT_TIMEOUT", "3", 1);
  expect_timeout(url, "after 3 s", "postgresql://tabq:***@127.0.0.1");
  unsetenv("PGCONNECT_TIMEOUT");
  /* Neither: the driver's default. */
  expect_timeout(url, "after 10 s", "postgresql://tabq:***@127.0.0.1");
  silent_listener_stop(&l);
}

/* A loopback port nobody listens on: refused at once, saying so. */
static void test_connect_refused(void) {
  unsigned port;
  int fd = refusing_port(&port);
  CU_ASSERT_FATAL(fd >= 0);
  char url[256];
  snprintf(url, sizeof url, "postgres://tabq:s3cretpw@127.0.0.1:%u/tabq_test", port);
  int64_t took = connect_fails(url, TABQ_BACKEND);
  MSG_HAS("refused");
  MSG_HAS("tabq:***@127.0.0.1");
  MSG_LACKS("timed out");
  MSG_LACKS("s3cretpw");
  CU_ASSERT(took < 5000);
  close(fd);
}

static void test_server_version(void) {
  NEED_DB();
  char text[64], want[64];
  uint32_t number = 0;
  CU_ASSERT_EQUAL(drv->server_version(g_c1, text, sizeof text, &number), TABQ_OK);
  query_text(g_c1, "SELECT current_setting('server_version')", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(text, want);
  CU_ASSERT_EQUAL((int64_t)number,
                  query_int(g_c1, "SELECT current_setting('server_version_num')::int4", NULL, 0));
  CU_ASSERT(number >= 110000);
  CU_ASSERT(drv->alive(g_c1));
}

/* ---- Types --------------------------------------------------------------------------------- */

static const int64_t t0 = INT64_C(1700000000123456);     /* 2023-11-14 22:13:20.123456 UTC */
static const int64_t t_old = INT64_C(-1234567890123457); /* 1930-11-18, before both epochs */
static const char blob[] = {'a', 0, 'b', 0, (char)0xff};

static void test_types_round_trip(void) {
  NEED_DB();
  tabq_prepared *ins = prep(g_c1,
                            "INSERT INTO types (small, i4, t, vc, b, ts, tsn, j, js, flag) "
                            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
                            10);
  const tabq_value row1[] = {
      tabq_int(-7),       tabq_int(INT32_MAX),           text("h\xc3\xa9llo"),
      tabq_text(NULL, 0), tabq_bytes(blob, sizeof blob), tabq_time(t0),
      tabq_time(t_old),   json("{\"a\": [1, 2]}"),       json(" {\"b\":1} "),
      tabq_int(1)};
  run_ok(ins, row1, 10);
  CU_ASSERT_EQUAL(drv->affected(ins), 1);
  CU_ASSERT_FATAL(next_row(ins));
  int64_t id1 = cell(ins, 0).u.i;
  CU_ASSERT_FALSE(next_row(ins));
  drv->reset(ins);
  tabq_value nulls[10];
  for (int i = 0; i < 10; i++)
    nulls[i] = tabq_null();
  run_ok(ins, nulls, 10);
  CU_ASSERT_FATAL(next_row(ins));
  int64_t id2 = cell(ins, 0).u.i;
  drv->finalize(ins);

  tabq_prepared *sel = prep(g_c1,
                            "SELECT small, i4, t, vc, b, ts, tsn, j, js, flag, id FROM types "
                            "WHERE id = $1",
                            1);
  tabq_value id = tabq_int(id1);
  run_ok(sel, &id, 1);
  CU_ASSERT_FATAL(next_row(sel));
  expect_int(sel, 0, -7);
  expect_int(sel, 1, INT32_MAX);
  expect_text(sel, 2, "h\xc3\xa9llo");
  expect_text(sel, 3, "");
  expect_buf(sel, 4, TABQ_T_BYTES, blob, sizeof blob);
  tabq_value v = cell(sel, 5);
  CU_ASSERT_EQUAL(v.type, TABQ_T_TIME);
  CU_ASSERT_EQUAL(v.u.time_us, t0);
  v = cell(sel, 6);
  CU_ASSERT_EQUAL(v.type, TABQ_T_TIME);
  CU_ASSERT_EQUAL(v.u.time_us, t_old);
  expect_buf(sel, 7, TABQ_T_JSON, "{\"a\": [1, 2]}", 13); /* jsonb as the server renders it */
  expect_buf(sel, 8, TABQ_T_JSON, " {\"b\":1} ", 9);      /* json keeps its text */
  expect_int(sel, 9, 1);
  expect_int(sel, 10, id1);
  CU_ASSERT_EQUAL(drv->cell(sel, 11, &v), TABQ_INVALID);
  CU_ASSERT_FALSE(next_row(sel));
  CU_ASSERT_EQUAL(drv->cell(sel, 0, &v), TABQ_INVALID); /* past the last row */

  id = tabq_int(id2);
  run_ok(sel, &id, 1);
  CU_ASSERT_FATAL(next_row(sel));
  for (unsigned col = 0; col < 10; col++)
    CU_ASSERT_EQUAL(cell(sel, col).type, TABQ_T_NULL);
  drv->finalize(sel);

  /* The server reads the times as the same instants. */
  tabq_value when = tabq_time(t0);
  CU_ASSERT_EQUAL(
      query_int(g_c1, "SELECT $1 = '2023-11-14 22:13:20.123456+00'::timestamptz", &when, 1), 1);
  when = tabq_time(t_old);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT $1 = '1930-11-18 00:28:29.876543'::timestamp", &when, 1),
                  1);

  /* = ANY over a list of ids, int8[] and int4[]. */
  const int64_t ids[] = {id2, 999999, id1};
  tabq_value l = list(ids, 3);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT count(*) FROM types WHERE id = ANY($1)", &l, 1), 2);
  l = list(NULL, 0);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT count(*) FROM types WHERE id = ANY($1)", &l, 1), 0);
  const int64_t small[] = {1, -2, 3};
  l = list(small, 3);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT $1::int4[] = ARRAY[1, -2, 3]", &l, 1), 1);
  const int64_t big[] = {1, INT64_C(1) << 40};
  l = list(big, 2);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT ($1::int8[])[2]", &l, 1), INT64_C(1) << 40);
}

static void test_types_more(void) {
  NEED_DB();
  /* Floats read as reals (ABI 1.5), NaN and the infinities included. */
  tabq_prepared *p = prep(g_c1,
                          "SELECT 0.1::float8, 1.5::float4, 'NaN'::float8, '-Infinity'::float8, "
                          "'pg_class'::regclass::oid, 'x'::name, 'ab'::char(3)",
                          0);
  run_ok(p, NULL, 0);
  CU_ASSERT_FATAL(next_row(p));
  tabq_value a = cell(p, 0), b = cell(p, 1), nan = cell(p, 2), inf = cell(p, 3);
  CU_ASSERT(a.type == TABQ_T_REAL && a.u.r == 0.1);
  CU_ASSERT(b.type == TABQ_T_REAL && b.u.r == 1.5);
  CU_ASSERT(nan.type == TABQ_T_REAL && isnan(nan.u.r));
  CU_ASSERT(inf.type == TABQ_T_REAL && isinf(inf.u.r) && inf.u.r < 0);
  expect_int(p, 4, 1259);
  expect_text(p, 5, "x");
  expect_text(p, 6, "ab ");
  drv->finalize(p);

  /* Reals (and integers) bind to float8 and float4 placeholders. */
  p = prep(g_c1, "SELECT $1::float8, $2::float4, $3::float8", 3);
  tabq_value reals[] = {tabq_real(2.25), tabq_real(0.5), tabq_int(3)};
  run_ok(p, reals, 3);
  CU_ASSERT_FATAL(next_row(p));
  CU_ASSERT(cell(p, 0).u.r == 2.25 && cell(p, 1).u.r == 0.5 && cell(p, 2).u.r == 3.0);
  drv->finalize(p);

  /* A type the driver does not read names the column and the OID. */
  p = prep(g_c1, "SELECT 1, 1.5::numeric", 0);
  run_ok(p, NULL, 0);
  CU_ASSERT_FATAL(next_row(p));
  tabq_value v;
  CU_ASSERT_EQUAL(drv->cell(p, 1, &v), TABQ_INVALID);
  MSG_HAS("column 1");
  MSG_HAS("1700");
  drv->finalize(p);

  /* Values that do not fit their placeholder's type. */
  p = prep(g_c1, "SELECT $1::int4, $2::int2", 2);
  tabq_value bad[] = {text("7"), tabq_int(1)};
  CU_ASSERT_EQUAL(drv->execute(p, bad, 2), TABQ_INVALID);
  MSG_HAS("$1");
  MSG_HAS("int4");
  bad[0] = tabq_int(INT64_C(1) << 31);
  CU_ASSERT_EQUAL(drv->execute(p, bad, 2), TABQ_INVALID);
  MSG_HAS("out of its range");
  bad[0] = tabq_int(5);
  bad[1] = tabq_int(40000);
  CU_ASSERT_EQUAL(drv->execute(p, bad, 2), TABQ_INVALID);
  MSG_HAS("$2");
  MSG_HAS("int2");
  CU_ASSERT_EQUAL(drv->execute(p, bad, 1), TABQ_INVALID);
  bad[1] = tabq_int(-3);
  run_ok(p, bad, 2);
  CU_ASSERT_FATAL(next_row(p));
  expect_int(p, 0, 5);
  expect_int(p, 1, -3);
  drv->finalize(p);
  p = prep(g_c1, "SELECT $1::numeric", 1);
  bad[0] = tabq_int(1);
  CU_ASSERT_EQUAL(drv->execute(p, bad, 1), TABQ_INVALID);
  MSG_HAS("cannot bind");
  drv->finalize(p);

  /* bool from 0/1; text into bytea; empty bytes are no NULL; jsonb buffers grow and shrink. */
  tabq_value one = tabq_int(1);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT NOT $1::bool", &one, 1), 0);
  tabq_value empty = tabq_bytes(NULL, 0);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT length($1::bytea)", &empty, 1), 0);
  p = prep(g_c1, "SELECT $1::bytea, $2::jsonb", 2);
  char long_json[300];
  snprintf(long_json, sizeof long_json, "\"%0250d\"", 7);
  tabq_value vals[] = {text("ab"), json(long_json)};
  run_ok(p, vals, 2);
  CU_ASSERT_FATAL(next_row(p));
  expect_buf(p, 0, TABQ_T_BYTES, "ab", 2);
  expect_buf(p, 1, TABQ_T_JSON, long_json, strlen(long_json));
  vals[1] = json("[]");
  run_ok(p, vals, 2);
  CU_ASSERT_FATAL(next_row(p));
  expect_buf(p, 1, TABQ_T_JSON, "[]", 2);
  drv->finalize(p);
}

/* Once its buffers have grown to the largest value, executing a statement allocates nothing
 * through the host (libpq's results are libpq's). */
static void test_steady_state(void) {
  NEED_DB();
  tabq_prepared *p = prep(g_c1,
                          "SELECT cardinality($1::int8[]), $2::jsonb, $3::timestamptz, $4::text, "
                          "$5::bytea, $6::int4, 1.5::float8",
                          6);
  const int64_t ids[] = {1, 2, 3, 4, 5, 6, 7, 8};
  tabq_value v[] = {list(ids, 8), json("{\"k\": \"v\"}"), tabq_time(t0),
                    text("t"),    tabq_bytes("b", 1),     tabq_int(3)};
  run_ok(p, v, 6);
  unsigned long before = g_allocs;
  for (int i = 0; i < 200; i++) {
    v[0] = list(ids, (size_t)(i % 9));
    v[1] = json(i % 2 ? "{}" : "{\"k\": \"v\"}");
    run_ok(p, v, 6);
    CU_ASSERT_FATAL(next_row(p));
    expect_int(p, 0, i % 9);
    CU_ASSERT(cell(p, 6).type == TABQ_T_REAL && cell(p, 6).u.r == 1.5);
    drv->reset(p);
  }
  CU_ASSERT_EQUAL(g_allocs, before);
  drv->finalize(p);
}

static void test_affected(void) {
  NEED_DB();
  tabq_prepared *p = prep(g_c1, "INSERT INTO q VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, 'a')", 0);
  run_ok(p, NULL, 0);
  CU_ASSERT_EQUAL(drv->affected(p), 4);
  CU_ASSERT_FALSE(next_row(p));
  drv->reset(p);
  CU_ASSERT_EQUAL(drv->affected(p), 4); /* still known after reset */
  drv->finalize(p);
  p = prep(g_c1, "UPDATE q SET queue = queue WHERE queue = $1", 1);
  tabq_value a = text("a");
  run_ok(p, &a, 1);
  CU_ASSERT_EQUAL(drv->affected(p), 3);
  a = text("none");
  run_ok(p, &a, 1);
  CU_ASSERT_EQUAL(drv->affected(p), 0);
  drv->finalize(p);
  p = prep(g_c1, "SELECT id FROM q ORDER BY id", 0);
  run_ok(p, NULL, 0);
  CU_ASSERT_EQUAL(drv->affected(p), 4); /* a SELECT's tag counts its rows */
  drv->finalize(p);
}

static void test_schema_errors(void) {
  NEED_DB();
  tabq_prepared *p = NULL;
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT id FROM drv_absent", 0, "claim", &p), TABQ_SCHEMA);
  CU_ASSERT_PTR_NULL(p);
  STATE_IS("42P01");
  MSG_HAS("claim statement: relation \"drv_absent\" does not exist");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "UPDATE q SET nope = 1 WHERE id = $1", 1, "ack", &p),
                  TABQ_SCHEMA);
  STATE_IS("42703");
  MSG_HAS("ack statement: ");
  MSG_HAS("nope");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT 1 FROM drv_no_schema.q", 0, "fetch", &p), TABQ_SCHEMA);
  STATE_IS("42P01"); /* a table in a missing schema is a missing table */
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT drv_no_schema.f($1)", 1, "fetch", &p), TABQ_SCHEMA);
  STATE_IS("3F000");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT drv_no_such_function($1)", 1, "lock", &p),
                  TABQ_SCHEMA);
  STATE_IS("42883");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELEKT 1", 0, "claim", &p), TABQ_BACKEND);
  STATE_IS("42601");
  MSG_HAS("claim statement: ");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT $1::int4, $2::text", 1, "claim", &p), TABQ_INVALID);
  MSG_HAS("2 placeholders, not 1");
  CU_ASSERT_PTR_NULL(p);
  /* Only this query's own statement is left, beside the transaction control kept prepared. */
  CU_ASSERT_EQUAL(query_int(g_c1,
                            "SELECT count(*) FROM pg_prepared_statements "
                            "WHERE name NOT LIKE 'tabq\\_tx%'",
                            NULL, 0),
                  1);
  CU_ASSERT(drv->alive(g_c1));
}

/* ---- Locks and transactions ---------------------------------------------------------------- */

static void test_skip_locked(void) {
  NEED_DB();
  const char *sql = "SELECT id FROM q WHERE queue = $1 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
  tabq_prepared *p1 = prep(g_c1, sql, 1), *p2 = prep(g_c2, sql, 1);
  tabq_value a = text("a");
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, "BEGIN"), TABQ_OK);
  run_ok(p1, &a, 1);
  CU_ASSERT_FATAL(next_row(p1));
  expect_int(p1, 0, 1);
  drv->reset(p1);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c2, NULL), TABQ_OK);
  run_ok(p2, &a, 1);
  CU_ASSERT_FATAL(next_row(p2));
  expect_int(p2, 0, 2); /* the first row is locked by the first connection */
  drv->reset(p2);
  CU_ASSERT_EQUAL(drv->commit(g_c1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->commit(g_c2), TABQ_OK);
  drv->finalize(p1);
  drv->finalize(p2);
}

static void test_advisory(void) {
  NEED_DB();
  const char *lock = "SELECT pg_try_advisory_lock(hashtextextended($1, 0))";
  const char *unlock = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";
  tabq_value key = text(g_key);
  CU_ASSERT_EQUAL(query_int(g_c1, lock, &key, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c2, lock, &key, 1), 0);
  CU_ASSERT_EQUAL(query_int(g_c1, unlock, &key, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c2, lock, &key, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c2, unlock, &key, 1), 1);
}

static void test_serialization_failure(void) {
  NEED_DB();
  exec_ok(g_c1, "INSERT INTO ser VALUES (1, 0)");
  const char *rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
  const char *upd = "UPDATE ser SET n = n + 1 WHERE id = $1";
  tabq_prepared *u1 = prep(g_c1, upd, 1), *u2 = prep(g_c2, upd, 1);
  tabq_value id = tabq_int(1);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, rr), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c2, rr), TABQ_OK);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT n FROM ser WHERE id = 1", NULL, 0), 0);
  CU_ASSERT_EQUAL(query_int(g_c2, "SELECT n FROM ser WHERE id = 1", NULL, 0), 0);
  run_ok(u1, &id, 1);
  CU_ASSERT_EQUAL(drv->affected(u1), 1);
  CU_ASSERT_EQUAL(drv->commit(g_c1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->execute(u2, &id, 1), TABQ_BACKEND);
  STATE_IS("40001");
  MSG_HAS("test statement: could not serialize access");
  /* COMMIT of the failed transaction only rolls it back: that is no success. */
  CU_ASSERT_EQUAL(drv->commit(g_c2), TABQ_BACKEND);
  STATE_IS("25P02");
  CU_ASSERT_EQUAL(drv->rollback(g_c2), TABQ_OK); /* none open: nothing to do */
  CU_ASSERT_EQUAL(query_int(g_c2, "SELECT n FROM ser WHERE id = 1", NULL, 0), 1);

  /* A failure inside a transaction, then ROLLBACK, leaves the connection usable. */
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c2, NULL), TABQ_OK);
  CU_ASSERT_EQUAL(drv->begin(g_c2, NULL), TABQ_INVALID);
  CU_ASSERT_EQUAL(drv->exec(g_c2, "INSERT INTO ser VALUES (1, 5)"), TABQ_BACKEND);
  STATE_IS("23505");
  CU_ASSERT_EQUAL(drv->rollback(g_c2), TABQ_OK);
  CU_ASSERT(drv->alive(g_c2));
  drv->finalize(u1);
  drv->finalize(u2);
}

/* ---- LISTEN/NOTIFY ------------------------------------------------------------------------- */

static void notify(const char *channel, const char *payload) {
  tabq_value v[] = {text(channel), text(payload)};
  tabq_prepared *p = prep(g_c2, "SELECT pg_notify($1, $2)", 2);
  run_ok(p, v, 2);
  drv->finalize(p);
}

static void test_notify(void) {
  NEED_DB();
  CU_ASSERT_EQUAL_FATAL(drv->listen(g_c1, g_channel), TABQ_OK);
  char channel[64], payload[64];
  bool got = false;
  notify(g_channel, "grp");
  CU_ASSERT_EQUAL(
      drv->wait_notify(g_c1, 5000, channel, sizeof channel, payload, sizeof payload, &got),
      TABQ_OK);
  CU_ASSERT_FATAL(got);
  CU_ASSERT_STRING_EQUAL(channel, g_channel);
  CU_ASSERT_STRING_EQUAL(payload, "grp");

  /* Nothing more: a wait times out. */
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(
      drv->wait_notify(g_c1, 150, channel, sizeof channel, payload, sizeof payload, &got), TABQ_OK);
  CU_ASSERT_FALSE(got);
  int64_t took = now_ms() - start;
  CU_ASSERT(took >= 140 && took < 2000);

  /* A notification read along with another statement's result waits in the queue; a short
   * buffer cuts the text at a character boundary. */
  notify(g_channel, "abcd\xc3\xa9"
                    "f");
  usleep(200 * 1000);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT 1", NULL, 0), 1);
  CU_ASSERT_EQUAL(drv->wait_notify(g_c1, 0, channel, 4, payload, 6, &got), TABQ_OK);
  CU_ASSERT_FATAL(got);
  CU_ASSERT_STRING_EQUAL(channel, "drv");
  CU_ASSERT_STRING_EQUAL(payload, "abcd");
  notify(g_channel, "");
  CU_ASSERT_EQUAL(
      drv->wait_notify(g_c1, 5000, channel, sizeof channel, payload, sizeof payload, &got),
      TABQ_OK);
  CU_ASSERT(got);
  CU_ASSERT_STRING_EQUAL(payload, "");
  exec_ok(g_c1, "UNLISTEN *");
}

/* ---- A connection the server ends ---------------------------------------------------------- */

static void terminate(tabq_conn *victim) {
  tabq_value pid = tabq_int(query_int(victim, "SELECT pg_backend_pid()", NULL, 0));
  CU_ASSERT_EQUAL(query_int(g_c2, "SELECT pg_terminate_backend($1)", &pid, 1), 1);
}

static void test_terminated(void) {
  NEED_DB();
  /* An idle connection: alive() notices without a statement. */
  tabq_conn *c = connect_test();
  CU_ASSERT(drv->alive(c));
  terminate(c);
  bool alive = true;
  for (int i = 0; i < 250 && alive; i++) {
    alive = drv->alive(c);
    if (alive)
      usleep(20 * 1000);
  }
  CU_ASSERT_FALSE(alive);
  CU_ASSERT_EQUAL(drv->exec(c, "SELECT 1"), TABQ_BACKEND);
  CU_ASSERT_FALSE(drv->alive(c));
  drv->close(c);

  /* A listening connection: wait_notify fails instead of waiting out its timeout. */
  c = connect_test();
  CU_ASSERT_EQUAL_FATAL(drv->listen(c, g_channel), TABQ_OK);
  tabq_prepared *p = prep(c, "SELECT 1", 0);
  terminate(c);
  char channel[64], payload[64];
  bool got = true;
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(drv->wait_notify(c, 5000, channel, sizeof channel, payload, sizeof payload, &got),
                  TABQ_BACKEND);
  CU_ASSERT_FALSE(got);
  CU_ASSERT(now_ms() - start < 4000);
  CU_ASSERT_FALSE(drv->alive(c));
  CU_ASSERT_EQUAL(drv->execute(p, NULL, 0), TABQ_BACKEND);
  drv->close(c); /* frees p too */
}

/* ---- Registration -------------------------------------------------------------------------- */

/* The plan of `claim` in `mode` (force_generic_plan or force_custom_plan), EXPLAINed on the
 * server: PREPAREd with its own placeholders, each bound to a literal of its kind. Lines of the
 * plan into `plan`. */
static void explain_claim(const tabq_stmt *claim, const char *mode, char *plan, size_t cap) {
  char args[256] = "";
  for (unsigned i = 0; i < claim->nparams; i++) {
    tabq_param id = (tabq_param)claim->params[i];
    const char *v = id == TABQ_P_GROUP ? "'q1'" : id == TABQ_P_LIMIT ? "10" : "now()";
    size_t len = strlen(args);
    snprintf(args + len, sizeof args - len, "%s%s", i ? ", " : "", v);
  }
  char sql[4096];
  snprintf(sql, sizeof sql, "SET plan_cache_mode = %s", mode);
  exec_ok(g_c1, sql);
  snprintf(sql, sizeof sql, "PREPARE explained AS %s", claim->sql);
  exec_ok(g_c1, sql);
  snprintf(sql, sizeof sql, "EXPLAIN EXECUTE explained(%s)", args);
  tabq_prepared *p = prep(g_c1, sql, 0);
  run_ok(p, NULL, 0);
  plan[0] = '\0';
  while (next_row(p)) {
    tabq_value v = cell(p, 0);
    size_t len = strlen(plan);
    snprintf(plan + len, cap - len, "%.*s\n", (int)v.u.buf.len, (const char *)v.u.buf.ptr);
  }
  drv->finalize(p);
  exec_ok(g_c1, "DEALLOCATE explained; RESET plan_cache_mode");
}

/* A queue table of 20,000 rows in 20 queues, indexed as docs/table-description.md says: the
 * claim order after the group, (queue, [priority, ]retry_after, id). With `processed`, a table
 * that keeps finished rows and has no retry_after role (so the primary key alone could give an
 * order by id): (queue, processed_at, [priority, ]id) for the unfinished rows, and half the
 * rows finished after the statistics were taken, which then say every row is unfinished (the
 * planner's reason to walk the primary key over the finished rows instead). */
static void claims_table_create(bool priority, bool processed) {
  char sql[1024];
  snprintf(sql, sizeof sql,
           "DROP TABLE IF EXISTS claims; CREATE TABLE claims (id bigserial PRIMARY KEY, queue "
           "text NOT NULL, priority int NOT NULL DEFAULT 0, retry_after timestamptz, attempt int "
           "NOT NULL DEFAULT 1, locked_until timestamptz, processed_at timestamptz, payload bytea "
           "NOT NULL);"
           "CREATE INDEX claims_order ON claims (queue, %s%s%sid)%s;"
           "INSERT INTO claims (queue, payload) SELECT 'q' || (i %% 20), 'x' FROM "
           "generate_series(1, 20000) i; ANALYZE claims;%s",
           processed ? "processed_at, " : "", priority ? "priority, " : "",
           processed ? "" : "retry_after, ", processed ? " WHERE processed_at IS NULL" : "",
           processed ? "UPDATE claims SET processed_at = now() WHERE id <= 10000" : "");
  exec_ok(g_c1, sql);
}

static tabq_table claims_table(tabq_form form, bool priority, bool fifo, bool processed) {
  tabq_table t = {.size = sizeof(tabq_table),
                  .name = "claims",
                  .id = {"id", .generated = true},
                  .group = {"queue"},
                  .retry_after = {"retry_after"},
                  .attempt = {"attempt", .generated = true},
                  .payload = {"payload"},
                  .fifo = fifo};
  if (priority)
    t.priority.name = "priority";
  if (processed) {
    t.processed_at.name = "processed_at";
    t.retry_after.name = NULL;
  }
  if (form == TABQ_FORM_LEASE)
    t.locked_until.name = "locked_until";
  if (form == TABQ_FORM_ADVISORY)
    t.advisory_lock = "claims-{id}";
  return t;
}

/* Every claim of every form (claim, claim_one, the advisory candidates), with and without
 * priority, FIFO groups and finished rows kept, walks the claim-order index to its LIMIT under
 * a custom and a generic plan (what a prepared statement gets after its fifth run): no
 * sequential scan of the queue table, and not the primary key. */
static void test_claims_use_the_index(void) {
  NEED_DB();
  static const char *const modes[] = {"force_custom_plan", "force_generic_plan"};
  for (int cfg = 0; cfg < 4; cfg++) {
    bool priority = cfg & 1, processed = cfg & 2;
    claims_table_create(priority, processed);
    for (int fifo = 0; fifo < 2; fifo++) {
      tabq_table rowlock = claims_table(TABQ_FORM_ROWLOCK, priority, fifo, processed);
      tabq_table lease = claims_table(TABQ_FORM_LEASE, priority, fifo, processed);
      tabq_table advisory = claims_table(TABQ_FORM_ADVISORY, priority, fifo, processed);
      struct {
        const char *name;
        tabq_build_fn fn;
        const tabq_table *t;
      } claims[] = {{"row lock claim", tabq_pg_rowlock.claim, &rowlock},
                    {"row lock claim_one", tabq_pg_rowlock.claim_one, &rowlock},
                    {"lease claim", tabq_pg_lease.claim, &lease},
                    {"lease claim_one", tabq_pg_lease.claim_one, &lease},
                    {"advisory candidates", tabq_pg_advisory.candidates, &advisory}};
      for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        tabq_build b = {
            .table = claims[i].t, .form = tabq_table_form(claims[i].t), .server_version = 150000};
        tabq_stmt st;
        tabq_sql_init(&st, &test_host);
        CU_ASSERT_EQUAL_FATAL(claims[i].fn(&b, &st), TABQ_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(st.sql); /* no builder here declines these tables */
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
          char plan[8192];
          explain_claim(&st, modes[m], plan, sizeof plan);
          bool seq = strstr(plan, "Seq Scan on claims") != NULL;
          bool walks = strstr(plan, "claims_order") != NULL;
          if (seq || !walks)
            fprintf(stderr, "\n%s (%s priority, %s FIFO, %s) under %s:\n%s\n%s", claims[i].name,
                    priority ? "with" : "without", fifo ? "with" : "without",
                    processed ? "finished rows kept" : "acks delete", modes[m], st.sql, plan);
          CU_ASSERT_FALSE(seq);
          CU_ASSERT_TRUE(walks);
        }
        tabq_sql_free(&st);
      }
    }
  }
  exec_ok(g_c1, "DROP TABLE claims");
}

/* Runs a claim built by `fn` on `t` in a transaction it rolls back, and reads the ids it returns
 * into `ids` (the id is the projection's first cell). Returns how many there were. */
static unsigned claim_ids(tabq_build_fn fn, const tabq_table *t, unsigned limit, int64_t *ids,
                          unsigned cap) {
  tabq_build b = {.table = t, .form = tabq_table_form(t), .server_version = 150000};
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL_FATAL(fn(&b, &st), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st.sql);
  tabq_value v[TABQ_STMT_MAX_PARAMS];
  for (unsigned i = 0; i < st.nparams; i++)
    v[i] = st.params[i] == TABQ_P_GROUP   ? text("q")
           : st.params[i] == TABQ_P_LIMIT ? tabq_int(limit)
                                          : tabq_time(t0);
  tabq_prepared *p = prep(g_c1, st.sql, st.nparams);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, "BEGIN"), TABQ_OK);
  run_ok(p, v, st.nparams);
  unsigned n = 0;
  while (next_row(p))
    if (n < cap)
      ids[n++] = cell(p, 0).u.i;
  drv->finalize(p);
  CU_ASSERT_EQUAL(drv->rollback(g_c1), TABQ_OK);
  tabq_sql_free(&st);
  return n;
}

/* A claim of many rows returns them in claim order, not in the order the UPDATE met them (a
 * batch handler sees them so); a claim of one row returns the first. Priorities run against
 * the ids, so id order would differ. */
static void test_claims_in_claim_order(void) {
  NEED_DB();
  exec_ok(g_c1, "CREATE TABLE ordered (id bigserial PRIMARY KEY, queue text NOT NULL, priority "
                "int NOT NULL, retry_after timestamptz, attempt int NOT NULL DEFAULT 1, "
                "locked_until timestamptz, payload bytea NOT NULL);"
                "CREATE INDEX ordered_claim ON ordered (queue, priority, retry_after, id);"
                "INSERT INTO ordered (queue, priority, payload) SELECT 'q', 20 - i, 'x' "
                "FROM generate_series(1, 20) i");
  tabq_table rowlock = {.size = sizeof(tabq_table),
                        .name = "ordered",
                        .id = {"id", .generated = true},
                        .group = {"queue"},
                        .priority = {"priority"},
                        .retry_after = {"retry_after"},
                        .attempt = {"attempt", .generated = true},
                        .payload = {"payload"}};
  tabq_table lease = rowlock;
  lease.locked_until.name = "locked_until";
  /* priority 20 - id: claim order 20, 19, 18, 17, 16, ... */
  static const int64_t want[] = {20, 19, 18, 17, 16};
  const tabq_table *tables[] = {&rowlock, &lease};
  tabq_build_fn many[] = {tabq_pg_rowlock.claim, tabq_pg_lease.claim};
  tabq_build_fn one[] = {tabq_pg_rowlock.claim_one, tabq_pg_lease.claim_one};
  for (int f = 0; f < 2; f++) {
    int64_t ids[8] = {0};
    CU_ASSERT_EQUAL(claim_ids(many[f], tables[f], 5, ids, 8), 5);
    for (int i = 0; i < 5; i++)
      CU_ASSERT_EQUAL(ids[i], want[i]);
    CU_ASSERT_EQUAL(claim_ids(one[f], tables[f], 1, ids, 8), 1);
    CU_ASSERT_EQUAL(ids[0], want[0]);
  }
  exec_ok(g_c1, "DROP TABLE ordered");
}

/* The catalog query behind the check that a generated attempt starts at 1. */
static void test_column_default(void) {
  NEED_DB();
  exec_ok(g_c1, "CREATE TABLE defaults (id BIGSERIAL PRIMARY KEY, zero INT NOT NULL DEFAULT 0, "
                "one BIGINT NOT NULL DEFAULT 1, quoted INT DEFAULT '1', bare INT)");
  expect_column_default(&tabq_pg_dialect, g_c1, "defaults", "zero", "0");
  expect_column_default(&tabq_pg_dialect, g_c1, "defaults", "one", "1");
  expect_column_default(&tabq_pg_dialect, g_c1, "defaults", "quoted", "1");
  expect_column_default(&tabq_pg_dialect, g_c1, "defaults", "bare", "NULL");
  expect_column_default(&tabq_pg_dialect, g_c1, "defaults", "missing", "-");
  expect_column_default(&tabq_pg_dialect, g_c1, "no_such_table", "one", "-");
  char qualified[64];
  snprintf(qualified, sizeof qualified, "%s.defaults", g_schema);
  expect_column_default(&tabq_pg_dialect, g_c1, qualified, "zero", "0");
  exec_ok(g_c1, "DROP TABLE defaults");
}

static CU_TestInfo tests[] = {
    {"open the server", test_open},
    {"URL forms", test_urls},
    {"connect to a server that never answers", test_connect_timeout},
    {"connect to a port nobody listens on", test_connect_refused},
    {"server version", test_server_version},
    {"column defaults from the catalog", test_column_default},
    {"claims walk the claim-order index under custom and generic plans", test_claims_use_the_index},
    {"claims return their rows in claim order", test_claims_in_claim_order},
    {"types round trip", test_types_round_trip},
    {"more types and misfits", test_types_more},
    {"steady state allocates nothing", test_steady_state},
    {"affected counts", test_affected},
    {"schema errors", test_schema_errors},
    {"FOR UPDATE SKIP LOCKED", test_skip_locked},
    {"advisory locks", test_advisory},
    {"serialization failure", test_serialization_failure},
    {"transaction control runs prepared", test_transaction_control_prepared},
    {"LISTEN/NOTIFY", test_notify},
    {"terminated connection", test_terminated},
    {"statement_timeout in the URL", test_statement_timeout_setting},
    {"statement_timeout on the server", test_statement_timeout_on_the_server},
    {"a statement without a reply is bounded", test_no_reply_is_bounded},
    {"a wait for notifications is not bounded", test_notify_wait_is_not_bounded},
    {"TCP keepalives", test_keepalives},
    {"drop the schema", test_close},
    CU_TEST_INFO_NULL,
};

int register_tests(void) {
  tabq_pg_set_host(&test_host);
  driver_calls_use(drv);
  ADD_SUITE("postgres driver on a live server", NULL, suite_clean, tests);
  return 0;
}
