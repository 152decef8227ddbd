/* tabq — the MySQL/MariaDB dialect's statements: the shared ones and the row lock, lease and
 * advisory lock forms.
 *
 * Identifiers are quoted with `, placeholders are ? (a repeated parameter is bound again).
 * MySQL's UPDATE returns no rows, so every claim is a SELECT that locks its rows and returns the
 * attempt plus one, and a stamp statement counts it afterwards in the same transaction. Row lock
 * and lease claims skip rows other claims hold (FOR UPDATE SKIP LOCKED: MySQL 8.0.1, MariaDB
 * 10.6); advisory keys are GET_LOCK names. Times are UTC: the driver sets time_zone '+00:00'. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unicase.h>
#include <unistr.h>

#include <tabq/sql.h>

#include "mysql_plugin.h"

/* GET_LOCK refuses names longer than this; longer ones are hashed (SHA-256 hex is 64 long). */
#define MY_LOCK_NAME_MAX 64

static const tabq_host *host(void) {
  return tabq_my_host();
}

static void col(tabq_stmt *st, const tabq_col *c) {
  tabq_sql_quoted(st, c->name, '`', 0);
}
static void table(tabq_stmt *st, const char *name) {
  tabq_sql_quoted(st, name, '`', 1);
}
static void param(tabq_stmt *st, tabq_param id) {
  tabq_sql_param(st, id, TABQ_PH_QUESTION);
}
static void raw(tabq_stmt *st, const char *text) {
  tabq_sql_raw(st, text);
}

/* ", " before every item of a list but the first. */
static void sep(tabq_stmt *st, bool *first) {
  if (!*first)
    raw(st, ", ");
  *first = false;
}

/* `lead` before the first condition of a list, " AND " before the others. */
static void and_sep(tabq_stmt *st, bool *first, const char *lead) {
  raw(st, *first ? lead : " AND ");
  *first = false;
}

/* The inside of a string literal: a quote doubled, a backslash escaped (MySQL reads \ as an
 * escape unless sql_mode has NO_BACKSLASH_ESCAPES). */
static void literal_text(tabq_stmt *st, const char *text, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (text[i] == '\'')
      raw(st, "'");
    else if (text[i] == '\\')
      raw(st, "\\");
    tabq_sql_append(st, text + i, 1);
  }
}

static void literal(tabq_stmt *st, const char *text, size_t n) {
  raw(st, "'");
  literal_text(st, text, n);
  raw(st, "'");
}

/* Reports a failure while appending (out of memory, too many parameters). */
static int finish(const tabq_build *b, tabq_stmt *out, const char *what) {
  if (out->status == TABQ_OK)
    return TABQ_OK;
  return host()->fail(out->status, NULL, 0, "%s statement for table %s: %s", what, b->table->name,
                      out->status == TABQ_NOMEM ? "out of memory"
                                                : "more parameters than a statement holds");
}

/* The lease form's statements name the token; the others never touch locked_until. */
static bool leased(const tabq_build *b) {
  return b->form == TABQ_FORM_LEASE && b->table->locked_until.name;
}

static bool fifo(const tabq_table *t) {
  return t->fifo && t->group.name;
}

/* "Now": the host's time bound once per statement, or the database's clock in UTC with
 * microseconds (a row lock settlement runs in a transaction begun long before, and
 * UTC_TIMESTAMP is the statement's time, not the transaction's). */
static void now(tabq_stmt *st, const tabq_table *t) {
  if (t->clock == TABQ_CLOCK_DATABASE)
    raw(st, "UTC_TIMESTAMP(6)");
  else
    param(st, TABQ_P_NOW);
}

/* " WHERE id = ?": every settlement names the row, and in the lease form the token it holds
 * too, so a late settlement after another claim took the row changes nothing. */
