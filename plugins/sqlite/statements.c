/* tabq — the SQLite dialect's statements: the shared ones and the lease form.
 *
 * Identifiers are quoted with ", placeholders are ?N (a repeated parameter reuses its number).
 * Times are fixed-width UTC text (sqltime.c), so every comparison below is a text comparison
 * that orders exactly as the times do. The statements every dialect shares come from
 * tabq/sql_build.h; this file writes the lease claim, begin and the refusals of its own. */
#include <tabq/sql_build.h>

#include "sqlite_plugin.h"

static const tabq_host *host(void) {
  return tabq_sqlite_host();
}

/* check refuses the database clock (SQLite keeps times computed on the host), so "now" is
 * always bound. */
static const tabq_sql_style style = {
    .host = tabq_sqlite_host,
    .quote = '"',
    .placeholder = TABQ_PH_QNUMBER,
    .db_now = NULL,
    .empty_insert = NULL, /* " DEFAULT VALUES" */
    .product = "SQLite",
};

/* ---- Dialect ------------------------------------------------------------------------------ */

static int check(const tabq_build *b) {
  const tabq_table *t = b->table;
  if (b->form == TABQ_FORM_ROWLOCK)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: SQLite has no FOR UPDATE SKIP LOCKED, so the sqlite dialect "
                        "serves the lease form only; declare locked_until",
                        t->name);
  if (b->form == TABQ_FORM_ADVISORY)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the sqlite dialect does not build the advisory lock form yet; "
                        "declare locked_until for the lease form",
                        t->name);
  if (b->form != TABQ_FORM_LEASE)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown form %d", t->name, (int)b->form);
  if (t->isolation != TABQ_ISOLATION_DEFAULT)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s declares an isolation level, which SQLite does not open: "
                        "SQLite opens the modes deferred, immediate and exclusive (.mode); "
                        "PostgreSQL opens read committed, repeatable read and serializable; "
                        "MySQL/MariaDB open read uncommitted, read committed, repeatable read "
                        "and serializable",
                        t->name);
  if (t->clock == TABQ_CLOCK_DATABASE)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the sqlite dialect reads no database clock; SQLite keeps "
                        "times as text computed on the host, so declare the host clock",
                        t->name);
  if (t->mode > TABQ_SQLITE_EXCLUSIVE)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown SQLite mode %d", t->name,
                        (int)t->mode);
  return TABQ_OK;
}

static int quote(tabq_stmt *out, const char *name) {
  tabq_sqlb_table(&style, out, name);
  return out->status;
}

TABQ_SQLB_MEMBER(style, insert)
TABQ_SQLB_MEMBER(style, insert_rows)
TABQ_SQLB_MEMBER(style, ack)
TABQ_SQLB_MEMBER(style, discard)
TABQ_SQLB_MEMBER(style, dead_letter_group)
TABQ_SQLB_MEMBER(style, count_attempt_row)

static int placeholder(tabq_stmt *out, tabq_param id) {
  return tabq_sqlb_placeholder(&style, out, id);
}

/* `n` bytes of `text` as a string literal (SQLite has no backslash escapes). */
static void literal(tabq_stmt *st, const char *text, size_t n) {
  tabq_sql_raw(st, "'");
  for (size_t i = 0; i < n; i++) {
    tabq_sql_append(st, text + i, 1);
    if (text[i] == '\'')
      tabq_sql_append(st, text + i, 1);
  }
  tabq_sql_raw(st, "'");
}

/* pragma_table_info, in the table's schema ("main", an attached one) when it names one. Column
 * names compare without case, as SQLite compares them. */
static int column_default(const tabq_build *b, const char *column, tabq_stmt *out) {
  size_t schema_len;
  const char *table = tabq_sql_table_part(b->table->name, &schema_len);
  tabq_sql_raw(out, "SELECT dflt_value FROM pragma_table_info(");
  literal(out, table, strlen(table));
  if (schema_len) {
    tabq_sql_raw(out, ", ");
    literal(out, b->table->name, schema_len);
  }
  tabq_sql_raw(out, ") WHERE name = ");
  literal(out, column, strlen(column));
  tabq_sql_raw(out, " COLLATE NOCASE");
  return out->status;
}

/* retry and retry_after. The dialect serves the lease form alone, so its refusal names what the
 * table lacks, before the shared builder's refusals, which speak of the other forms. */
static int requeue(const tabq_build *b, tabq_stmt *out, bool delayed, const char *what) {
  const tabq_table *t = b->table;
  if (!t->locked_until.name && !(delayed && t->retry_after.name))
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the sqlite dialect builds %s only for a table with "
                        "locked_until%s",
                        t->name, what, delayed ? " or retry_after" : "");
  return delayed ? tabq_sqlb_retry_after(&style, b, out) : tabq_sqlb_retry(&style, b, out);
}

static int retry(const tabq_build *b, tabq_stmt *out) {
  return requeue(b, out, false, "retry");
}

static int retry_after(const tabq_build *b, tabq_stmt *out) {
  return requeue(b, out, true, "retry_after");
}

