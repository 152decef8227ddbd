/* The batched delete of old rows (prune.c): what tabq_admin_purge and the retention pruner
 * (retention.c) share. */
#ifndef TABQ_PRUNE_H
#define TABQ_PRUNE_H

#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

#include "pool.h"

/* The values a prune statement binds, by parameter id: RETRY_AT the cutoff, LIMIT the batch,
 * DEST a dead letter group, KEY an election key (the advisory lock and unlock). */
typedef struct tabq_prune_vals {
  int64_t cutoff, limit;
  tabq_value dest, key;
} tabq_prune_vals;

/* Into *st (free it with tabq_sql_free), for the rows of `table` (of t's roles: its id and
 * group) whose `time_col` is before the cutoff, and in the group DEST when `in_group`: a batch's
 * DELETE of at most LIMIT of them, or with `count` their COUNT(*). */
int tabq__prune_sql(tabq_broker *b, const tabq_table *t, const char *table, const char *time_col,
                    bool in_group, bool count, tabq_stmt *st, tabq_error *err);
/* Prepares and runs a built statement on c: *changed the rows it changed, *first (when not NULL)
 * the first cell of its first row as an integer (-1: no row, or NULL). Failures name `table`
 * and the statement `what`. */
int tabq__prune_run(tabq_broker *b, tabq_pconn *c, const tabq_stmt *st, const tabq_prune_vals *v,
                    const char *table, const char *what, uint64_t *changed, int64_t *first,
                    tabq_error *err);
/* One batch: `begin_sql`, the DELETE `del`, the commit, on c; *deleted the rows it deleted (0
 * when it failed and rolled back). */
int tabq__prune_batch(tabq_broker *b, tabq_pconn *c, const char *begin_sql, const tabq_stmt *del,
                      const tabq_prune_vals *v, const char *table, uint64_t *deleted,
                      tabq_error *err);
/* The begin of a batch's transaction on t: the dialect's, at the database's default level. */
int tabq__prune_begin_sql(tabq_broker *b, const tabq_table *t, char *out, size_t cap,
                          tabq_error *err);

#endif
