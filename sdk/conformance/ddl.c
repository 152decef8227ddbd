/* The suite's tables per database: built-in families and a third party's DDL file share one
 * format (docs/conformance.md):
 *
 *   [jobs]    the queue table, every role      [dead]  its dead letter table, same columns
 *   [drop]    drops one table
 *   [rows]    optional: a row mode table (no payload; data columns n, r, t, b, at, doc of
 *             integer, real, text, bytes, time and JSON types), for the row mode tests
 *   [controls] optional: a controls table (docs/pause.md): queue_table and queue (text, the
 *             primary key together), paused (an integer), paused_at (a nullable time), for the
 *             pause tests
 *   [slots]   optional: a slots table (docs/concurrency.md): slot (text, the primary key),
 *             holder (text), expires (a time), for the concurrency limit tests
 *
 * Each section holds statements, one ending with ';' at the end of a line, in which {table}
 * stands for the table's name (tests use fresh names). Lines starting with '#' are comments. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

/* The columns of tabq's own live tests, for each built-in database. */
#define SQLITE_COLUMNS                                                                             \
  "queue TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, retry_after TEXT, attempt INTEGER "   \
  "NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT, headers TEXT, payload BLOB NOT "      \
  "NULL, partition_key TEXT)"

static const char sqlite_ddl[] =
    "[jobs]\n"
    "CREATE TABLE {table} (id INTEGER PRIMARY KEY, " SQLITE_COLUMNS ";\n"
    "CREATE INDEX {table}_claim ON {table} (queue, priority, retry_after, id);\n"
    "[dead]\n"
    "CREATE TABLE {table} (id INTEGER PRIMARY KEY, " SQLITE_COLUMNS ";\n"
    "[drop]\n"
    "DROP TABLE {table};\n"
    "[rows]\n"
    "CREATE TABLE {table} (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, retry_after TEXT, attempt "
    "INTEGER NOT NULL DEFAULT 1, locked_until TEXT, headers TEXT, n INTEGER, r REAL, t TEXT, b "
    "BLOB, at TEXT, doc TEXT);\n"
    "CREATE INDEX {table}_claim ON {table} (queue, retry_after, id);\n"
    "[controls]\n"
    "CREATE TABLE {table} (queue_table TEXT NOT NULL, queue TEXT NOT NULL, paused INTEGER NOT NULL "
    "DEFAULT 0, paused_at TEXT, PRIMARY KEY (queue_table, queue));\n"
    "[slots]\n"
    "CREATE TABLE {table} (slot TEXT PRIMARY KEY, holder TEXT NOT NULL, expires TEXT NOT NULL);\n";

#define PG_COLUMNS                                                                                 \
  "queue TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, retry_after TIMESTAMPTZ, attempt "    \
  "INTEGER NOT NULL DEFAULT 1, processed_at TIMESTAMPTZ, locked_until TIMESTAMPTZ, headers "       \
  "JSONB, "                                                                                        \
  "payload BYTEA NOT NULL, partition_key TEXT)"

static const char postgres_ddl[] =
    "[jobs]\n"
    "CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, " PG_COLUMNS ";\n"
    "CREATE INDEX {table}_claim ON {table} (queue, priority, retry_after, id);\n"
    "[dead]\n"
    "CREATE TABLE {table} (id BIGINT PRIMARY KEY, " PG_COLUMNS ";\n"
    "[drop]\n"
    "DROP TABLE {table};\n"
    "[rows]\n"
    "CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, retry_after TIMESTAMPTZ, "
    "attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, headers JSONB, n BIGINT, r "
    "DOUBLE PRECISION, t TEXT, b BYTEA, at TIMESTAMPTZ, doc JSONB);\n"
    "CREATE INDEX {table}_claim ON {table} (queue, retry_after, id);\n"
    "[controls]\n"
    "CREATE TABLE {table} (queue_table TEXT NOT NULL, queue TEXT NOT NULL, paused INTEGER NOT NULL "
    "DEFAULT 0, paused_at TIMESTAMPTZ, PRIMARY KEY (queue_table, queue));\n"
    "[slots]\n"
    "CREATE TABLE {table} (slot TEXT PRIMARY KEY, holder TEXT NOT NULL, expires TIMESTAMPTZ NOT "
    "NULL);\n";

/* The partition key is any UTF-8 text, whatever the database's default character set. The
 * lease column holds whole seconds (DATETIME without fractions): the token must compare
 * exactly all the same. The payload is a MEDIUMBLOB (16 MiB): a BLOB holds 64 KiB only. */
#define MY_COLUMNS                                                                                 \
  "queue VARCHAR(191) NOT NULL, priority INT NOT NULL DEFAULT 0, retry_after DATETIME(6) NULL, "   \
  "attempt INT NOT NULL DEFAULT 1, processed_at DATETIME(6) NULL, locked_until DATETIME NULL, "    \
  "headers JSON NULL, payload MEDIUMBLOB NOT NULL, partition_key VARCHAR(191) CHARACTER SET "      \
  "utf8mb4 NULL, INDEX claim_order (queue, priority, retry_after, id)) ENGINE=InnoDB"

