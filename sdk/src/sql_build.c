/* tabq — the statements dialects share: see tabq/sql_build.h for what each one writes. */
#include <string.h>

#include <tabq/sys/sql_build.h>

/* ---- Refusals ----------------------------------------------------------------------------- */

int tabq_sqlb_finish(const tabq_sql_style *s, const tabq_build *b, const tabq_stmt *out,
                     const char *what) {
  if (out->status == TABQ_OK)
    return TABQ_OK;
  return s->host()->fail(
      out->status, NULL, 0, "%s statement for table %s: %s", what, b->table->name,
      out->status == TABQ_NOMEM ? "out of memory" : "more parameters than a statement holds");
}

int tabq_sqlb_no_lease(const tabq_sql_style *s, const tabq_build *b, const char *what) {
  return s->host()->fail(TABQ_DIALECT, NULL, 0, "table %s: a lease %s needs locked_until",
                         b->table->name, what);
}

/* ---- Pieces ------------------------------------------------------------------------------- */

bool tabq_sqlb_leased(const tabq_build *b) {
  return b->form == TABQ_FORM_LEASE && b->table->locked_until.name;
}

bool tabq_sqlb_fifo(const tabq_table *t) {
  return t->fifo && t->group.name;
}

void tabq_sqlb_col(const tabq_sql_style *s, tabq_stmt *st, const tabq_col *c) {
  tabq_sql_quoted(st, c->name, s->quote, 0);
}

void tabq_sqlb_name(const tabq_sql_style *s, tabq_stmt *st, const char *name, size_t n) {
  tabq_sql_append(st, &s->quote, 1);
  for (size_t i = 0; i < n; i++) {
    tabq_sql_append(st, name + i, 1);
    if (name[i] == s->quote)
      tabq_sql_append(st, &s->quote, 1);
  }
  tabq_sql_append(st, &s->quote, 1);
}

void tabq_sqlb_table(const tabq_sql_style *s, tabq_stmt *st, const char *name) {
  tabq_sql_quoted(st, name, s->quote, 1);
}

void tabq_sqlb_param(const tabq_sql_style *s, tabq_stmt *st, tabq_param id) {
  tabq_sql_param(st, id, s->placeholder);
}

void tabq_sqlb_param_row(const tabq_sql_style *s, tabq_stmt *st, tabq_param id, unsigned row) {
  tabq_sql_param_row(st, id, s->placeholder, row);
}

void tabq_sqlb_now(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  if (t->clock == TABQ_CLOCK_DATABASE && s->db_now)
    tabq_sql_raw(st, s->db_now);
  else
    tabq_sqlb_param(s, st, TABQ_P_NOW);
}

void tabq_sqlb_sep(tabq_stmt *st, bool *first) {
  if (!*first)
    tabq_sql_raw(st, ", ");
  *first = false;
}

void tabq_sqlb_and(tabq_stmt *st, bool *first, const char *lead) {
  tabq_sql_raw(st, *first ? lead : " AND ");
  *first = false;
}

void tabq_sqlb_update(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  tabq_sql_raw(st, "UPDATE ");
  tabq_sqlb_table(s, st, t->name);
  tabq_sql_raw(st, " SET ");
}

/* "c = " and then the caller's value. */
static void assign(const tabq_sql_style *s, tabq_stmt *st, const tabq_col *c) {
  tabq_sqlb_col(s, st, c);
  tabq_sql_raw(st, " = ");
}

void tabq_sqlb_count_attempt(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  assign(s, st, &t->attempt);
  tabq_sqlb_col(s, st, &t->attempt);
  tabq_sql_raw(st, " + 1");
}

void tabq_sqlb_set_lease(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  assign(s, st, &t->locked_until);
  tabq_sqlb_param(s, st, TABQ_P_LEASE_UNTIL);
  if (t->attempt.name) {
    tabq_sql_raw(st, ", ");
    tabq_sqlb_count_attempt(s, st, t);
  }
}

