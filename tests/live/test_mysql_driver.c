/* tabq — tests of the MySQL/MariaDB driver against a live server (TABQ_TEST_MYSQL_URL), through
 * its vtable only: URL forms (TCP and socket), bounded connects, every type both ways, affected
 * counts, schema errors, row locks, GET_LOCK, lock waits, deadlocks, the binary log's statement
 * format, a connection killed by the server, and statements bounded on a server that stops
 * answering.
 *
 * Every run works in a database of its own (drv_<pid>), dropped at the end, and suffixes its
 * lock names and user with the pid, so runs side by side do not meet. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tabq/sys/dialect.h>
#include <tabq/sys/sql.h>

#include "cunit_main.h"
#include "driver_calls.h"
#include "loopback.h"
#include "mysql_claims.h"
#include "mysql_plugin.h"
#include "stall_proxy.h"

static const tabq_driver_v1 *const drv = &tabq_my_driver;

/* ---- Connections and helpers --------------------------------------------------------------- */

static const char *g_url;
char g_db[32];       /* the run's database: mysql_claims.c builds for it too */
char g_db_url[1024]; /* mysql_bounds.c connects to it too */
static char g_user[32], g_lock[48];
tabq_conn *g_c1; /* mysql_claims.c runs on it too */
tabq_conn *g_c2;

static void expect_time(tabq_prepared *p, unsigned col, int64_t want) {
  tabq_value v = cell(p, col);
  CU_ASSERT_EQUAL(v.type, TABQ_T_TIME);
  CU_ASSERT_EQUAL(v.u.time_us, want);
}

/* The one cell of a one-row query, text or NULL (as ""); "" when there is no row. */
static void query_text(tabq_conn *c, const char *sql, char *buf, size_t cap) {
  tabq_prepared *p = prep(c, sql, 0);
  run_ok(p, NULL, 0);
  buf[0] = '\0';
  if (next_row(p)) {
    tabq_value v = cell(p, 0);
    CU_ASSERT(v.type == TABQ_T_TEXT || v.type == TABQ_T_NULL);
    if (v.type == TABQ_T_TEXT)
      snprintf(buf, cap, "%.*s", (int)v.u.buf.len, (const char *)v.u.buf.ptr);
  }
  drv->finalize(p);
}

/* The test URL with its database replaced by `db` (its query kept). */
static void url_with_db(const char *url, const char *db, char *buf, size_t cap) {
  const char *auth = strstr(url, "://");
  auth = auth ? auth + 3 : url;
  size_t alen = strcspn(auth, "/?#");
  const char *query = strchr(auth + alen, '?');
  snprintf(buf, cap, "%.*s/%s%s", (int)(auth + alen - url), url, db, query ? query : "");
}

/* ---- Setup --------------------------------------------------------------------------------- */

/* The first test of the suite rather than its init: a failing init would skip the suite
 * without failing the run. Every later test needs the server. */
