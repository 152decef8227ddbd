/* A table's schema, rendered by the broker's dialect (Dialect.schema, ABI 1.7) part by part in
 * the order they run: the table, its claim-order index, the index of its finished rows (where
 * the claim-order index is partial), its settings, the dead letter table.
 * tabq_schema_sql gives the text, tabq_schema_apply runs it (docs/schema.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "catalog.h"
#include "engine.h"
#include "error.h"
#include "sized.h"

static const struct {
  tabq_schema_part part;
  const char *name; /* err.statement of its failure */
} parts[] = {
    {TABQ_SCHEMA_TABLE, "schema: table"},
    {TABQ_SCHEMA_INDEX, "schema: index"},
    {TABQ_SCHEMA_FINISHED_INDEX, "schema: finished index"},
    {TABQ_SCHEMA_UNIQUE_INDEX, "schema: unique index"},
    {TABQ_SCHEMA_SETTINGS, "schema: settings"},
    {TABQ_SCHEMA_DEAD_TABLE, "schema: dead letter table"},
};

void tabq__schema_index_name(const tabq_table *t, char *out, size_t cap) {
  size_t schema_len;
  snprintf(out, cap, "%s_claim", tabq_sql_table_part(t->name, &schema_len));
}

static const char *part_name(tabq_schema_part part) {
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (parts[i].part == part)
      return parts[i].name;
  return "schema";
}

int tabq__schema_part(tabq_broker *b, const tabq_build *build, tabq_schema_part part,
                      uint32_t flags, const char *index_name, tabq_stmt *out, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  const char *table = build->table->name;
  tabq_sql_init(out, b->host);
  if (!TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, schema))
    return tabq__err_set(err, TABQ_DIALECT, table, part_name(part),
                         "table %s: the %s dialect (%s, plugin ABI %u.%u) renders no schema: that "
                         "needs ABI 1.7's Dialect.schema",
                         table, p->name, b->plugin.path, TABQ_ABI_MAJOR_OF(p->abi),
                         TABQ_ABI_MINOR_OF(p->abi));
  tabq_schema_spec spec = {
      .size = sizeof spec, .flags = flags, .part = part, .index_name = index_name};
  int rc = p->dialect->schema(build, &spec, out);
  if (!rc && out->status)
    rc = tabq__err_set(err, out->status, table, part_name(part),
                       "table %s: the dialect could not build the %s statement (%s)", table,
                       part_name(part), tabq_code_name((tabq_code)out->status));
  else if (rc)
    tabq__err_from_plugin(err, rc, table, part_name(part));
  if (rc)
    tabq_sql_free(out);
  return rc;
}

/* Where the database stops a dead letter table: a name tabq can quote, not the table itself. */
static int check_dead(const tabq_table *t, const char *dead, tabq_error *err) {
  if (!dead)
    return TABQ_OK;
  tabq_table named = {.size = sizeof named, .name = dead, .id = {.name = "id"}};
  tabq_error why;
  if (tabq__table_rules(&named, &why))
    return tabq__err_set(err, TABQ_INVALID, t->name, NULL,
                         "table %s: dead letter table '%s' is not 'table' or 'schema.table' in "
                         "UTF-8",
                         t->name, dead);
  if (!strcmp(dead, t->name))
    return tabq__err_set(err, TABQ_INVALID, t->name, NULL,
                         "table %s: the dead letter table is the table itself", t->name);
  return TABQ_OK;
}

/* Whether the plugin serves the table's form at all: a table no claim of this database could
 * take is no schema to render. The dialect's own refusals come from its check. */
static int check_form(tabq_broker *b, const tabq_build *build, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  const char *table = build->table->name;
  int rc = p->dialect->check(build);
  if (rc)
    return tabq__err_from_plugin(err, rc, table, "check");
  bool served = build->form == TABQ_FORM_LEASE      ? p->lease != NULL
                : build->form == TABQ_FORM_ADVISORY ? p->advisory != NULL
                                                    : p->rowlock != NULL;
  if (!served)
    return tabq__err_set(err, TABQ_DIALECT, table, NULL,
                         "table %s takes a form the %s dialect does not serve", table, p->name);
  return TABQ_OK;
}

/* What every schema call shares: the options and the description taken at full size and
 * checked, the server read (its version decides PostgreSQL's settings), the build. */
typedef struct schema_call {
  tabq_table t;
  tabq_schema_options o;
  char index[256];
  char finished[256]; /* "<table>_finished" */
  char unique[256];   /* "<table>_unique" */
  char version_text[64];
  tabq_build build;
} schema_call;

