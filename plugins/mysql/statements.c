/* tabq — the MySQL/MariaDB dialect's statements: the shared ones and the row lock, lease and
 * advisory lock forms.
 *
 * Identifiers are quoted with `, placeholders are ? (a repeated parameter is bound again).
 * MySQL's UPDATE returns no rows, so every claim is a SELECT that locks its rows and returns the
 * attempt plus one, and a stamp statement counts it afterwards in the same transaction (one
 * statement for all of a claim's rows: stamp_ids). Row lock and lease claims skip rows other
 * claims hold (FOR UPDATE SKIP LOCKED: MySQL 8.0.1, MariaDB 10.6); advisory keys are GET_LOCK
 * names. Times are UTC: the driver sets time_zone '+00:00'. The statements every dialect shares
 * come from tabq/sql_build.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unicase.h>
#include <unistr.h>

#include <tabq/sys/sql_build.h>

#include "mysql_plugin.h"

/* GET_LOCK refuses names longer than this; longer ones are hashed (SHA-256 hex is 64 long). */
#define MY_LOCK_NAME_MAX 64

static const tabq_host *host(void) {
  return tabq_my_host();
}

/* "Now" on the database clock in UTC with microseconds: UTC_TIMESTAMP is the statement's time,
 * not the transaction's, as a row lock settlement in a transaction begun long before needs. */
static const tabq_sql_style style = {
    .host = tabq_my_host,
    .quote = '`',
    .placeholder = TABQ_PH_QUESTION,
    .db_now = "UTC_TIMESTAMP(6)",
    .empty_insert = " () VALUES ()", /* MySQL has no DEFAULT VALUES */
    .product = "MySQL/MariaDB",
    .insert_ignore = true,
};

const tabq_sql_style *tabq_my_style(void) {
  return &style;
}

/* The inside of a string literal: a quote doubled, a backslash escaped (MySQL reads \ as an
 * escape unless sql_mode has NO_BACKSLASH_ESCAPES). */
static void literal_text(tabq_stmt *st, const char *text, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (text[i] == '\'')
      tabq_sql_raw(st, "'");
    else if (text[i] == '\\')
      tabq_sql_raw(st, "\\");
    tabq_sql_append(st, text + i, 1);
  }
}

static void literal(tabq_stmt *st, const char *text, size_t n) {
  tabq_sql_raw(st, "'");
  literal_text(st, text, n);
  tabq_sql_raw(st, "'");
}

void tabq_my_literal(tabq_stmt *st, const char *text, size_t n) {
  literal(st, text, n);
}

/* Every projection here is a claim's or a take's, read before the stamp counts the attempt:
 * "SELECT <projection> FROM T" with the attempt plus one, the value the row holds once the
 * stamp has run. */
static void select_projection(tabq_stmt *st, const tabq_build *b) {
  tabq_sqlb_select_projection_for(&style, st, b, true);
}

/* The rows a claim locks, from " WHERE" on. With FIFO groups only the group's head, its first
 * unfinished row, and only while it is due (the rows behind wait while it is in work); the head
 * is picked in a derived table because MySQL takes no LIMIT in a subquery on the table it
 * reads. Else the first due rows, passing over those other claims hold; `one` writes LIMIT 1
 * (claim_one), so the optimizer knows at prepare that it stops at the first row. */
static void claimed_rows(const tabq_build *b, tabq_stmt *st, bool one) {
  const tabq_table *t = b->table;
  if (tabq_sqlb_fifo(t)) {
    tabq_sql_raw(st, " WHERE ");
    tabq_sqlb_col(&style, st, &t->id);
    tabq_sql_raw(st, " = (SELECT ");
    tabq_sqlb_col(&style, st, &t->id);
    tabq_sql_raw(st, " FROM (");
    tabq_sqlb_group_head(&style, st, t);
    tabq_sql_raw(st, ") h)");
    tabq_sqlb_due(&style, b, st, " AND ");
    /* No SKIP LOCKED: a head held elsewhere must stop the claim, not pass it to the next row.
     * The FIFO guard already keeps other claims of the group away. */
    tabq_sql_raw(st, " FOR UPDATE");
    return;
  }
  if (one) {
    tabq_sqlb_due(&style, b, st, " WHERE ");
    tabq_sqlb_claim_order(&style, st, t);
    tabq_sql_raw(st, " LIMIT 1");
  } else {
    tabq_sqlb_first_due(&style, b, st);
  }
  tabq_sql_raw(st, " FOR UPDATE SKIP LOCKED");
}