static void test_open(void) {
  g_url = getenv("TABQ_TEST_MYSQL_URL");
  if (!g_url || !*g_url)
    CU_FAIL_FATAL("TABQ_TEST_MYSQL_URL is not set (mysql://user:password@host:port/db)");
  snprintf(g_db, sizeof g_db, "drv_%ld", (long)getpid());
  snprintf(g_user, sizeof g_user, "drv_u%ld", (long)getpid());
  snprintf(g_lock, sizeof g_lock, "drv-lock-%ld", (long)getpid());
  url_with_db(g_url, g_db, g_db_url, sizeof g_db_url);
  tabq_conn *c = connect_url(g_url);
  char sql[256];
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", g_db);
  exec_ok(c, sql);
  snprintf(sql, sizeof sql, "CREATE DATABASE %s CHARACTER SET utf8mb4", g_db);
  exec_ok(c, sql);
  drv->close(c);
  g_c1 = connect_url(g_db_url);
  exec_ok(g_c1, "CREATE TABLE types (id BIGINT AUTO_INCREMENT PRIMARY KEY, small SMALLINT, "
                "i4 INT, u8 BIGINT UNSIGNED, t TEXT, vc VARCHAR(20), b BLOB, vb VARBINARY(16), "
                "dt6 DATETIME(6), dt0 DATETIME, ts TIMESTAMP(6) NULL, j JSON, flag TINYINT(1), "
                "d DECIMAL(10,3), f FLOAT, dbl DOUBLE, bits BIT(10), y YEAR, dd DATE) "
                "ENGINE=InnoDB");
  exec_ok(g_c1, "CREATE TABLE q (id INT PRIMARY KEY, queue VARCHAR(20) NOT NULL) ENGINE=InnoDB");
  exec_ok(g_c1, "CREATE TABLE ins (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
  g_c2 = connect_url(g_db_url);
}

static void test_close(void) {
  NEED_DB();
  char sql[128];
  snprintf(sql, sizeof sql, "DROP DATABASE %s", g_db);
  exec_ok(g_c1, sql);
  snprintf(sql, sizeof sql, "DROP USER IF EXISTS '%s'@'localhost'", g_user);
  exec_ok(g_c1, sql);
}

static int suite_clean(void) {
  drv->close(g_c1);
  drv->close(g_c2);
  g_c1 = g_c2 = NULL;
  return 0;
}

/* ---- URLs and the server ------------------------------------------------------------------ */

/* The session a connection starts: UTC, utf8mb4, autocommit, the URL's database. */
static void expect_session(tabq_conn *c, const char *db) {
  char buf[128];
  query_text(c, "SELECT @@time_zone", buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, "+00:00");
  query_text(c, "SELECT @@character_set_client", buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, "utf8mb4");
  CU_ASSERT_EQUAL(query_int(c, "SELECT @@autocommit", NULL, 0), 1);
  CU_ASSERT_EQUAL(drv->database(c, buf, sizeof buf), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(buf, db);
}

static void test_urls(void) {
  NEED_DB();
  expect_session(g_c1, g_db);
  char url[1200];
  /* mariadb:// is the same driver. */
  snprintf(url, sizeof url, "mariadb://%s", strstr(g_db_url, "://") + 3);
  tabq_conn *c = connect_url(url);
  expect_session(c, g_db);
  drv->close(c);

  /* Through the server's socket, as a user of its own whose password needs escapes; the host
   * may be empty, and no database leaves DATABASE() empty. */
  char sock[512], sql[256];
  query_text(g_c1, "SELECT @@socket", sock, sizeof sock);
  CU_ASSERT_FATAL(sock[0] == '/');
  snprintf(sql, sizeof sql, "CREATE USER '%s'@'localhost' IDENTIFIED BY 'p@ss:w/rd%%'", g_user);
  exec_ok(g_c1, sql);
  snprintf(url, sizeof url, "mysql://%s:p%%40ss%%3Aw%%2Frd%%25@/?socket=%s", g_user, sock);
  c = connect_url(url);
  expect_session(c, "");
  char who[128], want[128];
  query_text(c, "SELECT CURRENT_USER()", who, sizeof who);
  snprintf(want, sizeof want, "%s@localhost", g_user);
  CU_ASSERT_STRING_EQUAL(who, want);
  drv->close(c);
  snprintf(url, sizeof url,
           "mariadb://%s:p%%40ss%%3Aw%%2Frd%%25@localhost?connect_timeout=5&socket=%s", g_user,
           sock);
  c = connect_url(url);
  drv->close(c);
  snprintf(sql, sizeof sql, "DROP USER '%s'@'localhost'", g_user);
  exec_ok(g_c1, sql);

  /* A wrong password: BACKEND with the server's code, naming the URL without the password. */
  const char *auth = strstr(g_url, "@");
  CU_ASSERT_PTR_NOT_NULL_FATAL(auth);
  snprintf(url, sizeof url, "mysql://tabq:s3cretpw%s", auth);
  c = NULL;
  CU_ASSERT_EQUAL(drv->connect(url, &c), TABQ_BACKEND);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_EQUAL(g_native, 1045); /* ER_ACCESS_DENIED_ERROR */
  STATE_IS("28000");
  MSG_HAS("mysql://tabq:***@");
  MSG_LACKS("s3cretpw");

  /* Nothing listens on port 1. */
  CU_ASSERT_EQUAL(drv->connect("mysql://tabq:s3cretpw@127.0.0.1:1/tabq_test", &c), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 2002); /* CR_CONNECTION_ERROR */
  MSG_HAS("127.0.0.1");
  MSG_LACKS("s3cretpw");

  /* A bracketed IPv6 address with a port parses, and nothing listens there either. */
  CU_ASSERT_EQUAL(drv->connect("mysql://tabq:s3cretpw@[::1]:1/tabq_test", &c), TABQ_BACKEND);
  MSG_LACKS("s3cretpw");

  /* URLs the driver refuses before it connects. */
  const char *bad[] = {"postgres://tabq@127.0.0.1/x",
                       "mysql://tabq@127.0.0.1:99999/x",
                       "mysql://tabq@127.0.0.1:3x/x",
                       "mysql://tabq@127.0.0.1/x?bogus=1",
                       "mysql://t%zzq@127.0.0.1/x",
                       "mysql://tabq@[::1/x",
                       "mysql://tabq@h/x?connect_timeout=soon"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(drv->connect(bad[i], &c), TABQ_INVALID);
    CU_ASSERT_PTR_NULL(c);
  }
  MSG_HAS("connect_timeout");
}

/* MySQL 8.0's and 8.4's default SQL mode, which MariaDB's own default lacks in part. */
static const char mysql8_modes[] = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,"
                                   "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";

/* The run's database URL with `param` added to its query. */
void url_with(const char *param, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s", g_db_url, strchr(g_db_url, '?') ? "&" : "?", param);
}

/* sql_mode in the URL sets the session's SQL mode at connect, the rest of the session as it
 * was; empty sets none. A value that is not a list of mode names is refused before connecting,
 * one the server refuses fails the connect: both messages name the parameter. */
static void test_sql_mode(void) {
  NEED_DB();
  char url[1400], param[256], buf[512];
  snprintf(param, sizeof param, "sql_mode=%s", mysql8_modes);
  url_with(param, url, sizeof url);
  tabq_conn *c = connect_url(url);
  query_text(c, "SELECT @@SESSION.sql_mode", buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, mysql8_modes);
  expect_session(c, g_db);
  drv->close(c);
  /* No strict mode: an over-long value would be cut to fit, which the driver warns of. */
  url_with("sql_mode=", url, sizeof url);
  g_warning[0] = '\0';
  c = connect_url(url);
  query_text(c, "SELECT @@SESSION.sql_mode", buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, "");
  CU_ASSERT_PTR_NOT_NULL(strstr(g_warning, "without STRICT_TRANS_TABLES"));
  drv->close(c);

  /* A quote (percent-encoded) would end the SET statement's literal. */
  url_with("sql_mode=ANSI%27", url, sizeof url);
  c = NULL;
  CU_ASSERT_EQUAL(drv->connect(url, &c), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(c);
  MSG_HAS("sql_mode is a comma-separated list of mode names");
  url_with("sql_mode=NO_SUCH_MODE", url, sizeof url);
  CU_ASSERT_EQUAL(drv->connect(url, &c), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_EQUAL(g_native, 1231); /* ER_WRONG_VALUE_FOR_VAR */
  MSG_HAS("refused the URL's sql_mode=NO_SUCH_MODE");
  MSG_HAS("mysql://tabq:***@");
}

/* ---- Bounded connects --------------------------------------------------------------------- */

/* Well past every timeout below, and far short of the hang they prevent: a liveness bound, not
 * a speed assertion. */
#define LIVENESS_MS 15000

/* A connect to a server that accepts and never answers ends with BACKEND, saying it timed out
 * `after` ("after 1 s"), naming the setting and the URL without its password. */
static void expect_timeout(const char *url, const char *after) {
  int64_t took = connect_fails(url, TABQ_BACKEND);
  MSG_HAS("the connect timed out");
  MSG_HAS(after);
  MSG_HAS("connect_timeout=SECONDS");
  MSG_HAS("mysql://tabq:***@127.0.0.1");
  MSG_LACKS("s3cretpw");
  CU_ASSERT(took < LIVENESS_MS);
}

static void test_connect_timeout(void) {
  silent_listener l;
  CU_ASSERT_FATAL(silent_listener_start(&l));
  char url[256];
  snprintf(url, sizeof url, "mysql://tabq:s3cretpw@127.0.0.1:%u/tabq_test?connect_timeout=1",
           l.port);
  expect_timeout(url, "after 1 s");
  snprintf(url, sizeof url, "mysql://tabq:s3cretpw@127.0.0.1:%u/tabq_test", l.port);
  expect_timeout(url, "after 10 s"); /* the driver's default */
  silent_listener_stop(&l);
}

/* The connect timeout bounds the connect only: a statement may run longer once connected. */
static void test_connect_timeout_ends(void) {
  NEED_DB();
  char url[1200];
  snprintf(url, sizeof url, "%s%sconnect_timeout=1", g_db_url, strchr(g_db_url, '?') ? "&" : "?");
  tabq_conn *c = connect_url(url);
  CU_ASSERT_EQUAL(query_int(c, "SELECT SLEEP(2)", NULL, 0), 0);
  CU_ASSERT(drv->alive(c));
  drv->close(c);
}

/* A loopback port nobody listens on: refused at once, saying so. */
static void test_connect_refused(void) {
  unsigned port;
  int fd = refusing_port(&port);
  CU_ASSERT_FATAL(fd >= 0);
  char url[256];
  snprintf(url, sizeof url, "mysql://tabq:s3cretpw@127.0.0.1:%u/tabq_test", port);
  int64_t took = connect_fails(url, TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 2002); /* CR_CONNECTION_ERROR */
  MSG_HAS("no server accepted the connection");
  MSG_HAS("mysql://tabq:***@127.0.0.1");
  MSG_LACKS("timed out");
  MSG_LACKS("s3cretpw");
  CU_ASSERT(took < 5000);
  close(fd);
}

/* major*10000 + minor*100 + patch, read from the text VERSION() gives. */
static uint32_t version_number(const char *text) {
  unsigned major = 0, minor = 0, patch = 0;
  if (sscanf(text, "%u.%u.%u", &major, &minor, &patch) != 3)
    return 0;
  return major * 10000 + minor * 100 + patch;
}

static void test_server_version(void) {
  NEED_DB();
  char text[128], want[128];
  uint32_t number = 0;
  CU_ASSERT_EQUAL(drv->server_version(g_c1, text, sizeof text, &number), TABQ_OK);
  query_text(g_c1, "SELECT VERSION()", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(text, want);
  CU_ASSERT_EQUAL(number, version_number(want));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "MariaDB")); /* the test server is MariaDB 10.11 */
  CU_ASSERT(number >= TABQ_MY_MARIADB_FLOOR && number < 200000);
  /* database(): the current one; a buffer too short for it is refused, not cut. */
  char db[8];
  CU_ASSERT_EQUAL(drv->database(g_c1, db, 4), TABQ_INVALID);
  CU_ASSERT(drv->alive(g_c1));
}

/* ---- Types --------------------------------------------------------------------------------- */

static const int64_t t0 = INT64_C(1700000000123456);     /* 2023-11-14 22:13:20.123456 UTC */
static const int64_t t_old = INT64_C(-1234567890123457); /* 1930-11-18 00:28:29.876543 UTC */
static const int64_t t_whole = INT64_C(1700000001000000);
static const char blob[] = {'a', 0, 'b', 0, (char)0xff};

static const char insert_types[] =
    "INSERT INTO types (small, i4, u8, t, vc, b, vb, dt6, dt0, ts, j, flag, d, f, dbl, bits, y, "
    "dd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

static void test_types_round_trip(void) {
  NEED_DB();
  tabq_prepared *ins = prep(g_c1, insert_types, 18);
  const tabq_value row1[] = {
      tabq_int(-7),         tabq_int(INT32_MAX),     tabq_int(42),
      text("h\xc3\xa9llo"), tabq_text(NULL, 0),      tabq_bytes(blob, sizeof blob),
      tabq_bytes(NULL, 0),  tabq_time(t0),           tabq_time(t_whole),
      tabq_time(t0),        json("{\"a\": [1, 2]}"), tabq_int(1),
      text("12.345"),       tabq_real(1.5),          tabq_real(0.1),
      tabq_int(513),        tabq_int(2024),          text("2024-02-29")};
  run_ok(ins, row1, 18);
  CU_ASSERT_EQUAL(drv->affected(ins), 1);
  CU_ASSERT_FALSE(next_row(ins)); /* an INSERT has no rows */
  tabq_value nulls[18];
  for (int i = 0; i < 18; i++)
    nulls[i] = tabq_null();
  run_ok(ins, nulls, 18);
  drv->finalize(ins);
  exec_ok(g_c1, "UPDATE types SET u8 = 18446744073709551615 WHERE id = 2");

  tabq_prepared *sel = prep(g_c1,
                            "SELECT small, i4, u8, t, vc, b, vb, dt6, dt0, ts, j, flag, d, f, dbl, "
                            "bits, y, dd, id FROM types WHERE id = ?",
                            1);
  tabq_value id = tabq_int(1);
  run_ok(sel, &id, 1);
  CU_ASSERT_EQUAL(drv->affected(sel), 1); /* a SELECT counts its rows */
  CU_ASSERT_FATAL(next_row(sel));
  expect_int(sel, 0, -7);
  expect_int(sel, 1, INT32_MAX);
  expect_int(sel, 2, 42);
  expect_text(sel, 3, "h\xc3\xa9llo");
  expect_text(sel, 4, "");
  expect_buf(sel, 5, TABQ_T_BYTES, blob, sizeof blob);
  expect_buf(sel, 6, TABQ_T_BYTES, "", 0); /* an empty blob, not NULL */
  expect_time(sel, 7, t0);                 /* DATETIME(6): to the microsecond */
  expect_time(sel, 8, t_whole);            /* DATETIME: a whole second, exactly */
  expect_time(sel, 9, t0);                 /* TIMESTAMP(6), in the session's UTC */
  tabq_value v = cell(sel, 10);
  /* MariaDB's JSON is LONGTEXT marked json in its extended metadata; MySQL's is JSON. */
  CU_ASSERT(v.type == TABQ_T_JSON || v.type == TABQ_T_TEXT);
  if (v.type != TABQ_T_JSON)
    fprintf(stderr, "note: the JSON column reads as text (no json format in the metadata)\n");
  CU_ASSERT(v.u.buf.len == 13 && memcmp(v.u.buf.ptr, "{\"a\": [1, 2]}", 13) == 0);
  expect_int(sel, 11, 1);
  expect_text(sel, 12, "12.345");
  /* FLOAT and DOUBLE read as reals (ABI 1.5). */
  CU_ASSERT(cell(sel, 13).type == TABQ_T_REAL && cell(sel, 13).u.r == 1.5);
  CU_ASSERT(cell(sel, 14).type == TABQ_T_REAL && cell(sel, 14).u.r == 0.1);
  expect_int(sel, 15, 513);
  expect_int(sel, 16, 2024);
  expect_time(sel, 17, INT64_C(1709164800000000)); /* 2024-02-29 00:00 UTC */
  expect_int(sel, 18, 1);
  CU_ASSERT_EQUAL(drv->cell(sel, 19, &v), TABQ_INVALID);
  CU_ASSERT_FALSE(next_row(sel));
  CU_ASSERT_EQUAL(drv->cell(sel, 0, &v), TABQ_INVALID); /* past the last row */

  id = tabq_int(2);
  run_ok(sel, &id, 1);
  CU_ASSERT_FATAL(next_row(sel));
  for (unsigned col = 0; col < 18; col++)
    if (col != 2)
      CU_ASSERT_EQUAL(cell(sel, col).type, TABQ_T_NULL);
  CU_ASSERT_EQUAL(drv->cell(sel, 2, &v), TABQ_INVALID); /* beyond a signed 64-bit integer */
  MSG_HAS("18446744073709551615");
  drv->finalize(sel);

  /* The server reads the bound times as the same instants, in UTC. */
  tabq_value when = tabq_time(t0);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT ? = '2023-11-14 22:13:20.123456'", &when, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT COUNT(*) FROM types WHERE ts = ? AND dt6 = ?",
                            (tabq_value[]){when, when}, 2),
                  1);
  CU_ASSERT_EQUAL(
      query_int(g_c1, "SELECT CAST(UNIX_TIMESTAMP(ts) AS SIGNED) FROM types WHERE id = 1", NULL, 0),
      1700000000);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT LENGTH(b) FROM types WHERE id = 1", NULL, 0), 5);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT vb IS NULL FROM types WHERE id = 1", NULL, 0), 0);
  when = tabq_time(t_old);
  tabq_prepared *p =
      prep(g_c1, "SELECT CAST(? AS DATETIME(6)), ? = '1930-11-18 00:28:29.876543'", 2);
  run_ok(p, (tabq_value[]){when, when}, 2);
  CU_ASSERT_FATAL(next_row(p));
  expect_time(p, 0, t_old); /* before 1970 */
  expect_int(p, 1, 1);
  drv->finalize(p);
}

