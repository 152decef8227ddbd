/* tabq — the MySQL/MariaDB dialect's schema (Dialect.schema) and index catalog
 * (Dialect.indexes), ABI 1.7, from the SDK's builder in the types below (docs/schema.md). */
#include <string.h>

#include <tabq/sys/sql_build.h>

#include "mysql_plugin.h"

/* InnoDB, in utf8mb4 whatever the server's default character set, so a group, a key or a text
 * payload holds any UTF-8. A group (and a text id) in a key is VARCHAR(191): 764 bytes of
 * utf8mb4, within the 767 an index takes of a column in the oldest row format. Times keep
 * microseconds (DATETIME(6)) but the lease: whole seconds, so the token a claim writes
 * compares exactly (TABQ_LEASE_WHOLE_SECONDS). A MEDIUMBLOB holds 16 MiB, a BLOB 64 KiB only
 * (docs/mysql.md). No partial indexes: a processed_at table's claim index leads with
 * processed_at after the group, its unfinished rows one range. The index is written inside
 * CREATE TABLE, as MySQL 8 has no CREATE INDEX IF NOT EXISTS. */
static const tabq_sql_schema mysql_types = {
    .auto_id = "BIGINT AUTO_INCREMENT PRIMARY KEY",
    .integer = "BIGINT",
    .real = "DOUBLE",
    .text = "TEXT",
    .bytes = "MEDIUMBLOB",
    .time = "DATETIME(6)",
    .json = "JSON",
    .any = "TEXT",
    .counter = "INT",
    .key_text = "VARCHAR(191)",
    .large_text = "MEDIUMTEXT",
    .lease_time = "DATETIME",
    .table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    .inline_index = true,
};

/* MariaDB has CREATE INDEX IF NOT EXISTS (10.1.4), MySQL 8 has not. */
static tabq_sql_schema types_of(const tabq_build *b) {
  tabq_sql_schema k = mysql_types;
  k.index_if_not_exists = tabq_my_names_mariadb(b->server_version_text);
  return k;
}

int tabq_my_schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out) {
  tabq_sql_schema k = types_of(b);
  return tabq_sqlb_schema(tabq_my_style(), &k, b, spec, out);
}

/* information_schema, in the table's schema or the connection's database; MySQL has no partial
 * index, so no predicate. */
int tabq_my_indexes(const tabq_build *b, tabq_stmt *out) {
  size_t schema_len;
  const char *table = tabq_sql_table_part(b->table->name, &schema_len);
  tabq_sql_raw(out, "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NULL, NON_UNIQUE = 0 FROM "
                    "information_schema.STATISTICS WHERE TABLE_SCHEMA = ");
  if (schema_len)
    tabq_my_literal(out, b->table->name, schema_len);
  else
    tabq_sql_raw(out, "DATABASE()");
  tabq_sql_raw(out, " AND TABLE_NAME = ");
  tabq_my_literal(out, table, strlen(table));
  tabq_sql_raw(out, " ORDER BY 1, 2");
  return tabq_sqlb_finish(tabq_my_style(), b, out, "indexes");
}
