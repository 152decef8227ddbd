/* tabq — the MySQL driver's size limits (see sizes.h). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sizes.h"
#include "mysql_plugin.h"

static const tabq_host *host(void) {
  return tabq_my_host();
}

/* ---- Statement sizes ---------------------------------------------------------------------- */

/* A length-encoded integer's bytes. */
static uint64_t lenenc(uint64_t n) {
  return n < 251 ? 1 : n < 65536 ? 3 : n < 16777216 ? 4 : 9;
}

uint64_t tabq_my_execute_size(const MYSQL_BIND *params, unsigned n) {
  /* Command, statement id, flags, iteration count; then the NULL bitmap, the "types follow"
   * byte and two bytes of type a parameter. */
  uint64_t size = 1 + 4 + 1 + 4;
  if (n > 0)
    size += (n + 7) / 8 + 1 + 2 * (uint64_t)n;
  for (unsigned i = 0; i < n; i++) {
    const MYSQL_BIND *b = &params[i];
    if (b->buffer_type == MYSQL_TYPE_NULL || (b->is_null && *b->is_null))
      continue;
    switch (b->buffer_type) {
    case MYSQL_TYPE_LONGLONG:
    case MYSQL_TYPE_DOUBLE:
      size += 8;
      break;
    case MYSQL_TYPE_DATETIME:
      size += 12; /* the length byte and the longest form, with microseconds */
      break;
    default: {
      uint64_t len = b->length ? *b->length : b->buffer_length;
      size += lenenc(len) + len;
    }
    }
  }
  return size;
}

/* `v` with thousands separated: "16,777,216". */
static const char *grouped(uint64_t v, char buf[32]) {
  char digits[24];
  int n = snprintf(digits, sizeof digits, "%" PRIu64, v), w = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && (n - i) % 3 == 0)
      buf[w++] = ',';
    buf[w++] = digits[i];
  }
  buf[w] = '\0';
  return buf;
}

int tabq_my_fail_packet(const char *what, uint64_t size, uint64_t max, bool sent, unsigned err,
                        const char *state, const char *msg) {
  char a[32], m[32], limit[64];
  if (max)
    snprintf(limit, sizeof limit, "max_allowed_packet of %s bytes", grouped(max, m));
  else
    snprintf(limit, sizeof limit, "max_allowed_packet");
  return host()->fail(
      TABQ_BACKEND, sent ? state : "08S01", sent ? (long)err : 1153 /* ER_NET_PACKET_TOO_LARGE */,
      "%s: the statement is %s bytes, over the server's %s: raise max_allowed_packet on the "
      "server (MariaDB's default is 16 MiB, MySQL 8's 64 MiB, 1 GiB at most), or send less. %s%s",
      what, grouped(size, a), limit,
      sent ? "The server refused it and closed the connection: " : "Nothing was sent.",
      sent ? msg : "");
}

/* ---- Values too long for their column ----------------------------------------------------- */

static bool ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

/* One identifier at *s (`quoted`, with `` for a backtick, or bare) into out; false when none. */
static bool identifier(const char **s, char *out, size_t cap) {
  const char *p = *s;
  size_t n = 0;
  if (*p == '`') {
    for (p++; *p; p++) {
      if (*p == '`' && p[1] != '`')
        break;
      if (*p == '`')
        p++;
      if (n + 1 < cap)
        out[n++] = *p;
    }
    if (*p != '`')
      return false;
    p++;
  } else {
    for (; ident_char(*p); p++)
      if (n + 1 < cap)
        out[n++] = *p;
  }
  out[n] = '\0';
  *s = p;
  return n > 0;
}

static bool word_is(const char *p, size_t n, const char *word) {
  if (strlen(word) != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (toupper((unsigned char)p[i]) != word[i])
      return false;
  return true;
}

/* The table an INSERT, REPLACE or UPDATE writes: schema (or "") and table; false when the
 * statement writes something else (a join, a JSON_TABLE) or is not such a statement. */
static bool written_table(const char *sql, char *schema, char *table, size_t cap) {
  static const char *const verbs[] = {"INSERT", "REPLACE", "UPDATE"};
  static const char *const skipped[] = {"INTO", "IGNORE", "LOW_PRIORITY", "DELAYED",
                                        "HIGH_PRIORITY"};
  const char *p = sql;
  bool verb = false, update = false;
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    size_t n = 0;
    while (isalpha((unsigned char)p[n]) || p[n] == '_')
      n++;
    bool known = false;
    for (size_t i = 0; !verb && i < sizeof verbs / sizeof verbs[0]; i++)
      known |= word_is(p, n, verbs[i]);
    if (!verb && !known)
      return false;
    if (!verb)
      update = word_is(p, n, "UPDATE");
    for (size_t i = 0; verb && i < sizeof skipped / sizeof skipped[0]; i++)
      known |= word_is(p, n, skipped[i]);
    if (!known || n == 0)
      break;
    verb = true;
    p += n;
  }
  char first[128];
  if (!identifier(&p, first, sizeof first))
    return false;
  schema[0] = '\0';
  if (*p == '.') {
    p++;
    snprintf(schema, cap, "%s", first);
    if (!identifier(&p, first, sizeof first))
      return false;
  }
  while (isspace((unsigned char)*p))
    p++;
  if (update && (*p == '(' || *p == ',' || !strncasecmp(p, "JOIN", 4) ||
                 !strncasecmp(p, "STRAIGHT_JOIN", 13)))
    return false; /* a function's rows (JSON_TABLE) or a join: no one table */
  snprintf(table, cap, "%s", first);
  return true;
}