static void where_row(const tabq_build *b, tabq_stmt *st) {
  const tabq_table *t = b->table;
  raw(st, " WHERE ");
  col(st, &t->id);
  raw(st, " = ");
  param(st, TABQ_P_ID);
  if (leased(b)) {
    raw(st, " AND ");
    col(st, &t->locked_until);
    raw(st, " = ");
    param(st, TABQ_P_TOKEN);
  }
}

/* "(c IS NULL OR c <= now)": a lease ended, or a retry time reached. */
static void reached(tabq_stmt *st, const tabq_table *t, const tabq_col *c) {
  raw(st, "(");
  col(st, c);
  raw(st, " IS NULL OR ");
  col(st, c);
  raw(st, " <= ");
  now(st, t);
  raw(st, ")");
}

/* The conditions of a due row, each where the table has the column; `lead` (" WHERE " or
 * " AND ") goes before the first, and a table with none writes nothing. */
static void due(const tabq_build *b, tabq_stmt *st, const char *lead) {
  const tabq_table *t = b->table;
  bool first = true;
  if (leased(b)) {
    and_sep(st, &first, lead);
    reached(st, t, &t->locked_until);
  }
  if (t->retry_after.name) {
    and_sep(st, &first, lead);
    reached(st, t, &t->retry_after);
  }
  if (t->processed_at.name) {
    and_sep(st, &first, lead);
    col(st, &t->processed_at);
    raw(st, " IS NULL");
  }
  if (t->group.name) {
    and_sep(st, &first, lead);
    col(st, &t->group);
    raw(st, " = ");
    param(st, TABQ_P_GROUP);
  }
}

static void claim_order(tabq_stmt *st, const tabq_table *t) {
  raw(st, " ORDER BY ");
  if (t->priority.name) {
    col(st, &t->priority);
    raw(st, ", ");
  }
  if (t->retry_after.name) {
    col(st, &t->retry_after);
    raw(st, ", ");
  }
  col(st, &t->id);
}

/* Every projection here is a claim's or a take's, read before the stamp counts the attempt:
 * it returns the attempt plus one, the value the row holds once the stamp has run. */
static void projected(tabq_stmt *st, const tabq_col *c, int is_attempt, void *first) {
  sep(st, first);
  col(st, c);
  if (is_attempt)
    raw(st, " + 1");
}

/* "SELECT <projection> FROM T". */
static void select_projection(tabq_stmt *st, const tabq_table *t) {
  bool first = true;
  raw(st, "SELECT ");
  tabq_sql_each_projected(st, t, projected, &first);
  raw(st, " FROM ");
  table(st, t->name);
}

static void count_attempt(tabq_stmt *st, const tabq_table *t) {
  col(st, &t->attempt);
  raw(st, " = ");
  col(st, &t->attempt);
  raw(st, " + 1");
}

/* The rows a claim locks, from " WHERE" on. With FIFO groups only the group's head, its first
 * unfinished row, and only while it is due (the rows behind wait while it is in work); the head
 * is picked in a derived table because MySQL takes no LIMIT in a subquery on the table it
 * reads. Else the first due rows, passing over those other claims hold. */
static void claimed_rows(const tabq_build *b, tabq_stmt *st) {
  const tabq_table *t = b->table;
  if (fifo(t)) {
    raw(st, " WHERE ");
    col(st, &t->id);
    raw(st, " = (SELECT ");
    col(st, &t->id);
    raw(st, " FROM (SELECT ");
    col(st, &t->id);
    raw(st, " FROM ");
    table(st, t->name);
    raw(st, " WHERE ");
    col(st, &t->group);
    raw(st, " = ");
    param(st, TABQ_P_GROUP);
    if (t->processed_at.name) {
      raw(st, " AND ");
      col(st, &t->processed_at);
      raw(st, " IS NULL");
    }
    claim_order(st, t);
    raw(st, " LIMIT 1) h)");
    due(b, st, " AND ");
    /* No SKIP LOCKED: a head held elsewhere must stop the claim, not pass it to the next row.
     * The FIFO guard already keeps other claims of the group away. */
    raw(st, " FOR UPDATE");
    return;
  }
  due(b, st, " WHERE ");
  claim_order(st, t);
  raw(st, " LIMIT ");
  param(st, TABQ_P_LIMIT);
  raw(st, " FOR UPDATE SKIP LOCKED");
}

