/* tabq_publish_many: n messages in one transaction on one connection, all or none. Every message
 * is checked before the transaction begins; the rows are written many to a statement where the
 * dialect has insert_rows (publish_rows.c picks the statements), else one insert each, and
 * wake-ups go once per distinct group, not once per message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "clock.h"
#include "engine.h"
#include "publishing.h"
#include "error.h"
#include "sized.h"

/* The batch's distinct groups: each woken (and notified) once. Where every message shares one
 * group, or the table has no group column, `one` holds it and nothing is allocated. */
typedef struct batch_groups {
  const char **v;
  size_t n;
  const char *one;
} batch_groups;

/* Each message's fate on a table with a unique key: where the caller wants it, and the first
 * duplicate's details for the call's own report. */
typedef struct batch_fate {
  int *codes;
  int64_t *ids;
  size_t duplicates, first;
  tabq_error first_err;
} batch_fate;

/* What a call binds its statements of many rows with, allocated once per call: the values of
 * the widest statement, and where each of its rows' headers start in the headers buffer. */
typedef struct batch_space {
  tabq_value *values;
  size_t *json_at;
} batch_space;

/* Puts the place of messages [first, last] before the reason, so the caller can find the bad
 * one (a statement of many rows names them all: the database does not say which row failed). */
static int at_range(tabq_error *err, int rc, size_t first, size_t last, size_t n) {
  if (!err)
    return rc;
  char reason[sizeof err->message];
  memcpy(reason, err->message, sizeof reason);
  int w = first == last ? snprintf(err->message, sizeof err->message, "message %zu of %zu: %s",
                                   first, n, reason)
                        : snprintf(err->message, sizeof err->message,
                                   "messages %zu to %zu of %zu: %s", first, last, n, reason);
  if (w < 0)
    err->message[0] = '\0';
  return rc;
}

static int at_index(tabq_error *err, int rc, size_t i, size_t n) {
  return at_range(err, rc, i, i, n);
}

/* The begin of the batch's transaction, rendered on first use. At the database's default
 * isolation: the table's level is for the row lock form's claims, not for writing new rows.
 * Called with b->mu held. */
static int publisher_begin(tabq_broker *b, tabq_publisher *p, tabq_error *err) {
  if (p->begin_sql[0])
    return TABQ_OK;
  tabq_build build = {.table = &p->table, .form = tabq_table_form(&p->table)};
  return tabq__txn_render_begin(b, &build, false, p->begin_sql, sizeof p->begin_sql, err);
}

/* Every message as tabq_publish checks it, its headers rendered into `headers` (reused) to
 * prove they render. Nothing is written yet. */
static int check_all(const tabq_broker *b, const tabq_table *t, const tabq_message *const *msgs,
                     size_t n, tabq_buf *headers, tabq_error *err) {
  for (size_t i = 0; i < n; i++) {
    int rc;
    tabq_message m;
    if (!msgs[i])
      rc = tabq__err_set(err, TABQ_INVALID, t->name, "insert", "the message pointer is NULL");
    else if (!(rc = TABQ_TAKE(msgs[i], &m, TABQ_MESSAGE_SIZE_1_0, t->name, err)) &&
             !(rc = tabq__message_check(t, &m, err)) &&
             !(rc = tabq__values_bindable(&b->plugin, m.data, m.ndata, t->name, "insert", err)) &&
             m.nheaders)
      rc = tabq__headers_render(m.headers, m.nheaders, headers, err, t->name);
    if (rc)
      return at_index(err, rc, i, n);
  }
  return TABQ_OK;
}