/* "UPDATE T SET attempt = attempt + 1 WHERE id = ?": the stamp after a row lock claim or an
 * advisory take. A table without an attempt column counts nothing: no statement (sql NULL). */
static int stamp_attempt(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name)
    return TABQ_OK;
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_count_attempt(&style, out, t);
  tabq_sqlb_where_id(&style, out, t);
  return tabq_sqlb_finish(&style, b, out, "stamp");
}

/* The lists each database opens, for every refusal of a level or mode. */
#define OPENED_LEVELS                                                                              \
  "PostgreSQL opens read committed, repeatable read and serializable; MySQL/MariaDB open "         \
  "read uncommitted, read committed, repeatable read and serializable; SQLite opens the modes "    \
  "deferred, immediate and exclusive (.mode)"

/* ---- Server versions ---------------------------------------------------------------------- */

/* `text` names MariaDB, in any case ("10.11.19-MariaDB-0+deb12u1"). */
bool tabq_my_names_mariadb(const char *text) {
  static const char want[] = "mariadb";
  if (!text)
    return false;
  for (const char *p = text; *p; p++) {
    size_t i = 0;
    while (want[i] && p[i] && (p[i] | 0x20) == want[i])
      i++;
    if (!want[i])
      return true;
  }
  return false;
}

int tabq_my_check_version(const char *table_name, uint32_t number, const char *text) {
  if (number == 0) /* not read yet: the floors wait for it */
    return TABQ_OK;
  bool maria = tabq_my_names_mariadb(text);
  uint32_t floor = maria ? TABQ_MY_MARIADB_FLOOR : TABQ_MY_MYSQL_FLOOR;
  if (number >= floor)
    return TABQ_OK;
  char buf[32];
  if (!text || !*text) {
    snprintf(buf, sizeof buf, "%u.%u.%u", (unsigned)(number / 10000),
             (unsigned)(number / 100 % 100), (unsigned)(number % 100));
    text = buf;
  }
  return host()->fail(TABQ_SERVER_TOO_OLD, NULL, 0,
                      "table %s: the mysql dialect needs %s or later (FOR UPDATE SKIP LOCKED), "
                      "and the server is %s %s",
                      table_name, maria ? "MariaDB 10.6" : "MySQL 8.0.1",
                      maria ? "MariaDB" : "MySQL", text);
}

/* ---- Dialect ------------------------------------------------------------------------------ */

static int check(const tabq_build *b) {
  const tabq_table *t = b->table;
  if (b->form != TABQ_FORM_ROWLOCK && b->form != TABQ_FORM_LEASE && b->form != TABQ_FORM_ADVISORY)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown form %d", t->name, (int)b->form);
  if (t->mode != TABQ_SQLITE_MODE_DEFAULT)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s declares a SQLite mode, which MySQL/MariaDB do not open; declare "
                        "an isolation level instead: " OPENED_LEVELS,
                        t->name);
  if (t->isolation > TABQ_ISOLATION_SERIALIZABLE)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown isolation level %d", t->name,
                        (int)t->isolation);
  if (b->form == TABQ_FORM_ROWLOCK && tabq_sqlb_fifo(t) &&
      t->isolation == TABQ_ISOLATION_SERIALIZABLE)
    return host()->fail(
        TABQ_DIALECT, NULL, 0,
        "table %s has FIFO groups and declares serializable, which the MySQL/MariaDB "
        "row lock form refuses: at that level InnoDB locks every row a read "
        "touches, and a claim would wait for the group's row in work; declare "
        "read committed or repeatable read",
        t->name);
  return tabq_my_check_version(t->name, b->server_version, b->server_version_text);
}

static int quote(tabq_stmt *out, const char *name) {
  tabq_sqlb_table(&style, out, name);
  return out->status;
}