/* The column of "Data too long for column 'payload' at row 1". */
static bool named_column(const char *msg, char *column, size_t cap) {
  const char *open = strstr(msg, "column '");
  const char *close = open ? strstr(open + 8, "' at row") : NULL;
  if (!close)
    return false;
  snprintf(column, cap, "%.*s", (int)(close - open - 8), open + 8);
  return true;
}

/* Appends `s` escaped for a string literal (as the session reads backslashes). */
static void escaped(MYSQL *my, char *out, size_t cap, size_t *used, const char *s) {
  size_t n = strlen(s);
  if (*used + 2 * n + 3 > cap)
    return;
  out[(*used)++] = '\'';
  *used += mysql_real_escape_string(my, out + *used, s, (unsigned long)n);
  out[(*used)++] = '\'';
  out[*used] = '\0';
}

/* The column's type ("BLOB", "VARBINARY(16)") and its bytes at most, from the catalog. */
static bool column_limit(MYSQL *my, const char *schema, const char *table, const char *column,
                         char *type, size_t cap, uint64_t *max) {
  char sql[1024];
  size_t used = (size_t)snprintf(sql, sizeof sql,
                                 "SELECT UPPER(COLUMN_TYPE), CHARACTER_OCTET_LENGTH FROM "
                                 "information_schema.COLUMNS WHERE TABLE_SCHEMA = ");
  if (*schema)
    escaped(my, sql, sizeof sql, &used, schema);
  else
    used += (size_t)snprintf(sql + used, sizeof sql - used, "DATABASE()");
  used += (size_t)snprintf(sql + used, sizeof sql - used, " AND TABLE_NAME = ");
  escaped(my, sql, sizeof sql, &used, table);
  used += (size_t)snprintf(sql + used, sizeof sql - used, " AND COLUMN_NAME = ");
  escaped(my, sql, sizeof sql, &used, column);
  if (used + 1 >= sizeof sql || mysql_real_query(my, sql, (unsigned long)used))
    return false;
  MYSQL_RES *res = mysql_store_result(my);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  bool found = row && row[0] && row[1];
  if (found) {
    snprintf(type, cap, "%s", row[0]);
    *max = strtoull(row[1], NULL, 10);
  }
  if (res)
    mysql_free_result(res);
  return found;
}

/* What would hold a longer value: the wider types of the column's family. */
static const char *wider(const char *type) {
  static const struct {
    const char *type, *advice;
  } families[] = {
      {"TINYBLOB", "declare it BLOB (64 KiB), MEDIUMBLOB (16 MiB) or LONGBLOB (4 GiB)"},
      {"BLOB", "declare it MEDIUMBLOB (16 MiB) or LONGBLOB (4 GiB)"},
      {"MEDIUMBLOB", "declare it LONGBLOB (4 GiB)"},
      {"TINYTEXT", "declare it TEXT (64 KiB), MEDIUMTEXT (16 MiB) or LONGTEXT (4 GiB)"},
      {"TEXT", "declare it MEDIUMTEXT (16 MiB) or LONGTEXT (4 GiB)"},
      {"MEDIUMTEXT", "declare it LONGTEXT (4 GiB)"},
  };
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (!strcmp(type, families[i].type))
      return families[i].advice;
  return "declare it a wider type (for a payload, MEDIUMBLOB (16 MiB) or LONGBLOB (4 GiB))";
}

int tabq_my_fail_too_long(MYSQL *my, const char *sql, const char *what, unsigned err,
                          const char *state, const char *msg) {
  char said[512], st[8], column[128], schema[128], table[128], type[64], shown[264], n[32];
  /* The catalog query below replaces the connection's last error. */
  snprintf(said, sizeof said, "%s", msg ? msg : "");
  snprintf(st, sizeof st, "%s", state ? state : "");
  uint64_t max = 0;
  if (sql && named_column(said, column, sizeof column) &&
      written_table(sql, schema, table, sizeof table) &&
      column_limit(my, schema, table, column, type, sizeof type, &max)) {
    snprintf(shown, sizeof shown, "%s%s%s", schema, *schema ? "." : "", table);
    return host()->fail(TABQ_BACKEND, st, (long)err,
                        "%s: column %s of table %s holds at most %s bytes (%s): %s. Nothing was "
                        "written. The server said: %s",
                        what, column, shown, grouped(max, n), type, wider(type), said);
  }
  return host()->fail(TABQ_BACKEND, st, (long)err,
                      "%s: a value is longer than its column's type holds (for a payload, "
                      "declare the column MEDIUMBLOB (16 MiB) or LONGBLOB (4 GiB)). Nothing was "
                      "written. The server said: %s",
                      what, said);
}
