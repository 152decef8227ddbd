#include "support.h"

#include <CUnit/CUnit.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <poll.h>
#include <stdatomic.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static tabq_table jobs_of(tabq_form form, bool marked) {
  tabq_table t = {
      .size = sizeof(tabq_table),
      .name = "jobs",
      .id = {.name = "id", .generated = true},
      .group = {.name = "queue"},
      .priority = {.name = "priority"},
      .retry_after = {.name = "retry_after"},
      .attempt = {.name = "attempt", .generated = true},
      .headers = {.name = "headers"},
      .payload = {.name = "payload"},
  };
  if (marked)
    t.processed_at.name = "processed_at";
  if (form == TABQ_FORM_LEASE)
    t.locked_until.name = "locked_until";
  else if (form == TABQ_FORM_ADVISORY)
    t.advisory_lock = "job-{id}";
  return t;
}

test_kind test_db_kind(void) {
  const char *db = getenv("TABQ_TEST_DB");
  if (db && !strcmp(db, "postgres"))
    return TEST_POSTGRES;
  if (db && !strcmp(db, "mysql"))
    return TEST_MYSQL;
  return TEST_SQLITE;
}

const char *test_db_name(void) {
  static const char *const names[] = {"sqlite", "postgres", "mysql"};
  return names[test_db_kind()];
}

tabq_form test_form(void) {
  const char *f = getenv("TABQ_TEST_FORM");
  if (f && !strcmp(f, "rowlock"))
    return TABQ_FORM_ROWLOCK;
  if (f && !strcmp(f, "advisory"))
    return TABQ_FORM_ADVISORY;
  return TABQ_FORM_LEASE;
}

const tabq_table *jobs_table(void) {
  static tabq_table t;
  static bool made;
  if (!made) {
    t = jobs_of(test_form(), false);
    made = true;
  }
  return &t;
}

#define SQLITE_COLUMNS                                                                             \
  "(id INTEGER PRIMARY KEY, queue TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, "            \
  "retry_after TEXT, attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT, "   \
  "headers TEXT, payload BLOB NOT NULL)"

/* In WAL from the start, as a service's file is after its first connection. */
static const char *const sqlite_schema =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE jobs " SQLITE_COLUMNS ";"
    "CREATE INDEX jobs_claim ON jobs (queue, priority, retry_after, id);"
    "CREATE TABLE jobs_dead " SQLITE_COLUMNS ";";

#define PG_COLUMNS                                                                                 \
  "queue TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, retry_after TIMESTAMPTZ, "            \
  "attempt INTEGER NOT NULL DEFAULT 1, processed_at TIMESTAMPTZ, locked_until TIMESTAMPTZ, "       \
  "headers JSONB, payload BYTEA NOT NULL)"

static const char *const pg_schema =
    "CREATE TABLE jobs (id BIGSERIAL PRIMARY KEY, " PG_COLUMNS ";"
    "CREATE INDEX jobs_claim ON jobs (queue, priority, retry_after, id);"
    "CREATE TABLE jobs_dead (id BIGINT PRIMARY KEY, " PG_COLUMNS ";";

/* The lease column holds whole seconds (DATETIME without fractions): the token must compare
 * exactly all the same. */
#define MY_COLUMNS                                                                                 \
  "queue VARCHAR(191) NOT NULL, priority INT NOT NULL DEFAULT 0, retry_after DATETIME(6) NULL, "   \
  "attempt INT NOT NULL DEFAULT 1, processed_at DATETIME(6) NULL, locked_until DATETIME NULL, "    \
  "headers JSON NULL, payload BLOB NOT NULL, INDEX jobs_claim (queue, priority, retry_after, id))" \
  " ENGINE=InnoDB"

static const char *const my_schema =
    "CREATE TABLE jobs (id BIGINT AUTO_INCREMENT PRIMARY KEY, " MY_COLUMNS ";"
    "CREATE TABLE jobs_dead (id BIGINT PRIMARY KEY, " MY_COLUMNS;

static void sqlite_exec(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "sqlite: %s in %s\n", msg, sql);
    sqlite3_free(msg);
    CU_FAIL_FATAL("sqlite_exec");
  }
  sqlite3_close(db);
}

static PGresult *pg_run(const testdb *db, const char *sql) {
  PGresult *r = PQexec(db->pg, sql);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    fprintf(stderr, "postgres: %s in %s\n", PQerrorMessage(db->pg), sql);
    PQclear(r);
    CU_FAIL_FATAL("postgres");
  }
  return r;
}

/* Runs one or several statements on the MySQL checking connection; returns the first result
 * set, if any (the caller frees it). */
static MYSQL_RES *my_run(const testdb *db, const char *sql) {
  MYSQL *m = db->my;
  if (mysql_query(m, sql)) {
    fprintf(stderr, "mysql: %s in %s\n", mysql_error(m), sql);
    CU_FAIL_FATAL("mysql");
  }
  MYSQL_RES *first = NULL;
  do {
    MYSQL_RES *r = mysql_store_result(m);
    if (!first)
      first = r;
    else if (r)
      mysql_free_result(r);
  } while (mysql_next_result(m) == 0);
  return first;
}