static int by_text(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct groups of checked messages. `group` sits at the same place in every 1.x
 * tabq_message, so it is read from the caller's structs directly. */
static int distinct_groups(const tabq_table *t, const tabq_message *const *msgs, size_t n,
                           batch_groups *g, tabq_error *err) {
  *g = (batch_groups){.v = &g->one, .n = 1, .one = t->group.name ? msgs[0]->group : NULL};
  if (!t->group.name)
    return TABQ_OK;
  size_t i = 1;
  while (i < n && !strcmp(msgs[i]->group, g->one))
    i++;
  if (i == n)
    return TABQ_OK;
  const char **v = malloc(n * sizeof *v);
  if (!v)
    return tabq__err_set(err, TABQ_NOMEM, t->name, "insert", "cannot sort %zu groups", n);
  for (i = 0; i < n; i++)
    v[i] = msgs[i]->group;
  qsort(v, n, sizeof *v, by_text);
  size_t kept = 1;
  for (i = 1; i < n; i++)
    if (strcmp(v[i], v[kept - 1]))
      v[kept++] = v[i];
  g->v = v;
  g->n = kept;
  return TABQ_OK;
}

/* NOTIFY once per group, inside the transaction: PostgreSQL delivers it at the commit, and a
 * rollback withdraws it with the rows. */
static int announce_all(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const batch_groups *g,
                        tabq_error *err) {
  for (size_t i = 0; i < g->n; i++) {
    const char *group = g->v[i] ? g->v[i] : "";
    tabq_bind v = {.channel = tabq_text(p->channel, strlen(p->channel)),
                   .group = tabq_text(group, strlen(group))};
    tabq_prepared *st = NULL;
    int rc = tabq__stmt_run(&b->stmts, b->drv, c, p->notify, &v, &st, err);
    if (rc)
      return rc;
    b->drv->reset(st);
  }
  return TABQ_OK;
}

/* One message, one insert. A duplicate key is the message's fate, not the batch's failure. */
static int write_one(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const tabq_message *msg,
                     size_t i, tabq_buf *headers, int64_t now, batch_fate *f, tabq_error *err) {
  const tabq_table *t = &p->table;
  tabq_message m;
  int rc = TABQ_TAKE(msg, &m, TABQ_MESSAGE_SIZE_1_0, t->name, err);
  /* No headers render as "{}" without building a JSON object. */
  const char *json = "{}";
  size_t json_len = 2;
  if (!rc && t->headers.name && m.nheaders &&
      !(rc = tabq__headers_render(m.headers, m.nheaders, headers, err, t->name))) {
    json = headers->p;
    json_len = headers->len;
  }
  if (rc)
    return rc;
  tabq_bind v = tabq__message_bind(t, &m, json, json_len, now);
  tabq_error dup;
  rc = tabq__insert_row(b, p, c, &m, &v, &dup);
  if (rc == TABQ_DUPLICATE) {
    if (f->codes)
      f->codes[i] = TABQ_DUPLICATE;
    if (f->ids)
      f->ids[i] = dup.duplicate_id;
    if (!f->duplicates++) {
      f->first = i;
      f->first_err = dup;
    }
    return TABQ_OK;
  }
  if (rc && err)
    *err = dup;
  return rc;
}

/* "{}" after what `headers` holds: a message without headers, without building a JSON object. */
static int empty_headers(tabq_buf *headers, tabq_error *err, const char *table) {
  if (tabq__buf_reserve(headers, headers->len + 2))
    return tabq__err_set(err, TABQ_NOMEM, table, "insert", "cannot hold the headers");
  memcpy(headers->p + headers->len, "{}", 2);
  headers->len += 2;
  return TABQ_OK;
}

/* Messages msgs[0, rows) with the statement of that many rows, their values copy after copy.
 * Their headers go one after another into `headers`, pointed at once it stops growing. A
 * failure of one message sets *bad to its place; of the statement, to `rows`. */
static int write_rows(tabq_broker *b, tabq_publisher *p, tabq_pconn *c,
                      const tabq_message *const *msgs, unsigned rows, unsigned stmt,
                      tabq_buf *headers, const batch_space *x, int64_t now, unsigned *bad,
                      tabq_error *err) {
  const tabq_table *t = &p->table;
  const tabq_sdef *d = &b->stmts.defs[stmt];
  headers->len = 0;
  for (unsigned k = 0; k < rows; k++) {
    tabq_message m;
    int rc = TABQ_TAKE(msgs[k], &m, TABQ_MESSAGE_SIZE_1_0, t->name, err);
    x->json_at[k] = headers->len;
    if (!rc && t->headers.name && m.nheaders)
      rc = tabq__headers_append(m.headers, m.nheaders, headers, err, t->name);
    else if (!rc && t->headers.name)
      rc = empty_headers(headers, err, t->name);
    if (rc) {
      *bad = k;
      return rc;
    }
    tabq_bind v = tabq__message_bind(t, &m, NULL, headers->len - x->json_at[k], now);
    tabq__stmt_values(&b->stmts, stmt, &v, x->values + (size_t)k * d->nparams);
  }
  for (unsigned i = 0; t->headers.name && i < d->nparams; i++)
    if (d->params[i] == TABQ_P_HEADERS)
      for (unsigned k = 0; k < rows; k++)
        x->values[(size_t)k * d->nparams + i].u.buf.ptr = headers->p + x->json_at[k];
  *bad = rows;
  uint64_t changed;
  return tabq__stmt_change_values(&b->stmts, b->drv, c, stmt, x->values, &changed, err);
}

/* The inserts, then the notifications, in the transaction the caller began. One `now` for the
 * batch: its rows are due together, in the order given. */
static int write_all(tabq_broker *b, tabq_publisher *p, tabq_pconn *c,
                     const tabq_message *const *msgs, size_t n, const batch_groups *g,
                     tabq_buf *headers, const batch_space *x, batch_fate *f, tabq_error *err) {
  int64_t now = tabq__now_us();
  for (size_t i = 0; i < n;) {
    unsigned stmt, bad;
    unsigned rows = tabq__rows_next(p, n - i, &stmt);
    int rc;
    if (rows == 1 && (rc = write_one(b, p, c, msgs[i], i, headers, now, f, err)))
      return at_index(err, rc, i, n);
    if (rows > 1 && (rc = write_rows(b, p, c, msgs + i, rows, stmt, headers, x, now, &bad, err)))
      return bad < rows ? at_index(err, rc, i + bad, n) : at_range(err, rc, i, i + rows - 1, n);
    i += rows;
  }
  return p->notify == TABQ_NO_STMT ? TABQ_OK : announce_all(b, p, c, g, err);
}

static int in_transaction(tabq_broker *b, tabq_publisher *p, const tabq_message *const *msgs,
                          size_t n, const batch_groups *g, tabq_buf *headers, const batch_space *x,
                          batch_fate *f, tabq_error *err) {
  const tabq_table *t = &p->table;
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  if ((rc = tabq__txn_begin(b, t->name, c, p->begin_sql, err))) {
    tabq__pool_release(&b->pool, c);
    return rc;
  }
  rc = tabq__txn_end(b, t->name, c, write_all(b, p, c, msgs, n, g, headers, x, f, err), err);
  tabq__pool_release(&b->pool, c);
  return rc;
}

/* The call's report of its duplicates, once the others are committed. */
static int report_duplicates(const tabq_table *t, const batch_fate *f, size_t n, tabq_error *err) {
  if (!f->duplicates)
    return TABQ_OK;
  if (err) {
    *err = f->first_err;
    char reason[sizeof err->message];
    memcpy(reason, err->message, sizeof reason);
    if (snprintf(err->message, sizeof err->message,
                 "%zu of %zu messages held keys already and were not written (the others were); "
                 "the first, message %zu: %s",
                 f->duplicates, n, f->first, reason) < 0)
      err->message[0] = '\0';
  }
  (void)t;
  return TABQ_DUPLICATE;
}

static int publish_many(tabq_broker *b, const tabq_table *table, const tabq_message *const *msgs,
                        size_t n, batch_fate *f, tabq_error *err) {
  if (!table)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert", "tabq_publish_many needs a table");
  if (n == 0)
    return TABQ_OK;
  if (!msgs)
    return tabq__err_set(err, TABQ_INVALID, table->name, "insert",
                         "message 0 of %zu: the message array is NULL", n);
  tabq_publisher *p;
  unsigned most_rows;
  size_t most_values;
  pthread_mutex_lock(&b->mu);
  int rc = tabq__publisher_of(b, table, NULL, &p, err);
  if (!rc)
    rc = publisher_begin(b, p, err);
  if (!rc)
    rc = tabq__rows_plan(b, p, n, &most_rows, &most_values, err);
  pthread_mutex_unlock(&b->mu);
  if (rc)
    return rc;
  const tabq_table *t = &p->table;
  tabq_buf headers = {0};
  batch_groups g;
  batch_space x = {0};
  if (!(rc = check_all(b, t, msgs, n, &headers, err)) && most_values &&
      (!(x.values = malloc(most_values * sizeof *x.values)) ||
       !(x.json_at = malloc(most_rows * sizeof *x.json_at))))
    rc = tabq__err_set(err, TABQ_NOMEM, t->name, "insert", "cannot bind %zu values", most_values);
  if (!rc && !(rc = distinct_groups(t, msgs, n, &g, err))) {
    for (size_t i = 0; f->codes && i < n; i++)
      f->codes[i] = TABQ_OK;
    for (size_t i = 0; f->ids && i < n; i++)
      f->ids[i] = 0;
    rc = in_transaction(b, p, msgs, n, &g, &headers, &x, f, err);
    for (size_t i = 0; !rc && i < g.n; i++)
      tabq__publish_wake(b, t, g.v[i]);
    if (g.v != &g.one)
      free(g.v);
  }
  free(x.values);
  free(x.json_at);
  tabq__buf_free(&headers);
  return rc ? rc : report_duplicates(t, f, n, err);
}

int tabq_publish_many(tabq_broker *b, const tabq_table *table, const tabq_message *const *msgs,
                      size_t n, tabq_error *err) {
  tabq__err_clear(err);
  if (!b)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert", "tabq_publish_many needs a broker");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  batch_fate f = {0};
  int rc = publish_many(b, table, msgs, n, &f, err);
  tabq__log_leave(outer);
  return rc;
}

int tabq_publish_many_results(tabq_broker *b, const tabq_table *table,
                              const tabq_message *const *msgs, size_t n, int *codes, int64_t *ids,
                              tabq_error *err) {
  tabq__err_clear(err);
  if (!b)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert",
                         "tabq_publish_many_results needs a broker");
  if (n && !codes)
    return tabq__err_set(err, TABQ_INVALID, table ? table->name : NULL, "insert",
                         "tabq_publish_many_results needs an array of %zu codes", n);
  const tabq_logger *outer = tabq__log_enter(&b->log);
  batch_fate f = {.codes = codes, .ids = ids};
  int rc = publish_many(b, table, msgs, n, &f, err);
  tabq__log_leave(outer);
  return rc;
}