static void test_types_more(void) {
  NEED_DB();
  /* Expressions: integers of every width, unsigned, NULL, floats, a duration as text. */
  tabq_prepared *p = prep(g_c1,
                          "SELECT 1, CAST(-5 AS SIGNED), CAST(7 AS UNSIGNED), NULL, 1.5e0, "
                          "CAST('-838:59:59.000000' AS TIME(6)), 'x', X'00ff', 2.50",
                          0);
  run_ok(p, NULL, 0);
  CU_ASSERT_FATAL(next_row(p));
  expect_int(p, 0, 1);
  expect_int(p, 1, -5);
  expect_int(p, 2, 7);
  CU_ASSERT_EQUAL(cell(p, 3).type, TABQ_T_NULL);
  CU_ASSERT(cell(p, 4).type == TABQ_T_REAL && cell(p, 4).u.r == 1.5);
  expect_text(p, 5, "-838:59:59.000000");
  expect_text(p, 6, "x");
  tabq_value v = cell(p, 7);
  CU_ASSERT(v.type == TABQ_T_BYTES && v.u.buf.len == 2);
  expect_text(p, 8, "2.50");
  drv->finalize(p);

  /* A list of ids binds as one JSON array (what ack_ids reads with JSON_TABLE), the buffer
   * growing for a longer list and serving a shorter one after it. */
  p = prep(g_c1, "SELECT CAST(? AS CHAR)", 1);
  const int64_t ids[] = {1, -2, INT64_MAX};
  tabq_value list = {.type = TABQ_T_INT_LIST, .u.list = {ids, 3}};
  CU_ASSERT_EQUAL_FATAL(drv->execute(p, &list, 1), TABQ_OK);
  CU_ASSERT_TRUE_FATAL(next_row(p));
  expect_text(p, 0, "[1,-2,9223372036854775807]");
  drv->reset(p);
  list.u.list.count = 1;
  CU_ASSERT_EQUAL_FATAL(drv->execute(p, &list, 1), TABQ_OK);
  CU_ASSERT_TRUE_FATAL(next_row(p));
  expect_text(p, 0, "[1]");
  drv->reset(p);
  drv->finalize(p);

  /* Values that do not bind: a time beyond DATETIME's years, a count mismatch. */
  p = prep(g_c1, "SELECT ?", 1);
  tabq_value bad = tabq_time(INT64_C(253402300800000000)); /* 10000-01-01 */
  CU_ASSERT_EQUAL(drv->execute(p, &bad, 1), TABQ_INVALID);
  CU_ASSERT_EQUAL(drv->execute(p, NULL, 0), TABQ_INVALID);

  /* Buffers grow for a long value and serve shorter ones after it. */
  size_t big = 100000;
  char *long_text = malloc(big);
  CU_ASSERT_PTR_NOT_NULL_FATAL(long_text);
  for (size_t i = 0; i < big; i++)
    long_text[i] = (char)('a' + i % 26);
  tabq_value val = tabq_text(long_text, big);
  run_ok(p, &val, 1);
  CU_ASSERT_FATAL(next_row(p));
  expect_buf(p, 0, TABQ_T_TEXT, long_text, big);
  val = text("short");
  run_ok(p, &val, 1);
  CU_ASSERT_FATAL(next_row(p));
  expect_text(p, 0, "short");
  val = tabq_int(99); /* the same placeholder now an integer */
  run_ok(p, &val, 1);
  CU_ASSERT_FATAL(next_row(p));
  expect_int(p, 0, 99);
  free(long_text);
  drv->finalize(p);

  /* Bytes and JSON go in as they are. */
  tabq_value vals[] = {tabq_bytes(blob, sizeof blob), json("{\"k\": \"v\"}"), tabq_bytes(NULL, 0)};
  CU_ASSERT_EQUAL(
      query_int(g_c1, "SELECT LENGTH(?) + 10 * JSON_VALID(?) + 100 * (? IS NULL)", vals, 3), 15);
}