TABQ_SQLB_MEMBER(style, insert)
TABQ_SQLB_MEMBER(style, find_unique)
TABQ_SQLB_MEMBER(style, insert_rows)
TABQ_SQLB_MEMBER(style, ack)
TABQ_SQLB_MEMBER(style, discard)
TABQ_SQLB_MEMBER(style, retry)
TABQ_SQLB_MEMBER(style, retry_after)
TABQ_SQLB_MEMBER(style, dead_letter_group)
TABQ_SQLB_MEMBER(style, count_attempt_row)

static int placeholder(tabq_stmt *out, tabq_param id) {
  return tabq_sqlb_placeholder(&style, out, id);
}

/* information_schema, in the table's schema or the connection's database. */
static int column_default(const tabq_build *b, const char *column, tabq_stmt *out) {
  size_t schema_len;
  const char *table = tabq_sql_table_part(b->table->name, &schema_len);
  tabq_sql_raw(out, "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ");
  if (schema_len)
    literal(out, b->table->name, schema_len);
  else
    tabq_sql_raw(out, "DATABASE()");
  tabq_sql_raw(out, " AND TABLE_NAME = ");
  literal(out, table, strlen(table));
  tabq_sql_raw(out, " AND COLUMN_NAME = ");
  literal(out, column, strlen(column));
  return out->status;
}

/* A copy then a delete; the core runs both in one transaction. */
static int dead_letter_table(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove) {
  return tabq_sqlb_dead_letter_table(&style, b, copy, remove);
}

/* Two statements the driver runs one by one: the level applies to the next transaction only.
 * None declared is READ COMMITTED, where a claim held for a handler locks no gaps. */
static int begin(const tabq_build *b, tabq_stmt *out) {
  static const char *const levels[] = {
      [TABQ_ISOLATION_DEFAULT] = "READ COMMITTED",
      [TABQ_ISOLATION_READ_UNCOMMITTED] = "READ UNCOMMITTED",
      [TABQ_ISOLATION_READ_COMMITTED] = "READ COMMITTED",
      [TABQ_ISOLATION_REPEATABLE_READ] = "REPEATABLE READ",
      [TABQ_ISOLATION_SERIALIZABLE] = "SERIALIZABLE",
  };
  tabq_isolation level = b->table->isolation;
  if (level > TABQ_ISOLATION_SERIALIZABLE) /* check refused it already */
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: MySQL/MariaDB do not open isolation level %d", b->table->name,
                        (int)level);
  tabq_sql_raw(out, "SET TRANSACTION ISOLATION LEVEL ");
  tabq_sql_raw(out, levels[level]);
  tabq_sql_raw(out, "; START TRANSACTION");
  return tabq_sqlb_finish(&style, b, out, "begin");
}

/* The group's unfinished rows counted, for the FIFO guard; `locking` adds FOR UPDATE SKIP
 * LOCKED. */
static void unfinished_rows(const tabq_build *b, tabq_stmt *out, bool locking) {
  tabq_sql_raw(out, "SELECT COUNT(*) FROM (");
  tabq_sqlb_group_rows(&style, out, b->table);
  tabq_sql_raw(out, locking ? " FOR UPDATE SKIP LOCKED) g" : ") g");
}

/* True when this transaction could lock every unfinished row of the group: then the group is
 * its own until it ends. A row locked elsewhere (the head in work) makes it false at once,
 * where a plain FOR UPDATE would wait for that delivery to settle, or time out. */
static int fifo_guard(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->group.name)
    return host()->fail(TABQ_DECLARATION, NULL, 0,
                        "table %s: a FIFO guard locks a group, and the table has no group column",
                        t->name);
  tabq_sql_raw(out, "SELECT (");
  unfinished_rows(b, out, false);
  tabq_sql_raw(out, ") = (");
  unfinished_rows(b, out, true);
  tabq_sql_raw(out, ")");
  return tabq_sqlb_finish(&style, b, out, "fifo_guard");
}

/* The rows of a list of ids, for a multi-table UPDATE or DELETE (the table is `t`): the ids
 * arrive as one JSON array, read with JSON_TABLE (MariaDB 10.6, MySQL 8.0.4), and each finds
 * its row by the primary key (STRAIGHT_JOIN, FORCE INDEX): near a drain's end the optimizer
 * would otherwise scan the shrunken table, and a statement waits on every locked row it scans. */
