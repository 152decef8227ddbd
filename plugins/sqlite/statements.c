/* tabq — the SQLite dialect's statements: the shared ones and the lease form.
 *
 * Identifiers are quoted with ", placeholders are ?N (a repeated parameter reuses its number).
 * Times are fixed-width UTC text (sqltime.c), so every comparison below is a text comparison
 * that orders exactly as the times do. */
#include <tabq/sql.h>

#include "sqlite_plugin.h"

static const tabq_host *host(void) {
  return tabq_sqlite_host();
}

static void col(tabq_stmt *st, const tabq_col *c) {
  tabq_sql_quoted(st, c->name, '"', 0);
}
static void table(tabq_stmt *st, const char *name) {
  tabq_sql_quoted(st, name, '"', 1);
}
static void param(tabq_stmt *st, tabq_param id) {
  tabq_sql_param(st, id, TABQ_PH_QNUMBER);
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

/* Reports a failure while appending (out of memory, too many parameters). */
static int finish(const tabq_build *b, tabq_stmt *out, const char *what) {
  if (out->status == TABQ_OK)
    return TABQ_OK;
  return host()->fail(out->status, NULL, 0, "%s statement for table %s: %s", what, b->table->name,
                      out->status == TABQ_NOMEM ? "out of memory"
                                                : "more parameters than a statement holds");
}

/* Every settlement names the row, and in the lease form the token it holds too, so a late
 * settlement after another claim took the row changes nothing. */
static void where_row(const tabq_build *b, tabq_stmt *st) {
  const tabq_table *t = b->table;
  raw(st, " WHERE ");
  col(st, &t->id);
  raw(st, " = ");
  param(st, TABQ_P_ID);
  if (b->form == TABQ_FORM_LEASE && t->locked_until.name) {
    raw(st, " AND ");
    col(st, &t->locked_until);
    raw(st, " = ");
    param(st, TABQ_P_TOKEN);
  }
}

/* "(c IS NULL OR c <= ?NOW)": a lease ended, or a retry time reached. */
static void reached(tabq_stmt *st, const tabq_col *c) {
  raw(st, "(");
  col(st, c);
  raw(st, " IS NULL OR ");
  col(st, c);
  raw(st, " <= ");
  param(st, TABQ_P_NOW);
  raw(st, ")");
}

static void and_sep(tabq_stmt *st, bool *first) {
  if (!*first)
    raw(st, " AND ");
  *first = false;
}

/* The conditions of a due row, each where the table has the column. */
static void due(tabq_stmt *st, const tabq_table *t) {
  bool first = true;
  if (t->locked_until.name) {
    and_sep(st, &first);
    reached(st, &t->locked_until);
  }
  if (t->retry_after.name) {
    and_sep(st, &first);
    reached(st, &t->retry_after);
  }
  if (t->processed_at.name) {
    and_sep(st, &first);
    col(st, &t->processed_at);
    raw(st, " IS NULL");
  }
  if (t->group.name) {
    and_sep(st, &first);
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

/* ---- Dialect ------------------------------------------------------------------------------ */

static int check(const tabq_build *b) {
  const tabq_table *t = b->table;
  if (b->form == TABQ_FORM_ROWLOCK)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: SQLite has no FOR UPDATE SKIP LOCKED, so the sqlite dialect "
                        "serves the lease and advisory lock forms only; declare locked_until "
                        "(lease) or advisory_lock (advisory lock)",
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
    param(out, TABQ_P_NOW);
    if (t->locked_until.name) {
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

/* retry and retry_after: back to the queue, at once or at ?RETRY_AT. The attempt was counted at
 * the claim, so nothing here touches it. */
static int requeue(const tabq_build *b, tabq_stmt *out, bool delayed, const char *what) {
  const tabq_table *t = b->table;
  bool set_time = delayed && t->retry_after.name;
  if (!t->locked_until.name && !set_time)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the sqlite dialect builds %s only for a table with "
                        "locked_until%s",
                        t->name, what, delayed ? " or retry_after" : "");
  bool first = true;
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  if (t->locked_until.name) {
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
  if (t->locked_until.name) {
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
  switch (b->table->mode) {
  case TABQ_SQLITE_MODE_DEFAULT:
    raw(out, "BEGIN");
    break;
  case TABQ_SQLITE_DEFERRED:
    raw(out, "BEGIN DEFERRED");
    break;
  case TABQ_SQLITE_IMMEDIATE:
    raw(out, "BEGIN IMMEDIATE");
    break;
  case TABQ_SQLITE_EXCLUSIVE:
    raw(out, "BEGIN EXCLUSIVE");
    break;
  default:
    return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: unknown SQLite mode %d", b->table->name,
                        (int)b->table->mode);
  }
  return finish(b, out, "begin");
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
    .fetch = NULL,      /* no list binding: a custom claim needs a custom fetch */
    .fifo_guard = NULL, /* one writer at a time already keeps FIFO claims apart */
};

/* ---- Lease -------------------------------------------------------------------------------- */

static int no_lease(const tabq_build *b, const char *what) {
  return host()->fail(TABQ_DIALECT, NULL, 0, "table %s: a lease %s needs locked_until",
                      b->table->name, what);
}

/* One UPDATE .. RETURNING leases the rows, counts the attempt and returns the projection with
 * the attempt as stored after the count. SQLite takes the whole database for a writer, so no
 * other claim runs between the choice of rows and their update. */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->locked_until.name)
    return no_lease(b, "claim");
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->locked_until);
  raw(out, " = ");
  param(out, TABQ_P_LEASE_UNTIL);
  if (t->attempt.name) {
    raw(out, ", ");
    col(out, &t->attempt);
    raw(out, " = ");
    col(out, &t->attempt);
    raw(out, " + 1");
  }
  raw(out, " WHERE ");
  col(out, &t->id);
  if (t->fifo && t->group.name) {
    /* Only the group's head, its first unfinished row, and only while it is due: the rows
     * behind it wait while it is in work. */
    raw(out, " = (SELECT ");
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
    claim_order(out, t);
    raw(out, " LIMIT 1) AND ");
    reached(out, &t->locked_until);
    if (t->retry_after.name) {
      raw(out, " AND ");
      reached(out, &t->retry_after);
    }
  } else {
    raw(out, " IN (SELECT ");
    col(out, &t->id);
    raw(out, " FROM ");
    table(out, t->name);
    raw(out, " WHERE ");
    due(out, t);
    claim_order(out, t);
    raw(out, " LIMIT ");
    param(out, TABQ_P_LIMIT);
    raw(out, ")");
  }
  raw(out, " RETURNING ");
  bool first = true;
  tabq_sql_each_projected(out, t, projected, &first);
  return finish(b, out, "claim");
}

static int lease_extend(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->locked_until.name)
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
  if (!t->locked_until.name)
    return no_lease(b, "release");
  raw(out, "UPDATE ");
  table(out, t->name);
  raw(out, " SET ");
  col(out, &t->locked_until);
  raw(out, " = NULL");
  where_row(b, out);
  return finish(b, out, "release");
}

const tabq_lease_v1 tabq_sqlite_lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    .flags = TABQ_CLAIM_SERIAL, /* one writer at a time: concurrent claims would only queue */
    .claim = lease_claim,
    .stamp = NULL,
    .extend = lease_extend,
    .release = lease_release,
};