void tabq_sqlb_where_id(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  tabq_sql_raw(st, " WHERE ");
  assign(s, st, &t->id);
  tabq_sqlb_param(s, st, TABQ_P_ID);
}

void tabq_sqlb_where_row(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st) {
  const tabq_table *t = b->table;
  tabq_sqlb_where_id(s, st, t);
  if (tabq_sqlb_leased(b)) {
    tabq_sql_raw(st, " AND ");
    assign(s, st, &t->locked_until);
    tabq_sqlb_param(s, st, TABQ_P_TOKEN);
  }
}

void tabq_sqlb_reached(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                       const tabq_col *c) {
  tabq_sql_raw(st, "(");
  tabq_sqlb_col(s, st, c);
  tabq_sql_raw(st, " IS NULL OR ");
  tabq_sqlb_col(s, st, c);
  tabq_sql_raw(st, " <= ");
  tabq_sqlb_now(s, st, t);
  tabq_sql_raw(st, ")");
}

void tabq_sqlb_due(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st, const char *lead) {
  const tabq_table *t = b->table;
  bool first = true;
  if (tabq_sqlb_leased(b)) {
    tabq_sqlb_and(st, &first, lead);
    tabq_sqlb_reached(s, st, t, &t->locked_until);
  }
  if (t->retry_after.name) {
    tabq_sqlb_and(st, &first, lead);
    tabq_sqlb_reached(s, st, t, &t->retry_after);
  }
  if (t->processed_at.name) {
    tabq_sqlb_and(st, &first, lead);
    tabq_sqlb_col(s, st, &t->processed_at);
    tabq_sql_raw(st, " IS NULL");
  }
  if (t->group.name) {
    tabq_sqlb_and(st, &first, lead);
    assign(s, st, &t->group);
    tabq_sqlb_param(s, st, TABQ_P_GROUP);
  }
}

void tabq_sqlb_claim_order(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  tabq_sql_raw(st, " ORDER BY ");
  if (s->order_by_processed_at && t->processed_at.name) {
    tabq_sqlb_col(s, st, &t->processed_at);
    tabq_sql_raw(st, ", ");
  }
  if (t->priority.name) {
    tabq_sqlb_col(s, st, &t->priority);
    tabq_sql_raw(st, ", ");
  }
  if (t->retry_after.name) {
    tabq_sqlb_col(s, st, &t->retry_after);
    tabq_sql_raw(st, ", ");
  }
  tabq_sqlb_col(s, st, &t->id);
}

void tabq_sqlb_first_due(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st) {
  tabq_sqlb_due(s, b, st, " WHERE ");
  tabq_sqlb_claim_order(s, st, b->table);
  tabq_sql_raw(st, " LIMIT ");
  tabq_sqlb_param(s, st, TABQ_P_LIMIT);
}

void tabq_sqlb_group_rows(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  tabq_sql_raw(st, "SELECT ");
  tabq_sqlb_col(s, st, &t->id);
  tabq_sql_raw(st, " FROM ");
  tabq_sqlb_table(s, st, t->name);
  tabq_sql_raw(st, " WHERE ");
  assign(s, st, &t->group);
  tabq_sqlb_param(s, st, TABQ_P_GROUP);
  if (t->processed_at.name) {
    tabq_sql_raw(st, " AND ");
    tabq_sqlb_col(s, st, &t->processed_at);
    tabq_sql_raw(st, " IS NULL");
  }
}

void tabq_sqlb_group_head(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  tabq_sqlb_group_rows(s, st, t);
  tabq_sqlb_claim_order(s, st, t);
  tabq_sql_raw(st, " LIMIT 1");
}

typedef struct {
  const tabq_sql_style *s;
  bool first, plus_one;
} projecting;

