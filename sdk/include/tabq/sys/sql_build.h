/* tabq — the statements dialects share, built from a small style (link tabq_sqlbuild).
 *
 * Most statements read the same on every SQL database but for three things: how an identifier
 * is quoted, how a placeholder is written, and how "now" reads the database's clock. A dialect
 * describes those once in a tabq_sql_style and hands its vtable members to the builders here;
 * it writes itself only what its database does its own way (claims, advisory locks, FIFO
 * guards, begin, check).
 *
 * Two kinds of function:
 * - Builders, named after the vtable member they serve (tabq_sqlb_ack serves `ack`), build a
 *   whole statement: they refuse what they cannot build (TABQ_DIALECT, TABQ_DECLARATION, with a
 *   message through the style's host), report a failed append (tabq_sqlb_finish) and return a
 *   tabq_code, as the member does. TABQ_SQLB_MEMBER defines the member from the builder.
 * - Pieces (void) append a fragment for a dialect's own statements. Like the sql.h helpers they
 *   do nothing once the statement has failed; the dialect calls tabq_sqlb_finish at its end.
 *
 * The texts below write T for the quoted table name, c for a quoted column (the role's name:
 * id, group, locked_until ...) and :NAME for a placeholder binding TABQ_P_NAME ($n, ?n or ? as
 * the style says). [..] is written only where the table has that column, or where it holds.
 * "now" is the style's db_now on a table with the database clock, else :NOW.
 *
 * In the lease form (tabq_sqlb_leased) a settlement also names the token, locked_until =
 * :TOKEN, so a late settlement after another claim took the row changes nothing, and a
 * finishing one clears the lease; outside it no statement touches locked_until. */
#ifndef TABQ_SQL_BUILD_H
#define TABQ_SQL_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include <tabq/sys/dialect.h>
#include <tabq/sys/sql.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a dialect's text is made of. A dialect keeps one, static and const. */
typedef struct tabq_sql_style {
  /* The host the plugin's entry was given: every refusal goes through its fail(). */
  const tabq_host *(*host)(void);
  char quote;                   /* the identifier quote, '"' or '`' (doubled inside a name) */
  tabq_placeholder placeholder; /* TABQ_PH_DOLLAR, TABQ_PH_QUESTION or TABQ_PH_QNUMBER */
  /* "now" on a table with TABQ_CLOCK_DATABASE: an SQL expression of the statement's time (not
   * the transaction's: a settlement may run in a transaction begun long before), such as
   * "statement_timestamp()". NULL binds :NOW whatever the table's clock. */
  const char *db_now;
  /* The end of an insert that writes no column, after "INSERT INTO T": NULL for the standard
   * " DEFAULT VALUES", " () VALUES ()" for a database without it (MySQL). */
  const char *empty_insert;
  /* The database's name in refusals: "PostgreSQL". */
  const char *product;
  /* Claims order by processed_at first where the table has one. Every claimable row has it
   * NULL, so the order stays the same; but an index that leads with (group, processed_at)
   * then gives that order, where a planner that does not take "IS NULL" for a constant
   * (PostgreSQL) would take the primary key's id order instead and walk the finished rows. */
  bool order_by_processed_at;
  /* ABI 1.9: a unique key's insert is "INSERT IGNORE" (MySQL), not the "ON CONFLICT (k) DO
   * NOTHING" of PostgreSQL and SQLite. */
  bool insert_ignore;
} tabq_sql_style;

/* Defines `static int name(const tabq_build *b, tabq_stmt *out)` as tabq_sqlb_<name> in `style`,
 * a vtable member: TABQ_SQLB_MEMBER(pg_style, ack) then `.ack = ack`. For insert, insert_rows,
 * find_unique, ack, discard, retry, retry_after, dead_letter_group, lease_extend, lease_release,
 * count_attempt_row, lease_one and lease_stamp. */
#define TABQ_SQLB_MEMBER(style, name)                                                              \
  static int name(const tabq_build *b, tabq_stmt *out) {                                           \
    return tabq_sqlb_##name(&(style), b, out);                                                     \
  }

/* ---- Refusals ----------------------------------------------------------------------------- */

/* TABQ_OK while `out` holds; else reports its failure ("<what> statement for table <name>: out
 * of memory", or more parameters than a statement holds) and returns the code. */