static int dead_letter_table(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove) {
  return tabq_sqlb_dead_letter_table(&style, b, copy, remove);
}

static int begin(const tabq_build *b, tabq_stmt *out) {
  static const char *const modes[] = {
      /* Every transaction tabq opens here writes (a claim of the service's own, a dead letter
       * into a table): taking the write lock at once spares a busy upgrade halfway through. */
      [TABQ_SQLITE_MODE_DEFAULT] = "BEGIN IMMEDIATE",
      [TABQ_SQLITE_DEFERRED] = "BEGIN DEFERRED",
      [TABQ_SQLITE_IMMEDIATE] = "BEGIN IMMEDIATE",
      [TABQ_SQLITE_EXCLUSIVE] = "BEGIN EXCLUSIVE",
  };
  tabq_sqlite_mode mode = b->table->mode;
  if ((size_t)mode >= sizeof modes / sizeof modes[0])
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown SQLite mode %d", b->table->name,
                        (int)mode);
  tabq_sql_raw(out, modes[mode]);
  return tabq_sqlb_finish(&style, b, out, "begin");
}

const tabq_dialect_v1 tabq_sqlite_dialect = {
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
    .fetch = NULL,      /* no fetch by a list yet: a custom claim needs a custom fetch */
    .fifo_guard = NULL, /* one writer at a time already keeps FIFO claims apart */
    .placeholder = placeholder,
    .count_attempt = count_attempt_row,
    .column_default = column_default,
    .insert_rows = insert_rows,
};

/* ---- Lease -------------------------------------------------------------------------------- */

/* Selects the rows to lease, in claim order, with the attempt as the stamp will store it; the
 * stamp (below: stamp_ids for all the rows at once) then leases each row and counts its attempt
 * in the same transaction. One
 * UPDATE .. RETURNING would do both, but SQLite returns its rows in no promised order, and a
 * batch handler gets its rows in claim order. The transaction opens with the write lock (BEGIN
 * IMMEDIATE, unless the table asks for another mode), so no claim runs between the choice of
 * rows and their stamps. */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "claim");
  tabq_sqlb_select_projection(&style, out, t, true);
  if (tabq_sqlb_fifo(t)) {
    /* Only the group's head, its first unfinished row, and only while it is due: the rows
     * behind it wait while it is in work. */
    tabq_sql_raw(out, " WHERE ");
    tabq_sqlb_col(&style, out, &t->id);
    tabq_sql_raw(out, " = (");
    tabq_sqlb_group_head(&style, out, t);
    tabq_sql_raw(out, ") AND ");
    tabq_sqlb_reached(&style, out, t, &t->locked_until);
    if (t->retry_after.name) {
      tabq_sql_raw(out, " AND ");
      tabq_sqlb_reached(&style, out, t, &t->retry_after);
    }
  } else {
    tabq_sqlb_first_due(&style, b, out);
  }
  return tabq_sqlb_finish(&style, b, out, "claim");
}

/* One row in one statement, without a transaction around it: "UPDATE .. WHERE id = (SELECT ..
 * LIMIT 1) RETURNING" finds the first due row on the claim-order index, leases it by its rowid
 * and counts its attempt (TABQ_CLAIM_ONE_STAMPS: no stamp follows). A FIFO table declines: its
 * claim selects the group's one head already. */
static int lease_claim_one(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "claim_one");
  if (tabq_sqlb_fifo(t))
    return TABQ_OK;
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_set_lease(&style, out, t);
  tabq_sql_raw(out, " WHERE ");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " = (SELECT ");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " FROM ");
  tabq_sqlb_table(&style, out, t->name);
  tabq_sqlb_due(&style, b, out, " WHERE ");
  tabq_sqlb_claim_order(&style, out, t);
  tabq_sql_raw(out, " LIMIT 1) RETURNING ");
  tabq_sqlb_projection(&style, out, t, false);
  return tabq_sqlb_finish(&style, b, out, "claim_one");
}

TABQ_SQLB_MEMBER(style, lease_stamp)
TABQ_SQLB_MEMBER(style, lease_extend)
TABQ_SQLB_MEMBER(style, lease_release)
TABQ_SQLB_MEMBER(style, lease_one)

/* A claim's stamps in one statement: the ids arrive as a JSON array (the driver binds a list
 * so), read with json_each, each finding its row by the primary key. */
static int lease_stamp_ids(const tabq_build *b, tabq_stmt *out) {
  return tabq_sqlb_stamp_ids(&style, b, out, " IN (SELECT value FROM json_each(", "))");
}

const tabq_lease_v1 tabq_sqlite_lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    /* One writer at a time: concurrent claims would only queue. */
    .flags = TABQ_CLAIM_SERIAL | TABQ_CLAIM_ONE_STAMPS,
    .claim = lease_claim,
    .stamp = lease_stamp,
    .extend = lease_extend,
    .release = lease_release,
    .lease_one = lease_one,
    .claim_one = lease_claim_one,
    .stamp_ids = lease_stamp_ids,
};