/* "UPDATE T SET attempt = attempt + 1 WHERE id = ?": the stamp after a row lock claim or an
 * advisory take. A table without an attempt column counts nothing: no statement (sql NULL). */
static int stamp_attempt(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name)
    return TABQ_OK;
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  count_attempt(out, t);
  raw(out, " WHERE ");
  col(out, &t->id);
  raw(out, " = ");
  param(out, TABQ_P_ID);
  return finish(b, out, "stamp");
}

/* The lists each database opens, for every refusal of a level or mode. */
#define OPENED_LEVELS                                                                              \
  "PostgreSQL opens read committed, repeatable read and serializable; MySQL/MariaDB open "         \
  "read uncommitted, read committed, repeatable read and serializable; SQLite opens the modes "    \
  "deferred, immediate and exclusive (.mode)"

/* ---- Server versions ---------------------------------------------------------------------- */

/* `text` names MariaDB, in any case ("10.11.19-MariaDB-0+deb12u1"). */
static bool names_mariadb(const char *text) {
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
  bool maria = names_mariadb(text);
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
  if (b->form == TABQ_FORM_ROWLOCK && fifo(t) && t->isolation == TABQ_ISOLATION_SERIALIZABLE)
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
  table(out, name);
  return out->status;
}

static int insert(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  const struct {
    const tabq_col *col;
    tabq_param id;
  } roles[] = {
      {&t->id, TABQ_P_ID},
      {&t->group, TABQ_P_GROUP},
      {&t->priority, TABQ_P_PRIORITY},
      {&t->partition_key, TABQ_P_PARTITION_KEY},
      {&t->retry_after, TABQ_P_RETRY_AT},
      {&t->attempt, TABQ_P_ATTEMPT},
      {&t->headers, TABQ_P_HEADERS},
      {&t->payload, TABQ_P_PAYLOAD},
  };
  const size_t nroles = sizeof roles / sizeof roles[0];
  raw(out, "INSERT INTO ");
  table(out, t->name);
  /* Two passes over the same columns: their names, then their placeholders in that order. An
   * empty list is MySQL's "() VALUES ()", a row of defaults. */
  for (int pass = 0; pass < 2; pass++) {
    bool first = true;
    raw(out, pass == 0 ? " (" : " VALUES (");
    for (size_t i = 0; i < nroles + t->ndata; i++) {
      const tabq_col *c = i < nroles ? roles[i].col : &t->data[i - nroles];
      if (!c->name || c->generated)
        continue;
      sep(out, &first);
      if (pass == 0)
        col(out, c);
      else
        param(out, i < nroles ? roles[i].id : (tabq_param)(TABQ_P_DATA + (i - nroles)));
    }
    raw(out, ")");
  }
  return finish(b, out, "insert");
}

/* ack and discard: the row is finished. */
static int finished(const tabq_build *b, tabq_stmt *out, const char *what) {
  const tabq_table *t = b->table;
  if (t->processed_at.name) {
    raw(out, "UPDATE ");
    table(out, t->name);
    raw(out, " SET ");
    col(out, &t->processed_at);
    raw(out, " = ");
    now(out, t);
    if (leased(b)) {
      raw(out, ", ");
      col(out, &t->locked_until);
      raw(out, " = NULL");
    }
  } else {
    raw(out, "DELETE FROM ");
    table(out, t->name);
  }
  where_row(b, out);
  return finish(b, out, what);
}

static int ack(const tabq_build *b, tabq_stmt *out) {
  return finished(b, out, "ack");
}

static int discard(const tabq_build *b, tabq_stmt *out) {
  return finished(b, out, "discard");
}

/* retry and retry_after: back to the queue, at once or at RETRY_AT. The attempt was counted at
 * the claim, so nothing here touches it. Outside the lease form a retry at once changes no
 * column: the row lock claim's commit, or the advisory key's release, returns the row. */