static void listed_rows(tabq_stmt *out, const tabq_table *t) {
  tabq_sql_raw(out, "JSON_TABLE(");
  tabq_sqlb_param(&style, out, TABQ_P_IDS);
  tabq_sql_raw(out, ", '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids STRAIGHT_JOIN ");
  tabq_sqlb_table(&style, out, t->name);
  tabq_sql_raw(out, " AS t FORCE INDEX (PRIMARY) ON t.");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " = ids.id");
}

/* ", t.attempt = t.attempt + 1" (lead ", " or " SET "), where the table counts attempts. */
static void count_listed(tabq_stmt *out, const tabq_table *t, const char *lead) {
  if (!t->attempt.name)
    return;
  tabq_sql_raw(out, lead);
  tabq_sql_raw(out, "t.");
  tabq_sqlb_col(&style, out, &t->attempt);
  tabq_sql_raw(out, " = t.");
  tabq_sqlb_col(&style, out, &t->attempt);
  tabq_sql_raw(out, " + 1");
}

/* A batch's acks in one statement, on the listed rows. MySQL's DELETE and UPDATE return no
 * rows: the core compares the rows changed with the ids it sent. */
static int ack_ids(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  bool marks = t->processed_at.name != NULL;
  tabq_sql_raw(out, marks ? "UPDATE " : "DELETE t FROM ");
  listed_rows(out, t);
  if (marks) {
    tabq_sql_raw(out, " SET t.");
    tabq_sqlb_col(&style, out, &t->processed_at);
    tabq_sql_raw(out, " = ");
    tabq_sqlb_now(&style, out, t);
    if (tabq_sqlb_leased(b)) {
      tabq_sql_raw(out, ", t.");
      tabq_sqlb_col(&style, out, &t->locked_until);
      tabq_sql_raw(out, " = NULL");
    }
  }
  if (tabq_sqlb_leased(b)) {
    tabq_sql_raw(out, " WHERE t.");
    tabq_sqlb_col(&style, out, &t->locked_until);
    tabq_sql_raw(out, " = ");
    tabq_sqlb_param(&style, out, TABQ_P_TOKEN);
  }
  return tabq_sqlb_finish(&style, b, out, "ack_ids");
}

static int savepoint(const tabq_build *b, tabq_stmt *set, tabq_stmt *back) {
  return tabq_sqlb_savepoint(&style, b, set, back);
}

const tabq_dialect_v1 tabq_my_dialect = {
    .size = sizeof(tabq_dialect_v1),
    .version = 1,
    .check = check,
    .quote = quote,
    .insert = insert,
    .ack = ack,
    .discard = discard,
    .retry = retry,
    .retry_after = retry_after,
    .dead_letter_group = dead_letter_group,
    .dead_letter_table = dead_letter_table,
    .begin = begin,
    .fetch = NULL, /* no fetch by a list of ids: a custom claim brings its own */
    .fifo_guard = fifo_guard,
    .channel = NULL, /* no notifications */
    .notify = NULL,
    .placeholder = placeholder,
    .count_attempt = count_attempt_row,
    .column_default = column_default,
    .ack_ids = ack_ids,
    .insert_rows = insert_rows,
    .savepoint = savepoint,
    .schema = tabq_my_schema,
    .indexes = tabq_my_indexes,
    .find_unique = find_unique,
};

/* ---- RowLock ------------------------------------------------------------------------------ */

/* Locks the rows for the claim's transaction, held while their handlers run. */
static int rowlock_claim(const tabq_build *b, tabq_stmt *out) {
  select_projection(out, b);
  claimed_rows(b, out, false);
  return tabq_sqlb_finish(&style, b, out, "claim");
}

/* One row: the select with LIMIT 1, then the stamp by primary key, as a hand-written claim does.
 * A FIFO table declines: its claim selects the group's one head already. */
static int rowlock_claim_one(const tabq_build *b, tabq_stmt *out) {
  if (tabq_sqlb_fifo(b->table))
    return TABQ_OK;
  select_projection(out, b);
  claimed_rows(b, out, true);
  return tabq_sqlb_finish(&style, b, out, "claim_one");
}

/* A claim's stamps in one statement, on the listed rows: "UPDATE <listed rows> SET t.attempt =
 * t.attempt + 1", one round trip for a batch's rows where a stamp each takes one a row. A table
 * without an attempt column counts nothing: no statement, as stamp_attempt. */
