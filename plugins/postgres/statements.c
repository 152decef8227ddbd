/* tabq — the PostgreSQL dialect's statements: the shared ones and the row lock, lease and
 * advisory lock forms.
 *
 * Identifiers are quoted with ", placeholders are $n (a repeated parameter reuses its number).
 * Row lock and lease claims skip rows other claims hold (FOR UPDATE SKIP LOCKED, 9.5); advisory
 * keys and FIFO guards lock 64-bit hashes (hashtextextended, 11). The statements every dialect
 * shares come from tabq/sql_build.h. */
#include <stdio.h>
#include <string.h>

#include <tabq/sys/sql_build.h>

#include "postgres_plugin.h"

/* PostgreSQL cuts identifiers, channel names among them, at NAMEDATALEN - 1 bytes. */
#define PG_IDENTIFIER_MAX 63

static const tabq_host *host(void) {
  return tabq_pg_host();
}

/* "Now" on the database clock is the statement's time, not its transaction's: a row lock
 * settlement runs in the claim's transaction, which may have begun long before. */
static const tabq_sql_style style = {
    .host = tabq_pg_host,
    .quote = '"',
    .placeholder = TABQ_PH_DOLLAR,
    .db_now = "statement_timestamp()",
    .empty_insert = NULL, /* " DEFAULT VALUES" */
    .product = "PostgreSQL",
    .order_by_processed_at = true, /* docs/table-description.md: the claim index */
};

const tabq_sql_style *tabq_pg_style(void) {
  return &style;
}

/* `n` bytes of `text` as a string literal. A backslash makes it an E'' literal with the
 * backslash doubled, which reads the same whatever standard_conforming_strings says. */
static void literal(tabq_stmt *st, const char *text, size_t n) {
  bool escaped = memchr(text, '\\', n) != NULL;
  tabq_sql_raw(st, escaped ? "E'" : "'");
  for (size_t i = 0; i < n; i++) {
    tabq_sql_append(st, text + i, 1);
    if (text[i] == '\'' || (escaped && text[i] == '\\'))
      tabq_sql_append(st, text + i, 1);
  }
  tabq_sql_raw(st, "'");
}

void tabq_pg_literal(tabq_stmt *st, const char *text, size_t n) {
  literal(st, text, n);
}

/* The rows a claim takes, from " WHERE" on: with FIFO groups only the group's head, its first
 * unfinished row, and only while it is due (the rows behind wait while it is in work); else
 * the first due rows, skipping those other claims hold. `subquery` picks the rows' ids for an
 * UPDATE; otherwise the claim is a SELECT of the rows themselves, locked as it reads them.
 * `one` takes a single row (claim_one): LIMIT 1 written, and one id compared. */
static void claimed_rows(const tabq_build *b, tabq_stmt *st, bool subquery, bool one) {
  const tabq_table *t = b->table;
  if (tabq_sqlb_fifo(t)) {
    tabq_sql_raw(st, " WHERE ");
    tabq_sqlb_col(&style, st, &t->id);
    tabq_sql_raw(st, " = (");
    tabq_sqlb_group_head(&style, st, t);
    tabq_sql_raw(st, ")");
    tabq_sqlb_due(&style, b, st, " AND ");
    /* No SKIP LOCKED: a head held elsewhere must stop the claim, not pass it to the next row.
     * The FIFO guard already keeps other claims of the group away. */
    if (!subquery)
      tabq_sql_raw(st, " FOR UPDATE");
    return;
  }
  /* "= ANY (ARRAY(SELECT ...))" rather than "IN (SELECT ...)": the array is an InitPlan run once,
   * walking the claim-order index to the LIMIT and locking only those rows, and the UPDATE then
   * finds them by primary key. With IN, a generic plan (plan_cache_mode, or a prepared statement
   * after five runs) scans the whole table into a hash semi join. One row needs no array: "=
   * (SELECT ...)" is the same InitPlan, its one id compared. */
  if (subquery) {
    tabq_sql_raw(st, " WHERE ");
    tabq_sqlb_col(&style, st, &t->id);
    tabq_sql_raw(st, one ? " = (SELECT " : " = ANY (ARRAY(SELECT ");
    tabq_sqlb_col(&style, st, &t->id);
    tabq_sql_raw(st, " FROM ");
    tabq_sqlb_table(&style, st, t->name);
  }
  if (one) {
    tabq_sqlb_due(&style, b, st, " WHERE ");
    tabq_sqlb_claim_order(&style, st, t);
    tabq_sql_raw(st, " LIMIT 1");
  } else {
    tabq_sqlb_first_due(&style, b, st);
  }
  tabq_sql_raw(st, " FOR UPDATE SKIP LOCKED");
  if (subquery)
    tabq_sql_raw(st, one ? ")" : "))");
}

