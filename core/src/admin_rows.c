/* tabq_admin_rows_read: a few rows of one queue, for the dashboard. Each statement is bounded by
 * the queue's group and ordered as an index of the schema's keeps it (the claim order for due
 * rows), so a queue of a million rows costs a seek and `limit` rows, like the counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_sql.h"
#include "clock.h"
#include "error.h"

#define DEFAULT_LIMIT 20
#define MAX_LIMIT 1000
#define PREVIEW 256

struct tabq_admin_rows {
  tabq_admin_row *r;
  size_t n, cap;
  bool failed;
};

size_t tabq_admin_rows_count(const tabq_admin_rows *r) {
  return r ? r->n : 0;
}

const tabq_admin_row *tabq_admin_rows_get(const tabq_admin_rows *r, size_t i) {
  return r && i < r->n ? &r->r[i] : NULL;
}

void tabq_admin_rows_free(tabq_admin_rows *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n; i++) {
    free((void *)r->r[i].id);
    free((void *)r->r[i].payload);
  }
  free(r->r);
  free(r);
}

/* The columns read, in this order; a role the table lacks is a NULL. */
enum { C_ID, C_ATTEMPT, C_PRIORITY, C_RETRY_AFTER, C_LOCKED_UNTIL, C_PAYLOAD, NCOLS };

static char *text_of(const tabq_value *c) {
  char num[32];
  const char *p = num;
  size_t len;
  if (c->type == TABQ_T_INT) {
    len = (size_t)snprintf(num, sizeof num, "%lld", (long long)c->u.i);
  } else if (c->type == TABQ_T_TEXT || c->type == TABQ_T_BYTES || c->type == TABQ_T_JSON) {
    p = c->u.buf.ptr;
    len = c->u.buf.len;
  } else {
    len = (size_t)snprintf(num, sizeof num, "?");
  }
  char *s = malloc(len + 1);
  if (s) {
    memcpy(s, p, len);
    s[len] = '\0';
  }
  return s;
}

static int read_row(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  tabq_admin_rows *r = user;
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    tabq_admin_row *grown = realloc(r->r, cap * sizeof *grown);
    if (!grown) {
      r->failed = true;
      return 1;
    }
    r->r = grown;
    r->cap = cap;
  }
  tabq_admin_row *row = &r->r[r->n];
  memset(row, 0, sizeof *row);
  row->attempt = row->retry_after_us = row->locked_until_us = -1;
  if (!(row->id = text_of(&cells[C_ID]))) {
    r->failed = true;
    return 1;
  }
  r->n++;
  if (cells[C_ATTEMPT].type != TABQ_T_NULL)
    tabq__adm_int(&cells[C_ATTEMPT], &row->attempt);
  if (cells[C_PRIORITY].type != TABQ_T_NULL)
    tabq__adm_int(&cells[C_PRIORITY], &row->priority);
  if (cells[C_RETRY_AFTER].type != TABQ_T_NULL)
    tabq__adm_time(&cells[C_RETRY_AFTER], &row->retry_after_us);
  if (cells[C_LOCKED_UNTIL].type != TABQ_T_NULL)
    tabq__adm_time(&cells[C_LOCKED_UNTIL], &row->locked_until_us);
  const tabq_value *p = &cells[C_PAYLOAD];
  if (p->type == TABQ_T_TEXT || p->type == TABQ_T_BYTES || p->type == TABQ_T_JSON) {
    row->payload_len = p->u.buf.len;
    row->payload_shown = p->u.buf.len < PREVIEW ? p->u.buf.len : PREVIEW;
    char *copy = malloc(row->payload_shown + 1);
    if (!copy) {
      r->failed = true;
      return 1;
    }
    memcpy(copy, p->u.buf.ptr, row->payload_shown);
    copy[row->payload_shown] = '\0';
    row->payload = copy;
  }
  return 0;
}

static void column_or_null(tabq_adm_sql *q, const char *name) {
  tabq__adm_raw(q, ", ");
  if (name)
    tabq__adm_name(q, name);
  else
    tabq__adm_raw(q, "NULL");
}

/* "col IS NULL OR col <= :now" */
static void ended(tabq_adm_sql *q, const char *col) {
  tabq__adm_raw(q, " AND (");
  tabq__adm_name(q, col);
  tabq__adm_raw(q, " IS NULL OR ");
  tabq__adm_name(q, col);
  tabq__adm_raw(q, " <= ");
  tabq__adm_param(q, TABQ_P_NOW);
  tabq__adm_raw(q, ")");
}

static void order_by(tabq_adm_sql *q, const char *const *cols, size_t n) {
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    if (!cols[i])
      continue;
    tabq__adm_raw(q, first ? " ORDER BY " : ", ");
    tabq__adm_name(q, cols[i]);
    first = false;
  }
}

/* The subscription of `app` that reads `queue` of `t` and names a dead letter, or -1. */
static long dead_letter_of(const tabq_app *app, const tabq_table *t, const char *queue) {
  for (size_t i = 0; i < tabq_app_subscription_count(app); i++) {
    const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
    if (tabq_app_subscription_table(app, i) != t || tabq_app_subscription_route(app, i) ||
        (queue && (!o->queue || strcmp(o->queue, queue))))
      continue;
    if (o->dead_letter_group || o->dead_letter_table)
      return (long)i;
  }
  return -1;
}