static int rowlock_stamp_ids(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name)
    return TABQ_OK;
  tabq_sql_raw(out, "UPDATE ");
  listed_rows(out, t);
  count_listed(out, t, " SET ");
  return tabq_sqlb_finish(&style, b, out, "stamp_ids");
}

const tabq_rowlock_v1 tabq_my_rowlock = {
    .size = sizeof(tabq_rowlock_v1),
    .version = 1,
    .flags = TABQ_PROJECTS_DUE, /* SKIP LOCKED keeps parallel claims apart */
    .claim = rowlock_claim,
    .stamp = stamp_attempt,
    .claim_one = rowlock_claim_one,
    .stamp_ids = rowlock_stamp_ids,
};

/* ---- Lease -------------------------------------------------------------------------------- */

/* Selects and locks the claimable rows (lease ended, due); the stamp then writes each lease. */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "claim");
  select_projection(out, b);
  claimed_rows(b, out, false);
  return tabq_sqlb_finish(&style, b, out, "claim");
}

/* One row, as rowlock_claim_one; the stamp then writes its lease. */
static int lease_claim_one(const tabq_build *b, tabq_stmt *out) {
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "claim_one");
  if (tabq_sqlb_fifo(b->table))
    return TABQ_OK;
  select_projection(out, b);
  claimed_rows(b, out, true);
  return tabq_sqlb_finish(&style, b, out, "claim_one");
}

/* Writes one claimed row's lease and counts its attempt, in the claim's transaction. */
TABQ_SQLB_MEMBER(style, lease_stamp)
TABQ_SQLB_MEMBER(style, lease_extend)
TABQ_SQLB_MEMBER(style, lease_release)
TABQ_SQLB_MEMBER(style, lease_one)

/* Every claimed row's lease written and attempt counted in one statement, on the listed rows:
 * "UPDATE <listed rows> SET t.locked_until = ?, t.attempt = t.attempt + 1". */
static int lease_stamp_ids(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "stamp_ids");
  tabq_sql_raw(out, "UPDATE ");
  listed_rows(out, t);
  tabq_sql_raw(out, " SET t.");
  tabq_sqlb_col(&style, out, &t->locked_until);
  tabq_sql_raw(out, " = ");
  tabq_sqlb_param(&style, out, TABQ_P_LEASE_UNTIL);
  count_listed(out, t, ", ");
  return tabq_sqlb_finish(&style, b, out, "stamp_ids");
}

const tabq_lease_v1 tabq_my_lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    /* One claim at a time per process, and whole-second expiries: a DATETIME without
     * fractions then holds the token exactly. */
    .flags = TABQ_CLAIM_SERIAL | TABQ_LEASE_WHOLE_SECONDS | TABQ_PROJECTS_DUE,
    .claim = lease_claim,
    .stamp = lease_stamp,
    .extend = lease_extend,
    .release = lease_release,
    .lease_one = lease_one,
    .claim_one = lease_claim_one,
    .stamp_ids = lease_stamp_ids,
};

/* ---- Advisory ----------------------------------------------------------------------------- */

/* The database a lock name starts with, lower-cased: the table's schema part ("db.table"),
 * else the connection's database. Keys belong to the server, so the database keeps two
 * databases' tables apart. *out is `small` or a buffer of libunistring's (free it with free). */
static int lock_database(const tabq_build *b, char *small, size_t cap, char **out, size_t *n) {
  const char *name = b->table->name, *dot = strchr(name, '.');
  const char *db = dot && dot > name ? name : b->database;
  size_t len = dot && dot > name ? (size_t)(dot - name) : db ? strlen(db) : 0;
  if (!len)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: an advisory lock name starts with the database, and neither "
                        "the table's name (\"db.table\") nor the connection names one",
                        name);
  /* u8_tolower passes malformed bytes through: refuse them before they reach a literal. */
  if (u8_check((const uint8_t *)db, len))
    return host()->fail(TABQ_DECLARATION, NULL, 0,
                        "table %s: the database name of its advisory lock names is not valid "
                        "UTF-8",
                        name);
  *n = cap;
  uint8_t *low = u8_tolower((const uint8_t *)db, len, NULL, NULL, (uint8_t *)small, n);
  if (!low)
    return host()->fail(errno == ENOMEM ? TABQ_NOMEM : TABQ_INVALID, NULL, 0,
                        "table %s: cannot fold the database name to lower case", name);
  *out = (char *)low;
  return TABQ_OK;
}

