/* The admin calls' statements (admin_sql.h): built with the broker's dialect, run through the
 * service-transaction API (tx.c), so they take the pool, the isolation and the errors every
 * other statement takes. Also tabq_admin_verify, which the changing calls run first. */
#include "admin_sql.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "error.h"

void tabq__adm_init(tabq_adm_sql *q, tabq_broker *b) {
  tabq_sql_init(&q->st, b->host);
  q->d = b->plugin.plugin->dialect;
}

void tabq__adm_free(tabq_adm_sql *q) {
  tabq_sql_free(&q->st);
}

void tabq__adm_raw(tabq_adm_sql *q, const char *text) {
  tabq_sql_raw(&q->st, text);
}

void tabq__adm_name(tabq_adm_sql *q, const char *name) {
  if (!q->st.status && q->d->quote(&q->st, name))
    q->st.status = TABQ_INVALID;
}

void tabq__adm_param(tabq_adm_sql *q, tabq_param id) {
  if (q->st.status)
    return;
  if (!q->d->placeholder)
    q->st.status = TABQ_DIALECT; /* a dialect before ABI 1.1: no placeholders to render */
  else if (q->d->placeholder(&q->st, id))
    q->st.status = TABQ_INVALID;
}

void tabq__adm_in_group(tabq_adm_sql *q, const tabq_table *t, tabq_param id, bool and) {
  if (!t->group.name)
    return;
  tabq__adm_raw(q, and? " AND " : " WHERE ");
  tabq__adm_name(q, t->group.name);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, id);
}

void tabq__adm_unfinished(tabq_adm_sql *q, const tabq_table *t) {
  if (!t->processed_at.name)
    return;
  tabq__adm_raw(q, " AND ");
  tabq__adm_name(q, t->processed_at.name);
  tabq__adm_raw(q, " IS NULL");
}

static tabq_value value_of(const tabq_adm_vals *v, uint16_t id) {
  switch (id) {
  case TABQ_P_GROUP:
    return v->group;
  case TABQ_P_DEST:
    return v->dest;
  case TABQ_P_ID:
    return v->id;
  case TABQ_P_NOW:
    return tabq_time(v->now);
  case TABQ_P_RETRY_AT:
    return tabq_time(v->cutoff);
  case TABQ_P_LIMIT:
    return tabq_int(v->limit);
  default:
    return tabq_null();
  }
}

static int built(tabq_adm_sql *q, const tabq_adm_vals *v, tabq_value *params, tabq_error *err) {
  if (q->st.status)
    return tabq__err_set(err, q->st.status, NULL, "admin", "cannot build an admin statement: %s",
                         q->st.status == TABQ_DIALECT ? "the dialect renders no placeholders"
                                                      : tabq_strerror(q->st.status));
  for (unsigned i = 0; i < q->st.nparams; i++)
    params[i] = value_of(v, q->st.params[i]);
  return TABQ_OK;
}

int tabq__adm_query(tabq_tx *tx, tabq_adm_sql *q, const tabq_adm_vals *v, unsigned ncols,
                    tabq_row_fn row, void *user, tabq_error *err) {
  tabq_value params[TABQ_STMT_MAX_PARAMS];
  int rc = built(q, v, params, err);
  return rc ? rc : tabq_tx_query(tx, q->st.sql, params, q->st.nparams, ncols, row, user, err);
}

int tabq__adm_exec(tabq_tx *tx, tabq_adm_sql *q, const tabq_adm_vals *v, uint64_t *changed,
                   tabq_error *err) {
  tabq_value params[TABQ_STMT_MAX_PARAMS];
  int rc = built(q, v, params, err);
  return rc ? rc : tabq_tx_exec(tx, q->st.sql, params, q->st.nparams, changed, err);
}

bool tabq__adm_int(const tabq_value *c, int64_t *out) {
  if (c->type == TABQ_T_INT) {
    *out = c->u.i;
    return true;
  }
  if (c->type == TABQ_T_REAL) {
    *out = (int64_t)c->u.r;
    return true;
  }
  if (c->type == TABQ_T_TEXT && c->u.buf.len < 32) { /* a NUMERIC or DECIMAL read as text */
    char text[32];
    memcpy(text, c->u.buf.ptr, c->u.buf.len);
    text[c->u.buf.len] = '\0';
    return sscanf(text, "%lld", (long long *)out) == 1;
  }
  return false;
}

