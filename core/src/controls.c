/* Pausing a queue across processes (tabq/controls.h, docs/pause.md): the broker's controls
 * table, checked and its read built once by tabq_set_controls, and the pause, resume and read of
 * a queue's row. The statements are built in the core with the dialect's quoting and
 * placeholders (admin_sql.h), so they serve every database: the write is an UPDATE, and where it
 * found no row an INSERT, in one transaction (tried again when two first writes of one key
 * meet on its primary key). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "admin_sql.h"
#include "clock.h"
#include "controls_int.h"
#include "error.h"
#include "sized.h"

/* A write tries this many times: a try fails only where another first write of the key
 * committed between its UPDATE and its INSERT, and the next try then finds the row. */
#define TRIES 3

/* The values the controls' statements bind: KEY the queue table's name, GROUP the queue, LIMIT
 * the paused flag, NOW paused_at (a time, or NULL for a resume), CHANNEL the notification's. */
typedef struct ctl_vals {
  tabq_value table, queue, paused_at, channel;
  int64_t paused;
} ctl_vals;

static tabq_value value_of(const ctl_vals *v, uint16_t id) {
  switch (id) {
  case TABQ_P_KEY:
    return v->table;
  case TABQ_P_GROUP:
    return v->queue;
  case TABQ_P_LIMIT:
    return tabq_int(v->paused);
  case TABQ_P_NOW:
    return v->paused_at;
  case TABQ_P_CHANNEL:
    return v->channel;
  default:
    return tabq_null();
  }
}

static int bind(tabq_adm_sql *q, const ctl_vals *v, tabq_value *params, const char *name,
                tabq_error *err) {
  if (q->st.status)
    return tabq__err_set(err, q->st.status, name, "controls",
                         "controls table %s: cannot build its statement: %s", name,
                         q->st.status == TABQ_DIALECT ? "the dialect renders no placeholders"
                                                      : tabq_strerror(q->st.status));
  for (unsigned i = 0; i < q->st.nparams; i++)
    params[i] = value_of(v, q->st.params[i]);
  return TABQ_OK;
}

static int exec(tabq_tx *tx, tabq_adm_sql *q, const ctl_vals *v, const char *name,
                uint64_t *changed, tabq_error *err) {
  tabq_value params[TABQ_STMT_MAX_PARAMS];
  int rc = bind(q, v, params, name, err);
  return rc ? rc : tabq_tx_exec(tx, q->st.sql, params, q->st.nparams, changed, err);
}

static int query(tabq_tx *tx, tabq_adm_sql *q, const ctl_vals *v, const char *name, tabq_row_fn row,
                 void *user, tabq_error *err) {
  tabq_value params[TABQ_STMT_MAX_PARAMS];
  int rc = bind(q, v, params, name, err);
  return rc ? rc : tabq_tx_query(tx, q->st.sql, params, q->st.nparams, 1, row, user, err);
}

/* " WHERE table_column = :key AND queue_column = :group" */
static void where_key(tabq_adm_sql *q, const tabq_controls *c) {
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, c->table_column);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_KEY);
  tabq__adm_raw(q, " AND ");
  tabq__adm_name(q, c->queue_column);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_GROUP);
}

/* "SELECT paused FROM controls WHERE ..." (the subscriptions' read and tabq_paused's) */
static void read_sql(tabq_adm_sql *q, const tabq_controls *c) {
  tabq__adm_raw(q, "SELECT ");
  tabq__adm_name(q, c->paused_column);
  tabq__adm_raw(q, " FROM ");
  tabq__adm_name(q, c->name);
  where_key(q, c);
}

/* "UPDATE controls SET paused = :limit[, paused_at = :now] WHERE ..." */
static void update_sql(tabq_adm_sql *q, const tabq_controls *c) {
  tabq__adm_raw(q, "UPDATE ");
  tabq__adm_name(q, c->name);
  tabq__adm_raw(q, " SET ");
  tabq__adm_name(q, c->paused_column);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_LIMIT);
  if (c->paused_at_column) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, c->paused_at_column);
    tabq__adm_raw(q, " = ");
    tabq__adm_param(q, TABQ_P_NOW);
  }
  where_key(q, c);
}

/* "SELECT COUNT(*) FROM controls WHERE ...": whether the key's row is there (an UPDATE that
 * sets the values a row has already changes no row on MySQL). */
static void count_sql(tabq_adm_sql *q, const tabq_controls *c) {
  tabq__adm_raw(q, "SELECT COUNT(*) FROM ");
  tabq__adm_name(q, c->name);
  where_key(q, c);
}