/* One part of the key template after the lock name's prefix: a literal part as a string
 * literal, a {column} as the column's text, each an argument of the CONCAT the caller opened.
 * A NULL column reads as empty text, so the name itself is never NULL. */
static void key_part(tabq_stmt *st, const char *text, size_t n, bool column, unsigned index,
                     void *ctx) {
  (void)index;
  (void)ctx;
  tabq_sql_raw(st, ", ");
  if (!column) {
    literal(st, text, n);
    return;
  }
  tabq_sql_raw(st, "COALESCE(CAST(");
  tabq_sqlb_name(&style, st, text, n);
  tabq_sql_raw(st, " AS CHAR), '')");
}

/* "CONCAT('<db>.', <key parts>)": the lock name before hashing. */
static int full_name(const tabq_build *b, tabq_stmt *st, const char *db, size_t n) {
  tabq_sql_raw(st, "CONCAT('");
  literal_text(st, db, n);
  tabq_sql_raw(st, ".'");
  int code = tabq_sqlb_key_template(&style, b, st, key_part, NULL);
  tabq_sql_raw(st, ")");
  return code;
}

/* The GET_LOCK name of a row: the full name, or its SHA-256 hex when it is too long. */
static int lock_name(const tabq_build *b, tabq_stmt *st) {
  char small[256], *db = NULL;
  size_t n = 0;
  int code = lock_database(b, small, sizeof small, &db, &n);
  if (code != TABQ_OK)
    return code;
  tabq_sql_raw(st, "IF(CHAR_LENGTH(");
  code = full_name(b, st, db, n);
  if (code == TABQ_OK) {
    tabq_sql_printf(st, ") > %d, SHA2(", MY_LOCK_NAME_MAX);
    full_name(b, st, db, n);
    tabq_sql_raw(st, ", 256), ");
    full_name(b, st, db, n);
    tabq_sql_raw(st, ")");
  }
  if (db != small)
    free(db);
  return code;
}

/* Due rows in claim order with their lock names; nothing is locked yet. */
static int advisory_candidates(const tabq_build *b, tabq_stmt *out) {
  return tabq_sqlb_candidates(&style, b, out, lock_name);
}

/* Session locks: they outlive transactions, so the delivery's connection keeps the row with
 * none open. A timeout of 0 answers at once: 1 taken, 0 held elsewhere. */
static int advisory_lock(const tabq_build *b, tabq_stmt *out) {
  tabq_sql_raw(out, "SELECT GET_LOCK(");
  tabq_sqlb_param(&style, out, TABQ_P_KEY);
  tabq_sql_raw(out, ", 0)");
  return tabq_sqlb_finish(&style, b, out, "lock");
}

/* 1 released, 0 held by another session, NULL not held at all. */
static int advisory_unlock(const tabq_build *b, tabq_stmt *out) {
  tabq_sql_raw(out, "SELECT RELEASE_LOCK(");
  tabq_sqlb_param(&style, out, TABQ_P_KEY);
  tabq_sql_raw(out, ")");
  return tabq_sqlb_finish(&style, b, out, "unlock");
}

/* The row once its key is held, while it is still due: a row settled between the candidates
 * and the lock comes back empty. It counts nothing: the stamp does, after it. */
static int advisory_take(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  select_projection(out, b);
  tabq_sqlb_where_id(&style, out, t);
  tabq_sqlb_due(&style, b, out, " AND ");
  return tabq_sqlb_finish(&style, b, out, "take");
}

/* Counts the attempt of a row the take returned (autocommit, on the key's connection). */
static int advisory_stamp(const tabq_build *b, tabq_stmt *out) {
  return stamp_attempt(b, out);
}

const tabq_advisory_v1 tabq_my_advisory = {
    .size = sizeof(tabq_advisory_v1),
    .version = 1,
    .flags = TABQ_PROJECTS_DUE, /* the server keeps the session locks */
    .candidates = advisory_candidates,
    .lock = advisory_lock,
    .unlock = advisory_unlock,
    .take = advisory_take,
    .stamp = advisory_stamp,
};
