/* tabq — a table's schema from its description (Dialect.schema, ABI 1.7): see tabq/sql_build.h
 * for what each part writes, and docs/schema.md for why. */
#include <string.h>

#include <tabq/sys/sql_build.h>

const char *tabq_sqlb_column_type(const tabq_sql_schema *k, int type) {
  switch (type) {
  case TABQ_T_INT:
    return k->integer;
  case TABQ_T_REAL:
    return k->real;
  case TABQ_T_TEXT:
    return k->text;
  case TABQ_T_BYTES:
    return k->bytes;
  case TABQ_T_TIME:
    return k->time;
  case TABQ_T_JSON:
    return k->json;
  default:
    return k->any;
  }
}

static const char *or_else(const char *type, const char *fallback) {
  return type ? type : fallback;
}

/* Whether the claims of a processed_at table walk an index that holds the unfinished rows
 * alone (partial), rather than one led by processed_at. */
static bool partial_claims(const tabq_sql_schema *k, const tabq_table *t) {
  return t->processed_at.name && k->partial_index;
}

static bool processed_leads(const tabq_sql_style *s, const tabq_sql_schema *k,
                            const tabq_table *t) {
  return t->processed_at.name && (s->order_by_processed_at || !k->partial_index);
}

bool tabq_sqlb_claim_key(const tabq_sql_style *s, const tabq_sql_schema *k, tabq_stmt *st,
                         const tabq_table *t) {
  const tabq_col *key[] = {&t->group, processed_leads(s, k, t) ? &t->processed_at : NULL,
                           &t->priority, &t->retry_after, &t->id};
  bool first = true;
  tabq_sql_raw(st, "(");
  for (size_t i = 0; i < sizeof key / sizeof key[0]; i++)
    if (key[i] && key[i]->name) {
      tabq_sqlb_sep(st, &first);
      tabq_sqlb_col(s, st, key[i]);
    }
  tabq_sql_raw(st, ")");
  return partial_claims(k, t);
}

/* The claim order is the id's alone, which the primary key gives, and every row is claimable
 * until it goes: no index of its own. */
static bool key_is_the_id(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_table *t) {
  return !t->group.name && !t->priority.name && !t->retry_after.name && !processed_leads(s, k, t) &&
         !partial_claims(k, t);
}

static int refuse(const tabq_sql_style *s, int code, const tabq_table *t, const char *rule) {
  return s->host()->fail(code, NULL, 0, "table %s: %s", t->name, rule);
}

/* What the description asks that no column of this database holds. */
static int check_types(const tabq_sql_style *s, const tabq_table *t) {
  int id = t->id.type, payload = t->payload.type;
  if (id != TABQ_T_NULL && id != TABQ_T_INT && id != TABQ_T_TEXT)
    return refuse(s, TABQ_DECLARATION, t,
                  "the id's type is TABQ_T_INT (the default) or TABQ_T_TEXT; the schema renders "
                  "no other");
  if (t->id.generated && id == TABQ_T_TEXT)
    return refuse(s, TABQ_DECLARATION, t,
                  "a generated id is an integer the database assigns; an id of TABQ_T_TEXT is "
                  "written by each publish (generated false)");
  if (t->payload.name && payload != TABQ_T_NULL && payload != TABQ_T_BYTES &&
      payload != TABQ_T_TEXT && payload != TABQ_T_JSON)
    return refuse(s, TABQ_DECLARATION, t,
                  "the payload's type is TABQ_T_BYTES (the default), TABQ_T_TEXT or TABQ_T_JSON");
  return TABQ_OK;
}

/* One column: its quoted name, then its type and constraints. */
static void column(const tabq_sql_style *s, tabq_stmt *st, bool *first, const tabq_col *c,
                   const char *type, const char *rest) {
  if (!c->name)
    return;
  tabq_sqlb_sep(st, first);
  tabq_sqlb_col(s, st, c);
  if (type) {
    tabq_sql_raw(st, " ");
    tabq_sql_raw(st, type);
  }
  if (rest)
    tabq_sql_raw(st, rest);
}

static void id_column(const tabq_sql_style *s, const tabq_sql_schema *k, tabq_stmt *st, bool *first,
                      const tabq_table *t, bool dead) {
  if (t->id.generated && !dead) {
    column(s, st, first, &t->id, k->auto_id, NULL);
    return;
  }
  const char *type = t->id.type == TABQ_T_TEXT ? or_else(k->key_text, k->text) : k->integer;
  column(s, st, first, &t->id, type, " PRIMARY KEY");
}

