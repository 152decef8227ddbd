/* tabq — the SQLite dialect's schema (Dialect.schema) and index catalog (Dialect.indexes),
 * ABI 1.7, from the SDK's builder in SQLite's types (docs/schema.md). */
#include <string.h>

#include <tabq/sys/sql_build.h>

#include "sqlite_plugin.h"

/* INTEGER PRIMARY KEY is the rowid, assigned when the insert leaves it out (so an integer id
 * is INTEGER, never BIGINT, which would make a separate key); AUTOINCREMENT, or SQLite gives a
 * new row the largest rowid plus one, a deleted row's id again, which the dead letter table
 * already holds as its key (the dead letter would then fail at every claim). Times are text in one
 * fixed-width UTC format (sqltime.c), JSON is text; a column of any type declares none. A
 * processed_at table's claim index is partial, the unfinished rows alone. An index is named within
 * its table's schema: CREATE INDEX aux.jobs_claim ON jobs. */
static const tabq_sql_schema types = {
    .auto_id = "INTEGER PRIMARY KEY AUTOINCREMENT",
    .integer = "INTEGER",
    .real = "REAL",
    .text = "TEXT",
    .bytes = "BLOB",
    .time = "TEXT",
    .json = "TEXT",
    .any = NULL,
    .counter = "INTEGER",
    .partial_index = true,
    .index_if_not_exists = true,
    .index_in_schema = true,
};

int tabq_sqlite_schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out) {
  return tabq_sqlb_schema(tabq_sqlite_style(), &types, b, spec, out);
}

/* `what` of the table's schema: "pragma_index_list('jobs', 'aux')", "'aux'.sqlite_master". */
static void in_schema(tabq_stmt *out, const char *name, size_t schema_len) {
  if (!schema_len)
    return;
  tabq_sql_raw(out, ", ");
  tabq_sqlite_literal(out, name, schema_len);
}

/* Every index's columns (pragma_index_list, pragma_index_info), its predicate cut from its
 * CREATE INDEX text after " WHERE " (line breaks read as spaces), and the rowid of an INTEGER
 * PRIMARY KEY, which no index lists, as an index named "rowid". */
int tabq_sqlite_indexes(const tabq_build *b, tabq_stmt *out) {
  size_t schema_len;
  const char *table = tabq_sql_table_part(b->table->name, &schema_len);
  const char *name = b->table->name;
  tabq_sql_raw(out, "SELECT il.name, ii.seqno + 1, ii.name, CASE WHEN il.partial THEN (SELECT "
                    "substr(t, instr(upper(t), ' WHERE ') + 7) FROM (SELECT "
                    "replace(replace(replace(m.sql, char(10), ' '), char(13), ' '), char(9), ' ') "
                    "AS t FROM ");
  if (schema_len) {
    tabq_sqlb_name(tabq_sqlite_style(), out, name, schema_len);
    tabq_sql_raw(out, ".");
  }
  tabq_sql_raw(
      out,
      "sqlite_master AS m WHERE m.type = 'index' AND m.name = il.name)) END, il.\"unique\" FROM "
      "pragma_index_list(");
  tabq_sqlite_literal(out, table, strlen(table));
  in_schema(out, name, schema_len);
  tabq_sql_raw(out, ") AS il, pragma_index_info(il.name");
  in_schema(out, name, schema_len);
  tabq_sql_raw(out, ") AS ii UNION ALL SELECT 'rowid', 1, p.name, NULL, 1 FROM pragma_table_info(");
  tabq_sqlite_literal(out, table, strlen(table));
  in_schema(out, name, schema_len);
  tabq_sql_raw(out, ") AS p WHERE p.pk = 1 AND upper(p.type) = 'INTEGER' AND (SELECT count(*) "
                    "FROM pragma_table_info(");
  tabq_sqlite_literal(out, table, strlen(table));
  in_schema(out, name, schema_len);
  tabq_sql_raw(out, ") WHERE pk > 0) = 1 ORDER BY 1, 2");
  return tabq_sqlb_finish(tabq_sqlite_style(), b, out, "indexes");
}
