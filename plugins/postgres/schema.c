/* tabq — the PostgreSQL dialect's schema (Dialect.schema) and index catalog (Dialect.indexes),
 * ABI 1.7. The table, its claim index and the dead letter table come from the SDK's builder in
 * PostgreSQL's types; the settings are PostgreSQL's own: autovacuum that visits a queue table
 * far more often than the default, and room on each page of a lease table
 * (docs/table-description.md, docs/schema.md). */
#include <stdio.h>
#include <string.h>

#include <tabq/sys/sql_build.h>

#include "postgres_plugin.h"

/* BIGSERIAL rather than an identity column, which PostgreSQL 9.5 lacks; TIMESTAMPTZ holds the
 * microseconds tabq's times carry; JSONB is what the headers' lookups read. A column of any type
 * needs a type here: text. */
static const tabq_sql_schema types = {
    .auto_id = "BIGSERIAL PRIMARY KEY",
    .integer = "BIGINT",
    .real = "DOUBLE PRECISION",
    .text = "TEXT",
    .bytes = "BYTEA",
    .time = "TIMESTAMPTZ",
    .json = "JSONB",
    .any = "TEXT",
    .counter = "INTEGER",
    .partial_index = true,
    .index_if_not_exists = true, /* 9.5 */
};

/* autovacuum_vacuum_insert_* came with PostgreSQL 13. */
#define PG_INSERT_VACUUM_FLOOR 130000

/* "ALTER TABLE T SET (...)": vacuum and analyze after 5,000 changed rows whatever the table's
 * size, without the cost delay; a lease table keeps a fifth of each page free, so writing
 * locked_until (not indexed) stays a HOT update. A server of unknown version gets every
 * setting. */
static int settings(const tabq_build *b, tabq_stmt *out) {
  const tabq_sql_style *s = tabq_pg_style();
  bool inserts = b->server_version == 0 || b->server_version >= PG_INSERT_VACUUM_FLOOR;
  tabq_sql_raw(out, "ALTER TABLE ");
  tabq_sqlb_table(s, out, b->table->name);
  tabq_sql_raw(out, " SET (autovacuum_vacuum_scale_factor = 0, "
                    "autovacuum_vacuum_threshold = 5000, ");
  if (inserts)
    tabq_sql_raw(out, "autovacuum_vacuum_insert_scale_factor = 0, "
                      "autovacuum_vacuum_insert_threshold = 5000, ");
  tabq_sql_raw(out, "autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000, "
                    "autovacuum_vacuum_cost_delay = 0");
  if (b->table->locked_until.name)
    tabq_sql_raw(out, ", fillfactor = 80");
  tabq_sql_raw(out, ")");
  return tabq_sqlb_finish(s, b, out, "schema: settings");
}

int tabq_pg_schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out) {
  if (spec->part == TABQ_SCHEMA_SETTINGS) {
    int rc = tabq_sqlb_schema(tabq_pg_style(), &types, b, spec, out); /* the description's checks */
    return rc ? rc : settings(b, out);
  }
  return tabq_sqlb_schema(tabq_pg_style(), &types, b, spec, out);
}

/* The catalog by the table's quoted name as the server resolves it (search_path included): each
 * valid index's key columns in order, an expression's as NULL, and its predicate as
 * pg_get_expr writes it ("(processed_at IS NULL)"). */
int tabq_pg_indexes(const tabq_build *b, tabq_stmt *out) {
  tabq_stmt name;
  tabq_sql_init(&name, out->host);
  tabq_sqlb_table(tabq_pg_style(), &name, b->table->name);
  tabq_sql_raw(out, "SELECT c.relname::text, k.n, a.attname::text, "
                    "pg_catalog.pg_get_expr(x.indpred, x.indrelid), x.indisunique::int FROM "
                    "pg_catalog.pg_index x "
                    "JOIN pg_catalog.pg_class c ON c.oid = x.indexrelid CROSS JOIN LATERAL "
                    "unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) LEFT JOIN "
                    "pg_catalog.pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = "
                    "k.attnum WHERE x.indisvalid AND x.indrelid = pg_catalog.to_regclass(");
  if (name.status)
    out->status = name.status;
  else
    tabq_pg_literal(out, name.sql, name.len);
  tabq_sql_raw(out, ") ORDER BY 1, 2");
  tabq_sql_free(&name);
  return tabq_sqlb_finish(tabq_pg_style(), b, out, "indexes");
}