static void projected(tabq_stmt *st, const tabq_col *c, int is_attempt, void *ctx) {
  projecting *p = ctx;
  tabq_sqlb_sep(st, &p->first);
  tabq_sqlb_col(p->s, st, c);
  if (is_attempt && p->plus_one)
    tabq_sql_raw(st, " + 1");
}

void tabq_sqlb_projection(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                          bool attempt_plus_one) {
  projecting p = {s, true, attempt_plus_one};
  tabq_sql_each_projected(st, t, projected, &p);
}

void tabq_sqlb_select_projection(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                                 bool attempt_plus_one) {
  tabq_sql_raw(st, "SELECT ");
  tabq_sqlb_projection(s, st, t, attempt_plus_one);
  tabq_sql_raw(st, " FROM ");
  tabq_sqlb_table(s, st, t->name);
}

bool tabq_sqlb_projects_due(const tabq_build *b) {
  return b->project_due && b->table->retry_after.name;
}

void tabq_sqlb_projection_for(const tabq_sql_style *s, tabq_stmt *st, const tabq_build *b,
                              bool attempt_plus_one) {
  tabq_sqlb_projection(s, st, b->table, attempt_plus_one);
  if (tabq_sqlb_projects_due(b)) {
    tabq_sql_raw(st, ", ");
    tabq_sqlb_col(s, st, &b->table->retry_after);
  }
}

void tabq_sqlb_select_projection_for(const tabq_sql_style *s, tabq_stmt *st, const tabq_build *b,
                                     bool attempt_plus_one) {
  tabq_sql_raw(st, "SELECT ");
  tabq_sqlb_projection_for(s, st, b, attempt_plus_one);
  tabq_sql_raw(st, " FROM ");
  tabq_sqlb_table(s, st, b->table->name);
}

int tabq_sqlb_key_template(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st,
                           tabq_sqlb_key_part_fn part, void *ctx) {
  const tabq_table *t = b->table;
  const char *p = t->advisory_lock;
  if (!p || !*p)
    return s->host()->fail(TABQ_DECLARATION, NULL, 0,
                           "table %s: the advisory_lock template is empty", t->name);
  for (unsigned index = 0; *p; index++) {
    if (*p != '{') {
      size_t n = strcspn(p, "{");
      part(st, p, n, false, index, ctx);
      p += n;
      continue;
    }
    const char *end = strchr(p, '}');
    if (!end || end == p + 1)
      return s->host()->fail(
          TABQ_DECLARATION, NULL, 0,
          "table %s: unclosed or empty placeholder in advisory_lock template '%s'", t->name,
          t->advisory_lock);
    part(st, p + 1, (size_t)(end - p - 1), true, index, ctx);
    p = end + 1;
  }
  return TABQ_OK;
}

/* ---- Builders: tabq_dialect_v1 ------------------------------------------------------------ */

/* The role columns an insert may write. */
enum { INSERT_ROLES = 9 };

/* Column i of an insert, counting the roles then the data columns, and the parameter it binds;
 * NULL where the table has no such column or it is generated (the insert leaves it out). */
static const tabq_col *inserted(const tabq_table *t, size_t i, tabq_param *id) {
  const struct {
    const tabq_col *col;
    tabq_param id;
  } roles[INSERT_ROLES] = {
      {&t->id, TABQ_P_ID},
      {&t->group, TABQ_P_GROUP},
      {&t->priority, TABQ_P_PRIORITY},
      {&t->partition_key, TABQ_P_PARTITION_KEY},
      {&t->retry_after, TABQ_P_RETRY_AT},
      {&t->attempt, TABQ_P_ATTEMPT},
      {&t->headers, TABQ_P_HEADERS},
      {&t->payload, TABQ_P_PAYLOAD},
      {&t->unique_key, TABQ_P_UNIQUE_KEY},
  };
  const tabq_col *c = i < INSERT_ROLES ? roles[i].col : &t->data[i - INSERT_ROLES];
  *id = i < INSERT_ROLES ? roles[i].id : (tabq_param)(TABQ_P_DATA + (i - INSERT_ROLES));
  return c->name && !c->generated ? c : NULL;
}

