#include "statements.h"

#include <stdio.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "counters.h"
#include "error.h"

void tabq__registry_init(tabq_registry *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
}

void tabq__registry_destroy(tabq_registry *r, const tabq_host *host) {
  unsigned n = atomic_load(&r->n);
  for (unsigned i = 0; i < n; i++)
    host->free(r->defs[i].sql);
  pthread_mutex_destroy(&r->mu);
}

static int register_rows(tabq_registry *r, tabq_stmt *st, const char *name, const char *table,
                         unsigned rows, unsigned *id, tabq_error *err) {
  pthread_mutex_lock(&r->mu);
  unsigned n = atomic_load(&r->n);
  if (n == TABQ_MAX_STATEMENTS) {
    pthread_mutex_unlock(&r->mu);
    tabq_sql_free(st);
    return tabq__err_set(err, TABQ_INVALID, table, name, "a broker holds at most %d statements",
                         TABQ_MAX_STATEMENTS);
  }
  tabq_sdef *d = &r->defs[n];
  d->sql = st->sql;
  memcpy(d->params, st->params, sizeof d->params);
  d->nparams = st->nparams;
  d->rows = rows;
  snprintf(d->name, sizeof d->name, "%s", name);
  d->table = table;
  st->sql = NULL;
  atomic_store(&r->n, n + 1); /* published after the definition is complete */
  pthread_mutex_unlock(&r->mu);
  *id = n;
  return TABQ_OK;
}

int tabq__stmt_register(tabq_registry *r, tabq_stmt *st, const char *name, const char *table,
                        unsigned *id, tabq_error *err) {
  return register_rows(r, st, name, table, 1, id, err);
}

/* Builds into *st; `optional` lets the builder write no SQL. */
static int build(const tabq_host *host, tabq_build_fn fn, const tabq_build *b, const char *name,
                 bool optional, tabq_stmt *st, tabq_error *err) {
  tabq_sql_init(st, host);
  int rc = fn(b, st);
  if (!rc)
    rc = st->status;
  if (!rc && !st->sql && !optional)
    rc = tabq__err_set(err, TABQ_DIALECT, b->table->name, name, "the dialect built no SQL for %s",
                       name);
  else if (rc)
    rc = st->status == rc ? tabq__err_set(err, rc, b->table->name, name,
                                          "the dialect could not build the %s statement (%s)", name,
                                          tabq_code_name((tabq_code)rc))
                          : tabq__err_from_plugin(err, rc, b->table->name, name);
  if (rc)
    tabq_sql_free(st);
  return rc;
}

int tabq__stmt_build(tabq_registry *r, const tabq_host *host, tabq_build_fn fn, const tabq_build *b,
                     const char *name, unsigned *id, tabq_error *err) {
  tabq_stmt st;
  int rc = build(host, fn, b, name, false, &st, err);
  return rc ? rc : tabq__stmt_register(r, &st, name, b->table->name, id, err);
}

int tabq__stmt_build_optional(tabq_registry *r, const tabq_host *host, tabq_build_fn fn,
                              const tabq_build *b, const char *name, unsigned *id, bool *built,
                              tabq_error *err) {
  tabq_stmt st;
  *built = false;
  int rc = build(host, fn, b, name, true, &st, err);
  if (rc || !st.sql)
    return rc;
  *built = true;
  return tabq__stmt_register(r, &st, name, b->table->name, id, err);
}

int tabq__stmt_build_rows(tabq_registry *r, const tabq_host *host, tabq_build_fn fn,
                          const tabq_build *b, const char *name, unsigned *id, bool *built,
                          tabq_error *err) {
  tabq_stmt st;
  *built = false;
  int rc = build(host, fn, b, name, true, &st, err);
  if (rc || !st.sql)
    return rc;
  *built = true;
  return register_rows(r, &st, name, b->table->name, b->rows, id, err);
}

int tabq__stmt_prepare(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                       tabq_prepared **out, tabq_error *err) {
  if (!c->prepared[id]) {
    const tabq_sdef *d = &r->defs[id];
    int rc = tabq__pconn_check(
        c, drv->prepare(c->conn, d->sql, d->nparams * d->rows, d->name, &c->prepared[id]));
    if (rc) {
      c->prepared[id] = NULL;
      return tabq__err_from_plugin(err, rc, d->table, d->name);
    }
  }
  *out = c->prepared[id];
  return TABQ_OK;
}

