/* tabq — the PostgreSQL dialect's statements: the shared ones and the row lock, lease and
 * advisory lock forms.
 *
 * Identifiers are quoted with ", placeholders are $n (a repeated parameter reuses its number).
 * Row lock and lease claims skip rows other claims hold (FOR UPDATE SKIP LOCKED, 9.5); advisory
 * keys and FIFO guards lock 64-bit hashes (hashtextextended, 11). */
#include <stdio.h>
#include <string.h>

#include <tabq/sql.h>

#include "postgres_plugin.h"

/* PostgreSQL cuts identifiers, channel names among them, at NAMEDATALEN - 1 bytes. */
#define PG_IDENTIFIER_MAX 63

static const tabq_host *host(void) {
  return tabq_pg_host();
}

static void col(tabq_stmt *st, const tabq_col *c) {
  tabq_sql_quoted(st, c->name, '"', 0);
}
static void table(tabq_stmt *st, const char *name) {
  tabq_sql_quoted(st, name, '"', 1);
}
static void param(tabq_stmt *st, tabq_param id) {
  tabq_sql_param(st, id, TABQ_PH_DOLLAR);
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

/* `n` bytes of `text` as a string literal. A backslash makes it an E'' literal with the
 * backslash doubled, which reads the same whatever standard_conforming_strings says. */
static void literal(tabq_stmt *st, const char *text, size_t n) {
  bool escaped = memchr(text, '\\', n) != NULL;
  raw(st, escaped ? "E'" : "'");
  for (size_t i = 0; i < n; i++) {
    tabq_sql_append(st, text + i, 1);
    if (text[i] == '\'' || (escaped && text[i] == '\\'))
      tabq_sql_append(st, text + i, 1);
  }
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

/* "Now": the host's time bound once per statement, or the database's clock. The time of the
 * statement, not of its transaction: a row lock settlement runs in the claim's transaction,
 * which may have begun long before. */
static void now(tabq_stmt *st, const tabq_table *t) {
  if (t->clock == TABQ_CLOCK_DATABASE)
    raw(st, "statement_timestamp()");
  else
    param(st, TABQ_P_NOW);
}

/* Every settlement names the row, and in the lease form the token it holds too, so a late
 * settlement after another claim took the row changes nothing. */
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

static void projected(tabq_stmt *st, const tabq_col *c, int is_attempt, void *first) {
  (void)is_attempt;
  sep(st, first);
  col(st, c);
}

static void projection(tabq_stmt *st, const tabq_table *t) {
  bool first = true;
  tabq_sql_each_projected(st, t, projected, &first);
}

static void count_attempt(tabq_stmt *st, const tabq_table *t) {
  col(st, &t->attempt);
  raw(st, " = ");
  col(st, &t->attempt);
  raw(st, " + 1");
}

/* The rows a claim takes, from " WHERE" on: with FIFO groups only the group's head, its first
 * unfinished row, and only while it is due (the rows behind wait while it is in work); else
 * the first due rows, skipping those other claims hold. `subquery` picks the rows' ids for an
 * UPDATE; otherwise the claim is a SELECT of the rows themselves, locked as it reads them. */
static void claimed_rows(const tabq_build *b, tabq_stmt *st, bool subquery) {
  const tabq_table *t = b->table;
  if (fifo(t)) {
    raw(st, " WHERE ");
    col(st, &t->id);
    raw(st, " = (SELECT ");
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
    raw(st, " LIMIT 1)");
    due(b, st, " AND ");
    /* No SKIP LOCKED: a head held elsewhere must stop the claim, not pass it to the next row.
     * The FIFO guard already keeps other claims of the group away. */
    if (!subquery)
      raw(st, " FOR UPDATE");
    return;
  }
  if (subquery) {
    raw(st, " WHERE ");
    col(st, &t->id);
    raw(st, " IN (SELECT ");
    col(st, &t->id);
    raw(st, " FROM ");
    table(st, t->name);
  }
  due(b, st, " WHERE ");
  claim_order(st, t);
  raw(st, " LIMIT ");
  param(st, TABQ_P_LIMIT);
  raw(st, " FOR UPDATE SKIP LOCKED");
  if (subquery)
    raw(st, ")");
}

/* A SELECT of the projection (no attempt to count): "SELECT cols FROM T". */
static void select_projection(tabq_stmt *st, const tabq_table *t) {
  raw(st, "SELECT ");
  projection(st, t);
  raw(st, " FROM ");
  table(st, t->name);
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
  if ((b->form == TABQ_FORM_ADVISORY || fifo(t)) && b->server_version < TABQ_PG_HASH_FLOOR)
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
  /* Two passes over the same columns: their names, then their placeholders in that order. */
  for (int pass = 0; pass < 2; pass++) {
    bool first = true;
    for (size_t i = 0; i < nroles + t->ndata; i++) {
      const tabq_col *c = i < nroles ? roles[i].col : &t->data[i - nroles];
      if (!c->name || c->generated)
        continue;
      if (first)
        raw(out, pass == 0 ? " (" : " VALUES (");
      sep(out, &first);
      if (pass == 0)
        col(out, c);
      else
        param(out, i < nroles ? roles[i].id : (tabq_param)(TABQ_P_DATA + (i - nroles)));
    }
    if (first) {
      raw(out, " DEFAULT VALUES");
      break;
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

/* retry and retry_after: back to the queue, at once or at $RETRY_AT. The attempt was counted at
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
                        "PostgreSQL (%s)",
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

static int begin(const tabq_build *b, tabq_stmt *out) {
  switch (b->table->isolation) {
  case TABQ_ISOLATION_DEFAULT:
    raw(out, "BEGIN");
    break;
  case TABQ_ISOLATION_READ_COMMITTED:
    raw(out, "BEGIN ISOLATION LEVEL READ COMMITTED");
    break;
  case TABQ_ISOLATION_REPEATABLE_READ:
    raw(out, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    break;
  case TABQ_ISOLATION_SERIALIZABLE:
    raw(out, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    break;
  default: /* check refused it already, with the full story */
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: PostgreSQL does not open isolation level %d", b->table->name,
                        (int)b->table->isolation);
  }
  return finish(b, out, "begin");
}

/* Rows by a list of ids, in claim order: the fetch after a custom claim. */
static int fetch(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  select_projection(out, t);
  raw(out, " WHERE ");
  col(out, &t->id);
  raw(out, " = ANY(");
  param(out, TABQ_P_IDS);
  raw(out, ")");
  claim_order(out, t);
  return finish(b, out, "fetch");
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
  raw(out, "SELECT pg_try_advisory_xact_lock(hashtextextended(");
  literal(out, prefix, (size_t)n);
  raw(out, " || ");
  param(out, TABQ_P_GROUP);
  raw(out, ", 0))");
  return finish(b, out, "fifo_guard");
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
  raw(out, t->name);
  return finish(b, out, "channel");
}

static int notify(const tabq_build *b, tabq_stmt *out) {
  raw(out, "SELECT pg_notify(");
  param(out, TABQ_P_CHANNEL);
  raw(out, ", ");
  param(out, TABQ_P_GROUP);
  raw(out, ")");
  return finish(b, out, "notify");
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
};

/* ---- RowLock ------------------------------------------------------------------------------ */

/* Closes a claim's "WITH claimed AS (UPDATE ..." : UPDATE .. RETURNING gives rows in the order it
 * met them, so the outer SELECT puts them back in claim order (a batch handler sees them so). */
static void in_claim_order(tabq_stmt *out, const tabq_table *t) {
  raw(out, " RETURNING *) SELECT ");
  projection(out, t);
  raw(out, " FROM claimed");
  claim_order(out, t);
}

/* The rows stay locked by the claim's transaction while their handlers run. With an attempt
 * column one UPDATE counts it and returns the rows; without one a SELECT locks them. */
static int rowlock_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name) {
    select_projection(out, t);
    claimed_rows(b, out, false);
    return finish(b, out, "claim");
  }
  raw(out, "WITH claimed AS (UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  count_attempt(out, t);
  claimed_rows(b, out, true);
  in_claim_order(out, t);
  return finish(b, out, "claim");
}

const tabq_rowlock_v1 tabq_pg_rowlock = {
    .size = sizeof(tabq_rowlock_v1),
    .version = 1,
    .flags = 0, /* SKIP LOCKED keeps parallel claims apart */
    .claim = rowlock_claim,
};

/* ---- Lease -------------------------------------------------------------------------------- */

static int no_lease(const tabq_build *b, const char *what) {
  return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: a lease %s needs locked_until",
                      b->table->name, what);
}