/* The lists each database opens, for every refusal of a level or mode. */
#define OPENED_LEVELS                                                                              \
  "PostgreSQL opens read committed, repeatable read and serializable; MySQL/MariaDB open "         \
  "read uncommitted, read committed, repeatable read and serializable; SQLite opens the modes "    \
  "deferred, immediate and exclusive (.mode)"

/* "9.4.26" or "15.0" from server_version_num, when the driver gave no text. */
static const char *version_text(const tabq_build *b, char *buf, size_t cap) {
  if (b->server_version_text && b->server_version_text[0])
    return b->server_version_text;
  uint32_t v = b->server_version;
  if (v >= 100000)
    snprintf(buf, cap, "%u.%u", (unsigned)(v / 10000), (unsigned)(v % 10000));
  else
    snprintf(buf, cap, "%u.%u.%u", (unsigned)(v / 10000), (unsigned)(v / 100 % 100),
             (unsigned)(v % 100));
  return buf;
}

/* ---- Dialect ------------------------------------------------------------------------------ */

static int check(const tabq_build *b) {
  const tabq_table *t = b->table;
  if (b->form != TABQ_FORM_ROWLOCK && b->form != TABQ_FORM_LEASE && b->form != TABQ_FORM_ADVISORY)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown form %d", t->name, (int)b->form);
  if (t->isolation == TABQ_ISOLATION_READ_UNCOMMITTED)
    return host()->fail(
        TABQ_DIALECT, NULL, 0,
        "table %s declares read uncommitted, which PostgreSQL does not open: " OPENED_LEVELS,
        t->name);
  if (t->isolation > TABQ_ISOLATION_SERIALIZABLE)
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown isolation level %d", t->name,
                        (int)t->isolation);
  if (t->mode != TABQ_SQLITE_MODE_DEFAULT)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s declares a SQLite mode, which PostgreSQL does not open; declare "
                        "an isolation level instead: " OPENED_LEVELS,
                        t->name);
  if (b->server_version == 0) /* not read yet: the floors wait for it */
    return TABQ_OK;
  char buf[32];
  /* The higher floor first, so the message names the version the table really needs. */
  if ((b->form == TABQ_FORM_ADVISORY || tabq_sqlb_fifo(t)) &&
      b->server_version < TABQ_PG_HASH_FLOOR)
    return host()->fail(TABQ_SERVER_TOO_OLD, NULL, 0,
                        "table %s: %s needs PostgreSQL 11 or later (hashtextextended), and the "
                        "server is PostgreSQL %s",
                        t->name,
                        b->form == TABQ_FORM_ADVISORY ? "the advisory lock form"
                                                      : "a claim of FIFO groups",
                        version_text(b, buf, sizeof buf));
  if (b->form != TABQ_FORM_ADVISORY && b->server_version < TABQ_PG_SKIP_LOCKED_FLOOR)
    return host()->fail(TABQ_SERVER_TOO_OLD, NULL, 0,
                        "table %s: the %s form needs PostgreSQL 9.5 or later (FOR UPDATE SKIP "
                        "LOCKED), and the server is PostgreSQL %s",
                        t->name, b->form == TABQ_FORM_LEASE ? "lease" : "row lock",
                        version_text(b, buf, sizeof buf));
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
TABQ_SQLB_MEMBER(style, retry)
TABQ_SQLB_MEMBER(style, retry_after)
TABQ_SQLB_MEMBER(style, dead_letter_group)
TABQ_SQLB_MEMBER(style, count_attempt_row)

static int placeholder(tabq_stmt *out, tabq_param id) {
  return tabq_sqlb_placeholder(&style, out, id);
}

/* The catalog, by the table's quoted name as the server resolves it (search_path included):
 * no row when the table or the column is missing. */
static int column_default(const tabq_build *b, const char *column, tabq_stmt *out) {
  tabq_stmt name;
  tabq_sql_init(&name, out->host);
  quote(&name, b->table->name);
  tabq_sql_raw(out,
               "SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attribute "
               "a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = "
               "a.attnum WHERE a.attrelid = pg_catalog.to_regclass(");
  if (name.status)
    out->status = name.status;
  else
    literal(out, name.sql, name.len);
  tabq_sql_raw(out, ") AND a.attname = ");
  literal(out, column, strlen(column));
  tabq_sql_raw(out, " AND NOT a.attisdropped");
  tabq_sql_free(&name);
  return out->status;
}

