/* The batched delete of old rows that tabq_admin_purge (by hand) and the retention pruner (in
 * the background) share: its statement, built with the dialect's quoting and placeholders from
 * a table's roles, and one batch of it in a short transaction of its own on a connection the
 * caller holds, so no lock is held longer than one batch takes. */
#include "prune.h"

#include <string.h>
#include <tabq/sys/sql.h>

#include "engine.h"
#include "error.h"

static void name(tabq_broker *b, tabq_stmt *st, const char *n) {
  if (!st->status && b->plugin.plugin->dialect->quote(st, n))
    st->status = TABQ_INVALID;
}

static void param(tabq_broker *b, tabq_stmt *st, tabq_param id) {
  const tabq_dialect_v1 *d = b->plugin.plugin->dialect;
  if (st->status)
    return;
  if (!d->placeholder)
    st->status = TABQ_DIALECT; /* a dialect before ABI 1.1: no placeholders to render */
  else if (d->placeholder(st, id))
    st->status = TABQ_INVALID;
}

/* "time_col < :cutoff [AND group = :dest]" */
static void old_rows(tabq_broker *b, tabq_stmt *st, const tabq_table *t, const char *time_col,
                     bool in_group) {
  name(b, st, time_col);
  tabq_sql_raw(st, " < ");
  param(b, st, TABQ_P_RETRY_AT);
  if (in_group && t->group.name) {
    tabq_sql_raw(st, " AND ");
    name(b, st, t->group.name);
    tabq_sql_raw(st, " = ");
    param(b, st, TABQ_P_DEST);
  }
}

int tabq__prune_sql(tabq_broker *b, const tabq_table *t, const char *table, const char *time_col,
                    bool in_group, bool count, tabq_stmt *st, tabq_error *err) {
  tabq_sql_init(st, b->host);
  if (count) {
    tabq_sql_raw(st, "SELECT COUNT(*) FROM ");
    name(b, st, table);
    tabq_sql_raw(st, " WHERE ");
    old_rows(b, st, t, time_col, in_group);
  } else {
    /* "DELETE FROM t WHERE id IN (SELECT id FROM (SELECT id FROM t WHERE time < :cutoff [AND
     * group = :dest] LIMIT :limit) tabq_batch)": the derived table lets MySQL limit a subquery
     * on the table it deletes from. */
    tabq_sql_raw(st, "DELETE FROM ");
    name(b, st, table);
    tabq_sql_raw(st, " WHERE ");
    name(b, st, t->id.name);
    tabq_sql_raw(st, " IN (SELECT ");
    name(b, st, t->id.name);
    tabq_sql_raw(st, " FROM (SELECT ");
    name(b, st, t->id.name);
    tabq_sql_raw(st, " FROM ");
    name(b, st, table);
    tabq_sql_raw(st, " WHERE ");
    old_rows(b, st, t, time_col, in_group);
    tabq_sql_raw(st, " LIMIT ");
    param(b, st, TABQ_P_LIMIT);
    tabq_sql_raw(st, ") tabq_batch)");
  }
  if (!st->status && st->sql)
    return TABQ_OK;
  int rc = st->status ? st->status : TABQ_NOMEM;
  tabq_sql_free(st);
  return tabq__err_set(
      err, rc, table, "prune", "table %s: cannot build the prune statement: %s", table,
      rc == TABQ_DIALECT ? "the dialect renders no placeholders" : tabq_strerror(rc));
}

static tabq_value value_of(const tabq_prune_vals *v, uint16_t id) {
  switch (id) {
  case TABQ_P_RETRY_AT:
    return tabq_time(v->cutoff);
  case TABQ_P_LIMIT:
    return tabq_int(v->limit);
  case TABQ_P_DEST:
    return v->dest;
  case TABQ_P_KEY:
    return v->key;
  default:
    return tabq_null();
  }
}

int tabq__prune_run(tabq_broker *b, tabq_pconn *c, const tabq_stmt *st, const tabq_prune_vals *v,
                    const char *table, const char *what, uint64_t *changed, int64_t *first,
                    tabq_error *err) {
  tabq_value params[TABQ_STMT_MAX_PARAMS];
  for (unsigned i = 0; i < st->nparams; i++)
    params[i] = value_of(v, st->params[i]);
  const tabq_driver_v1 *drv = b->drv;
  tabq_prepared *p = NULL;
  int rc = tabq__pconn_check(c, drv->prepare(c->conn, st->sql, st->nparams, what, &p));
  if (!rc)
    rc = tabq__pconn_check(c, drv->execute(p, params, st->nparams));
  if (!rc && changed)
    *changed = drv->affected(p);
  if (!rc && first) {
    bool row = false;
    tabq_value cell;
    *first = -1;
    if (!(rc = drv->next(p, &row)) && row && !(rc = drv->cell(p, 0, &cell)))
      *first = cell.type == TABQ_T_INT ? cell.u.i : cell.type == TABQ_T_NULL ? -1 : 0;
    tabq__pconn_check(c, rc);
  }
  if (p)
    drv->finalize(p);
  return rc ? tabq__err_from_plugin(err, rc, table, what) : TABQ_OK;
}

int tabq__prune_batch(tabq_broker *b, tabq_pconn *c, const char *begin_sql, const tabq_stmt *del,
                      const tabq_prune_vals *v, const char *table, uint64_t *deleted,
                      tabq_error *err) {
  *deleted = 0;
  int rc = tabq__txn_begin(b, table, c, begin_sql, err);
  if (rc)
    return rc;
  rc = tabq__prune_run(b, c, del, v, table, "prune", deleted, NULL, err);
  rc = tabq__txn_end(b, table, c, rc, err);
  if (rc)
    *deleted = 0;
  return rc;
}

int tabq__prune_begin_sql(tabq_broker *b, const tabq_table *t, char *out, size_t cap,
                          tabq_error *err) {
  tabq_build build = {.table = t, .form = TABQ_FORM_LEASE};
  return tabq__txn_render_begin(b, &build, false, out, cap, err);
}