/* "INSERT INTO controls (table_column, queue_column, paused[, paused_at]) VALUES (...)" */
static void insert_sql(tabq_adm_sql *q, const tabq_controls *c) {
  tabq__adm_raw(q, "INSERT INTO ");
  tabq__adm_name(q, c->name);
  tabq__adm_raw(q, " (");
  tabq__adm_name(q, c->table_column);
  tabq__adm_raw(q, ", ");
  tabq__adm_name(q, c->queue_column);
  tabq__adm_raw(q, ", ");
  tabq__adm_name(q, c->paused_column);
  if (c->paused_at_column) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, c->paused_at_column);
  }
  tabq__adm_raw(q, ") VALUES (");
  tabq__adm_param(q, TABQ_P_KEY);
  tabq__adm_raw(q, ", ");
  tabq__adm_param(q, TABQ_P_GROUP);
  tabq__adm_raw(q, ", ");
  tabq__adm_param(q, TABQ_P_LIMIT);
  if (c->paused_at_column) {
    tabq__adm_raw(q, ", ");
    tabq__adm_param(q, TABQ_P_NOW);
  }
  tabq__adm_raw(q, ")");
}

static int one_row(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  tabq_value *out = user;
  *out = cells[0];
  if (tabq__has_buffer(out->type) && out->u.buf.len) { /* valid during the call only */
    bool t = strchr("1tTyY", ((const char *)out->u.buf.ptr)[0]) != NULL;
    *out = tabq_int(t);
  }
  return 0;
}

static int count_of(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  if (!tabq__adm_int(&cells[0], user))
    *(int64_t *)user = 0;
  return 0;
}

/* ---- tabq_set_controls -------------------------------------------------------------------- */

/* The names copied into one block the state owns. */
static int take(const tabq_controls *in, tabq_controls_state *st, tabq_error *err) {
  int rc = TABQ_TAKE(in, &st->c, TABQ_CONTROLS_SIZE_1_0, NULL, err);
  if (!rc)
    rc = tabq__controls_check(&st->c, "tabq_set_controls", err);
  if (rc)
    return rc;
  tabq_controls *c = &st->c;
  const char **names[] = {&c->name, &c->table_column, &c->queue_column, &c->paused_column,
                          &c->paused_at_column};
  size_t total = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    total += *names[i] ? strlen(*names[i]) + 1 : 0;
  if (!(st->names = malloc(total)))
    return tabq__err_set(err, TABQ_NOMEM, c->name, "controls", "cannot copy the controls");
  char *at = st->names;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (*names[i]) {
      size_t n = strlen(*names[i]) + 1;
      memcpy(at, *names[i], n);
      *names[i] = at;
      at += n;
    }
  return TABQ_OK;
}

/* The table and its columns, by a query naming each that reads no row (as tabq_admin_verify). */
static int verify(tabq_broker *b, const tabq_controls *c, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  tabq__adm_raw(&q, "SELECT ");
  tabq__adm_name(&q, c->table_column);
  tabq__adm_raw(&q, ", ");
  tabq__adm_name(&q, c->queue_column);
  tabq__adm_raw(&q, ", ");
  tabq__adm_name(&q, c->paused_column);
  if (c->paused_at_column) {
    tabq__adm_raw(&q, ", ");
    tabq__adm_name(&q, c->paused_at_column);
  }
  tabq__adm_raw(&q, " FROM ");
  tabq__adm_name(&q, c->name);
  tabq__adm_raw(&q, " WHERE 1 = 0");
  tabq_tx *tx;
  int rc = tabq_begin(b, &tx, err);
  if (!rc) {
    ctl_vals v = {0};
    tabq_value ignored_cell;
    rc = query(tx, &q, &v, c->name, one_row, &ignored_cell, err);
    tabq_error ignored;
    tabq_rollback(tx, &ignored);
  }
  tabq__adm_free(&q);
  if (rc && rc != TABQ_NOMEM && rc != TABQ_CLOSED) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    return tabq__err_set(err, TABQ_SCHEMA, c->name, "controls",
                         "controls table %s does not match its description (the table or one of "
                         "its columns %s, %s, %s%s%s is missing): %s",
                         c->name, c->table_column, c->queue_column, c->paused_column,
                         c->paused_at_column ? ", " : "",
                         c->paused_at_column ? c->paused_at_column : "", why);
  }
  return rc;
}

/* The subscriptions' read, registered in the broker's statements and prepared once now. */
static int build_read(tabq_broker *b, tabq_controls_state *st, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  read_sql(&q, &st->c);
  int rc = q.st.status;
  if (rc) {
    rc = tabq__err_set(
        err, rc, st->c.name, "controls_read", "controls table %s: cannot build its read (%s)",
        st->c.name, rc == TABQ_DIALECT ? "the dialect renders no placeholders" : tabq_strerror(rc));
    tabq__adm_free(&q);
    return rc;
  }
  rc = tabq__stmt_register(&b->stmts, &q.st, "controls_read", st->c.name, &st->read, err);
  tabq__adm_free(&q);
  tabq_pconn *c;
  if (!rc && !(rc = tabq__pool_acquire(&b->pool, &c, err))) {
    tabq_prepared *p;
    rc = tabq__stmt_prepare(&b->stmts, b->drv, c, st->read, &p, err);
    tabq__pool_release(&b->pool, c);
  }
  return rc;
}