/* Once its buffers have grown to the largest value, executing a statement allocates nothing
 * through the host. */
static void test_steady_state(void) {
  NEED_DB();
  tabq_prepared *p = prep(g_c1, "SELECT ?, ?, ?, ?, ?, 1.5e0", 5);
  tabq_value v[] = {tabq_int(3), text("text"), tabq_bytes("bb", 2), tabq_time(t0),
                    json("{\"k\": \"v\"}")};
  run_ok(p, v, 5);
  CU_ASSERT_FATAL(next_row(p));
  unsigned long before = g_allocs;
  for (int i = 0; i < 200; i++) {
    v[0] = tabq_int(i);
    v[1] = text(i % 2 ? "t" : "text");
    v[2] = i % 3 ? tabq_bytes("b", 1) : tabq_null();
    run_ok(p, v, 5);
    CU_ASSERT_FATAL(next_row(p));
    expect_int(p, 0, i);
    expect_time(p, 3, t0);
    CU_ASSERT(cell(p, 5).type == TABQ_T_REAL && cell(p, 5).u.r == 1.5);
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
  p = prep(g_c1, "UPDATE q SET queue = queue WHERE queue = ?", 1);
  tabq_value a = text("a");
  run_ok(p, &a, 1);
  CU_ASSERT_EQUAL(drv->affected(p), 3); /* rows matched, though none changed */
  a = text("none");
  run_ok(p, &a, 1);
  CU_ASSERT_EQUAL(drv->affected(p), 0);
  drv->finalize(p);

  /* Rows stay readable while other statements run on the connection (select, then stamp). */
  tabq_prepared *sel = prep(g_c1, "SELECT id, queue FROM q ORDER BY id", 0);
  tabq_prepared *upd = prep(g_c1, "UPDATE q SET queue = queue WHERE id = ?", 1);
  run_ok(sel, NULL, 0);
  CU_ASSERT_EQUAL(drv->affected(sel), 4);
  int64_t n = 0;
  while (next_row(sel)) {
    tabq_value id = cell(sel, 0);
    run_ok(upd, &id, 1);
    CU_ASSERT_EQUAL(drv->affected(upd), 1);
    expect_text(sel, 1, n == 2 ? "b" : "a");
    n++;
  }
  CU_ASSERT_EQUAL(n, 4);
  drv->finalize(sel);
  drv->finalize(upd);
  /* exec takes statements with or without rows. */
  exec_ok(g_c1, "SELECT 1");
  exec_ok(g_c1, "DO 1");
  CU_ASSERT_EQUAL(drv->exec(g_c1, "INSERT INTO q VALUES (1, 'dup')"), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1062); /* ER_DUP_ENTRY */
  STATE_IS("23000");
  MSG_HAS("exec: Duplicate entry");
}

static void test_schema_errors(void) {
  NEED_DB();
  tabq_prepared *p = NULL;
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT id FROM drv_absent", 0, "claim", &p), TABQ_SCHEMA);
  CU_ASSERT_PTR_NULL(p);
  CU_ASSERT_EQUAL(g_native, 1146);
  STATE_IS("42S02");
  MSG_HAS("claim statement: Table '");
  MSG_HAS("drv_absent' doesn't exist");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "UPDATE q SET nope = 1 WHERE id = ?", 1, "ack", &p),
                  TABQ_SCHEMA);
  CU_ASSERT_EQUAL(g_native, 1054);
  STATE_IS("42S22");
  MSG_HAS("ack statement: ");
  MSG_HAS("nope");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT 1 FROM drv_no_db.q", 0, "fetch", &p), TABQ_SCHEMA);
  CU_ASSERT(g_native == 1146 || g_native == 1049);
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT drv_no_such_function(?)", 1, "lock", &p), TABQ_SCHEMA);
  CU_ASSERT_EQUAL(g_native, 1305);
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELEKT 1", 0, "claim", &p), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1064);
  STATE_IS("42000");
  MSG_HAS("claim statement: ");
  CU_ASSERT_EQUAL(drv->prepare(g_c1, "SELECT ?, ?", 1, "claim", &p), TABQ_INVALID);
  MSG_HAS("2 placeholders, not 1");
  CU_ASSERT_PTR_NULL(p);
  CU_ASSERT(drv->alive(g_c1));
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT 1", NULL, 0), 1);
}

