#include "support.h"

#include <CUnit/CUnit.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const tabq_table jobs_table = {
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .priority = {"priority"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .headers = {"headers"},
    .payload = {"payload"},
};

const tabq_table marked_table = {
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .priority = {"priority"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt", .generated = true},
    .processed_at = {"processed_at"},
    .locked_until = {"locked_until"},
    .headers = {"headers"},
    .payload = {"payload"},
};

#define JOBS_COLUMNS                                                                               \
  "(id INTEGER PRIMARY KEY, queue TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, "          \
  "retry_after TEXT, attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT, " \
  "headers TEXT, payload BLOB NOT NULL)"

const char *const jobs_schema =
    "CREATE TABLE jobs " JOBS_COLUMNS ";"
    "CREATE INDEX jobs_claim ON jobs (queue, priority, retry_after, id);"
    "CREATE TABLE jobs_dead " JOBS_COLUMNS ";";

static void must_exec(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "sqlite: %s\n", msg);
    sqlite3_free(msg);
    CU_FAIL_FATAL("schema");
  }
  sqlite3_close(db);
}

void testdb_create(testdb *db) {
  snprintf(db->path, sizeof db->path, "/tmp/tabq-live-XXXXXX");
  int fd = mkstemp(db->path);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  snprintf(db->url, sizeof db->url, "sqlite:%s?synchronous=normal", db->path);
  must_exec(db->path, jobs_schema);
}

void testdb_remove(testdb *db) {
  char side[96];
  unlink(db->path);
  snprintf(side, sizeof side, "%s-wal", db->path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", db->path);
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
  sqlite3 *conn;
  sqlite3_stmt *st = query(db, &conn, sql);
  long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(conn);
  return v;
}

void testdb_text(const testdb *db, const char *sql, char *buf, size_t cap) {
  sqlite3 *conn;
  sqlite3_stmt *st = query(db, &conn, sql);
  const unsigned char *t = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
  snprintf(buf, cap, "%s", t ? (const char *)t : "");
  sqlite3_finalize(st);
  sqlite3_close(conn);
}

tabq_broker *connect_broker(const testdb *db, unsigned poll_ms) {
  tabq_broker_options o = {.poll_interval_ms = poll_ms, .pool_size = 6};
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
    tabq_message m = {.group = queue, .payload = payload, .payload_len = (size_t)len};
    tabq_error err;
    int rc = tabq_publish(b, &jobs_table, &m, &err);
    if (rc)
      fprintf(stderr, "publish: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
}

void recorder_init(recorder *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
}

void recorder_free(recorder *r) {
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

tabq_outcome recorder_handler(tabq_delivery *d, void *user) {
  recorder *r = user;
  pthread_mutex_lock(&r->mu);
  unsigned call = r->calls;
  if (call < 64) {
    r->ids[call] = tabq_delivery_id(d);
    r->attempts[call] = tabq_delivery_attempt(d);
    size_t len = 0;
    const char *p = tabq_delivery_payload(d, &len);
    snprintf(r->payloads[call], sizeof r->payloads[call], "%.*s", (int)len, p ? p : "");
  }
  pthread_mutex_unlock(&r->mu);
  tabq_outcome o = r->script ? r->script(r, d, call) : tabq_ack();
  pthread_mutex_lock(&r->mu);
  r->calls++;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return o;
}

void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

bool recorder_wait(recorder *r, unsigned calls, int timeout_ms) {
  for (int waited = 0;; waited += 10) {
    pthread_mutex_lock(&r->mu);
    bool done = r->calls >= calls;
    pthread_mutex_unlock(&r->mu);
    if (done)
      return true;
    if (waited >= timeout_ms)
      return false;
    sleep_ms(10);
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
  int out[2], in[2];
  CU_ASSERT_FATAL(pipe(out) == 0 && pipe(in) == 0);
  fflush(NULL);
  c->pid = fork();
  CU_ASSERT_FATAL(c->pid >= 0);
  if (c->pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    close(out[0]);
    close(in[1]);
    execl(TABQ_TEST_CHILD, TABQ_TEST_CHILD, mode, db->url, (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  c->out = out[0];
  c->in = in[1];
}

bool child_line(child *c, char *buf, size_t cap, int timeout_ms) {
  size_t n = 0;
  while (n + 1 < cap) {
    struct pollfd p = {.fd = c->out, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0)
      return false;
    char ch;
    if (read(c->out, &ch, 1) != 1)
      return false;
    if (ch == '\n')
      break;
    buf[n++] = ch;
  }
  buf[n] = '\0';
  return true;
}

void child_say(child *c, const char *line) {
  size_t len = strlen(line);
  CU_ASSERT(write(c->in, line, len) == (ssize_t)len);
  CU_ASSERT(write(c->in, "\n", 1) == 1);
}

int child_wait(child *c) {
  int status = 0;
  waitpid(c->pid, &status, 0);
  close(c->out);
  close(c->in);
  return status;
}