/* The controls table's channel where the dialect has notifications: each pause and resume
 * notifies it, whether or not this broker listens (a command's pause reaches listening services
 * at once); with listen_notify the broker listens on it from now on. */
static int listen_controls(tabq_broker *b, tabq_controls_state *st, tabq_error *err) {
  const tabq_dialect_v1 *d = b->plugin.plugin->dialect;
  if (!d->channel || !d->notify)
    return TABQ_OK; /* the poll interval alone */
  tabq_table as = {.size = sizeof(tabq_table)};
  as.name = st->c.name;
  int rc = tabq__channel_of(b, &as, st->channel, sizeof st->channel, err);
  if (rc && !b->listen_notify) { /* a name the dialect cannot make a channel of: no notify */
    st->channel[0] = '\0';
    tabq__err_clear(err);
    return TABQ_OK;
  }
  return rc || !b->listen_notify ? rc : tabq__listener_add(b, st->channel, st->c.name, err);
}

int tabq_set_controls(tabq_broker *b, const tabq_controls *controls, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !controls)
    return tabq__err_set(err, TABQ_INVALID, NULL, "controls",
                         "tabq_set_controls needs a broker and a controls table");
  tabq_controls_state *st = calloc(1, sizeof *st);
  if (!st)
    return tabq__err_set(err, TABQ_NOMEM, NULL, "controls", "cannot allocate the controls");
  const char *name = controls->name;
  int rc = take(controls, st, err);
  if (!rc && atomic_load(&b->shut))
    rc = tabq__err_set(err, TABQ_CLOSED, name, "controls", "the broker is shut down");
  if (!rc) {
    pthread_mutex_lock(&b->mu);
    if (b->controls)
      rc = tabq__err_set(err, TABQ_INVALID, name, "controls",
                         "tabq_set_controls: the broker has its controls table (%s) already; a "
                         "broker takes one, once",
                         b->controls->c.name);
    else if (b->subs)
      rc = tabq__err_set(err, TABQ_INVALID, name, "controls",
                         "tabq_set_controls: controls table %s comes after the broker's first "
                         "subscription (to table %s), which would not honour its pauses; give "
                         "the controls before subscribing",
                         name, b->subs->t->name);
    pthread_mutex_unlock(&b->mu);
  }
  const tabq_logger *outer = tabq__log_enter(&b->log);
  if (!rc)
    rc = verify(b, &st->c, err);
  if (!rc)
    rc = build_read(b, st, err);
  if (!rc)
    rc = listen_controls(b, st, err);
  tabq__log_leave(outer);
  if (!rc) {
    pthread_mutex_lock(&b->mu);
    if (b->controls || b->subs) /* another thread got there meanwhile */
      rc = tabq__err_set(err, TABQ_INVALID, name, "controls",
                         "tabq_set_controls: the broker got %s meanwhile, on another thread",
                         b->controls ? "its controls" : "a subscription");
    else
      b->controls = st;
    pthread_mutex_unlock(&b->mu);
  }
  if (rc) {
    free(st->names);
    free(st);
  }
  return rc;
}

/* ---- tabq_pause, tabq_resume, tabq_paused ------------------------------------------------- */

/* The call's table and queue by the rules; *st the broker's controls. */
static int target(tabq_broker *b, const tabq_table *table, const char *queue, const char *call,
                  tabq_table *t, tabq_controls_state **st, tabq_error *err) {
  if (!b || !table)
    return tabq__err_set(err, TABQ_INVALID, NULL, "controls", "%s needs a broker and a table",
                         call);
  int rc = tabq__table_take(table, t, err);
  if (!rc)
    rc = tabq__table_rules(t, err);
  if (rc)
    return rc;
  pthread_mutex_lock(&b->mu);
  *st = b->controls;
  pthread_mutex_unlock(&b->mu);
  if (!*st)
    return tabq__err_set(err, TABQ_INVALID, t->name, "controls",
                         "%s: table %s: the broker has no controls table to write pauses in; "
                         "give it one with tabq_set_controls first; nothing was changed",
                         call, t->name);
  if (t->group.name && (!queue || !*queue))
    return tabq__err_set(err, TABQ_INVALID, t->name, "controls",
                         "%s: table %s has a group column (%s): name the queue; nothing was "
                         "changed",
                         call, t->name, t->group.name);
  if (!t->group.name && queue && *queue)
    return tabq__err_set(err, TABQ_INVALID, t->name, "controls",
                         "%s: table %s has no group column, so it has no queue '%s': a pause "
                         "there takes the whole table (give no queue); nothing was changed",
                         call, t->name, queue);
  return tabq_admin_verify(b, t, NULL, err);
}

