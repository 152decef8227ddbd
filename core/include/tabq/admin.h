/* tabq — operating a queue from a service or a tool: counts per queue, dead letters moved back,
 * finished rows pruned (the `tabq stats`, `requeue` and `purge` commands are these calls).
 *
 * Every statement is built from the app's descriptions (tabq/app.h) with the broker's dialect
 * (its quoting and placeholders), restricted by the queue's group so that it reads the table's
 * claim-order index rather than the table (docs/tools.md, "How stats reads the indexes"). The
 * app's subscriptions say where each queue's dead letters go.
 *
 *   tabq_admin_stats *s;
 *   if (tabq_admin_stats_read(b, app, &s, &err) == TABQ_OK) {
 *     for (size_t i = 0; i < tabq_admin_stats_count(s); i++)
 *       printf("%s: %lld due\n", tabq_admin_stats_get(s, i)->queue, tabq_admin_stats_get(s,
 * i)->due); tabq_admin_stats_free(s);
 *   }
 *
 * requeue and purge first check that each table they change has every column its description
 * names (TABQ_SCHEMA otherwise, nothing changed). */
#ifndef TABQ_ADMIN_H
#define TABQ_ADMIN_H

#include <tabq/app.h>
#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of one attempt count. */
typedef struct tabq_attempt_rows {
  int64_t attempt;
  int64_t rows;
} tabq_attempt_rows;

/* One queue of one table. A count the table cannot tell is -1. */
typedef struct tabq_queue_stats {
  const char *table;
  const char *queue;   /* the group; NULL for a table without a group column */
  int64_t due;         /* unfinished, due now, not held */
  int64_t delayed;     /* unfinished, retry_after in the future */
  int64_t in_work;     /* held now: a lease not yet expired (lease form); -1 in the row lock and
                          advisory forms, whose holds are locks no query sees without taking them */
  int64_t processed;   /* processed_at set; -1 without a processed_at column (acks delete) */
  int64_t dead;        /* in the queue's dead letter group or table; -1 when it has none */
  const char *dead_in; /* "group NAME" or "table NAME", NULL when it has none */
  /* How long the oldest due row has been due, in ms (now - its retry_after); -1 when no due row
   * has a retry_after. */
  int64_t oldest_due_ms;
  const tabq_attempt_rows *attempts; /* unfinished rows by attempt, ascending */
  size_t nattempts;
} tabq_queue_stats;

typedef struct tabq_admin_stats tabq_admin_stats;

/* Counts every queue of every table of `app`: the queues its subscriptions read, and every other
 * group the table holds (found by seeking the index from one group to the next). */
TABQ_API int tabq_admin_stats_read(tabq_broker *b, const tabq_app *app, tabq_admin_stats **out,
                                   tabq_error *err);
TABQ_API size_t tabq_admin_stats_count(const tabq_admin_stats *s);
TABQ_API const tabq_queue_stats *tabq_admin_stats_get(const tabq_admin_stats *s, size_t i);
/* The time the counts were read at, microseconds since 1970 UTC. */
TABQ_API int64_t tabq_admin_stats_time(const tabq_admin_stats *s);
TABQ_API void tabq_admin_stats_free(tabq_admin_stats *s);
/* The counts as one JSON document (compact, malloc'd: free() it; NULL when out of memory):
 * {"time_us": N, "queues": [{"table", "queue", "due", "delayed", "in_work", "processed", "dead",
 * "dead_in", "oldest_due_ms", "attempts": {"1": rows, ...}}, ...]}, a count the table cannot
 * tell as null; what `tabq stats --json` prints. */
TABQ_API char *tabq_admin_stats_json(const tabq_admin_stats *s);

/* ---- Listing a queue's rows (the dashboard, docs/dashboard.md) ---------------------------- */

