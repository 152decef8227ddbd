/* tabq — a queue table's schema, rendered by the broker's dialect from the table's description
 * (docs/schema.md): the CREATE TABLE with a column of a fitting type for every role, the
 * claim-order index for exactly the roles the table has, the per-table settings where the
 * database has them (PostgreSQL's autovacuum), and a dead letter table of the same columns.
 * Included by tabq/tabq.h. */
#ifndef TABQ_SCHEMA_H
#define TABQ_SCHEMA_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tabq_schema_options {
  uint32_t size; /* sizeof(tabq_schema_options): TABQ_SCHEMA_OPTIONS_INIT sets it */
  /* A dead letter table to render too, with the table's columns ("table" or "schema.table"):
   * a subscription names it (tabq_subscription_options.dead_letter_table), not the
   * description. NULL: none. */
  const char *dead_letter_table;
  /* The claim-order index's name, without a schema; NULL: "<table>_claim". */
  const char *index_name;
  /* CREATE TABLE IF NOT EXISTS and CREATE INDEX IF NOT EXISTS: applied again, what exists stays
   * as it is (a table of other columns too: tabq_check_subscription tells). MySQL 8 has no
   * CREATE INDEX IF NOT EXISTS, so on MySQL/MariaDB the index is always written inside the
   * CREATE TABLE. */
  bool if_not_exists;
} tabq_schema_options;

#define TABQ_SCHEMA_OPTIONS_INIT TABQ_SIZED_INIT(tabq_schema_options)
/* The first layout: a smaller `size` is refused. */
#define TABQ_SCHEMA_OPTIONS_SIZE_1_0 (offsetof(tabq_schema_options, if_not_exists) + sizeof(bool))

/* The schema of `table` on the broker's database as SQL text, one statement after another, each
 * ending with ";\n", into *out_sql, which the caller frees with tabq_schema_free. `options` may
 * be NULL. The description is checked first (R-DESC-1), and the dialect refuses what it cannot
 * hold (TABQ_DECLARATION or TABQ_DIALECT, naming the table and the rule); a dialect without
 * the renderer (a plugin before ABI 1.7) fails with TABQ_DIALECT naming the plugin and its ABI.
 * Reads the server's version (PostgreSQL's settings depend on it), writes nothing. */
TABQ_API int tabq_schema_sql(tabq_broker *b, const tabq_table *table,
                             const tabq_schema_options *options, char **out_sql, tabq_error *err);
TABQ_API void tabq_schema_free(char *sql);

/* Runs the schema's statements in order on one pooled connection, in one transaction (which
 * makes them all or nothing on PostgreSQL and SQLite; MySQL/MariaDB commit each CREATE on its
 * own). A statement the database refuses fails with its message, err.statement naming the part
 * ("schema: table", "schema: index", "schema: settings", "schema: dead letter table") and
 * err.position where the database gives one. */
TABQ_API int tabq_schema_apply(tabq_broker *b, const tabq_table *table,
                               const tabq_schema_options *options, tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