static int dead_letter_table(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove) {
  return tabq_sqlb_dead_letter_table(&style, b, copy, remove);
}

static int begin(const tabq_build *b, tabq_stmt *out) {
  static const char *const levels[] = {
      [TABQ_ISOLATION_DEFAULT] = "BEGIN",
      [TABQ_ISOLATION_READ_COMMITTED] = "BEGIN ISOLATION LEVEL READ COMMITTED",
      [TABQ_ISOLATION_REPEATABLE_READ] = "BEGIN ISOLATION LEVEL REPEATABLE READ",
      [TABQ_ISOLATION_SERIALIZABLE] = "BEGIN ISOLATION LEVEL SERIALIZABLE",
  };
  tabq_isolation level = b->table->isolation;
  if ((size_t)level >= sizeof levels / sizeof levels[0] || !levels[level])
    return host()->fail(TABQ_DIALECT, NULL, 0, /* check refused it already, with the full story */
                        "table %s: PostgreSQL does not open isolation level %d", b->table->name,
                        (int)level);
  tabq_sql_raw(out, levels[level]);
  return tabq_sqlb_finish(&style, b, out, "begin");
}

/* A batch's acks in one statement: the ids as one array parameter. */
static int ack_ids(const tabq_build *b, tabq_stmt *out) {
  return tabq_sqlb_ack_ids(&style, b, out, " = ANY(", ")");
}

/* Rows by a list of ids, in claim order: the fetch after a custom claim. */
static int fetch(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  tabq_sqlb_select_projection_for(&style, out, b, false);
  tabq_sql_raw(out, " WHERE ");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " = ANY(");
  tabq_sqlb_param(&style, out, TABQ_P_IDS);
  tabq_sql_raw(out, ")");
  tabq_sqlb_claim_order(&style, out, t);
  return tabq_sqlb_finish(&style, b, out, "fetch");
}

/* A lock on the group for the rest of the claim's transaction: one claim of a group at a time,
 * across every process. The key names the table, so two tables' groups of one name differ. */
static int fifo_guard(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->group.name)
    return host()->fail(TABQ_DECLARATION, NULL, 0,
                        "table %s: a FIFO guard locks a group, and the table has no group column",
                        t->name);
  char prefix[512];
  int n = snprintf(prefix, sizeof prefix, "tabq-fifo:%s:", t->name);
  if (n < 0 || (size_t)n >= sizeof prefix)
    return host()->fail(TABQ_DECLARATION, NULL, 0, "table %s: the name is too long for a key",
                        t->name);
  tabq_sql_raw(out, "SELECT pg_try_advisory_xact_lock(hashtextextended(");
  literal(out, prefix, (size_t)n);
  tabq_sql_raw(out, " || ");
  tabq_sqlb_param(&style, out, TABQ_P_GROUP);
  tabq_sql_raw(out, ", 0))");
  return tabq_sqlb_finish(&style, b, out, "fifo_guard");
}

/* The channel is the table's name as described, schema and all; LISTEN quotes it. */
static int channel(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  size_t n = strlen(t->name);
  if (n > PG_IDENTIFIER_MAX)
    return host()->fail(TABQ_DECLARATION, NULL, 0,
                        "table %s: its notification channel \"%s\" is %zu bytes long, and "
                        "PostgreSQL identifiers, channel names among them, hold at most %d bytes",
                        t->name, t->name, n, PG_IDENTIFIER_MAX);
  tabq_sql_raw(out, t->name);
  return tabq_sqlb_finish(&style, b, out, "channel");
}

static int notify(const tabq_build *b, tabq_stmt *out) {
  tabq_sql_raw(out, "SELECT pg_notify(");
  tabq_sqlb_param(&style, out, TABQ_P_CHANNEL);
  tabq_sql_raw(out, ", ");
  tabq_sqlb_param(&style, out, TABQ_P_GROUP);
  tabq_sql_raw(out, ")");
  return tabq_sqlb_finish(&style, b, out, "notify");
}

static int savepoint(const tabq_build *b, tabq_stmt *set, tabq_stmt *back) {
  return tabq_sqlb_savepoint(&style, b, set, back);
}