static const char *payload_type(const tabq_sql_schema *k, const tabq_table *t) {
  switch (t->payload.type) {
  case TABQ_T_TEXT:
    return or_else(k->large_text, k->text);
  case TABQ_T_JSON:
    return k->json;
  default:
    return k->bytes;
  }
}

/* "CREATE TABLE [IF NOT EXISTS] name (columns[, INDEX ...]) options". */
static void create_table(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_build *b,
                         const tabq_schema_spec *spec, tabq_stmt *st, const char *name, bool dead) {
  const tabq_table *t = b->table;
  bool first = true;
  tabq_sql_raw(st, "CREATE TABLE ");
  if (spec->flags & TABQ_SCHEMA_IF_NOT_EXISTS)
    tabq_sql_raw(st, "IF NOT EXISTS ");
  tabq_sqlb_table(s, st, name);
  tabq_sql_raw(st, " (");
  id_column(s, k, st, &first, t, dead);
  column(s, st, &first, &t->group, or_else(k->key_text, k->text), " NOT NULL");
  column(s, st, &first, &t->priority, k->counter, " NOT NULL DEFAULT 0");
  column(s, st, &first, &t->partition_key, k->text, NULL);
  column(s, st, &first, &t->retry_after, k->time, NULL);
  column(s, st, &first, &t->attempt, k->counter, " NOT NULL DEFAULT 1");
  column(s, st, &first, &t->processed_at, k->time, NULL);
  column(s, st, &first, &t->cancelled_at, k->time, NULL); /* the cancel's mark, nullable */
  column(s, st, &first, &t->locked_until, or_else(k->lease_time, k->time), NULL);
  column(s, st, &first, &t->headers, k->json, NULL);
  column(s, st, &first, &t->payload, payload_type(k, t), " NOT NULL");
  /* A database whose indexes live inside CREATE TABLE holds the key unique there, over every
   * row: it has no partial index. */
  column(s, st, &first, &t->unique_key, or_else(k->key_text, k->text),
         k->inline_index && !dead ? " UNIQUE" : NULL);
  for (size_t i = 0; i < t->ndata; i++)
    column(s, st, &first, &t->data[i], tabq_sqlb_column_type(k, t->data[i].type), NULL);
  if (!dead && k->inline_index && !key_is_the_id(s, k, t)) {
    tabq_sql_raw(st, ", INDEX ");
    tabq_sqlb_name(s, st, spec->index_name, strlen(spec->index_name));
    tabq_sql_raw(st, " ");
    tabq_sqlb_claim_key(s, k, st, t); /* inline: never partial (no database has both) */
  }
  tabq_sql_raw(st, ")");
  if (k->table_options)
    tabq_sql_raw(st, k->table_options);
}

/* "CREATE INDEX [IF NOT EXISTS] [schema.]name ON table " for the index spec names; TABQ_DIALECT
 * where the database has no CREATE INDEX IF NOT EXISTS and it is asked for. */
static int index_head_of(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_table *t,
                         const tabq_schema_spec *spec, tabq_stmt *st, bool unique) {
  bool if_not_exists = spec->flags & TABQ_SCHEMA_IF_NOT_EXISTS;
  if (if_not_exists && !k->index_if_not_exists)
    return s->host()->fail(TABQ_DIALECT, NULL, 0,
                           "table %s: %s has no CREATE INDEX IF NOT EXISTS; render the index "
                           "without it",
                           t->name, s->product);
  size_t schema_len;
  const char *table = tabq_sql_table_part(t->name, &schema_len);
  tabq_sql_raw(st, unique ? "CREATE UNIQUE INDEX " : "CREATE INDEX ");
  if (if_not_exists)
    tabq_sql_raw(st, "IF NOT EXISTS ");
  if (k->index_in_schema && schema_len) {
    tabq_sqlb_name(s, st, t->name, schema_len);
    tabq_sql_raw(st, ".");
  }
  tabq_sqlb_name(s, st, spec->index_name, strlen(spec->index_name));
  tabq_sql_raw(st, " ON ");
  if (k->index_in_schema)
    tabq_sqlb_name(s, st, table, strlen(table));
  else
    tabq_sqlb_table(s, st, t->name);
  tabq_sql_raw(st, " ");
  return TABQ_OK;
}

