/* What the MariaDB/MySQL benchmark's files share: sessions on the run's database, plain
 * libmariadb calls that end the run on failure, DATETIME values, and one raw loop's thread. */
#ifndef TABQ_MYSQL_BENCH_H
#define TABQ_MYSQL_BENCH_H

#include <pthread.h>
#include <stdint.h>

#include <mysql.h>

#include "bench_common.h"

/* The parts of the server's URL, percent-decoded, as the driver reads them. */
typedef struct mb_server {
  char user[256], password[256], host[256], socket[1024];
  unsigned port;
} mb_server;

/* mysql://user:password@host:port/database?socket=PATH (or mariadb://) from the variable `env`:
 * the parts into *server, and into url (cap bytes) the URL that reaches `database` instead of
 * the one named, its query kept. A URL that cannot be read ends the run naming `env`. */
void mb_parse_url(const char *base_url, const char *env, const char *database, mb_server *server,
                  char *url, size_t cap);

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

/* The loop of the best SQL written by hand (mysql_best.c). */
void *mb_best_main(void *loop);
/* Its statements, for --sql. */
void mb_best_print(const bench_args *a);

/* The best side's statements on a processed_at table (mysql_processed.c), bound in order by the
 * parameter ids each lists: claim, stamp, ack, and the claim's begin ("" in the row lock form,
 * whose session runs with autocommit off). */
void mb_processed_statements(const bench_args *a, tabq_stmt *claim, tabq_stmt *stamp,
                             tabq_stmt *ack, tabq_stmt *begin);

#endif