static size_t insert_columns(const tabq_table *t) {
  return INSERT_ROLES + t->ndata;
}

static bool inserts_any(const tabq_table *t) {
  tabq_param id;
  for (size_t i = 0; i < insert_columns(t); i++)
    if (inserted(t, i, &id))
      return true;
  return false;
}

/* "INSERT INTO T (cols)", or "INSERT INTO T" and the empty insert's end without a column. */
static void insert_head(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  tabq_sql_raw(st, s->insert_ignore && t->unique_key.name ? "INSERT IGNORE INTO " : "INSERT INTO ");
  tabq_sqlb_table(s, st, t->name);
  if (!inserts_any(t)) {
    tabq_sql_raw(st, s->empty_insert ? s->empty_insert : " DEFAULT VALUES");
    return;
  }
  bool first = true;
  tabq_param id;
  tabq_sql_raw(st, " (");
  for (size_t i = 0; i < insert_columns(t); i++) {
    const tabq_col *c = inserted(t, i, &id);
    if (c) {
      tabq_sqlb_sep(st, &first);
      tabq_sqlb_col(s, st, c);
    }
  }
  tabq_sql_raw(st, ")");
}

/* Row `row`'s "(params)", in the order of the columns. */
static void insert_tuple(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t,
                         unsigned row) {
  bool first = true;
  tabq_param id;
  tabq_sql_raw(st, "(");
  for (size_t i = 0; i < insert_columns(t); i++)
    if (inserted(t, i, &id)) {
      tabq_sqlb_sep(st, &first);
      tabq_sqlb_param_row(s, st, id, row);
    }
  tabq_sql_raw(st, ")");
}

/* A key a row holds writes nothing and changes 0 rows: " ON CONFLICT (k)[ WHERE processed_at IS
 * NULL] DO NOTHING" (the predicate lets PostgreSQL and SQLite infer a partial unique index over
 * the unfinished rows, and any unique index of k satisfies it). MySQL writes "INSERT IGNORE"
 * instead (insert_head): its ON DUPLICATE KEY UPDATE counts a row left as it was as changed
 * when the connection counts found rows, as tabq's does. */
static void unique_conflict(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  if (s->insert_ignore)
    return;
  tabq_sql_raw(st, " ON CONFLICT (");
  tabq_sqlb_col(s, st, &t->unique_key);
  tabq_sql_raw(st, ")");
  if (t->processed_at.name) {
    tabq_sql_raw(st, " WHERE ");
    tabq_sqlb_col(s, st, &t->processed_at);
    tabq_sql_raw(st, " IS NULL");
  }
  tabq_sql_raw(st, " DO NOTHING");
}

int tabq_sqlb_insert(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  insert_head(s, out, t);
  if (inserts_any(t)) {
    tabq_sql_raw(out, " VALUES ");
    insert_tuple(s, out, t, 0);
  }
  if (t->unique_key.name)
    unique_conflict(s, out, t);
  return tabq_sqlb_finish(s, b, out, "insert");
}

int tabq_sqlb_find_unique(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->unique_key.name)
    return s->host()->fail(TABQ_DECLARATION, NULL, 0, "table %s has no unique_key column", t->name);
  tabq_sql_raw(out, "SELECT ");
  tabq_sqlb_col(s, out, &t->id);
  tabq_sql_raw(out, " FROM ");
  tabq_sqlb_table(s, out, t->name);
  tabq_sql_raw(out, " WHERE ");
  tabq_sqlb_col(s, out, &t->unique_key);
  tabq_sql_raw(out, " = ");
  tabq_sqlb_param(s, out, TABQ_P_UNIQUE_KEY);
  if (t->processed_at.name) {
    tabq_sql_raw(out, " ORDER BY CASE WHEN ");
    tabq_sqlb_col(s, out, &t->processed_at);
    tabq_sql_raw(out, " IS NULL THEN 0 ELSE 1 END");
  }
  tabq_sql_raw(out, " LIMIT 1");
  return tabq_sqlb_finish(s, b, out, "find_unique");
}