static int requeue(const tabq_build *b, tabq_stmt *out, bool delayed, const char *what) {
  const tabq_table *t = b->table;
  bool set_time = delayed && t->retry_after.name;
  const char *returns = b->form == TABQ_FORM_ADVISORY ? "releasing the key returns the row"
                                                      : "the claim's commit returns the row";
  if (!leased(b) && !delayed)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: outside the lease form a retry runs no statement on "
                        "MySQL/MariaDB (%s)",
                        t->name, returns);
  if (!leased(b) && !set_time)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: without a retry_after column a delayed retry is a plain retry, "
                        "which outside the lease form runs no statement (%s)",
                        t->name, returns);
  bool first = true;
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  if (leased(b)) {
    sep(out, &first);
    col(out, &t->locked_until);
    raw(out, " = NULL");
  }
  if (set_time) {
    sep(out, &first);
    col(out, &t->retry_after);
    raw(out, " = ");
    param(out, TABQ_P_RETRY_AT);
  }
  where_row(b, out);
  return finish(b, out, what);
}

static int retry(const tabq_build *b, tabq_stmt *out) {
  return requeue(b, out, false, "retry");
}

static int retry_after(const tabq_build *b, tabq_stmt *out) {
  return requeue(b, out, true, "retry_after");
}

static int dead_letter_group(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->group.name)
    return host()->fail(TABQ_DECLARATION, NULL, 0,
                        "table %s: a dead letter into a group needs a group column", t->name);
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->group);
  raw(out, " = ");
  param(out, TABQ_P_DEST);
  if (leased(b)) {
    raw(out, ", ");
    col(out, &t->locked_until);
    raw(out, " = NULL");
  }
  where_row(b, out);
  return finish(b, out, "dead_letter");
}

/* The columns a dead letter copies: every role but the lease (it means nothing in the other
 * table), then the data columns, generated ones too since their values are copied. */
static void copied_columns(tabq_stmt *st, const tabq_table *t) {
  const tabq_col *roles[] = {&t->id,          &t->group,   &t->priority,     &t->partition_key,
                             &t->retry_after, &t->attempt, &t->processed_at, &t->headers,
                             &t->payload};
  bool first = true;
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (roles[i]->name) {
      sep(st, &first);
      col(st, roles[i]);
    }
  for (size_t i = 0; i < t->ndata; i++) {
    sep(st, &first);
    col(st, &t->data[i]);
  }
}

/* A copy then a delete; the core runs both in one transaction. */
static int dead_letter_table(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove) {
  const tabq_table *t = b->table;
  if (!b->dead_letter_table)
    return host()->fail(TABQ_INVALID, NULL, 0, "table %s: no dead-letter table named", t->name);
  raw(copy, "INSERT INTO ");
  table(copy, b->dead_letter_table);
  raw(copy, " (");
  copied_columns(copy, t);
  raw(copy, ") SELECT ");
  copied_columns(copy, t);
  raw(copy, " FROM ");
  table(copy, t->name);
  where_row(b, copy);
  int code = finish(b, copy, "dead_letter copy");
  if (code != TABQ_OK)
    return code;
  raw(remove, "DELETE FROM ");
  table(remove, t->name);
  where_row(b, remove);
  return finish(b, remove, "dead_letter delete");
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
  raw(out, "SET TRANSACTION ISOLATION LEVEL ");
  raw(out, levels[level]);
  raw(out, "; START TRANSACTION");
  return finish(b, out, "begin");
}

/* Locks the group's unfinished rows until the claim's transaction ends, so one claim of a group
 * runs at a time across every process. The count is never 0: a group held elsewhere makes the
 * guard wait for that transaction rather than answer no. */