/* ---- Locks and transactions ---------------------------------------------------------------- */

const char read_committed[] = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION";

static void test_skip_locked(void) {
  NEED_DB();
  const char *sql = "SELECT id FROM q WHERE queue = ? ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
  tabq_prepared *p1 = prep(g_c1, sql, 1), *p2 = prep(g_c2, sql, 1);
  tabq_value a = text("a");
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, read_committed), TABQ_OK);
  CU_ASSERT_EQUAL(drv->begin(g_c1, read_committed), TABQ_INVALID); /* one at a time */
  MSG_HAS("already open");
  run_ok(p1, &a, 1);
  CU_ASSERT_FATAL(next_row(p1));
  expect_int(p1, 0, 1);
  drv->reset(p1);
  char level[64];
  query_text(g_c1,
             "SELECT trx_isolation_level FROM information_schema.innodb_trx "
             "WHERE trx_mysql_thread_id = CONNECTION_ID()",
             level, sizeof level);
  CU_ASSERT_STRING_EQUAL(level, "READ COMMITTED");
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c2, read_committed), TABQ_OK);
  run_ok(p2, &a, 1);
  CU_ASSERT_FATAL(next_row(p2));
  expect_int(p2, 0, 2); /* the first row is locked by the first connection */
  drv->reset(p2);
  CU_ASSERT_EQUAL(drv->commit(g_c1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->commit(g_c2), TABQ_OK);
  CU_ASSERT_EQUAL(drv->rollback(g_c2), TABQ_OK); /* none open: nothing to do */
  drv->finalize(p1);
  drv->finalize(p2);

  /* A begin whose later part fails leaves no transaction open. */
  CU_ASSERT_EQUAL(drv->begin(g_c1, "START TRANSACTION; SELEKT 1"), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1064);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, "START TRANSACTION;"), TABQ_OK);
  CU_ASSERT_EQUAL(drv->rollback(g_c1), TABQ_OK);
}