int tabq_sqlb_insert_rows(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (b->rows == 0)
    return s->host()->fail(TABQ_INVALID, NULL, 0, "table %s: insert_rows for 0 rows", t->name);
  /* "DEFAULT VALUES" writes one row: such a table's rows go one insert each; so do a unique key's,
   * whose conflicts are told row by row. */
  if (!inserts_any(t) || t->unique_key.name)
    return TABQ_OK;
  insert_head(s, out, t);
  tabq_sql_raw(out, " VALUES ");
  for (unsigned row = 0; row < b->rows && !out->status; row++) {
    if (row)
      tabq_sql_raw(out, ", ");
    insert_tuple(s, out, t, row);
  }
  return tabq_sqlb_finish(s, b, out, "insert_rows");
}

/* ", locked_until = NULL" when leased: a settled row holds no lease. */
static void clear_lease(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *st) {
  if (tabq_sqlb_leased(b)) {
    tabq_sql_raw(st, ", ");
    assign(s, st, &b->table->locked_until);
    tabq_sql_raw(st, "NULL");
  }
}

static void delete_from(const tabq_sql_style *s, tabq_stmt *st, const char *table) {
  tabq_sql_raw(st, "DELETE FROM ");
  tabq_sqlb_table(s, st, table);
}

static int finished(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                    const char *what) {
  const tabq_table *t = b->table;
  if (t->processed_at.name) {
    tabq_sqlb_update(s, out, t);
    assign(s, out, &t->processed_at);
    tabq_sqlb_now(s, out, t);
    clear_lease(s, b, out);
  } else {
    delete_from(s, out, t->name);
  }
  tabq_sqlb_where_row(s, b, out);
  return tabq_sqlb_finish(s, b, out, what);
}

int tabq_sqlb_ack(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  return finished(s, b, out, "ack");
}

int tabq_sqlb_discard(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  return finished(s, b, out, "discard");
}

int tabq_sqlb_ack_ids(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                      const char *list_open, const char *list_close) {
  const tabq_table *t = b->table;
  if (t->processed_at.name) {
    tabq_sqlb_update(s, out, t);
    assign(s, out, &t->processed_at);
    tabq_sqlb_now(s, out, t);
    clear_lease(s, b, out);
  } else {
    delete_from(s, out, t->name);
  }
  tabq_sql_raw(out, " WHERE ");
  tabq_sqlb_col(s, out, &t->id);
  tabq_sql_raw(out, list_open);
  tabq_sqlb_param(s, out, TABQ_P_IDS);
  tabq_sql_raw(out, list_close);
  if (tabq_sqlb_leased(b)) {
    tabq_sql_raw(out, " AND ");
    assign(s, out, &t->locked_until);
    tabq_sqlb_param(s, out, TABQ_P_TOKEN);
  }
  tabq_sql_raw(out, " RETURNING ");
  tabq_sqlb_col(s, out, &t->id);
  return tabq_sqlb_finish(s, b, out, "ack_ids");
}

static int requeue(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out, bool delayed,
                   const char *what) {
  const tabq_table *t = b->table;
  bool leased = tabq_sqlb_leased(b), set_time = delayed && t->retry_after.name;
  const char *returns = b->form == TABQ_FORM_ADVISORY ? "releasing the key returns the row"
                                                      : "the claim's commit returns the row";
  if (!leased && !delayed)
    return s->host()->fail(TABQ_DIALECT, NULL, 0,
                           "table %s: outside the lease form a retry runs no statement on %s (%s)",
                           t->name, s->product, returns);
  if (!leased && !set_time)
    return s->host()->fail(TABQ_DIALECT, NULL, 0,
                           "table %s: without a retry_after column a delayed retry is a plain "
                           "retry, which outside the lease form runs no statement (%s)",
                           t->name, returns);
  bool first = true;
  tabq_sqlb_update(s, out, t);
  if (leased) {
    tabq_sqlb_sep(out, &first);
    assign(s, out, &t->locked_until);
    tabq_sql_raw(out, "NULL");
  }
  if (set_time) {
    tabq_sqlb_sep(out, &first);
    assign(s, out, &t->retry_after);
    tabq_sqlb_param(s, out, TABQ_P_RETRY_AT);
  }
  tabq_sqlb_where_row(s, b, out);
  return tabq_sqlb_finish(s, b, out, what);
}