static ctl_vals vals_of(const tabq_table *t, const char *queue) {
  const char *q = t->group.name ? queue : "";
  ctl_vals v = {.table = tabq_text(t->name, strlen(t->name)), .queue = tabq_text(q, strlen(q))};
  return v;
}

/* One try of the write in a transaction of its own. */
static int write_once(tabq_broker *b, const tabq_controls_state *st, const ctl_vals *v,
                      tabq_error *err) {
  const tabq_controls *c = &st->c;
  tabq_tx *tx;
  int rc = tabq_begin(b, &tx, err);
  if (rc)
    return rc;
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  update_sql(&q, c);
  uint64_t changed = 0;
  rc = exec(tx, &q, v, c->name, &changed, err);
  tabq__adm_free(&q);
  int64_t there = changed ? 1 : 0;
  if (!rc && !there) {
    tabq__adm_init(&q, b);
    count_sql(&q, c);
    rc = query(tx, &q, v, c->name, count_of, &there, err);
    tabq__adm_free(&q);
  }
  if (!rc && !there) {
    tabq__adm_init(&q, b);
    insert_sql(&q, c);
    rc = exec(tx, &q, v, c->name, &changed, err);
    tabq__adm_free(&q);
  }
  if (!rc && st->channel[0]) { /* sent with the commit */
    tabq__adm_init(&q, b);
    tabq_build build = {.table = NULL};
    tabq_table as = {.size = sizeof(tabq_table)};
    as.name = c->name;
    build.table = &as;
    if (b->plugin.plugin->dialect->notify(&build, &q.st) && !q.st.status)
      q.st.status = TABQ_DIALECT;
    ctl_vals note = *v; /* the payload, bound as the group: the queue table's name */
    note.queue = v->table;
    rc = exec(tx, &q, &note, c->name, &changed, err);
    tabq__adm_free(&q);
  }
  tabq_error ignored;
  if (rc) {
    tabq_rollback(tx, &ignored);
    return rc;
  }
  return tabq_commit(tx, err);
}

static int set_paused(tabq_broker *b, const tabq_table *table, const char *queue, bool paused,
                      const char *call, tabq_error *err) {
  tabq__err_clear(err);
  tabq_table t;
  tabq_controls_state *st = NULL;
  int rc = target(b, table, queue, call, &t, &st, err);
  if (rc)
    return rc;
  ctl_vals v = vals_of(&t, queue);
  v.paused = paused;
  v.channel = tabq_text(st->channel, strlen(st->channel));
  rc = TABQ_BACKEND;
  for (int i = 0; rc && rc != TABQ_CLOSED && rc != TABQ_NOMEM && i < TRIES; i++) {
    v.paused_at = paused ? tabq_time(tabq__now_us()) : tabq_null();
    rc = write_once(b, st, &v, err);
  }
  if (!rc) /* this broker's own subscriptions of the queue: at once */
    tabq__controls_stale(b, t.name);
  return rc;
}

int tabq_pause(tabq_broker *b, const tabq_table *table, const char *queue, tabq_error *err) {
  return set_paused(b, table, queue, true, "tabq_pause", err);
}

int tabq_resume(tabq_broker *b, const tabq_table *table, const char *queue, tabq_error *err) {
  return set_paused(b, table, queue, false, "tabq_resume", err);
}

int tabq_paused(tabq_broker *b, const tabq_table *table, const char *queue, bool *paused,
                tabq_error *err) {
  tabq__err_clear(err);
  if (paused)
    *paused = false;
  if (!paused)
    return tabq__err_set(err, TABQ_INVALID, table ? table->name : NULL, "controls",
                         "tabq_paused needs somewhere to write its answer");
  tabq_table t;
  tabq_controls_state *st = NULL;
  int rc = target(b, table, queue, "tabq_paused", &t, &st, err);
  if (rc)
    return rc;
  ctl_vals v = vals_of(&t, queue);
  tabq_tx *tx;
  if ((rc = tabq_begin(b, &tx, err)))
    return rc;
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  read_sql(&q, &st->c);
  tabq_value cell = tabq_null();
  rc = query(tx, &q, &v, st->c.name, one_row, &cell, err);
  tabq__adm_free(&q);
  tabq_error ignored;
  tabq_rollback(tx, &ignored);
  int64_t n = 0;
  if (!rc)
    *paused = tabq__adm_int(&cell, &n) && n != 0;
  return rc;
}