bool tabq__adm_time(const tabq_value *c, int64_t *out) {
  if (c->type == TABQ_T_TIME) {
    *out = c->u.time_us;
    return true;
  }
  if (c->type != TABQ_T_TEXT || c->u.buf.len >= 40)
    return false;
  /* "YYYY-MM-DD HH:MM:SS[.ffffff]", UTC, as the SQLite dialect writes times */
  char text[40];
  memcpy(text, c->u.buf.ptr, c->u.buf.len);
  text[c->u.buf.len] = '\0';
  struct tm tm = {0};
  int n = 0;
  if (sscanf(text, "%d-%d-%d%*[ T]%d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
             &tm.tm_min, &tm.tm_sec, &n) != 6)
    return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t us = (int64_t)timegm(&tm) * 1000000;
  if (text[n] == '.') {
    int64_t scale = 100000;
    for (const char *p = text + n + 1; *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
      us += (*p - '0') * scale;
  }
  *out = us;
  return true;
}

static int one_count(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  int64_t *out = user;
  if (cells[0].type == TABQ_T_NULL)
    *out = 0;
  else if (!tabq__adm_int(&cells[0], out))
    *out = -1;
  return 0;
}

int tabq__adm_count(tabq_tx *tx, tabq_adm_sql *q, const tabq_adm_vals *v, int64_t *out,
                    tabq_error *err) {
  *out = 0;
  return tabq__adm_query(tx, q, v, 1, one_count, out, err);
}

const tabq_table *tabq__adm_dead_table(tabq_broker *b, const tabq_app *app, size_t i,
                                       tabq_table *as) {
  (void)b;
  const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
  if (!o->dead_letter_table)
    return NULL;
  /* "A table with the same columns": the subscription's table's roles under the dead name. */
  *as = *tabq_app_subscription_table(app, i);
  as->name = o->dead_letter_table;
  return as;
}

static void column(tabq_adm_sql *q, const tabq_col *c, bool *first) {
  if (!c->name)
    return;
  tabq__adm_raw(q, *first ? "" : ", ");
  tabq__adm_name(q, c->name);
  *first = false;
}

int tabq_admin_verify(tabq_broker *b, const tabq_table *t, const char *as, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !t || !t->name)
    return tabq__err_set(err, TABQ_INVALID, NULL, "verify", "tabq_admin_verify needs a table");
  const char *name = as ? as : t->name;
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  bool first = true;
  tabq__adm_raw(&q, "SELECT ");
  const tabq_col *roles[] = {&t->id,          &t->group,   &t->priority,     &t->partition_key,
                             &t->retry_after, &t->attempt, &t->processed_at, &t->locked_until,
                             &t->headers,     &t->payload, &t->cancelled_at};
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (!(as && roles[i] == &t->locked_until)) /* a dead letter table needs no lease */
      column(&q, roles[i], &first);
  for (size_t i = 0; i < t->ndata; i++)
    column(&q, &t->data[i], &first);
  tabq__adm_raw(&q, " FROM ");
  tabq__adm_name(&q, name);
  tabq__adm_raw(&q, " WHERE 1 = 0");
  tabq_tx *tx;
  int rc = tabq_begin(b, &tx, err);
  if (!rc) {
    tabq_adm_vals v = {0};
    rc = tabq__adm_query(tx, &q, &v, 1, one_count, &(int64_t){0}, err);
    tabq_error ignored;
    tabq_rollback(tx, &ignored);
  }
  tabq__adm_free(&q);
  if (rc && rc != TABQ_NOMEM) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    tabq__err_set(err, TABQ_SCHEMA, name, "verify",
                  "table %s does not match its description (a column it names is missing or "
                  "the table is not there): %s",
                  name, why);
    return TABQ_SCHEMA;
  }
  return rc;
}