int tabq_sqlb_retry(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  return requeue(s, b, out, false, "retry");
}

int tabq_sqlb_retry_after(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  return requeue(s, b, out, true, "retry_after");
}

int tabq_sqlb_dead_letter_group(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->group.name)
    return s->host()->fail(TABQ_DECLARATION, NULL, 0,
                           "table %s: a dead letter into a group needs a group column", t->name);
  tabq_sqlb_update(s, out, t);
  assign(s, out, &t->group);
  tabq_sqlb_param(s, out, TABQ_P_DEST);
  clear_lease(s, b, out);
  tabq_sqlb_where_row(s, b, out);
  return tabq_sqlb_finish(s, b, out, "dead_letter");
}

/* Every role but the lease (it means nothing in the other table), then the data columns,
 * generated ones too since their values are copied. */
static void copied_columns(const tabq_sql_style *s, tabq_stmt *st, const tabq_table *t) {
  const tabq_col *roles[] = {&t->id,          &t->group,     &t->priority,     &t->partition_key,
                             &t->retry_after, &t->attempt,   &t->processed_at, &t->headers,
                             &t->payload,     &t->unique_key};
  bool first = true;
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (roles[i]->name) {
      tabq_sqlb_sep(st, &first);
      tabq_sqlb_col(s, st, roles[i]);
    }
  for (size_t i = 0; i < t->ndata; i++) {
    tabq_sqlb_sep(st, &first);
    tabq_sqlb_col(s, st, &t->data[i]);
  }
}

int tabq_sqlb_dead_letter_table(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *copy,
                                tabq_stmt *remove) {
  const tabq_table *t = b->table;
  if (!b->dead_letter_table)
    return s->host()->fail(TABQ_INVALID, NULL, 0, "table %s: no dead-letter table named", t->name);
  tabq_sql_raw(copy, "INSERT INTO ");
  tabq_sqlb_table(s, copy, b->dead_letter_table);
  tabq_sql_raw(copy, " (");
  copied_columns(s, copy, t);
  tabq_sql_raw(copy, ") SELECT ");
  copied_columns(s, copy, t);
  tabq_sql_raw(copy, " FROM ");
  tabq_sqlb_table(s, copy, t->name);
  tabq_sqlb_where_row(s, b, copy);
  int code = tabq_sqlb_finish(s, b, copy, "dead_letter copy");
  if (code != TABQ_OK)
    return code;
  delete_from(s, remove, t->name);
  tabq_sqlb_where_row(s, b, remove);
  return tabq_sqlb_finish(s, b, remove, "dead_letter delete");
}

int tabq_sqlb_savepoint(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *set,
                        tabq_stmt *back) {
  tabq_sql_raw(set, "SAVEPOINT tabq_handler");
  int code = tabq_sqlb_finish(s, b, set, "savepoint");
  if (code != TABQ_OK)
    return code;
  tabq_sql_raw(back, "ROLLBACK TO SAVEPOINT tabq_handler");
  return tabq_sqlb_finish(s, b, back, "rollback to savepoint");
}

/* ---- Builders: tabq_advisory_v1 ---------------------------------------------------------- */

