/* A cancel as the deliveries see it (docs/cancel.md): what a delivery knows of a cancel of its
 * row, how it learns it (the lease extender's read, the handler's check, the settlement's read,
 * or the broker that cancelled telling it in the process), and the drop its settlement becomes.
 * Every read here runs only where the table has the cancelled_at role: without it a cancel
 * costs the hot path nothing. */
#include <string.h>

#include <tabq/sys/sql.h>

#include "engine.h"
#include "error.h"

static void name(tabq_stmt *st, const tabq_dialect_v1 *d, const char *n) {
  if (!st->status && d->quote(st, n))
    st->status = TABQ_INVALID;
}

/* "SELECT cancelled_at[, processed_at] FROM t WHERE id = :id", in the dialect's quoting and
 * placeholders. */
int tabq__cancel_open(tabq_subscription *s, tabq_error *err) {
  const tabq_table *t = s->t;
  if (!t->cancelled_at.name || !s->ops->cancel_in_row)
    return TABQ_OK;
  const tabq_dialect_v1 *d = s->b->plugin.plugin->dialect;
  tabq_stmt st;
  tabq_sql_init(&st, s->b->host);
  tabq_sql_raw(&st, "SELECT ");
  name(&st, d, t->cancelled_at.name);
  if (t->processed_at.name) {
    tabq_sql_raw(&st, ", ");
    name(&st, d, t->processed_at.name);
  }
  tabq_sql_raw(&st, " FROM ");
  name(&st, d, t->name);
  tabq_sql_raw(&st, " WHERE ");
  name(&st, d, t->id.name);
  tabq_sql_raw(&st, " = ");
  if (!st.status && (!d->placeholder || d->placeholder(&st, TABQ_P_ID)))
    st.status = d->placeholder ? TABQ_INVALID : TABQ_DIALECT;
  int rc = st.status;
  if (rc)
    rc = tabq__err_set(err, rc, t->name, "cancel_read",
                       "table %s: cannot build the read of the cancelled_at column (%s)", t->name,
                       rc == TABQ_DIALECT ? "the dialect renders no placeholders"
                                          : tabq_strerror(rc));
  else
    rc = tabq__stmt_register(s->reg, &st, "cancel_read", t->name, &s->st[SQ_CANCEL_READ], err);
  tabq_sql_free(&st);
  return rc;
}

/* Reads d's row on c: TABQ__CANCEL_MARKED for a row marked and still unfinished,
 * TABQ__CANCEL_FINISHED for one finished (processed_at) or gone, NONE for one in the queue's
 * hands; a failed read is NONE (the settlement then goes as the handler asked, and says why it
 * fails if it does). */
static int read_mark(tabq_delivery *d, tabq_pconn *c) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_bind v = {.id = d->id};
  tabq_prepared *p = NULL;
  tabq_error err;
  if (tabq__stmt_run(&b->stmts, b->drv, c, s->st[SQ_CANCEL_READ], &v, &p, &err)) {
    tabq__logf(&b->log, TABQ_LOG_WARN, "table %s: the read of a row's cancel mark failed: %s",
               s->t->name, err.message);
    return TABQ__CANCEL_NONE;
  }
  bool row = false;
  tabq_value mark = tabq_null(), done = tabq_null();
  int state = TABQ__CANCEL_NONE;
  int rc = b->drv->next(p, &row);
  if (!rc && row && !(rc = b->drv->cell(p, 0, &mark)) && s->t->processed_at.name)
    rc = b->drv->cell(p, 1, &done);
  if (!rc && !row)
    state = TABQ__CANCEL_FINISHED; /* gone: deleted by a cancel of a table without processed_at */
  else if (!rc && done.type != TABQ_T_NULL)
    state = TABQ__CANCEL_FINISHED;
  else if (!rc && mark.type != TABQ_T_NULL)
    state = TABQ__CANCEL_MARKED;
  b->drv->reset(p);
  return state;
}

static bool reads(const tabq_subscription *s) {
  return s->st[SQ_CANCEL_READ] != TABQ_NO_STMT;
}

tabq_outcome tabq__cancel_outcome(tabq_delivery *d, tabq_outcome o) {
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  int known = d->in_work ? d->cancel : TABQ__CANCEL_NONE;
  /* The advisory form reads on the key's connection, which only this thread and shutdown (under
   * mu) use; the lease form holds none and reads on a pooled one. */
  if (d->in_work && !known && reads(s) && d->conn)
    known = d->cancel = read_mark(d, d->conn);
  bool pooled = d->in_work && !known && reads(s) && !d->conn;
  pthread_mutex_unlock(&d->mu);
  if (pooled) {
    tabq_pconn *c;
    tabq_error err;
    if (!tabq__pool_acquire(&s->b->pool, &c, &err)) {
      int state = read_mark(d, c);
      tabq__pool_release(&s->b->pool, c);
      pthread_mutex_lock(&d->mu);
      if (d->in_work && !d->cancel)
        d->cancel = state;
      known = d->cancel;
      pthread_mutex_unlock(&d->mu);
    }
  }
  return known ? tabq_drop() : o;
}

void tabq__cancel_after_extension(tabq_delivery *d, tabq_pconn *c) {
  if (!reads(d->sub))
    return;
  pthread_mutex_lock(&d->mu);
  bool ask = d->in_work && !d->cancel;
  pthread_mutex_unlock(&d->mu);
  if (!ask)
    return;
  int state = read_mark(d, c);
  pthread_mutex_lock(&d->mu);
  if (d->in_work && !d->cancel)
    d->cancel = state;
  pthread_mutex_unlock(&d->mu);
}

bool tabq_delivery_cancelled(tabq_delivery *d) {
  if (!d || !d->sub)
    return false;
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  if (d->in_work && !d->cancel && s->ops->cancel_check_reads && reads(s) && d->conn)
    d->cancel = read_mark(d, d->conn);
  bool cancelled = d->cancel != TABQ__CANCEL_NONE;
  pthread_mutex_unlock(&d->mu);
  return cancelled;
}

unsigned tabq__cancel_tell(tabq_broker *b, const char *name, const tabq_value *id, int state) {
  unsigned told = 0;
  pthread_mutex_lock(&b->mu);
  for (tabq_subscription *s = b->subs; s; s = s->next) {
    if (strcmp(s->t->name, name))
      continue;
    for (unsigned i = 0; i < s->nslots; i++) {
      tabq_delivery *d = &s->slots[i];
      pthread_mutex_lock(&d->mu);
      if (d->in_work && tabq__same_id(&d->id, id)) {
        if (d->cancel != TABQ__CANCEL_FINISHED)
          d->cancel = state;
        told++;
      }
      pthread_mutex_unlock(&d->mu);
    }
  }
  pthread_mutex_unlock(&b->mu);
  return told;
}
