/* tabq — the SQLite dialect's statements: the shared ones, the lease and advisory forms.
 *
 * Identifiers are quoted with ", placeholders are ?N (a repeated parameter reuses its number).
 * Times are fixed-width UTC text (sqltime.c), so every comparison below is a text comparison
 * that orders exactly as the times do. The statements every dialect shares come from
 * tabq/sql_build.h; this file writes the lease claim, begin and the refusals of its own. */
#include <tabq/sys/sql_build.h>

#include "sqlite_plugin.h"

static const tabq_host *host(void) {
  return tabq_sqlite_host();
}

/* The database clock (advisory tables; a lease's expiry is the host's): strftime's %f has
 * milliseconds, so three zeros make the text the fixed width the host writes (sqltime.c), and
 * text order stays time order. SQLite reads 'now' once per statement step. */
#define DB_NOW "(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')"

static const tabq_sql_style style = {
    .host = tabq_sqlite_host,
    .quote = '"',
    .placeholder = TABQ_PH_QNUMBER,
    .db_now = DB_NOW,
    .empty_insert = NULL, /* " DEFAULT VALUES" */
    .product = "SQLite",
};

const tabq_sql_style *tabq_sqlite_style(void) {
  return &style;
}

/* ---- Dialect ------------------------------------------------------------------------------ */

static int check(const tabq_build *b) {
  const tabq_table *t = b->table;
  if (b->form == TABQ_FORM_ROWLOCK)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: SQLite has no FOR UPDATE SKIP LOCKED, so the sqlite dialect "
                        "serves the lease and advisory lock forms; declare locked_until, or an "
                        "advisory_lock key",
                        t->name);
  if (b->form != TABQ_FORM_LEASE && b->form != TABQ_FORM_ADVISORY)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown form %d", t->name, (int)b->form);
  if (t->isolation != TABQ_ISOLATION_DEFAULT)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s declares an isolation level, which SQLite does not open: "
                        "SQLite opens the modes deferred, immediate and exclusive (.mode); "
                        "PostgreSQL opens read committed, repeatable read and serializable; "
                        "MySQL/MariaDB open read uncommitted, read committed, repeatable read "
                        "and serializable",
                        t->name);
  if (t->clock == TABQ_CLOCK_DATABASE && b->form != TABQ_FORM_ADVISORY)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the sqlite dialect reads the database clock in the advisory "
                        "form only; a lease's expiry is computed on the host, so declare the "
                        "host clock",
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
TABQ_SQLB_MEMBER(style, find_unique)
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

void tabq_sqlite_literal(tabq_stmt *st, const char *text, size_t n) {
  literal(st, text, n);
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

/* retry and retry_after: the shared builders refuse a retry statement outside the lease form
 * (the key's release returns the row there). */
TABQ_SQLB_MEMBER(style, retry)
TABQ_SQLB_MEMBER(style, retry_after)

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
    .schema = tabq_sqlite_schema,
    .indexes = tabq_sqlite_indexes,
    .find_unique = find_unique,
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
  tabq_sqlb_select_projection_for(&style, out, b, true);
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
  tabq_sqlb_projection_for(&style, out, b, false);
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
    .flags = TABQ_CLAIM_SERIAL | TABQ_CLAIM_ONE_STAMPS | TABQ_PROJECTS_DUE,
    .claim = lease_claim,
    .stamp = lease_stamp,
    .extend = lease_extend,
    .release = lease_release,
    .lease_one = lease_one,
    .claim_one = lease_claim_one,
    .stamp_ids = lease_stamp_ids,
};

/* ---- Advisory ----------------------------------------------------------------------------- */

/* One part of the key template as a text expression: a literal part as a string literal, a
 * {column} as the column's text, joined with ||. A NULL column reads as empty text, so the key
 * itself is never NULL. */
static void key_part(tabq_stmt *st, const char *text, size_t n, bool column, unsigned index,
                     void *ctx) {
  (void)ctx;
  if (index)
    tabq_sql_raw(st, " || ");
  if (!column) {
    literal(st, text, n);
    return;
  }
  tabq_sql_raw(st, "coalesce(CAST(");
  tabq_sqlb_name(&style, st, text, n);
  tabq_sql_raw(st, " AS TEXT), '')");
}

static int key_expr(const tabq_build *b, tabq_stmt *st) {
  return tabq_sqlb_key_template(&style, b, st, key_part, NULL);
}

/* Due rows in claim order with their keys; the core then takes each key in its registry. */
static int advisory_candidates(const tabq_build *b, tabq_stmt *out) {
  return tabq_sqlb_candidates(&style, b, out, key_expr);
}

/* The row once its key is held, while it is still due: one UPDATE .. RETURNING counts the
 * attempt and reads the row, so a row settled between the candidates and the lock comes back
 * empty. Without an attempt column it only reads. */
static int advisory_take(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (t->attempt.name) {
    tabq_sqlb_update(&style, out, t);
    tabq_sqlb_count_attempt(&style, out, t);
  } else {
    tabq_sqlb_select_projection_for(&style, out, b, false);
  }
  tabq_sqlb_where_id(&style, out, t);
  tabq_sqlb_due(&style, b, out, " AND ");
  if (t->attempt.name) {
    tabq_sql_raw(out, " RETURNING ");
    tabq_sqlb_projection_for(&style, out, b, false);
  }
  return tabq_sqlb_finish(&style, b, out, "take");
}

/* SQLite has no session locks: the core keeps the keys in work in its own registry, by
 * database file, and refuses a second process on the file. */
const tabq_advisory_v1 tabq_sqlite_advisory = {
    .size = sizeof(tabq_advisory_v1),
    .version = 1,
    .flags = TABQ_ADVISORY_PROCESS_KEYS | TABQ_PROJECTS_DUE,
    .candidates = advisory_candidates,
    .lock = NULL,
    .unlock = NULL,
    .take = advisory_take,
};
