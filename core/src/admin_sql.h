/* The admin calls' statements (tabq/admin.h): SQL text built with the broker's dialect (its
 * quoting and placeholders) from a table's roles, and run in a transaction of the broker's. */
#ifndef TABQ_ADMIN_SQL_H
#define TABQ_ADMIN_SQL_H

#include <tabq/admin.h>
#include <tabq/sys/sql.h>

#include <jansson.h>

typedef struct tabq_adm_sql {
  tabq_stmt st;
  const tabq_dialect_v1 *d;
} tabq_adm_sql;

/* The values a statement's parameters take, by their id: GROUP the queue, DEST a dead letter
 * group, NOW the time of the call, RETRY_AT a cutoff, LIMIT a batch, ID a row. */
typedef struct tabq_adm_vals {
  tabq_value group, dest, id;
  int64_t now, cutoff, limit;
} tabq_adm_vals;

void tabq__adm_init(tabq_adm_sql *q, tabq_broker *b);
void tabq__adm_free(tabq_adm_sql *q);
void tabq__adm_raw(tabq_adm_sql *q, const char *text);
void tabq__adm_name(tabq_adm_sql *q, const char *name); /* a quoted column or table name */
void tabq__adm_param(tabq_adm_sql *q, tabq_param id);
/* " WHERE group = :queue" (or " AND ..." when `and`); nothing for a table without a group. */
void tabq__adm_in_group(tabq_adm_sql *q, const tabq_table *t, tabq_param id, bool and);
/* " AND processed_at IS NULL" where the table has the column. */
void tabq__adm_unfinished(tabq_adm_sql *q, const tabq_table *t);

int tabq__adm_query(tabq_tx *tx, tabq_adm_sql *q, const tabq_adm_vals *v, unsigned ncols,
                    tabq_row_fn row, void *user, tabq_error *err);
int tabq__adm_exec(tabq_tx *tx, tabq_adm_sql *q, const tabq_adm_vals *v, uint64_t *changed,
                   tabq_error *err);
/* A query of one row of one integer cell (a count): *out. */
int tabq__adm_count(tabq_tx *tx, tabq_adm_sql *q, const tabq_adm_vals *v, int64_t *out,
                    tabq_error *err);
/* A cell as an integer / a time in microseconds (a time column may read as text: SQLite). */
bool tabq__adm_int(const tabq_value *c, int64_t *out);
bool tabq__adm_time(const tabq_value *c, int64_t *out);

/* The subscription of `app` whose dead letters go where row i of the app's subscriptions says;
 * its table (NULL when it has no dead letter). */
const tabq_table *tabq__adm_dead_table(tabq_broker *b, const tabq_app *app, size_t i,
                                       tabq_table *as);

/* admin_stats_json.c: the counts as {"time_us", "queues": [...]} (tabq_admin_stats_json). */
json_t *tabq__admin_stats_doc(const tabq_admin_stats *s);

#endif