void testdb_exec(const testdb *db, const char *sql) {
  if (db->kind == TEST_SQLITE)
    sqlite_exec(db->path, sql);
  else if (db->kind == TEST_POSTGRES)
    PQclear(pg_run(db, sql));
  else {
    MYSQL_RES *r = my_run(db, sql);
    if (r)
      mysql_free_result(r);
  }
}

/* mysql://user:password@host:port/database: the same URL with another database. */
static void my_url_for(const char *base, const char *database, char *out, size_t cap) {
  const char *hostpart = strstr(base, "://");
  const char *slash = hostpart ? strchr(hostpart + 3, '/') : NULL;
  size_t keep = slash ? (size_t)(slash - base) : strlen(base);
  snprintf(out, cap, "%.*s/%s", (int)keep, base, database);
}

static MYSQL *my_connect(const char *url) {
  /* user:password@host:port/db */
  char user[64] = "", pass[64] = "", host[64] = "127.0.0.1", db[64] = "";
  unsigned port = 3306;
  const char *p = strstr(url, "://");
  CU_ASSERT_FATAL(p != NULL);
  p += 3;
  sscanf(p, "%63[^:@]:%63[^@]@%63[^:/]:%u/%63s", user, pass, host, &port, db);
  MYSQL *m = mysql_init(NULL);
  if (!mysql_real_connect(m, host, user, pass, db[0] ? db : NULL, port, NULL,
                          CLIENT_MULTI_STATEMENTS)) {
    fprintf(stderr, "mysql connect: %s\n", mysql_error(m));
    CU_FAIL_FATAL("mysql connect");
  }
  mysql_query(m, "SET time_zone = '+00:00'");
  return m;
}

static void my_create(testdb *db) {
  static int serial;
  const char *base = getenv("TABQ_TEST_MYSQL_URL");
  if (!base) {
    fprintf(stderr, "TABQ_TEST_MYSQL_URL is not set: ./dev test starts MariaDB and sets it\n");
    CU_FAIL_FATAL("TABQ_TEST_MYSQL_URL");
  }
  snprintf(db->schema, sizeof db->schema, "t%d_%d", (int)getpid(), ++serial);
  db->my = my_connect(base);
  char sql[96];
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", db->schema);
  testdb_exec(db, sql);
  snprintf(sql, sizeof sql, "USE %s", db->schema);
  testdb_exec(db, sql);
  testdb_exec(db, my_schema);
  my_url_for(base, db->schema, db->url, sizeof db->url);
}

static void pg_create(testdb *db) {
  static int serial;
  const char *base = getenv("TABQ_TEST_POSTGRES_URL");
  if (!base) {
    fprintf(stderr,
            "TABQ_TEST_POSTGRES_URL is not set: ./dev test starts PostgreSQL and sets it\n");
    CU_FAIL_FATAL("TABQ_TEST_POSTGRES_URL");
  }
  snprintf(db->schema, sizeof db->schema, "t%d_%d", (int)getpid(), ++serial);
  /* Unqualified names resolve to the test's own schema, for tabq and for the checks alike. */
  snprintf(db->url, sizeof db->url, "%s%coptions=-csearch_path%%3D%s", base,
           strchr(base, '?') ? '&' : '?', db->schema);
  PGconn *admin = PQconnectdb(base);
  CU_ASSERT_FATAL(PQstatus(admin) == CONNECTION_OK);
  char sql[96];
  snprintf(sql, sizeof sql, "CREATE SCHEMA %s", db->schema);
  PGresult *r = PQexec(admin, sql);
  CU_ASSERT_FATAL(PQresultStatus(r) == PGRES_COMMAND_OK);
  PQclear(r);
  PQfinish(admin);
  db->pg = PQconnectdb(db->url);
  CU_ASSERT_FATAL(PQstatus(db->pg) == CONNECTION_OK);
  PQclear(pg_run(db, "SET client_min_messages = warning"));
  PQclear(pg_run(db, pg_schema));
}

void testdb_create(testdb *db) {
  memset(db, 0, sizeof *db);
  db->kind = test_db_kind();
  if (db->kind == TEST_POSTGRES) {
    pg_create(db);
    return;
  }
  if (db->kind == TEST_MYSQL) {
    my_create(db);
    return;
  }
  snprintf(db->path, sizeof db->path, "/tmp/tabq-live-XXXXXX");
  int fd = mkstemp(db->path);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  snprintf(db->url, sizeof db->url, "sqlite:%s?synchronous=normal", db->path);
  sqlite_exec(db->path, sqlite_schema);
}