/* One statement locks the claimable rows, writes their lease, counts the attempt and returns
 * the projection with the attempt as stored after the count. */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!leased(b))
    return no_lease(b, "claim");
  raw(out, "WITH claimed AS (UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->locked_until);
  raw(out, " = ");
  param(out, TABQ_P_LEASE_UNTIL);
  if (t->attempt.name) {
    raw(out, ", ");
    count_attempt(out, t);
  }
  claimed_rows(b, out, true);
  in_claim_order(out, t);
  return finish(b, out, "claim");
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

const tabq_lease_v1 tabq_pg_lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    .flags = 0, /* SKIP LOCKED keeps parallel claims apart */
    .claim = lease_claim,
    .stamp = NULL, /* the claim writes the lease itself */
    .extend = lease_extend,
    .release = lease_release,
};

/* ---- Advisory ----------------------------------------------------------------------------- */

/* The key template ("jobs-{id}") as a text expression: the literal parts as string literals,
 * each {column} as the column's text, joined with ||. A NULL column reads as empty text, so
 * the key itself is never NULL. */
static int key_expr(const tabq_build *b, tabq_stmt *st) {
  const tabq_table *t = b->table;
  const char *p = t->advisory_lock;
  if (!p || !*p)
    return host()->fail(TABQ_DECLARATION, NULL, 0, "table %s: the advisory_lock template is empty",
                        t->name);
  bool first = true;
  while (*p) {
    if (!first)
      raw(st, " || ");
    first = false;
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
    raw(st, "coalesce(\"");
    for (const char *c = p + 1; c < end; c++) {
      tabq_sql_append(st, c, 1);
      if (*c == '"')
        tabq_sql_append(st, c, 1);
    }
    raw(st, "\"::text, '')");
    p = end + 1;
  }
  return TABQ_OK;
}