/* Which rows of a queue tabq_admin_rows_read lists. */
typedef enum tabq_admin_rows_kind {
  TABQ_ROWS_DUE = 0, /* due now and not held, in claim order: those claimed next first (without a
                        priority, the oldest due first) */
  TABQ_ROWS_IN_WORK, /* held by a lease not yet ended, the soonest to end first (lease form) */
  TABQ_ROWS_DEAD,    /* the queue's dead letters, in its dead letter group or table, by id */
} tabq_admin_rows_kind;

/* One row. A role the table lacks reads -1 (times, attempt) or NULL (payload). */
typedef struct tabq_admin_row {
  const char *id;          /* the id, as text */
  int64_t attempt;         /* the column as stored: a claim counts it, so a row in work reads
                              one more than its delivery's tabq_delivery_attempt() */
  int64_t priority;        /* 0 without a priority column */
  int64_t retry_after_us;  /* microseconds since 1970 UTC; -1 when NULL or no column */
  int64_t locked_until_us; /* the lease's end; -1 when NULL or no column */
  const char *payload;     /* the payload's first bytes (up to 256), as stored: maybe not text */
  size_t payload_shown;    /* how many bytes `payload` holds */
  size_t payload_len;      /* the whole payload's length */
} tabq_admin_row;

typedef struct tabq_admin_rows tabq_admin_rows;

/* Lists up to `limit` rows (0: 20; at most 1000) of `kind` of one queue: `table` is a table of
 * `app` by name, `queue` its group (NULL for a table without a group column). Each statement is
 * bounded by the group, as the counts are, and reads nothing else. TABQ_INVALID: a table the app
 * lacks, a queue missing or given where the table has no group, TABQ_ROWS_IN_WORK on a table
 * without a lease (its holds are locks no query sees), TABQ_ROWS_DEAD for a queue without a dead
 * letter. */
TABQ_API int tabq_admin_rows_read(tabq_broker *b, const tabq_app *app, const char *table,
                                  const char *queue, tabq_admin_rows_kind kind, unsigned limit,
                                  tabq_admin_rows **out, tabq_error *err);
TABQ_API size_t tabq_admin_rows_count(const tabq_admin_rows *r);
TABQ_API const tabq_admin_row *tabq_admin_rows_get(const tabq_admin_rows *r, size_t i);
TABQ_API void tabq_admin_rows_free(tabq_admin_rows *r);

/* Moves the dead letters of every subscription of `app` that has a dead letter (only those
 * reading `queue`, when not NULL) back into their queue, due now, attempt 1, no lease: a dead
 * letter group's rows get the queue's group back; a dead letter table's rows are copied back
 * and deleted there, a batch of at most `batch` rows a transaction (0: 500). With `dry_run`
 * nothing changes. *moved gets the rows moved (or that would be). TABQ_INVALID when `queue` is
 * no subscription's or two subscriptions share one dead letter group (its rows' queue is then
 * unknown). */
TABQ_API int tabq_admin_requeue(tabq_broker *b, const tabq_app *app, const char *queue,
                                bool dry_run, unsigned batch, uint64_t *moved, tabq_error *err);

/* Deletes the processed rows whose processed_at is older than `older_than_ms`, and the dead
 * letters whose retry_after is, from every table of `app` (dead letter tables too), `batch` rows
 * a statement and a transaction (0: 1000) so no lock is held long. With `dry_run` it counts.
 * *processed and *dead get the rows deleted (or that would be). Rows with no such time (a table
 * without processed_at; dead letters without retry_after) are never deleted. */
TABQ_API int tabq_admin_purge(tabq_broker *b, const tabq_app *app, int64_t older_than_ms,
                              bool dry_run, unsigned batch, uint64_t *processed, uint64_t *dead,
                              tabq_error *err);

/* Checks that `table` (named `as`, when not NULL: a dead letter table of its columns) has every
 * column the description names, by a query that reads no row. TABQ_SCHEMA with the database's
 * message otherwise. */
TABQ_API int tabq_admin_verify(tabq_broker *b, const tabq_table *table, const char *as,
                               tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
