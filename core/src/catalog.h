/* The catalog and the schema, as the dialect reads and renders them: a table's indexes
 * (Dialect.indexes), the unique key's and the claim order's index checked against them, and the
 * parts of its schema (Dialect.schema). Included by the files that ask the catalog, not by every
 * engine file through engine.h. */
#ifndef TABQ_CATALOG_H
#define TABQ_CATALOG_H

#include "engine.h"

/* index_list.c: the indexes of build->table as the dialect's catalog query lists them
 * (Dialect.indexes, ABI 1.7), read on `on` (NULL: a pooled connection), each index handed to
 * `visit` until it returns true (*found). The columns compare without ASCII case; an
 * expression's column reads "". `unique` is known from a plugin with Dialect.find_unique (ABI
 * 1.9). TABQ_DIALECT, naming the plugin, its ABI and `what` was sought, without the member; the
 * query's failure otherwise. */
#define TABQ_INDEX_MAX_KEY 16
#define TABQ_INDEX_NAME_CAP 256
typedef struct tabq_index_seen {
  char name[TABQ_INDEX_NAME_CAP];
  char cols[TABQ_INDEX_MAX_KEY][TABQ_INDEX_NAME_CAP];
  unsigned ncols;
  bool partial;
  bool unfinished_only; /* its predicate is "processed_at IS NULL" */
  bool unique, unique_known;
} tabq_index_seen;
typedef bool (*tabq_index_visit)(const tabq_table *t, const tabq_index_seen *x, void *user);
int tabq__indexes_walk(tabq_broker *b, tabq_pconn *on, const tabq_build *build, const char *what,
                       tabq_index_visit visit, void *user, bool *found, tabq_error *err);

/* unique_index.c: a table with a unique_key column (docs/unique-jobs.md). Whether the plugin
 * serves it (ABI 1.9's Dialect.find_unique; TABQ_DIALECT naming the plugin and its ABI), then
 * whether the catalog shows a unique index of that one column (TABQ_SCHEMA naming the table and
 * the column otherwise). Nothing for a table without the role. */
int tabq__unique_servable(tabq_broker *b, const tabq_table *t, tabq_error *err);
int tabq__unique_index_check(tabq_broker *b, tabq_pconn *on, const tabq_build *build,
                             tabq_error *err);

/* claim_index.c: whether build->table has an index its claims walk (docs/check.md), from the
 * dialect's catalog query (Dialect.indexes, ABI 1.7): *found, and the name of the index that
 * serves in `name` (cap bytes). TABQ_DIALECT, naming the plugin and its ABI, without the
 * member; the query's failure otherwise. */
int tabq__claim_index_find(tabq_broker *b, const tabq_build *build, bool *found, char *name,
                           size_t cap, tabq_error *err);

/* schema.c: a table's schema from the broker's dialect (Dialect.schema, ABI 1.7). */
/* The claim-order index's default name, "<table>_claim" (without the table's schema). */
void tabq__schema_index_name(const tabq_table *t, char *out, size_t cap);
/* Statement `part` of build->table's schema into *out (initialised here; no SQL: the database
 * has none for that part); TABQ_DIALECT naming the plugin and its ABI without the member. */
int tabq__schema_part(tabq_broker *b, const tabq_build *build, tabq_schema_part part,
                      uint32_t flags, const char *index_name, tabq_stmt *out, tabq_error *err);

#endif