const tabq_dialect_v1 tabq_pg_dialect = {
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
    .fetch = fetch,
    .fifo_guard = fifo_guard,
    .channel = channel,
    .notify = notify,
    .placeholder = placeholder,
    .count_attempt = count_attempt_row,
    .column_default = column_default,
    .ack_ids = ack_ids,
    .insert_rows = insert_rows,
    .savepoint = savepoint,
    .schema = tabq_pg_schema,
    .indexes = tabq_pg_indexes,
    .find_unique = find_unique,
};

/* ---- RowLock ------------------------------------------------------------------------------ */

/* Closes a claim's "WITH claimed AS (UPDATE ..." : UPDATE .. RETURNING gives rows in the order it
 * met them, so the outer SELECT puts them back in claim order (a batch handler sees them so). */
static void in_claim_order(tabq_stmt *out, const tabq_build *b) {
  const tabq_table *t = b->table;
  tabq_sql_raw(out, " RETURNING *) SELECT ");
  tabq_sqlb_projection_for(&style, out, b, false);
  tabq_sql_raw(out, " FROM claimed");
  tabq_sqlb_claim_order(&style, out, t);
}

/* Closes a claim of one row: UPDATE .. RETURNING gives the projection itself. */
static void returning(tabq_stmt *out, const tabq_build *b) {
  tabq_sql_raw(out, " RETURNING ");
  tabq_sqlb_projection_for(&style, out, b, false);
}

/* The rows stay locked by the claim's transaction while their handlers run. With an attempt
 * column one UPDATE counts it and returns the rows; without one a SELECT locks them. */
static int rowlock_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name) {
    tabq_sqlb_select_projection_for(&style, out, b, false);
    claimed_rows(b, out, false, false);
    return tabq_sqlb_finish(&style, b, out, "claim");
  }
  tabq_sql_raw(out, "WITH claimed AS (");
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_count_attempt(&style, out, t);
  claimed_rows(b, out, true, false);
  in_claim_order(out, b);
  return tabq_sqlb_finish(&style, b, out, "claim");
}

/* One row, as the plainest hand-written claim: "UPDATE .. WHERE id = (SELECT .. LIMIT 1 FOR
 * UPDATE SKIP LOCKED) RETURNING ..", no CTE and nothing to sort. A FIFO table without an
 * attempt column declines: its claim is that one-row SELECT already. */
static int rowlock_claim_one(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name) {
    if (tabq_sqlb_fifo(t))
      return TABQ_OK;
    tabq_sqlb_select_projection_for(&style, out, b, false);
    claimed_rows(b, out, false, true);
    return tabq_sqlb_finish(&style, b, out, "claim_one");
  }
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_count_attempt(&style, out, t);
  claimed_rows(b, out, true, true);
  returning(out, b);
  return tabq_sqlb_finish(&style, b, out, "claim_one");
}

const tabq_rowlock_v1 tabq_pg_rowlock = {
    .size = sizeof(tabq_rowlock_v1),
    .version = 1,
    .flags = TABQ_PROJECTS_DUE, /* SKIP LOCKED keeps parallel claims apart */
    .claim = rowlock_claim,
    .claim_one = rowlock_claim_one,
};

/* ---- Lease -------------------------------------------------------------------------------- */

/* One statement locks the claimable rows, writes their lease, counts the attempt and returns
 * the projection with the attempt as stored after the count. */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "claim");
  tabq_sql_raw(out, "WITH claimed AS (");
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_set_lease(&style, out, t);
  claimed_rows(b, out, true, false);
  in_claim_order(out, b);
  return tabq_sqlb_finish(&style, b, out, "claim");
}

/* One row: the lease claim without the CTE and its re-sort. */
static int lease_claim_one(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(&style, b, "claim_one");
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_set_lease(&style, out, t);
  claimed_rows(b, out, true, true);
  returning(out, b);
  return tabq_sqlb_finish(&style, b, out, "claim_one");
}

TABQ_SQLB_MEMBER(style, lease_extend)
TABQ_SQLB_MEMBER(style, lease_release)
TABQ_SQLB_MEMBER(style, lease_one)

const tabq_lease_v1 tabq_pg_lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    .flags = TABQ_PROJECTS_DUE, /* SKIP LOCKED keeps parallel claims apart */
    .claim = lease_claim,
    .stamp = NULL, /* the claim writes the lease itself */
    .extend = lease_extend,
    .release = lease_release,
    .lease_one = lease_one,
    .claim_one = lease_claim_one,
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
  tabq_sql_raw(st, "coalesce(");
  tabq_sqlb_name(&style, st, text, n);
  tabq_sql_raw(st, "::text, '')");
}