/* The group's unfinished rows, for the FIFO guard; `locking` adds FOR UPDATE SKIP LOCKED. */
static void unfinished_rows(const tabq_build *b, tabq_stmt *out, bool locking) {
  const tabq_table *t = b->table;
  raw(out, "SELECT COUNT(*) FROM (SELECT ");
  col(out, &t->id);
  raw(out, " FROM ");
  table(out, t->name);
  raw(out, " WHERE ");
  col(out, &t->group);
  raw(out, " = ");
  param(out, TABQ_P_GROUP);
  if (t->processed_at.name) {
    raw(out, " AND ");
    col(out, &t->processed_at);
    raw(out, " IS NULL");
  }
  raw(out, locking ? " FOR UPDATE SKIP LOCKED) g" : ") g");
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
  raw(out, "SELECT (");
  unfinished_rows(b, out, false);
  raw(out, ") = (");
  unfinished_rows(b, out, true);
  raw(out, ")");
  return finish(b, out, "fifo_guard");
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
};

/* ---- RowLock ------------------------------------------------------------------------------ */

/* Locks the rows for the claim's transaction, held while their handlers run. */
static int rowlock_claim(const tabq_build *b, tabq_stmt *out) {
  select_projection(out, b->table);
  claimed_rows(b, out);
  return finish(b, out, "claim");
}

const tabq_rowlock_v1 tabq_my_rowlock = {
    .size = sizeof(tabq_rowlock_v1),
    .version = 1,
    .flags = 0, /* SKIP LOCKED keeps parallel claims apart */
    .claim = rowlock_claim,
    .stamp = stamp_attempt,
};

/* ---- Lease -------------------------------------------------------------------------------- */

static int no_lease(const tabq_build *b, const char *what) {
  return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: a lease %s needs locked_until",
                      b->table->name, what);
}

/* Selects and locks the claimable rows (lease ended, due); the stamp then writes each lease. */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  if (!leased(b))
    return no_lease(b, "claim");
  select_projection(out, b->table);
  claimed_rows(b, out);
  return finish(b, out, "claim");
}

/* Writes one claimed row's lease and counts its attempt, in the claim's transaction. */
static int lease_stamp(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!leased(b))
    return no_lease(b, "stamp");
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->locked_until);
  raw(out, " = ");
  param(out, TABQ_P_LEASE_UNTIL);
  if (t->attempt.name) {
    raw(out, ", ");
    count_attempt(out, t);
  }
  raw(out, " WHERE ");
  col(out, &t->id);
  raw(out, " = ");
  param(out, TABQ_P_ID);
  return finish(b, out, "stamp");
}

static int lease_extend(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!leased(b))
    return no_lease(b, "extend");
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->locked_until);
  raw(out, " = ");
  param(out, TABQ_P_LEASE_UNTIL);
  where_row(b, out);
  return finish(b, out, "extend");
}

static int lease_release(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!leased(b))
    return no_lease(b, "release");
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->locked_until);
  raw(out, " = NULL");
  where_row(b, out);
  return finish(b, out, "release");
}

const tabq_lease_v1 tabq_my_lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    /* One claim at a time per process, and whole-second expiries: a DATETIME without
     * fractions then holds the token exactly. */
    .flags = TABQ_CLAIM_SERIAL | TABQ_LEASE_WHOLE_SECONDS,
    .claim = lease_claim,
    .stamp = lease_stamp,
    .extend = lease_extend,
    .release = lease_release,
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

/* The key template ("acct-{account}") after the lock name's prefix: the literal parts as string
 * literals, each {column} as the column's text, as arguments of the CONCAT the caller opened.
 * A NULL column reads as empty text, so the name itself is never NULL. */