static tabq_value value_of(const tabq_bind *v, uint16_t param) {
  switch (param) {
  case TABQ_P_ID:
    return v->id;
  case TABQ_P_IDS:
    return v->ids;
  case TABQ_P_GROUP:
    return v->group;
  case TABQ_P_NOW:
    return tabq_time(v->now);
  case TABQ_P_LIMIT:
    return tabq_int(v->limit);
  case TABQ_P_LEASE_UNTIL:
    return tabq_time(v->lease_until);
  case TABQ_P_TOKEN:
    return tabq_time(v->token);
  case TABQ_P_RETRY_AT:
    return tabq_time(v->retry_at);
  case TABQ_P_DEST:
    return v->dest;
  case TABQ_P_KEY:
    return v->key;
  case TABQ_P_PRIORITY:
    return tabq_int(v->priority);
  case TABQ_P_PARTITION_KEY:
    return v->partition_key;
  case TABQ_P_HEADERS:
    return v->headers;
  case TABQ_P_PAYLOAD:
    return v->payload;
  case TABQ_P_ATTEMPT:
    return tabq_int(v->attempt);
  case TABQ_P_CHANNEL:
    return v->channel;
  case TABQ_P_UNIQUE_KEY:
    return v->unique_key;
  default:
    if (param >= TABQ_P_DATA && (size_t)(param - TABQ_P_DATA) < v->ndata)
      return v->data[param - TABQ_P_DATA];
    return tabq_null();
  }
}

void tabq__stmt_values(const tabq_registry *r, unsigned id, const tabq_bind *v, tabq_value *out) {
  const tabq_sdef *d = &r->defs[id];
  for (unsigned i = 0; i < d->nparams; i++)
    out[i] = value_of(v, d->params[i]);
}

/* Executes statement id with its values bound: nparams * rows of them. */
static int execute(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                   const tabq_value *values, tabq_prepared **out, tabq_error *err) {
  tabq_prepared *p = NULL;
  int rc = tabq__stmt_prepare(r, drv, c, id, &p, err);
  if (rc)
    return rc;
  const tabq_sdef *d = &r->defs[id];
  tabq__round_trip();
  rc = tabq__pconn_check(c, drv->execute(p, values, d->nparams * d->rows));
  if (rc) {
    drv->reset(p);
    return tabq__err_from_plugin(err, rc, d->table, d->name);
  }
  *out = p;
  return TABQ_OK;
}

int tabq__stmt_run(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                   const tabq_bind *v, tabq_prepared **out, tabq_error *err) {
  const tabq_sdef *d = &r->defs[id];
  if (d->rows != 1)
    return tabq__err_set(err, TABQ_INVALID, d->table, d->name,
                         "a statement of %u rows is run with its values bound", d->rows);
  tabq_value values[TABQ_STMT_MAX_PARAMS];
  tabq__stmt_values(r, id, v, values);
  return execute(r, drv, c, id, values, out, err);
}

int tabq__stmt_change(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                      const tabq_bind *v, uint64_t *changed, tabq_error *err) {
  tabq_prepared *p = NULL;
  int rc = tabq__stmt_run(r, drv, c, id, v, &p, err);
  if (rc)
    return rc;
  *changed = drv->affected(p);
  drv->reset(p);
  return TABQ_OK;
}

int tabq__stmt_first(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                     const tabq_bind *v, bool *row, tabq_value *first, tabq_error *err) {
  tabq_prepared *p = NULL;
  *row = false;
  *first = tabq_null();
  int rc = tabq__stmt_run(r, drv, c, id, v, &p, err);
  if (rc)
    return rc;
  rc = drv->next(p, row);
  if (!rc && *row)
    rc = drv->cell(p, 0, first);
  drv->reset(p);
  if (rc)
    return tabq__err_from_plugin(err, rc, r->defs[id].table, r->defs[id].name);
  return TABQ_OK;
}

int tabq__stmt_change_values(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c,
                             unsigned id, const tabq_value *values, uint64_t *changed,
                             tabq_error *err) {
  tabq_prepared *p = NULL;
  int rc = execute(r, drv, c, id, values, &p, err);
  if (rc)
    return rc;
  *changed = drv->affected(p);
  drv->reset(p);
  return TABQ_OK;
}

int tabq__values_bindable(const tabq_loaded *l, const tabq_value *v, size_t n, const char *table,
                          const char *what, tabq_error *err) {
  const tabq_plugin *drv_plugin = l->lender ? l->lender : l->plugin;
  if (TABQ_ABI_MINOR_OF(drv_plugin->abi) >= 5)
    return TABQ_OK;
  for (size_t i = 0; i < n; i++)
    if (v[i].type == TABQ_T_REAL)
      return tabq__err_set(err, TABQ_INVALID, table, what,
                           "value %zu is a real, which the driver of plugin %s (ABI %u.%u) cannot "
                           "bind (reals came with ABI 1.5): pass the number as text",
                           i, drv_plugin->name, TABQ_ABI_MAJOR_OF(drv_plugin->abi),
                           TABQ_ABI_MINOR_OF(drv_plugin->abi));
  return TABQ_OK;
}