void testdb_remove(testdb *db) {
  if (db->kind == TEST_MYSQL) {
    char sql[96];
    snprintf(sql, sizeof sql, "DROP DATABASE %s", db->schema);
    mysql_query(db->my, sql);
    mysql_close(db->my);
    db->my = NULL;
    return;
  }
  if (db->kind == TEST_POSTGRES) {
    char sql[96];
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", db->schema);
    PQclear(PQexec(db->pg, sql));
    PQfinish(db->pg);
    db->pg = NULL;
    return;
  }
  char side[96];
  unlink(db->path);
  snprintf(side, sizeof side, "%s-wal", db->path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", db->path);
  unlink(side);
  snprintf(side, sizeof side, "%s-tabq-advisory", db->path); /* the advisory form's lock file */
  unlink(side);
}

static sqlite3_stmt *query(const testdb *db, sqlite3 **conn, const char *sql) {
  sqlite3_stmt *st = NULL;
  CU_ASSERT_FATAL(sqlite3_open(db->path, conn) == SQLITE_OK);
  sqlite3_busy_timeout(*conn, 5000);
  if (sqlite3_prepare_v2(*conn, sql, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "sqlite: %s in %s\n", sqlite3_errmsg(*conn), sql);
    CU_FAIL_FATAL("query");
  }
  return st;
}

long long testdb_int(const testdb *db, const char *sql) {
  if (db->kind == TEST_MYSQL) {
    MYSQL_RES *r = my_run(db, sql);
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    long long v = row && row[0] ? atoll(row[0]) : -1;
    if (r)
      mysql_free_result(r);
    return v;
  }
  if (db->kind == TEST_POSTGRES) {
    PGresult *r = pg_run(db, sql);
    long long v = PQntuples(r) && !PQgetisnull(r, 0, 0) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
  }
  sqlite3 *conn;
  sqlite3_stmt *st = query(db, &conn, sql);
  long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(conn);
  return v;
}

void testdb_text(const testdb *db, const char *sql, char *buf, size_t cap) {
  if (db->kind == TEST_MYSQL) {
    MYSQL_RES *r = my_run(db, sql);
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    snprintf(buf, cap, "%s", row && row[0] ? row[0] : "");
    if (r)
      mysql_free_result(r);
    return;
  }
  if (db->kind == TEST_POSTGRES) {
    PGresult *r = pg_run(db, sql);
    snprintf(buf, cap, "%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return;
  }
  sqlite3 *conn;
  sqlite3_stmt *st = query(db, &conn, sql);
  const unsigned char *t = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
  snprintf(buf, cap, "%s", t ? (const char *)t : "");
  sqlite3_finalize(st);
  sqlite3_close(conn);
}

void testdb_fill(const testdb *db, const char *queue, int n) {
  char sql[512];
  if (db->kind == TEST_MYSQL) {
    testdb_exec(db, "SET SESSION max_recursive_iterations = 1000000");
    snprintf(sql, sizeof sql,
             "INSERT INTO jobs (queue, payload) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
             "SELECT i + 1 FROM n WHERE i < %d) SELECT '%s', CONCAT('job-', i) FROM n",
             n, queue);
  } else if (db->kind == TEST_POSTGRES)
    snprintf(sql, sizeof sql,
             "INSERT INTO jobs (queue, payload) SELECT '%s', convert_to('job-' || i, 'UTF8') "
             "FROM generate_series(1, %d) AS i",
             queue, n);
  else
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
             "INSERT INTO jobs (queue, payload) SELECT '%s', 'job-' || i FROM n",
             n, queue);
  testdb_exec(db, sql);
}

tabq_broker *connect_broker(const testdb *db, unsigned poll_ms) {
  tabq_broker_options o = {
      .size = sizeof(tabq_broker_options), .poll_interval_ms = poll_ms, .pool_size = 6};
  tabq_broker *b = NULL;
  tabq_error err;
  int rc = tabq_connect(db->url, &o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return b;
}

void publish_n(tabq_broker *b, const char *queue, int n) {
  for (int i = 0; i < n; i++) {
    char payload[32];
    int len = snprintf(payload, sizeof payload, "job-%d", i);
    tabq_message m = {.size = sizeof(tabq_message),
                      .group = queue,
                      .payload = payload,
                      .payload_len = (size_t)len};
    tabq_error err;
    int rc = tabq_publish(b, jobs_table(), &m, &err);
    if (rc)
      fprintf(stderr, "publish: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
}

bool wait_count(const testdb *db, const char *sql, long long want, int timeout_ms) {
  for (int waited = 0;; waited += 20) {
    if (testdb_int(db, sql) == want)
      return true;
    if (waited >= timeout_ms)
      return false;
    sleep_ms(20);
  }
}

void child_start(child *c, const char *mode, const testdb *db) {
  char *const argv[] = {TABQ_TEST_CHILD, (char *)mode, (char *)db->url, NULL};
  child_spawn(c, argv);
}

int child_wait(child *c) {
  return child_reap(c);
}

char *test_bytes(size_t n) {
  char *p = malloc(n ? n : 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i] = (char)(x >> 24);
  }
  return p;
}