/* The statement of `kind`; *v gets the values it binds. */
static int build(tabq_adm_sql *q, tabq_broker *b, const tabq_app *app, const tabq_table *t,
                 const char *queue, tabq_admin_rows_kind kind, tabq_adm_vals *v, tabq_error *err) {
  const tabq_table *in = t; /* the table read: a dead letter table for dead letters there */
  tabq_table dead_table;
  bool dead_group = false;
  if (kind == TABQ_ROWS_DEAD) {
    long i = dead_letter_of(app, t, queue);
    if (i < 0)
      return tabq__err_set(err, TABQ_INVALID, t->name, "rows",
                           "queue %s of table %s has no dead letter (no subscription of the app "
                           "reading it names one)",
                           queue ? queue : "(all)", t->name);
    const tabq_subscription_options *o = tabq_app_subscription_options(app, (size_t)i);
    if (o->dead_letter_group) {
      dead_group = true;
      v->dest = tabq_text(o->dead_letter_group, strlen(o->dead_letter_group));
    } else {
      in = tabq__adm_dead_table(b, app, (size_t)i, &dead_table);
    }
  } else if (kind == TABQ_ROWS_IN_WORK && !t->locked_until.name) {
    return tabq__err_set(err, TABQ_INVALID, t->name, "rows",
                         "table %s has no lease column: its rows in work are held by row locks "
                         "or advisory locks, which no query sees without taking them",
                         t->name);
  }
  tabq__adm_init(q, b);
  tabq__adm_raw(q, "SELECT ");
  tabq__adm_name(q, in->id.name);
  column_or_null(q, in->attempt.name);
  column_or_null(q, in->priority.name);
  column_or_null(q, in->retry_after.name);
  /* A dead letter table holds every described column but the lease. */
  column_or_null(q, in == t ? in->locked_until.name : NULL);
  column_or_null(q, in->payload.name);
  tabq__adm_raw(q, " FROM ");
  tabq__adm_name(q, in->name);
  tabq__adm_raw(q, " WHERE 1 = 1");
  tabq__adm_in_group(q, in, dead_group ? TABQ_P_DEST : TABQ_P_GROUP, true);
  if (kind != TABQ_ROWS_DEAD || dead_group)
    tabq__adm_unfinished(q, in);
  if (kind == TABQ_ROWS_DUE) {
    if (t->retry_after.name)
      ended(q, t->retry_after.name);
    if (t->locked_until.name)
      ended(q, t->locked_until.name);
    const char *claim_order[] = {t->priority.name, t->retry_after.name, t->id.name};
    order_by(q, claim_order, 3);
  } else if (kind == TABQ_ROWS_IN_WORK) {
    tabq__adm_raw(q, " AND ");
    tabq__adm_name(q, t->locked_until.name);
    tabq__adm_raw(q, " > ");
    tabq__adm_param(q, TABQ_P_NOW);
    const char *lease_order[] = {t->locked_until.name, t->id.name};
    order_by(q, lease_order, 2);
  } else {
    order_by(q, &in->id.name, 1);
  }
  tabq__adm_raw(q, " LIMIT ");
  tabq__adm_param(q, TABQ_P_LIMIT);
  return TABQ_OK;
}

int tabq_admin_rows_read(tabq_broker *b, const tabq_app *app, const char *table, const char *queue,
                         tabq_admin_rows_kind kind, unsigned limit, tabq_admin_rows **out,
                         tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app || !table || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, "rows",
                         "tabq_admin_rows_read needs a broker, an app, a table and out");
  *out = NULL;
  const tabq_table *t = tabq_app_table_named(app, table);
  if (!t)
    return tabq__err_set(err, TABQ_INVALID, table, "rows", "the app has no table named %s", table);
  if (t->group.name && !queue)
    return tabq__err_set(err, TABQ_INVALID, table, "rows",
                         "table %s has a group column: name the queue whose rows to list", table);
  if (!t->group.name && queue)
    return tabq__err_set(err, TABQ_INVALID, table, "rows",
                         "table %s has no group column, so no queue %s: list its rows with no "
                         "queue",
                         table, queue);
  if (kind != TABQ_ROWS_DUE && kind != TABQ_ROWS_IN_WORK && kind != TABQ_ROWS_DEAD)
    return tabq__err_set(err, TABQ_INVALID, table, "rows", "no such kind of rows: %d", (int)kind);
  tabq_adm_vals v = {.now = tabq__now_us(),
                     .limit = limit ? (limit < MAX_LIMIT ? limit : MAX_LIMIT) : DEFAULT_LIMIT};
  if (queue)
    v.group = tabq_text(queue, strlen(queue));
  tabq_adm_sql q;
  int rc = build(&q, b, app, t, queue, kind, &v, err);
  if (rc)
    return rc;
  tabq_admin_rows *r = calloc(1, sizeof *r);
  tabq_tx *tx = NULL;
  if (!r)
    rc = tabq__err_set(err, TABQ_NOMEM, table, "rows", "cannot allocate the rows");
  else if (!(rc = tabq_begin(b, &tx, err))) {
    rc = tabq__adm_query(tx, &q, &v, NCOLS, read_row, r, err);
    tabq_error ignored;
    tabq_rollback(tx, &ignored); /* it wrote nothing */
  }
  tabq__adm_free(&q);
  if (!rc && r->failed)
    rc = tabq__err_set(err, TABQ_NOMEM, table, "rows", "cannot allocate the rows");
  if (rc) {
    tabq_admin_rows_free(r);
    return rc;
  }
  *out = r;
  return TABQ_OK;
}