static int index_head(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_table *t,
                      const tabq_schema_spec *spec, tabq_stmt *st) {
  return index_head_of(s, k, t, spec, st, false);
}

/* "CREATE UNIQUE INDEX name ON table (unique_key)[ WHERE processed_at IS NULL]": the key held by
 * the unfinished rows alone where the database has partial indexes, so a finished job's key is
 * free again; an inline database holds it in CREATE TABLE unless asked for the index ALONE. */
static int unique_index(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_build *b,
                        const tabq_schema_spec *spec, tabq_stmt *st) {
  const tabq_table *t = b->table;
  if (!t->unique_key.name || (k->inline_index && !(spec->flags & TABQ_SCHEMA_ALONE)))
    return TABQ_OK;
  int rc = index_head_of(s, k, t, spec, st, true);
  if (rc)
    return rc;
  tabq_sql_raw(st, "(");
  tabq_sqlb_col(s, st, &t->unique_key);
  tabq_sql_raw(st, ")");
  if (t->processed_at.name && k->partial_index) {
    tabq_sql_raw(st, " WHERE ");
    tabq_sqlb_col(s, st, &t->processed_at);
    tabq_sql_raw(st, " IS NULL");
  }
  return TABQ_OK;
}

static int claim_index(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_build *b,
                       const tabq_schema_spec *spec, tabq_stmt *st) {
  const tabq_table *t = b->table;
  if (key_is_the_id(s, k, t) || (k->inline_index && !(spec->flags & TABQ_SCHEMA_ALONE)))
    return TABQ_OK;
  int rc = index_head(s, k, t, spec, st);
  if (!rc && tabq_sqlb_claim_key(s, k, st, t)) {
    tabq_sql_raw(st, " WHERE ");
    tabq_sqlb_col(s, st, &t->processed_at);
    tabq_sql_raw(st, " IS NULL");
  }
  return rc;
}

/* "CREATE INDEX name ON table (group, processed_at) WHERE processed_at IS NOT NULL", where the
 * claim-order index is partial: the finished rows are in no other index. */
static int finished_index(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_build *b,
                          const tabq_schema_spec *spec, tabq_stmt *st) {
  const tabq_table *t = b->table;
  if (!partial_claims(k, t))
    return TABQ_OK;
  int rc = index_head(s, k, t, spec, st);
  if (rc)
    return rc;
  tabq_sql_raw(st, "(");
  if (t->group.name) {
    tabq_sqlb_col(s, st, &t->group);
    tabq_sql_raw(st, ", ");
  }
  tabq_sqlb_col(s, st, &t->processed_at);
  tabq_sql_raw(st, ") WHERE ");
  tabq_sqlb_col(s, st, &t->processed_at);
  tabq_sql_raw(st, " IS NOT NULL");
  return TABQ_OK;
}

int tabq_sqlb_schema(const tabq_sql_style *s, const tabq_sql_schema *k, const tabq_build *b,
                     const tabq_schema_spec *spec, tabq_stmt *out) {
  int rc = check_types(s, b->table);
  if (rc)
    return rc;
  switch (spec->part) {
  case TABQ_SCHEMA_TABLE:
    create_table(s, k, b, spec, out, b->table->name, false);
    return tabq_sqlb_finish(s, b, out, "schema: table");
  case TABQ_SCHEMA_INDEX:
    if ((rc = claim_index(s, k, b, spec, out)))
      return rc;
    return tabq_sqlb_finish(s, b, out, "schema: index");
  case TABQ_SCHEMA_FINISHED_INDEX:
    if ((rc = finished_index(s, k, b, spec, out)))
      return rc;
    return tabq_sqlb_finish(s, b, out, "schema: finished index");
  case TABQ_SCHEMA_UNIQUE_INDEX:
    if ((rc = unique_index(s, k, b, spec, out)))
      return rc;
    return tabq_sqlb_finish(s, b, out, "schema: unique index");
  case TABQ_SCHEMA_DEAD_TABLE:
    if (!b->dead_letter_table)
      return TABQ_OK;
    create_table(s, k, b, spec, out, b->dead_letter_table, true);
    return tabq_sqlb_finish(s, b, out, "schema: dead letter table");
  default:
    return TABQ_OK;
  }
}