/* A lock wait that times out stays BACKEND with the server's code; ROLLBACK recovers. */
static void test_lock_wait(void) {
  NEED_DB();
  exec_ok(g_c2, "SET SESSION innodb_lock_wait_timeout = 1");
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, read_committed), TABQ_OK);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT id FROM q WHERE id = 1 FOR UPDATE", NULL, 0), 1);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c2, read_committed), TABQ_OK);
  tabq_prepared *p = prep(g_c2, "UPDATE q SET queue = 'x' WHERE id = ?", 1);
  tabq_value id = tabq_int(1);
  CU_ASSERT_EQUAL(drv->execute(p, &id, 1), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1205); /* ER_LOCK_WAIT_TIMEOUT */
  MSG_HAS("test statement: Lock wait timeout");
  CU_ASSERT_EQUAL(drv->rollback(g_c2), TABQ_OK);
  CU_ASSERT_EQUAL(drv->rollback(g_c1), TABQ_OK);
  CU_ASSERT(drv->alive(g_c2));
  run_ok(p, &id, 1); /* no lock held now */
  CU_ASSERT_EQUAL(drv->affected(p), 1);
  drv->finalize(p);
  exec_ok(g_c2, "UPDATE q SET queue = 'a' WHERE id = 1");
}

/* One side of a deadlock: an UPDATE of row `id` on `c`, with its outcome. */
typedef struct side {
  tabq_conn *c;
  int64_t id;
  int rc;
  long native;
  char state[8];
} side;

