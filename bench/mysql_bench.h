/* What the MariaDB/MySQL benchmark's files share: sessions on the run's database, plain
 * libmariadb calls that end the run on failure, DATETIME values, and one raw loop's thread. */
#ifndef TABQ_MYSQL_BENCH_H
#define TABQ_MYSQL_BENCH_H

#include <pthread.h>
#include <stdint.h>

#include <mysql.h>

#include "bench_common.h"

/* The run's own database (bench_<pid>), which every session of the run uses. */
extern const char *mb_database;

/* A session set up as the mysql driver sets up its own: UTC, utf8mb4, autocommit, matched rows
 * counted (CLIENT_FOUND_ROWS), no reconnect. `database` NULL: none selected. */
MYSQL *mb_connect(const char *database);
/* Ends the run with the session's error; `what` names the step. */
void mb_fail(MYSQL *c, const char *what) __attribute__((noreturn));
void mb_stmt_fail(MYSQL_STMT *st, const char *what) __attribute__((noreturn));
/* Runs text SQL and discards whatever it returns. */
void mb_query(MYSQL *c, const char *sql);
void mb_query_n(MYSQL *c, const char *sql, size_t n);
void mb_commit(MYSQL *c);

/* Prepares `sql` on the server, which must count `nparams` placeholders. */
MYSQL_STMT *mb_prepare(MYSQL *c, const char *sql, unsigned nparams);

/* Microseconds since 1970 as a DATETIME in UTC (the sessions' time zone). */
void mb_time(MYSQL_TIME *t, int64_t unix_us);
/* A lease's expiry from `now`, rounded up to a whole second as tabq rounds it for this dialect
 * (TABQ_LEASE_WHOLE_SECONDS): a DATETIME without fractions then holds it exactly. */
int64_t mb_lease_until(int64_t now_us);

/* One raw loop on a thread and a connection of its own. */
typedef struct mb_loop {
  const bench_args *a;
  pthread_barrier_t *ready; /* every loop connected and prepared: the clock starts */
  bench_tally t;
  double start, end;
} mb_loop;

/* The loop of the best SQL written by hand (mysql_best.c). */
void *mb_best_main(void *loop);
/* Its statements, for --sql. */
void mb_best_print(const bench_args *a);

#endif
