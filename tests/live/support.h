/* What the database-specific live suites share (every other behaviour is in the conformance
 * kit): a fresh database per test (a SQLite file, a PostgreSQL schema or a MySQL database of its
 * own), direct SQL on it (checks read the database with its client library, never through tabq),
 * a recording handler, and child processes.
 *
 * One suite runs on several databases and forms: TABQ_TEST_DB (sqlite, postgres) and
 * TABQ_TEST_FORM (lease, rowlock, advisory) choose them, set by ctest per registration. */
#ifndef TABQ_TEST_SUPPORT_H
#define TABQ_TEST_SUPPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <tabq/tabq.h>

#include "child_pipe.h"
#include "handlers.h" /* the recorder and exactly-once counting, shared with the kit */

typedef enum test_kind { TEST_SQLITE, TEST_POSTGRES, TEST_MYSQL } test_kind;

/* The database and form this run tests (from the environment; SQLite and lease by default). */
test_kind test_db_kind(void);
const char *test_db_name(void); /* "sqlite", "postgres", "mysql" */
tabq_form test_form(void);

/* The queue table of most tests, in the run's form, every role. */
const tabq_table *jobs_table(void);

typedef struct testdb {
  test_kind kind;
  char path[64];   /* SQLite: the file */
  char schema[32]; /* PostgreSQL: the test's own schema */
  char url[512];
  void *pg; /* PostgreSQL: the checking connection */
  void *my; /* MySQL/MariaDB: the checking connection */
} testdb;

/* A new empty database with the jobs schema (jobs, and jobs_dead its dead letter table). */
void testdb_create(testdb *db);
/* Runs SQL on the database directly. */
void testdb_exec(const testdb *db, const char *sql);
void testdb_remove(testdb *db);
/* Runs SQL on the file directly; returns the first column of the first row as an integer
 * (or -1 with no row). */
long long testdb_int(const testdb *db, const char *sql);
/* The first column of the first row as text into buf ("" with no row or NULL). */
void testdb_text(const testdb *db, const char *sql, char *buf, size_t cap);

/* Writes n rows to `queue` directly (not through tabq), payloads "job-<i>". */
void testdb_fill(const testdb *db, const char *queue, int n);

tabq_broker *connect_broker(const testdb *db, unsigned poll_ms);
/* Publishes n rows to `queue` with payload "job-<i>". */
void publish_n(tabq_broker *b, const char *queue, int n);
/* `n` bytes (malloc'd, at least one) that no text handling or truncation would keep: every byte
 * value, NULs included, the same sequence each call. */
char *test_bytes(size_t n);

/* Waits until a SQL count reaches `want`. */
bool wait_count(const testdb *db, const char *sql, long long want, int timeout_ms);

/* A child running tests/live/child.c with `mode` on `db` (child_pipe.h reads and writes it). */
void child_start(child *c, const char *mode, const testdb *db);
/* Waits for the child's exit; returns its status as waitpid gives it. */
int child_wait(child *c);

#endif