static void *update_row(void *arg) {
  side *s = arg;
  tabq_prepared *p = NULL;
  s->rc = drv->prepare(s->c, "UPDATE q SET queue = queue WHERE id = ?", 1, "test", &p);
  if (s->rc == TABQ_OK) {
    tabq_value id = tabq_int(s->id);
    s->rc = drv->execute(p, &id, 1);
    drv->finalize(p);
  }
  s->native = s->rc == TABQ_OK ? 0 : g_native;
  snprintf(s->state, sizeof s->state, "%s", s->rc == TABQ_OK ? "" : g_state);
  return NULL;
}

/* Two transactions that wait for each other: InnoDB rolls one back with 1213, which stays
 * BACKEND with its code and SQLSTATE 40001; the other goes on. */
static void test_deadlock(void) {
  NEED_DB();
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, read_committed), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c2, read_committed), TABQ_OK);
  side first = {g_c1, 1, 0, 0, ""}, second = {g_c2, 2, 0, 0, ""};
  update_row(&first);
  update_row(&second);
  CU_ASSERT_FATAL(first.rc == TABQ_OK && second.rc == TABQ_OK);
  first.id = 2;  /* waits for the second connection's row ... */
  second.id = 1; /* ... which then waits for the first's */
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, update_row, &first), 0);
  usleep(300 * 1000);
  update_row(&second);
  pthread_join(t, NULL);
  side *victim = first.rc != TABQ_OK ? &first : &second;
  side *winner = victim == &first ? &second : &first;
  CU_ASSERT_EQUAL(winner->rc, TABQ_OK);
  CU_ASSERT_EQUAL(victim->rc, TABQ_BACKEND);
  CU_ASSERT_EQUAL(victim->native, 1213); /* ER_LOCK_DEADLOCK */
  CU_ASSERT_STRING_EQUAL(victim->state, "40001");
  CU_ASSERT_EQUAL(drv->rollback(g_c1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->rollback(g_c2), TABQ_OK);
  CU_ASSERT(drv->alive(g_c1) && drv->alive(g_c2));
}

/* A statement whose error comes amid its rows (as a deadlock InnoDB finds while a claim's rows
 * are sent does) fails at once, and its connection is given up (not alive: the pool replaces
 * it), since the library's statement state cannot be trusted after it: its next execute was seen
 * waiting for ever. A connection of its own, so the suite's stay usable. */
static void test_error_amid_rows(void) {
  NEED_DB();
  tabq_conn *c = connect_url(g_db_url);
  exec_ok(c, "CREATE TABLE amid (id INT PRIMARY KEY)");
  exec_ok(c, "INSERT INTO amid VALUES (1), (2), (3), (4), (5), (6), (7), (8)");
  /* Row `?` makes its subquery return two rows: an error the server sends after the rows before
   * it. */
  tabq_prepared *p = prep(c, "SELECT id, IF(id = ?, (SELECT 1 UNION SELECT 2), id) FROM amid", 1);
  tabq_value bad = tabq_int(5);
  CU_ASSERT_EQUAL(drv->execute(p, &bad, 1), TABQ_BACKEND);
  CU_ASSERT_FALSE(drv->alive(c));
  drv->finalize(p);
  drv->close(c);
  exec_ok(g_c1, "DROP TABLE amid");
}

static void test_get_lock(void) {
  NEED_DB();
  const char *lock = "SELECT GET_LOCK(?, 0)";
  const char *unlock = "SELECT RELEASE_LOCK(?)";
  tabq_value key = text(g_lock);
  CU_ASSERT_EQUAL(query_int(g_c1, lock, &key, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c2, lock, &key, 1), 0); /* held by the first connection */
  CU_ASSERT_EQUAL(query_int(g_c1, unlock, &key, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c2, lock, &key, 1), 1);
  CU_ASSERT_EQUAL(query_int(g_c2, unlock, &key, 1), 1);
}

