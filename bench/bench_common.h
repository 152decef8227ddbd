/* What the benchmarks share: errors, a host for the dialects' builders, where a claim's
 * projection puts its columns, clocks, the read-back tally every drain is checked against, raw
 * loops on threads of their own, the tabq side of a drain, and medians. */
#ifndef TABQ_BENCH_COMMON_H
#define TABQ_BENCH_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

#define BENCH_PAYLOAD_LEN 64
#define BENCH_QUEUE "bench"
#define BENCH_LEASE_S 30 /* the broker's default lease, which the tabq side runs with */
#define BENCH_POLL_MS 1000

/* Names the program in every message ("tabq_bench"). */
void bench_init(const char *program);

/* Ends the run with status 1; atexit handlers clean up. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* From a signal's cleanup on: the failures it causes elsewhere (connections it ended) are not
 * the run's, so bench_die waits for the signal to end the process instead. */
void bench_interrupted(void);
bool bench_is_interrupted(void);

/* Blocks SIGINT, SIGTERM and SIGHUP in every thread (call it before starting any) and takes them
 * on a thread of its own, where the database's client library may be called: it prints
 * "interrupted, <what>", runs `cleanup`, then lets the signal end the process. `cleanup` also
 * runs at exit; it must be safe to run twice and never die. SIGPIPE is ignored: a closed stdout
 * shows as a failed write, which ends the run with the cleanup. */
void bench_watch_signals(void (*cleanup)(void), const char *what);

/* The services the core would lend a plugin, so the builders can be called directly. */
extern const tabq_host bench_host;

/* Builds one statement of `table` in `form`, or ends the run naming `what`. */
void bench_build(tabq_build_fn fn, const tabq_table *table, tabq_form form, const char *what,
                 tabq_stmt *st);

/* Where id, attempt and payload sit in a claim's projection, in the order the ABI fixes. */
typedef struct bench_projection {
  int id, attempt, payload, n;
} bench_projection;

bench_projection bench_project(tabq_stmt *claim, const tabq_table *table);

/* The core's "now": wall-clock microseconds. */
int64_t bench_now_us(void);
double bench_mono_s(void);
/* The CPU time (user + system) every thread of this process has used, in seconds. */
double bench_cpu_s(void);

/* What a drain read back, to check both sides saw every row exactly once. */
typedef struct bench_tally {
  int64_t rows, id_sum, attempt_sum, bytes;
} bench_tally;

void bench_tally_add(bench_tally *into, const bench_tally *t);
/* Every row once, each at its first attempt, with its whole payload; else the run ends. */
void bench_expect_tally(const bench_tally *t, int64_t rows, int64_t id_sum, const char *side);

/* Runs fn on n threads, the i-th with (char *)args + i * arg_size, and joins them. Raw loops run
 * on threads as tabq's workers do: the main thread's malloc arena (brk) and a thread's (mmap)
 * trim and fault differently, and that alone moved results by 10%. */
void bench_threads(unsigned n, void *(*fn)(void *), void *args, size_t arg_size);

/* ---- One drain per run, as bench/run.py asks for it ----------------------------------------- */

/* tabq itself; a loop of the dialect's own statements ("own"); a loop of the best SQL written by
 * hand for the same guarantee ("best"). */
typedef enum bench_side { BENCH_TABQ, BENCH_OWN, BENCH_BEST } bench_side;

/* The table drained: acks delete its rows (plain), or set processed_at and keep them, with the
 * index docs/table-description.md recommends for that (processed: one the finished rows leave)
 * or with the plain claim index, which keeps them at its head (processed-naive). */
typedef enum bench_table_kind {
  BENCH_TABLE_PLAIN,
  BENCH_TABLE_PROCESSED,
  BENCH_TABLE_PROCESSED_NAIVE
} bench_table_kind;

typedef struct bench_args {
  bench_side side;
  tabq_form form;
  unsigned workers, batch;
  int64_t rows;
  bool show_sql;
  bench_table_kind table;
  int coalesce_us;       /* tabq side, lease form: coalesce_acks with this window; -1 off */
  const char *url_query; /* tabq side: added to the broker's URL query ("pooler=transaction") */
  unsigned prefetch;     /* tabq side, lease form: the subscription's prefetch */
  bool no_lookahead;     /* tabq side: the subscription's lookahead off (default: adaptive) */
  bool acks_alone;       /* tabq side: acks = TABQ_ACKS_ALONE (default: gathered on SQLite) */
  /* PostgreSQL: the table takes docs/table-description.md's per-table autovacuum settings
   * instead of autovacuum off (what a service that follows the docs runs). */
  bool autovacuum;
} bench_args;

/* Drains a->rows rows through tabq with a no-op handler that acks (a batch handler of a->batch
 * rows when it is over 1), on a->workers workers (coalesce_acks as a->coalesce_us says):
 * connects (untimed), then times from subscribe until every row is settled. Returns the seconds;
 * the run ends unless every row was acked. */
double bench_run_tabq(const char *url, const tabq_table *table, const bench_args *a,
                      bench_tally *out);

/* One raw loop on a thread and a connection of its own. */
typedef struct bench_loop {
  const bench_args *a;
  pthread_barrier_t *ready; /* every loop connected and prepared: the clock starts */
  bench_tally t;
  double start, end;
} bench_loop;

/* Runs `fn` on a->workers threads, each given its bench_loop; returns the time from the first
 * loop's start to the last one's end, with every loop's tally added into *t. */
double bench_run_loops(void *(*fn)(void *), const bench_args *a, bench_tally *t);

#define BENCH_MAX_WORKERS 64
#define BENCH_MAX_BATCH 1000

/* --side, --form (one of `forms`, tabq_form values or'ed), --workers, --batch, --rows, --sql,
 * --table; --help prints `usage` and ends the run; a bad option ends it with status 2. */
void bench_parse_args(int argc, char **argv, unsigned forms, int64_t default_rows,
                      const char *usage, bench_args *a);
const char *bench_side_name(bench_side side);
const char *bench_form_name(tabq_form form);
const char *bench_table_name(bench_table_kind table);
/* The processed_at column's name when the table has one, else NULL. */
const char *bench_processed_at(const bench_args *a);

/* The database server's CPU time (user + system, its reaped children included) in seconds, from
 * /proc for the process TABQ_BENCH_SERVER_PID names (a PostgreSQL postmaster with its backends,
 * or mysqld); below 0 when the variable is unset or the process cannot be read. */
double bench_server_cpu_s(void);

/* What one drain measured. */
typedef struct bench_result {
  const char *db, *server_version;
  double seconds, client_cpu_s, server_cpu_s; /* server_cpu_s < 0: not measured */
} bench_result;

/* One JSON line on stdout: db, side, form, table, workers, batch, rows, seconds, msgs_per_s,
 * client and server CPU per row in microseconds. */
void bench_emit(const bench_args *a, const bench_result *r);

/* After a drain of a processed_at table: `rows` rows still there, every one finished (processed_at
 * set) and none leased; else the run ends. `finished` counts the rows with processed_at set and
 * locked_until NULL (or no locked_until), `total` every row. */
void bench_expect_finished(int64_t total, int64_t finished, int64_t rows, const char *side);

/* A whole number from 1 to max for option `opt`, or the run ends. */
unsigned bench_parse_count(const char *opt, const char *s, unsigned max);
/* Sorts v. */
double bench_median(double *v, unsigned n);

#endif