int tabq_sqlb_candidates(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                         tabq_sqlb_key_fn key) {
  const tabq_table *t = b->table;
  tabq_sql_raw(out, "SELECT ");
  tabq_sqlb_col(s, out, &t->id);
  tabq_sql_raw(out, ", ");
  int code = key(b, out);
  if (code != TABQ_OK)
    return code;
  tabq_sql_raw(out, " FROM ");
  tabq_sqlb_table(s, out, t->name);
  tabq_sqlb_first_due(s, b, out);
  return tabq_sqlb_finish(s, b, out, "candidates");
}

/* ---- Builders: tabq_lease_v1 -------------------------------------------------------------- */

int tabq_sqlb_lease_extend(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(s, b, "extend");
  tabq_sqlb_update(s, out, t);
  assign(s, out, &t->locked_until);
  tabq_sqlb_param(s, out, TABQ_P_LEASE_UNTIL);
  tabq_sqlb_where_row(s, b, out);
  return tabq_sqlb_finish(s, b, out, "extend");
}

int tabq_sqlb_lease_release(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(s, b, "release");
  tabq_sqlb_update(s, out, t);
  assign(s, out, &t->locked_until);
  tabq_sql_raw(out, "NULL");
  tabq_sqlb_where_row(s, b, out);
  return tabq_sqlb_finish(s, b, out, "release");
}

int tabq_sqlb_count_attempt_row(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!t->attempt.name)
    return s->host()->fail(TABQ_DECLARATION, NULL, 0,
                           "table %s: counting an attempt needs a column that plays the attempt "
                           "role",
                           t->name);
  tabq_sqlb_update(s, out, t);
  tabq_sqlb_count_attempt(s, out, t);
  tabq_sqlb_where_id(s, out, t);
  return tabq_sqlb_finish(s, b, out, "count_attempt");
}

int tabq_sqlb_lease_one(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(s, b, "lease_one");
  tabq_sqlb_update(s, out, t);
  tabq_sqlb_set_lease(s, out, t);
  tabq_sqlb_where_id(s, out, t);
  tabq_sql_raw(out, " AND ");
  tabq_sqlb_reached(s, out, t, &t->locked_until);
  if (t->processed_at.name) {
    tabq_sql_raw(out, " AND ");
    tabq_sqlb_col(s, out, &t->processed_at);
    tabq_sql_raw(out, " IS NULL");
  }
  return tabq_sqlb_finish(s, b, out, "lease_one");
}

int tabq_sqlb_lease_stamp(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  if (!tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(s, b, "stamp");
  tabq_sqlb_update(s, out, t);
  tabq_sqlb_set_lease(s, out, t);
  tabq_sqlb_where_id(s, out, t);
  return tabq_sqlb_finish(s, b, out, "stamp");
}

int tabq_sqlb_stamp_ids(const tabq_sql_style *s, const tabq_build *b, tabq_stmt *out,
                        const char *list_open, const char *list_close) {
  const tabq_table *t = b->table;
  if (b->form == TABQ_FORM_LEASE && !tabq_sqlb_leased(b))
    return tabq_sqlb_no_lease(s, b, "stamp_ids");
  if (b->form != TABQ_FORM_LEASE && !t->attempt.name)
    return TABQ_OK; /* nothing to count: no statement */
  tabq_sqlb_update(s, out, t);
  if (b->form == TABQ_FORM_LEASE)
    tabq_sqlb_set_lease(s, out, t);
  else
    tabq_sqlb_count_attempt(s, out, t);
  tabq_sql_raw(out, " WHERE ");
  tabq_sqlb_col(s, out, &t->id);
  tabq_sql_raw(out, list_open);
  tabq_sqlb_param(s, out, TABQ_P_IDS);
  tabq_sql_raw(out, list_close);
  return tabq_sqlb_finish(s, b, out, "stamp_ids");
}

int tabq_sqlb_placeholder(const tabq_sql_style *s, tabq_stmt *out, tabq_param id) {
  tabq_sqlb_param(s, out, id);
  return out->status;
}