static const char mysql_ddl[] =
    "[jobs]\n"
    "CREATE TABLE {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, " MY_COLUMNS ";\n"
    "[dead]\n"
    "CREATE TABLE {table} (id BIGINT PRIMARY KEY, " MY_COLUMNS ";\n"
    "[drop]\n"
    "DROP TABLE {table};\n"
    "[rows]\n"
    "CREATE TABLE {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT NULL, "
    "retry_after DATETIME(6) NULL, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME NULL, "
    "headers JSON NULL, n BIGINT NULL, r DOUBLE NULL, t TEXT NULL, b BLOB NULL, at DATETIME(6) "
    "NULL, doc JSON NULL, INDEX claim_order (queue, retry_after, id)) ENGINE=InnoDB;\n"
    "[controls]\n"
    "CREATE TABLE {table} (queue_table VARCHAR(191) NOT NULL, queue VARCHAR(191) NOT NULL, paused "
    "INT NOT NULL DEFAULT 0, paused_at DATETIME(6) NULL, PRIMARY KEY (queue_table, queue)) "
    "ENGINE=InnoDB;\n"
    "[slots]\n"
    "CREATE TABLE {table} (slot VARCHAR(191) CHARACTER SET utf8mb4 NOT NULL PRIMARY KEY, holder "
    "VARCHAR(191) NOT NULL, expires DATETIME(6) NOT NULL) ENGINE=InnoDB;\n";

static const struct {
  const char *name, *text;
} families[] = {{"sqlite", sqlite_ddl}, {"postgres", postgres_ddl}, {"mysql", mysql_ddl}};

const char *ddl_family_for(const char *plugin_name) {
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (plugin_name && !strcmp(plugin_name, families[i].name))
      return families[i].name;
  return NULL;
}

static char *trimmed_copy(const char *p, size_t n) {
  while (n && isspace((unsigned char)*p))
    p++, n--;
  while (n && isspace((unsigned char)p[n - 1]))
    n--;
  if (n && p[n - 1] == ';')
    n--;
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = '\0';
  }
  return s;
}

static int parse(const char *text, kit_ddl *out, char *why, size_t cap) {
  ddl_section *cur = NULL;
  char stmt[8192];
  size_t len = 0;
  unsigned lineno = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    lineno++;
    const char *p = line;
    while (p < line + n && isspace((unsigned char)*p))
      p++;
    size_t rest = (size_t)(line + n - p);
    bool statement_ends = false;
    if (*p == '[') {
      if (len && cur)
        goto unterminated;
      if (!strncmp(p, "[jobs]", 6))
        cur = &out->jobs;
      else if (!strncmp(p, "[dead]", 6))
        cur = &out->dead;
      else if (!strncmp(p, "[drop]", 6))
        cur = &out->drop;
      else if (!strncmp(p, "[rows]", 6))
        cur = &out->rows;
      else if (!strncmp(p, "[controls]", 10))
        cur = &out->controls;
      else if (!strncmp(p, "[slots]", 7))
        cur = &out->slots;
      else {
        snprintf(why, cap,
                 "DDL %s, line %u: unknown section %.*s (jobs, dead, drop, rows, controls, slots)",
                 out->name, lineno, (int)rest, p);
        return TABQ_INVALID;
      }
    } else if (rest && *p != '#') {
      if (!cur) {
        snprintf(why, cap, "DDL %s, line %u: a statement before the first [section]", out->name,
                 lineno);
        return TABQ_INVALID;
      }
      if (len + n + 2 >= sizeof stmt) {
        snprintf(why, cap, "DDL %s, line %u: statement longer than %zu bytes", out->name, lineno,
                 sizeof stmt);
        return TABQ_INVALID;
      }
      memcpy(stmt + len, line, n);
      len += n;
      stmt[len++] = '\n';
      const char *last = line + n;
      while (last > line && isspace((unsigned char)last[-1]))
        last--;
      statement_ends = last > line && last[-1] == ';';
    }
    if (statement_ends) {
      if (cur->n == DDL_MAX_STMTS) {
        snprintf(why, cap, "DDL %s, line %u: more than %d statements in a section", out->name,
                 lineno, DDL_MAX_STMTS);
        return TABQ_INVALID;
      }
      cur->stmts[cur->n++] = trimmed_copy(stmt, len);
      len = 0;
    }
    line += n + (end ? 1 : 0);
  }
  if (len)
    goto unterminated;
  if (!out->jobs.n || !out->dead.n || !out->drop.n) {
    snprintf(why, cap, "DDL %s: needs the sections [jobs], [dead] and [drop]", out->name);
    return TABQ_INVALID;
  }
  return TABQ_OK;
unterminated:
  snprintf(why, cap, "DDL %s, line %u: a statement does not end with ';'", out->name, lineno);
  return TABQ_INVALID;
}

int ddl_load(const char *family_or_file, kit_ddl *out, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", family_or_file);
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (!strcmp(family_or_file, families[i].name))
      return parse(families[i].text, out, why, cap);
  FILE *f = fopen(family_or_file, "r");
  if (!f) {
    snprintf(why, cap,
             "cannot read DDL file %s (nor is it a built-in family: sqlite, postgres, "
             "mysql)",
             family_or_file);
    return TABQ_IO;
  }
  static char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return parse(text, out, why, cap);
}