/* binlog_format = STATEMENT refuses InnoDB writes at READ COMMITTED: the message says so. */
static void test_binlog_statement(void) {
  NEED_DB();
  tabq_conn *c = connect_url(g_db_url);
  int64_t log_bin = query_int(c, "SELECT @@log_bin", NULL, 0);
  if (log_bin != 1) {
    CU_ASSERT_EQUAL(log_bin, 0);
    fprintf(stderr, "note: the server runs without a binary log (log_bin = 0): the "
                    "binlog_format = STATEMENT refusal is not exercised\n");
    drv->close(c);
    return;
  }
  exec_ok(c, "SET SESSION binlog_format = 'STATEMENT'");
  CU_ASSERT_EQUAL_FATAL(drv->begin(c, read_committed), TABQ_OK);
  tabq_prepared *p = prep(c, "INSERT INTO ins VALUES (?, 1)", 1);
  tabq_value id = tabq_int(1);
  CU_ASSERT_EQUAL(drv->execute(p, &id, 1), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1665); /* ER_BINLOG_STMT_MODE_AND_ROW_ENGINE */
  MSG_HAS("binlog_format = STATEMENT");
  MSG_HAS("READ COMMITTED");
  MSG_HAS("ROW or MIXED");
  MSG_HAS("impossible to write to binary log"); /* the server's own text follows */
  CU_ASSERT_EQUAL(drv->rollback(c), TABQ_OK);
  drv->finalize(p);
  drv->close(c);
}

/* ---- A connection the server ends ---------------------------------------------------------- */

static void kill_connection(tabq_conn *victim) {
  int64_t id = query_int(victim, "SELECT CONNECTION_ID()", NULL, 0);
  char sql[64];
  snprintf(sql, sizeof sql, "KILL %" PRId64, id);
  exec_ok(g_c2, sql);
}

static void test_killed(void) {
  NEED_DB();
  /* An idle connection: alive() notices without a statement. */
  tabq_conn *c = connect_url(g_db_url);
  CU_ASSERT(drv->alive(c));
  kill_connection(c);
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

  /* A statement on a killed connection fails, and alive() then says so; never a reconnect. */
  c = connect_url(g_db_url);
  tabq_value key = text(g_lock);
  CU_ASSERT_EQUAL(query_int(c, "SELECT GET_LOCK(?, 0)", &key, 1), 1);
  tabq_prepared *p = prep(c, "SELECT 1", 0);
  kill_connection(c);
  usleep(100 * 1000);
  CU_ASSERT_EQUAL(drv->execute(p, NULL, 0), TABQ_BACKEND);
  CU_ASSERT(g_native == 2006 || g_native == 2013 || g_native == 1927);
  CU_ASSERT_FALSE(drv->alive(c));
  CU_ASSERT_EQUAL(drv->execute(p, NULL, 0), TABQ_BACKEND);
  drv->close(c); /* frees p too */
  /* The lock went with the session. */
  CU_ASSERT_EQUAL(query_int(g_c2, "SELECT IS_FREE_LOCK(?)", &key, 1), 1);
}

/* ---- Registration -------------------------------------------------------------------------- */

/* The catalog query behind the check that a generated attempt starts at 1. */
static void test_column_default(void) {
  exec_ok(g_c1, "CREATE TABLE defaults (id BIGINT AUTO_INCREMENT PRIMARY KEY, zero INT NOT NULL "
                "DEFAULT 0, one BIGINT NOT NULL DEFAULT 1, bare INT NOT NULL) ENGINE=InnoDB");
  expect_column_default(&tabq_my_dialect, g_c1, "defaults", "zero", "0");
  expect_column_default(&tabq_my_dialect, g_c1, "defaults", "one", "1");
  expect_column_default(&tabq_my_dialect, g_c1, "defaults", "ONE", "1"); /* names without case */
  expect_column_default(&tabq_my_dialect, g_c1, "defaults", "bare", "NULL");
  expect_column_default(&tabq_my_dialect, g_c1, "defaults", "missing", "-");
  exec_ok(g_c1, "DROP TABLE defaults");
}

static CU_TestInfo tests[] = {
    {"open the server", test_open},
    {"URL forms", test_urls},
    {"sql_mode in the URL", test_sql_mode},
    {"connect to a server that never answers", test_connect_timeout},
    {"a statement outlasts the connect timeout", test_connect_timeout_ends},
    {"connect to a port nobody listens on", test_connect_refused},
    {"server version and database", test_server_version},
    {"column defaults from the catalog", test_column_default},
    {"types round trip", test_types_round_trip},
    {"more types and misfits", test_types_more},
    {"steady state allocates nothing", test_steady_state},
    {"affected counts", test_affected},
    {"schema errors", test_schema_errors},
    {"a value too long for its column", test_value_too_long},
    {"a statement over max_allowed_packet", test_max_allowed_packet},
    {"claims read the queue through the claim-order index", test_claims_use_the_index},
    {"claims return their rows in claim order", test_claims_in_claim_order},
    {"statements on a list of ids read each row by its key", test_listed_rows_by_key},
    {"FOR UPDATE SKIP LOCKED at READ COMMITTED", test_skip_locked},
    {"lock wait timeout", test_lock_wait},
    {"deadlock", test_deadlock},
    {"an error amid the rows", test_error_amid_rows},
    {"GET_LOCK", test_get_lock},
    {"binlog_format = STATEMENT", test_binlog_statement},
    {"killed connection", test_killed},
    {"statement_timeout in the URL", test_statement_timeout_setting},
    {"statement_timeout on the server", test_statement_timeout_on_the_server},
    {"a statement without a reply is bounded", test_no_reply_is_bounded},
    {"drop the database", test_close},
    CU_TEST_INFO_NULL,
};

int register_tests(void) {
  tabq_my_set_host(&test_host);
  driver_calls_use(drv);
  ADD_SUITE("mysql driver on a live server", NULL, suite_clean, tests);
  return 0;
}
