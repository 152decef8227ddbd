/* What the PostgreSQL benchmark's files share: plain libpq calls that end the run on failure,
 * binary integers, and one raw loop's thread. */
#ifndef TABQ_PG_BENCH_H
#define TABQ_PG_BENCH_H

#include <pthread.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "bench_common.h"

#define PG_EPOCH_US INT64_C(946684800000000) /* 2000-01-01, PostgreSQL's epoch, since 1970 */

/* Type OIDs (pg_type.dat). */
enum { PG_OID_BYTEA = 17, PG_OID_INT8 = 20, PG_OID_INT2 = 21, PG_OID_INT4 = 23, PG_OID_TEXT = 25 };
enum { PG_OID_TIMESTAMPTZ = 1184, PG_OID_INT8_ARRAY = 1016 };

/* The connection string that reaches the run's schema. */
extern const char *pg_bench_url;

PGconn *pg_open(const char *conninfo);
/* Ends the run unless r succeeded. */
void pg_check(PGconn *c, PGresult *r, const char *what);
void pg_exec(PGconn *c, const char *sql);
/* Prepares `sql` as `name` with the parameter types given. */
void pg_prepare(PGconn *c, const char *name, const char *sql, int n, const Oid *types);

void pg_put_be64(char *p, int64_t v);
/* A big-endian integer of 2, 4 or 8 bytes, sign extended. */
int64_t pg_get_int(const char *p, int len);

/* The loop of the best SQL written by hand (pg_best.c). */
void *pg_best_main(void *loop);
/* Its statements, for --sql. */
void pg_best_print(const bench_args *a);

#endif