int tabq_sqlb_finish(const tabq_sql_style *s, const tabq_build *b, const tabq_stmt *out,
                     const char *what);
/* TABQ_DIALECT: "table <name>: a lease <what> needs locked_until". */
int tabq_sqlb_no_lease(const tabq_sql_style *s, const tabq_build *b, const char *what);

/* ---- Pieces ------------------------------------------------------------------------------- */

/* The lease form, with the locked_until column that holds the token. */
bool tabq_sqlb_leased(const tabq_build *b);
/* The table has FIFO groups: fifo set and a group column. */
bool tabq_sqlb_fifo(const tabq_table *t);

void tabq_sqlb_col(const tabq_sql_style *s, tabq_stmt *st, const tabq_col *c); /* c */
/* `n` bytes of `name` as one quoted identifier, for a column named inside a template. */
void tabq_sqlb_name(const tabq_sql_style *s, tabq_stmt *st, const char *name, size_t n);
void tabq_sqlb_table(const tabq_sql_style *s, tabq_stmt *st, const char *name); /* T, s.T */
void tabq_sqlb_param(const tabq_sql_style *s, tabq_stmt *st, tabq_param id);    /* :ID */
/* :ID in row `row` of a statement that repeats one row's list (tabq_sql_param_row). */
void tabq_sqlb_param_row(const tabq_sql_style *s, tabq_stmt *st, tabq_param id, unsigned row);
void tabq_sqlb_now(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t); /* now */
/* ", " before every item of a list but the first. */
void tabq_sqlb_sep(tabq_stmt *st, bool *first);
/* `lead` before the first condition of a list, " AND " before the others. */
void tabq_sqlb_and(tabq_stmt *st, bool *first, const char *lead);