static int prepare_call(tabq_broker *b, const tabq_table *table, const tabq_schema_options *options,
                        schema_call *c, tabq_error *err) {
  memset(c, 0, sizeof *c);
  int rc = tabq__table_take(table, &c->t, err);
  if (!rc && options)
    rc = TABQ_TAKE(options, &c->o, TABQ_SCHEMA_OPTIONS_SIZE_1_0, table->name, err);
  if (!rc)
    rc = tabq__table_rules(&c->t, err);
  if (!rc)
    rc = check_dead(&c->t, c->o.dead_letter_table, err);
  if (rc)
    return rc;
  if (c->o.index_name)
    snprintf(c->index, sizeof c->index, "%s", c->o.index_name);
  else
    tabq__schema_index_name(&c->t, c->index, sizeof c->index);
  size_t schema_len;
  snprintf(c->finished, sizeof c->finished, "%s_finished",
           tabq_sql_table_part(c->t.name, &schema_len));
  snprintf(c->unique, sizeof c->unique, "%s_unique", tabq_sql_table_part(c->t.name, &schema_len));
  c->build = (tabq_build){.table = &c->t,
                          .form = tabq_table_form(&c->t),
                          .dead_letter_table = c->o.dead_letter_table,
                          .server_version_text = c->version_text};
  rc = tabq__pool_server(&b->pool, c->t.name, c->version_text, sizeof c->version_text,
                         &c->build.server_version, NULL, 0, err);
  if (!rc)
    rc = tabq__unique_servable(b, &c->t, err);
  return rc ? rc : check_form(b, &c->build, err);
}

/* The index a part writes: the finished rows' for its part, else the claim-order index. */
static const char *index_of(const schema_call *c, tabq_schema_part part) {
  return part == TABQ_SCHEMA_FINISHED_INDEX ? c->finished
         : part == TABQ_SCHEMA_UNIQUE_INDEX ? c->unique
                                            : c->index;
}

static uint32_t flags_of(const schema_call *c) {
  return c->o.if_not_exists ? TABQ_SCHEMA_IF_NOT_EXISTS : 0;
}

static int append(tabq_buf *to, const char *text, size_t n) {
  if (tabq__buf_reserve(to, to->len + n + 1))
    return TABQ_NOMEM;
  memcpy(to->p + to->len, text, n);
  to->len += n;
  to->p[to->len] = '\0';
  return TABQ_OK;
}

static int schema_sql(tabq_broker *b, const tabq_table *table, const tabq_schema_options *options,
                      char **out_sql, tabq_error *err) {
  schema_call c;
  int rc = prepare_call(b, table, options, &c, err);
  tabq_buf text = {0};
  if (!rc && append(&text, "", 0))
    rc = tabq__err_set(err, TABQ_NOMEM, c.t.name, NULL, "cannot hold the schema's text");
  for (size_t i = 0; !rc && i < sizeof parts / sizeof parts[0]; i++) {
    tabq_stmt st;
    rc = tabq__schema_part(b, &c.build, parts[i].part, flags_of(&c), index_of(&c, parts[i].part),
                           &st, err);
    if (!rc && st.sql && (append(&text, st.sql, st.len) || append(&text, ";\n", 2)))
      rc = tabq__err_set(err, TABQ_NOMEM, c.t.name, NULL, "cannot hold the schema's text");
    tabq_sql_free(&st);
  }
  if (rc) {
    tabq__buf_free(&text);
    return rc;
  }
  *out_sql = text.p;
  return TABQ_OK;
}

int tabq_schema_sql(tabq_broker *b, const tabq_table *table, const tabq_schema_options *options,
                    char **out_sql, tabq_error *err) {
  tabq__err_clear(err);
  if (out_sql)
    *out_sql = NULL;
  if (!b || !table || !out_sql)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_schema_sql needs a broker, a table and a place for the text");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = schema_sql(b, table, options, out_sql, err);
  tabq__log_leave(outer);
  return rc;
}

void tabq_schema_free(char *sql) {
  free(sql);
}

/* Each part in its turn on `conn`, in the transaction the caller began. */
static int run_parts(tabq_broker *b, const schema_call *c, tabq_pconn *conn, tabq_error *err) {
  int rc = TABQ_OK;
  for (size_t i = 0; !rc && i < sizeof parts / sizeof parts[0]; i++) {
    tabq_stmt st;
    rc = tabq__schema_part(b, &c->build, parts[i].part, flags_of(c), index_of(c, parts[i].part),
                           &st, err);
    if (!rc && st.sql && (rc = tabq__pconn_check(conn, b->drv->exec(conn->conn, st.sql))))
      tabq__err_from_plugin(err, rc, c->t.name, parts[i].name);
    tabq_sql_free(&st);
  }
  return rc;
}

static int schema_apply(tabq_broker *b, const tabq_table *table, const tabq_schema_options *options,
                        tabq_error *err) {
  schema_call c;
  int rc = prepare_call(b, table, options, &c, err);
  char begin[128];
  if (!rc)
    rc = tabq__txn_render_begin(b, &c.build, false, begin, sizeof begin, err);
  tabq_pconn *conn;
  if (rc || (rc = tabq__pool_acquire(&b->pool, &conn, err)))
    return rc;
  if (!(rc = tabq__txn_begin(b, c.t.name, conn, begin, err)))
    rc = tabq__txn_end(b, c.t.name, conn, run_parts(b, &c, conn, err), err);
  tabq__pool_release(&b->pool, conn);
  return rc;
}

int tabq_schema_apply(tabq_broker *b, const tabq_table *table, const tabq_schema_options *options,
                      tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_schema_apply needs a broker and a "
                         "table");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = schema_apply(b, table, options, err);
  tabq__log_leave(outer);
  return rc;
}