static int key_expr(const tabq_build *b, tabq_stmt *st) {
  return tabq_sqlb_key_template(&style, b, st, key_part, NULL);
}

/* Due rows in claim order with their keys; nothing is locked yet. */
static int advisory_candidates(const tabq_build *b, tabq_stmt *out) {
  return tabq_sqlb_candidates(&style, b, out, key_expr);
}

/* Session locks on the key's 64-bit hash: they outlive transactions, so the delivery's
 * connection keeps the row with none open. */
static int advisory_lock(const tabq_build *b, tabq_stmt *out) {
  tabq_sql_raw(out, "SELECT pg_try_advisory_lock(hashtextextended(");
  tabq_sqlb_param(&style, out, TABQ_P_KEY);
  tabq_sql_raw(out, ", 0))");
  return tabq_sqlb_finish(&style, b, out, "lock");
}

static int advisory_unlock(const tabq_build *b, tabq_stmt *out) {
  tabq_sql_raw(out, "SELECT pg_advisory_unlock(hashtextextended(");
  tabq_sqlb_param(&style, out, TABQ_P_KEY);
  tabq_sql_raw(out, ", 0))");
  return tabq_sqlb_finish(&style, b, out, "unlock");
}

/* The row once its key is held, while it is still due: a row settled between the candidates
 * and the lock comes back empty. */
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

/* The lock, then the take while the lock holds, in one statement that always returns one row:
 * the CTE runs the try-lock once (a volatile CTE is never inlined), the take reads its answer,
 * and the outer join hands back the answer with the taken row or with NULLs. */
static int advisory_lock_take(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name)
    return tabq_sqlb_finish(&style, b, out, "lock_take"); /* left to lock + take: none built */
  /* The lock is tried only while the row is still there to take: a candidate settled since it
   * was read (by its owner, who held the key) would be locked for nothing and cost an unlock. */
  tabq_sql_raw(out, "WITH tabq_lock AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM ");
  tabq_sqlb_table(&style, out, t->name);
  tabq_sqlb_where_id(&style, out, t);
  tabq_sqlb_due(&style, b, out, " AND ");
  tabq_sql_raw(out, ") THEN pg_try_advisory_lock(hashtextextended(");
  tabq_sqlb_param(&style, out, TABQ_P_KEY);
  tabq_sql_raw(out, ", 0)) ELSE false END AS held), tabq_taken AS (");
  tabq_sqlb_update(&style, out, t);
  tabq_sqlb_count_attempt(&style, out, t);
  tabq_sqlb_where_id(&style, out, t);
  tabq_sqlb_due(&style, b, out, " AND ");
  tabq_sql_raw(out, " AND (SELECT held FROM tabq_lock) RETURNING ");
  tabq_sqlb_projection_for(&style, out, b, false);
  tabq_sql_raw(out,
               ") SELECT tabq_taken.*, tabq_lock.held::int FROM tabq_lock LEFT JOIN tabq_taken "
               "ON true");
  return tabq_sqlb_finish(&style, b, out, "lock_take");
}

/* The ack, then the release: the unlock reads the ack's count, so the ack has run when the key
 * goes (a CTE nobody reads would run after the main query). */
static int advisory_ack_unlock(const tabq_build *b, tabq_stmt *out) {
  tabq_sql_raw(out, "WITH tabq_settled AS (");
  int rc = tabq_sqlb_ack(&style, b, out);
  if (rc)
    return rc;
  tabq_sql_raw(out, " RETURNING 1) SELECT tabq_done.n, pg_advisory_unlock(hashtextextended(");
  tabq_sqlb_param(&style, out, TABQ_P_KEY);
  tabq_sql_raw(out, ", 0))::int FROM (SELECT count(*) AS n FROM tabq_settled) AS tabq_done");
  return tabq_sqlb_finish(&style, b, out, "ack_unlock");
}

const tabq_advisory_v1 tabq_pg_advisory = {
    .size = sizeof(tabq_advisory_v1),
    .version = 1,
    .flags = TABQ_PROJECTS_DUE, /* the server keeps the session locks */
    .candidates = advisory_candidates,
    .lock = advisory_lock,
    .unlock = advisory_unlock,
    .take = advisory_take,
    .lock_take = advisory_lock_take,
    .ack_unlock = advisory_ack_unlock,
};