static int key_parts(const tabq_build *b, tabq_stmt *st) {
  const tabq_table *t = b->table;
  const char *p = t->advisory_lock;
  if (!p || !*p)
    return host()->fail(TABQ_DECLARATION, NULL, 0, "table %s: the advisory_lock template is empty",
                        t->name);
  while (*p) {
    raw(st, ", ");
    if (*p != '{') {
      size_t n = strcspn(p, "{");
      literal(st, p, n);
      p += n;
      continue;
    }
    const char *end = strchr(p, '}');
    if (!end || end == p + 1)
      return host()->fail(TABQ_DECLARATION, NULL, 0,
                          "table %s: unclosed or empty placeholder in advisory_lock template '%s'",
                          t->name, t->advisory_lock);
    raw(st, "COALESCE(CAST(`");
    for (const char *c = p + 1; c < end; c++) {
      tabq_sql_append(st, c, 1);
      if (*c == '`')
        tabq_sql_append(st, c, 1);
    }
    raw(st, "` AS CHAR), '')");
    p = end + 1;
  }
  return TABQ_OK;
}

/* "CONCAT('<db>.', <key parts>)": the lock name before hashing. */
static int full_name(const tabq_build *b, tabq_stmt *st, const char *db, size_t n) {
  raw(st, "CONCAT('");
  literal_text(st, db, n);
  raw(st, ".'");
  int code = key_parts(b, st);
  raw(st, ")");
  return code;
}

/* The GET_LOCK name of a row: the full name, or its SHA-256 hex when it is too long. */
static int lock_name(const tabq_build *b, tabq_stmt *st) {
  char small[256], *db = NULL;
  size_t n = 0;
  int code = lock_database(b, small, sizeof small, &db, &n);
  if (code != TABQ_OK)
    return code;
  raw(st, "IF(CHAR_LENGTH(");
  code = full_name(b, st, db, n);
  if (code == TABQ_OK) {
    tabq_sql_printf(st, ") > %d, SHA2(", MY_LOCK_NAME_MAX);
    full_name(b, st, db, n);
    raw(st, ", 256), ");
    full_name(b, st, db, n);
    raw(st, ")");
  }
  if (db != small)
    free(db);
  return code;
}

/* Due rows in claim order with their lock names; nothing is locked yet. */
static int advisory_candidates(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  raw(out, "SELECT ");
  col(out, &t->id);
  raw(out, ", ");
  int code = lock_name(b, out);
  if (code != TABQ_OK)
    return code;
  raw(out, " FROM ");
  table(out, t->name);
  due(b, out, " WHERE ");
  claim_order(out, t);
  raw(out, " LIMIT ");
  param(out, TABQ_P_LIMIT);
  return finish(b, out, "candidates");
}

/* Session locks: they outlive transactions, so the delivery's connection keeps the row with
 * none open. A timeout of 0 answers at once: 1 taken, 0 held elsewhere. */
static int advisory_lock(const tabq_build *b, tabq_stmt *out) {
  raw(out, "SELECT GET_LOCK(");
  param(out, TABQ_P_KEY);
  raw(out, ", 0)");
  return finish(b, out, "lock");
}

/* 1 released, 0 held by another session, NULL not held at all. */
static int advisory_unlock(const tabq_build *b, tabq_stmt *out) {
  raw(out, "SELECT RELEASE_LOCK(");
  param(out, TABQ_P_KEY);
  raw(out, ")");
  return finish(b, out, "unlock");
}

/* The row once its key is held, while it is still due: a row settled between the candidates
 * and the lock comes back empty. It counts nothing: the stamp does, after it. */
static int advisory_take(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  select_projection(out, t);
  raw(out, " WHERE ");
  col(out, &t->id);
  raw(out, " = ");
  param(out, TABQ_P_ID);
  due(b, out, " AND ");
  return finish(b, out, "take");
}

/* Counts the attempt of a row the take returned (autocommit, on the key's connection). */
static int advisory_stamp(const tabq_build *b, tabq_stmt *out) {
  return stamp_attempt(b, out);
}

const tabq_advisory_v1 tabq_my_advisory = {
    .size = sizeof(tabq_advisory_v1),
    .version = 1,
    .flags = 0, /* the server keeps the session locks */
    .candidates = advisory_candidates,
    .lock = advisory_lock,
    .unlock = advisory_unlock,
    .take = advisory_take,
    .stamp = advisory_stamp,
};