/* Due rows in claim order with their keys; nothing is locked yet. */
static int advisory_candidates(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  raw(out, "SELECT ");
  col(out, &t->id);
  raw(out, ", ");
  int code = key_expr(b, out);
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

/* Session locks on the key's 64-bit hash: they outlive transactions, so the delivery's
 * connection keeps the row with none open. */
static int advisory_lock(const tabq_build *b, tabq_stmt *out) {
  raw(out, "SELECT pg_try_advisory_lock(hashtextextended(");
  param(out, TABQ_P_KEY);
  raw(out, ", 0))");
  return finish(b, out, "lock");
}

static int advisory_unlock(const tabq_build *b, tabq_stmt *out) {
  raw(out, "SELECT pg_advisory_unlock(hashtextextended(");
  param(out, TABQ_P_KEY);
  raw(out, ", 0))");
  return finish(b, out, "unlock");
}

/* The row once its key is held, while it is still due: a row settled between the candidates
 * and the lock comes back empty. */
static int advisory_take(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (t->attempt.name) {
    raw(out, "UPDATE ");
    table(out, t->name);
    raw(out, " SET ");
    count_attempt(out, t);
  } else {
    select_projection(out, t);
  }
  raw(out, " WHERE ");
  col(out, &t->id);
  raw(out, " = ");
  param(out, TABQ_P_ID);
  due(b, out, " AND ");
  if (t->attempt.name) {
    raw(out, " RETURNING ");
    projection(out, t);
  }
  return finish(b, out, "take");
}

const tabq_advisory_v1 tabq_pg_advisory = {
    .size = sizeof(tabq_advisory_v1),
    .version = 1,
    .flags = 0, /* the server keeps the session locks */
    .candidates = advisory_candidates,
    .lock = advisory_lock,
    .unlock = advisory_unlock,
    .take = advisory_take,
};
