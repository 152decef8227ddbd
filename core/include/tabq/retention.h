/* tabq — retention: finished rows and old dead letters pruned by the broker in the background
 * (docs/retention.md).
 *
 * A table whose acks set processed_at keeps every finished row, and dead letters stay until
 * someone deletes them: left alone, the table only grows. tabq_retain() hands a table to the
 * broker's pruner, one thread per broker, which every `interval_ms` deletes the rows finished
 * more than `processed_age_ms` ago, and the dead letters whose retry_after is more than
 * `dead_letter_age_ms` ago, `batch` rows a statement, each statement its own short transaction,
 * so a claim or a settlement waits at most one batch.
 *
 *   tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
 *   o.processed_age_ms = 7 * 24 * 3600 * 1000LL;     // finished rows kept a week
 *   o.dead_letter_age_ms = 30 * 24 * 3600 * 1000LL;  // dead letters a month
 *   o.dead_letter_groups = (const char *[]){"emails.dead"};
 *   o.ndead_letter_groups = 1;
 *   if (tabq_retain(b, &jobs, &o, &err)) ...         // err.message names the table and the rule
 *
 * Several processes may retain one table: on a database with session locks (PostgreSQL,
 * MySQL/MariaDB) each round first tries an advisory lock on the table's election key without
 * waiting, and a process that finds it held skips the round, so one process at a time prunes a
 * table. SQLite has no session locks and lets one writer in at a time anyway: there every
 * process prunes, batch by batch, and a batch another already deleted deletes nothing.
 *
 * `tabq purge` (tabq_admin_purge, tabq/admin.h) runs the same batches by hand. */
#ifndef TABQ_RETENTION_H
#define TABQ_RETENTION_H

#include <tabq/app.h>
#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tabq_retention_options {
  uint32_t size; /* sizeof(tabq_retention_options): TABQ_RETENTION_OPTIONS_INIT sets it */
  /* Rows whose processed_at is older than this are deleted; 0 keeps them (the table then needs
   * no processed_at column). Negative is refused. */
  int64_t processed_age_ms;
  /* Dead letters whose retry_after (when they last fell due) is older than this are deleted from
   * the destinations below; 0 keeps them. Needs a retry_after column and a destination. */
  int64_t dead_letter_age_ms;
  /* Where the table's dead letters are: groups of this table (it needs a group column), and
   * tables of the same columns. Copied by tabq_retain. */
  const char *const *dead_letter_groups;
  size_t ndead_letter_groups;
  const char *const *dead_letter_tables;
  size_t ndead_letter_tables;
  /* Rows a statement and a transaction: 0 is 500, at most 100,000. */
  unsigned batch;
  /* Time from the start of one round to the next: 0 is 60,000 (a minute), at least 10. */
  unsigned interval_ms;
} tabq_retention_options;

#define TABQ_RETENTION_OPTIONS_INIT TABQ_SIZED_INIT(tabq_retention_options)
#define TABQ_RETENTION_OPTIONS_SIZE_1_0                                                            \
  (offsetof(tabq_retention_options, interval_ms) + sizeof(unsigned))

/* Registers `table` with the broker's pruner (started by the first call, stopped and joined by
 * tabq_shutdown) and returns; the first round runs at once. Before it returns the table is
 * checked on the database: each statement the pruner will run is prepared (TABQ_SCHEMA naming
 * the table or dead letter table that lacks a column). Refused with nothing registered
 * (TABQ_INVALID naming the table and the rule): no age set, an age below 0, a processed age on
 * a table without processed_at, a dead letter age without retry_after or without a destination,
 * a destination without a dead letter age, a dead letter group on a table without a group
 * column, a batch over 100,000, an interval under 10 ms, a table the broker retains already;
 * TABQ_CLOSED after tabq_shutdown. */
TABQ_API int tabq_retain(tabq_broker *b, const tabq_table *table,
                         const tabq_retention_options *options, tabq_error *err);

/* What the pruner did with one table in this broker. */
typedef struct tabq_retention_stats {
  uint32_t size;              /* the bytes the call wrote */
  uint64_t rounds;            /* rounds this broker ran on the table */
  uint64_t rounds_skipped;    /* rounds skipped: another process held the election key */
  uint64_t batches;           /* delete statements run (each its own transaction) */
  uint64_t processed_deleted; /* finished rows deleted */
  uint64_t dead_deleted;      /* dead letters deleted */
  uint64_t failures;          /* rounds a failure ended early (logged; the next round retries) */
} tabq_retention_stats;

/* The pruner's counters for `table` (by name) into `out`, `size` bytes of it (sizeof *out as
 * the service was compiled). TABQ_INVALID when the broker does not retain the table. The counters
 * are also in tabq_metrics_write's text, as tabq_retention_deleted_total{table,kind} and
 * tabq_retention_rounds_total{table,result}. */
TABQ_API int tabq_retention_stats_read(tabq_broker *b, const char *table, tabq_retention_stats *out,
                                       size_t size, tabq_error *err);

/* The election key of a table, as the advisory lock takes it ("tabq.retain:" and the table's
 * name, prefixed by the connection's database where the driver tells it; a key over 64 bytes is
 * shortened to a hash of itself): a service holding it with the database's own lock function
 * (pg_advisory_lock(hashtextextended(key, 0)), GET_LOCK(key, 0)) keeps every pruner off the
 * table. Written into `out`, `cap` bytes; TABQ_INVALID when the broker does not retain it. */
TABQ_API int tabq_retention_key(tabq_broker *b, const char *table, char *out, size_t cap,
                                tabq_error *err);

/* ---- In an app (tabq/app.h, docs/description-files.md) -----------------------------------
 * A table of an app carries its retention, as a description file's "retention" member does, and
 * tabq_app_main applies it once the subscriptions are open, the dead letter destinations being
 * those of the app's subscriptions to the table (a dead letter age with none is refused then).
 * The options name no destination here (TABQ_INVALID); the other rules are tabq_retain's, checked
 * now. A second call replaces the first. */
TABQ_API int tabq_app_set_retention(tabq_app *app, const char *table,
                                    const tabq_retention_options *options, tabq_error *err);
/* The retention of a table of the app (full size, owned by the app), NULL when it has none. */
TABQ_API const tabq_retention_options *tabq_app_retention(const tabq_app *app, const char *table);

#ifdef __cplusplus
}
#endif

#endif