/* "UPDATE T SET ". */
void tabq_sqlb_update(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* "attempt = attempt + 1". */
void tabq_sqlb_count_attempt(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* The claim's lease: "locked_until = :LEASE_UNTIL[, attempt = attempt + 1]". */
void tabq_sqlb_set_lease(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* " WHERE id = :ID". */
void tabq_sqlb_where_id(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* " WHERE id = :ID[ AND locked_until = :TOKEN]": the row a settlement names (token when leased). */
void tabq_sqlb_where_row(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st);
/* "(c IS NULL OR c <= now)": a lease ended, or a retry time reached. */
void tabq_sqlb_reached(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                       const tabq_col *c);
/* The conditions of a due row, joined by " AND " with `lead` (" WHERE " or " AND ") before the
 * first: [reached(locked_until) when leased], [reached(retry_after)], [processed_at IS NULL],
 * [group = :GROUP]. A table with none writes nothing. */
void tabq_sqlb_due(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st, const char *lead);
/* " ORDER BY [processed_at, ][priority, ][retry_after, ]id" (processed_at where the style
 * says order_by_processed_at). */
void tabq_sqlb_claim_order(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* The first due rows: due(" WHERE "), the claim order, " LIMIT :LIMIT". */
void tabq_sqlb_first_due(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st);
/* The group's unfinished rows: "SELECT id FROM T WHERE group = :GROUP[ AND processed_at IS
 * NULL]". */
void tabq_sqlb_group_rows(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* A FIFO group's head, its first unfinished row: group_rows, the claim order, " LIMIT 1". */
void tabq_sqlb_group_head(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t);
/* The projection (dialect.h) as a column list, "id[, attempt][, group] ..."; `attempt_plus_one`
 * writes "attempt + 1", for a claim that reads the row before a stamp counts the attempt. */
void tabq_sqlb_projection(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                          bool attempt_plus_one);
/* "SELECT <projection> FROM T". */
void tabq_sqlb_select_projection(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                                 bool attempt_plus_one);
/* Whether the statements of `b` end the projection with the row's due time (ABI 1.8): the core
 * asks (b->project_due) and the table has retry_after. */
bool tabq_sqlb_projects_due(const tabq_build *b);
/* The projection for the statement `b` builds: tabq_sqlb_projection, then ", retry_after" where
 * tabq_sqlb_projects_due. A dialect that declares TABQ_PROJECTS_DUE writes every projection of
 * its claims, takes and fetch with these. */
void tabq_sqlb_projection_for(const tabq_sql_style *s, tabq_stmt *st, const tabq_build *b,
                              bool attempt_plus_one);
/* "SELECT <projection for b> FROM T". */
void tabq_sqlb_select_projection_for(const tabq_sql_style *s, tabq_stmt *st, const tabq_build *b,
                                     bool attempt_plus_one);

/* Walks an advisory_lock key template ("jobs-{id}") part by part: each literal run as it is,
 * each {column} as the column's name, `index` counting from 0. The dialect writes the parts as
 * SQL. TABQ_DECLARATION on an empty template, or on an unclosed or empty {} (the parts before
 * it have been written by then). */
typedef void (*tabq_sqlb_key_part_fn)(tabq_stmt *st, const char *text, size_t n, bool column,
                                      unsigned index, void *ctx);
int tabq_sqlb_key_template(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st,
                           tabq_sqlb_key_part_fn part, void *ctx);

/* ---- Builders: tabq_dialect_v1 ------------------------------------------------------------ */

/* "INSERT INTO T (cols) VALUES (params)": every role column that is not generated, in the order
 * id, group, priority, partition_key, retry_after, attempt, headers, payload, binding ID, GROUP,
 * PRIORITY, PARTITION_KEY, RETRY_AT, ATTEMPT, HEADERS, PAYLOAD; then the data columns that are
 * not generated, column n binding TABQ_P_DATA + n; then unique_key binding UNIQUE_KEY (ABI 1.9),
 * followed by " ON CONFLICT (unique_key)[ WHERE processed_at IS NULL] DO NOTHING" (or, with the
 * style's insert_ignore, "INSERT IGNORE INTO"), so a key a row holds changes no row. No column:
 * "INSERT INTO T" and empty_insert. */
int tabq_sqlb_insert(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* insert_rows (ABI 1.4): insert's "INSERT INTO T (cols) VALUES (params)" with b->rows tuples of
 * params, ", " between them, row k's placeholders the k-th copy of insert's list
 * (tabq_sqlb_param_row): "VALUES ($1, $2), ($3, $4)". out->params holds insert's list once.
 * Declines (no SQL, TABQ_OK) a table whose insert writes no column, and one with a unique_key;
 * TABQ_INVALID when b->rows is 0. */
int tabq_sqlb_insert_rows(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* find_unique (ABI 1.9): "SELECT id FROM T WHERE unique_key = :UNIQUE_KEY[ ORDER BY CASE WHEN
 * processed_at IS NULL THEN 0 ELSE 1 END] LIMIT 1". */
int tabq_sqlb_find_unique(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* ack and discard: the row is finished. With processed_at "UPDATE T SET processed_at = now[,
 * locked_until = NULL]", else "DELETE FROM T"; then where_row. */
int tabq_sqlb_ack(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
int tabq_sqlb_discard(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* ack_ids: the rows of a list finished at once, as ack finishes one, for databases that bind a
 * list of ids (TABQ_P_IDS): "... WHERE id" list_open IDS list_close (PostgreSQL: " = ANY(" and
 * ")"), in the lease form "AND locked_until = TOKEN", then " RETURNING id". */
int tabq_sqlb_ack_ids(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                      const char *list_open, const char *list_close);
/* Back to the queue at once: "UPDATE T SET locked_until = NULL" and where_row. Outside the
 * lease form a retry changes no column (the claim's commit, or the key's release, returns the
 * row), so it refuses: TABQ_DIALECT. The attempt was counted at the claim: nothing touches it. */
int tabq_sqlb_retry(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* Hidden until RETRY_AT: "UPDATE T SET [locked_until = NULL, ][retry_after = :RETRY_AT]" and
 * where_row. Without retry_after it is a plain retry, refused outside the lease form. */
int tabq_sqlb_retry_after(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* "UPDATE T SET group = :DEST[, locked_until = NULL]" and where_row; TABQ_DECLARATION without
 * a group column. */
int tabq_sqlb_dead_letter_group(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* Into b->dead_letter_table D (TABQ_INVALID when NULL). `copy`: "INSERT INTO D (cols) SELECT
 * cols FROM T" and where_row, cols being every role column but locked_until (id, group,
 * priority, partition_key, retry_after, attempt, processed_at, headers, payload) then every
 * data column, generated ones too. `remove`: "DELETE FROM T" and where_row. */
int tabq_sqlb_dead_letter_table(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *copy,
                                tabq_stmt *remove);

/* savepoint (ABI 1.6): `set` "SAVEPOINT tabq_handler", `back` "ROLLBACK TO SAVEPOINT
 * tabq_handler", the SQL standard's, which PostgreSQL, MySQL/MariaDB and SQLite all take. */
int tabq_sqlb_savepoint(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *set,
                        tabq_stmt *back);

/* count_attempt (ABI 1.1): "UPDATE T SET attempt = attempt + 1 WHERE id = :ID"; TABQ_DECLARATION
 * without an attempt column. */
int tabq_sqlb_count_attempt_row(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* placeholder (ABI 1.1): appends :ID-style placeholder `id` in the style; returns out->status. */
int tabq_sqlb_placeholder(const tabq_sql_style *s, tabq_stmt *out, tabq_param id);

/* ---- Builders: tabq_advisory_v1 ---------------------------------------------------------- */

/* Appends the dialect's advisory key of the row as a text expression; returns a tabq_code. */
typedef int (*tabq_sqlb_key_fn)(const tabq_build *b, tabq_stmt *st);
/* Due rows in claim order with their keys: "SELECT id, <key> FROM T" and first_due, binding
 * [NOW], [GROUP], LIMIT. A failure of `key` is returned as it is. */
int tabq_sqlb_candidates(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                         tabq_sqlb_key_fn key);

/* ---- Builders: tabq_lease_v1 (refused with tabq_sqlb_no_lease unless leased) -------------- */

/* "UPDATE T SET locked_until = :LEASE_UNTIL WHERE id = :ID AND locked_until = :TOKEN". */
int tabq_sqlb_lease_extend(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* "UPDATE T SET locked_until = NULL WHERE id = :ID AND locked_until = :TOKEN". */
int tabq_sqlb_lease_release(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* lease_one (ABI 1.1): "UPDATE T SET locked_until = :LEASE_UNTIL[, attempt = attempt + 1] WHERE
 * id = :ID AND (locked_until IS NULL OR locked_until <= :NOW)[ AND processed_at IS NULL]". */
int tabq_sqlb_lease_one(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* stamp, after a claim that only selects: "UPDATE T SET locked_until = :LEASE_UNTIL[, attempt =
 * attempt + 1] WHERE id = :ID". */
int tabq_sqlb_lease_stamp(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out);
/* stamp_ids (ABI 1.4), RowLock and Lease: the stamps of a claim's rows at once, for databases
 * that bind a list of ids (TABQ_P_IDS): "UPDATE T SET attempt = attempt + 1" (row lock; no SQL
 * without an attempt column) or "UPDATE T SET locked_until = :LEASE_UNTIL[, attempt = attempt +
 * 1]" (lease), then " WHERE id" list_open IDS list_close (SQLite: " IN (SELECT value FROM
 * json_each(" and "))"). */
int tabq_sqlb_stamp_ids(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                        const char *list_open, const char *list_close);

/* ---- Builders: a table's schema (ABI 1.7, Dialect.schema; sdk/src/sql_schema.c) ----------- */

/* The column types and the forms of DDL a database writes, beside its tabq_sql_style. A dialect
 * keeps one, static and const. docs/schema.md has the three built-in dialects' and their
 * reasons. */
typedef struct tabq_sql_schema {
  /* A generated id, an integer the database assigns, with its key: "BIGSERIAL PRIMARY KEY",
   * "INTEGER PRIMARY KEY" (SQLite's rowid), "BIGINT AUTO_INCREMENT PRIMARY KEY". */
  const char *auto_id;
  /* Each value type (tabq_type) a column declares: */
  const char *integer; /* TABQ_T_INT, and an id that is not generated: "BIGINT" */
  const char *real;    /* TABQ_T_REAL */
  const char *text;    /* TABQ_T_TEXT, and the partition key */
  const char *bytes;   /* TABQ_T_BYTES, and the payload unless it declares text or JSON */
  const char *time;    /* TABQ_T_TIME, retry_after and processed_at */
  const char *json;    /* TABQ_T_JSON, and the headers */
  const char *any;     /* TABQ_T_NULL, a data column of any type: NULL writes no type */
  /* By role: */
  const char *counter;    /* priority and attempt: "INTEGER" */
  const char *key_text;   /* text in a key or an index (the group, a text id); NULL: text */
  const char *large_text; /* a payload of text; NULL: text */
  const char *lease_time; /* locked_until; NULL: time */
  /* After CREATE TABLE's closing parenthesis, as it is (" ENGINE=InnoDB"); NULL: nothing. */
  const char *table_options;
  /* CREATE INDEX .. WHERE: the claim index of a processed_at table holds the unfinished rows
   * alone (else processed_at leads its key after the group, the unfinished rows one range). */
  bool partial_index;
  /* The claim index is written inside CREATE TABLE, and as a CREATE INDEX of its own only with
   * TABQ_SCHEMA_ALONE (MySQL 8, which has no CREATE INDEX IF NOT EXISTS). */
  bool inline_index;
  /* CREATE INDEX IF NOT EXISTS exists (without it, the flag refuses an index written alone). */
  bool index_if_not_exists;
  /* CREATE INDEX names the index within the table's schema and the table without it, as SQLite
   * writes "CREATE INDEX aux.jobs_claim ON jobs" (else "CREATE INDEX jobs_claim ON aux.jobs"). */
  bool index_in_schema;
} tabq_sql_schema;

/* Defines `static int schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out)`
 * as tabq_sqlb_schema in `style` and `types`: the Dialect member `.schema = schema`. */
#define TABQ_SQLB_SCHEMA_MEMBER(style, types)                                                      \
  static int schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out) {           \
    return tabq_sqlb_schema(&(style), &(types), b, spec, out);                                     \
  }

/* Statement spec->part of b->table's schema:
 * - TABQ_SCHEMA_TABLE: "CREATE TABLE [IF NOT EXISTS] T (id auto_id, group key_text NOT NULL,
 *   priority counter NOT NULL DEFAULT 0, partition_key text, retry_after time, attempt counter
 *   NOT NULL DEFAULT 1, processed_at time, locked_until lease_time, headers json, payload bytes
 *   NOT NULL, data columns by their declared types[, INDEX name (key) when inline])
 *   table_options", each column where the table has the role. An id that is not generated is
 *   "integer PRIMARY KEY" (key_text for TABQ_T_TEXT); the payload is large_text or json where
 *   it declares TABQ_T_TEXT or _JSON.
 * - TABQ_SCHEMA_INDEX: "CREATE INDEX [IF NOT EXISTS] name ON T (key)[ WHERE processed_at IS
 *   NULL]" (tabq_sqlb_claim_key); no SQL where the key is the id alone (the primary key gives
 *   that order) or the index is inline and not asked ALONE.
 * - TABQ_SCHEMA_UNIQUE_INDEX (ABI 1.9): "CREATE UNIQUE INDEX [IF NOT EXISTS] name ON T
 *   (unique_key)[ WHERE processed_at IS NULL]", partial with partial_index; inline (the column
 *   " UNIQUE" in CREATE TABLE) where the claim index is, unless asked ALONE. Nothing without the
 *   role. The table's unique_key column is key_text.
 * - TABQ_SCHEMA_DEAD_TABLE: b->dead_letter_table, the table's columns (its id the id's type as
 *   the PRIMARY KEY, never generated: the dead letter's copy writes it), no index; no SQL
 *   without a name.
 * - TABQ_SCHEMA_SETTINGS, and a part it does not know: no SQL (a dialect writes its own).
 * Refuses (TABQ_DECLARATION) a generated id of text, an id or a payload of another type, and
 * (TABQ_DIALECT) an index alone IF NOT EXISTS where the database has no such statement. */
int tabq_sqlb_schema(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_build *b,
                     const tabq_schema_spec *spec, tabq_stmt *out);
/* The claim-order index's key, "(group, [processed_at, ][priority, ][retry_after, ]id)", each
 * where the table has the role; processed_at where the claims order by it
 * (s->order_by_processed_at) or the index cannot hold the unfinished rows alone (no
 * partial_index). Returns whether the index is partial (" WHERE processed_at IS NULL" follows). */
bool tabq_sqlb_claim_key(const tabq_sql_style *s, const tabq_sql_schema *k, tabq_stmt *st,
                         const tabq_table *t);
/* The type a column of value type `type` takes (TABQ_T_NULL: k->any, which may be NULL). */
const char *tabq_sqlb_column_type(const tabq_sql_schema *k, int type);

#ifdef __cplusplus
}
#endif

#endif
