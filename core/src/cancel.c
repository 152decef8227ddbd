/* tabq_cancel (tabq/cancel.h, docs/cancel.md): a row not in work is finished at once, deleted or
 * given its processed_at (and its cancel mark), so no claim takes it again; a row in work is
 * marked for its delivery, whose settlement then becomes a drop. Whether a row is in work is
 * decided by the statement that changes it, never by a read before it, so a claim running at the
 * same time cannot slip between the two:
 *
 *   lease     in work while locked_until > now: the finish and the mark each carry the
 *             condition, and the one that matches wins;
 *   advisory  the hold is a lock on a key, which no statement sees without taking it: the row is
 *             finished and marked in one statement whether or not it is in work, and a delivery
 *             that holds it reads the mark (the table needs the cancelled_at role);
 *   row lock  the row is taken FOR UPDATE SKIP LOCKED first: a row locked by a delivery's
 *             transaction is skipped rather than waited for, and then reached only where the
 *             delivery is this broker's (in the process); elsewhere the cancel is refused.
 *
 * The statements are built in the core with the dialect's quoting and placeholders
 * (admin_sql.h), each run in a transaction of the broker's own. */
#include <stdio.h>
#include <string.h>

#include "admin_sql.h"
#include "clock.h"
#include "engine.h"
#include "error.h"
#include "sized.h"

/* What one try found. */
typedef enum found {
  FINISHED, /* a row not in work: finished now */
  MARKED,   /* a row in work: its mark written */
  ABSENT,   /* no unfinished row has the id */
  IN_WORK,  /* a row in work, not marked (no role, or a row lock) */
  MOVED,    /* neither statement matched, yet the row is there: it changed hands between them */
} found;

/* A try changes at most this many times its mind before it gives up (each retry follows a row
 * that moved between two statements, which a claim or an expiry makes rare). */
#define TRIES 4

static void where_id(tabq_adm_sql *q, const tabq_table *t) {
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_ID);
  tabq__adm_unfinished(q, t);
}

/* Finishes the row as a drop would: "DELETE FROM t WHERE id = :id", or "UPDATE t SET
 * processed_at = :now[, cancelled_at = :now] WHERE id = :id AND processed_at IS NULL". */
static void finish(tabq_adm_sql *q, const tabq_table *t) {
  if (!t->processed_at.name) {
    tabq__adm_raw(q, "DELETE FROM ");
    tabq__adm_name(q, t->name);
  } else {
    tabq__adm_raw(q, "UPDATE ");
    tabq__adm_name(q, t->name);
    tabq__adm_raw(q, " SET ");
    tabq__adm_name(q, t->processed_at.name);
    tabq__adm_raw(q, " = ");
    tabq__adm_param(q, TABQ_P_NOW);
    if (t->cancelled_at.name) {
      tabq__adm_raw(q, ", ");
      tabq__adm_name(q, t->cancelled_at.name);
      tabq__adm_raw(q, " = ");
      tabq__adm_param(q, TABQ_P_NOW);
    }
  }
  where_id(q, t);
}

/* " AND (locked_until IS NULL OR locked_until <= :now)", or with `held` " AND locked_until >
 * :now": whether the row's lease is free, or held. */
static void lease_is(tabq_adm_sql *q, const tabq_table *t, bool held) {
  if (held) {
    tabq__adm_raw(q, " AND ");
    tabq__adm_name(q, t->locked_until.name);
    tabq__adm_raw(q, " > ");
    tabq__adm_param(q, TABQ_P_NOW);
    return;
  }
  tabq__adm_raw(q, " AND (");
  tabq__adm_name(q, t->locked_until.name);
  tabq__adm_raw(q, " IS NULL OR ");
  tabq__adm_name(q, t->locked_until.name);
  tabq__adm_raw(q, " <= ");
  tabq__adm_param(q, TABQ_P_NOW);
  tabq__adm_raw(q, ")");
}

/* "UPDATE t SET cancelled_at = :now WHERE id = :id [AND processed_at IS NULL]" */
static void mark(tabq_adm_sql *q, const tabq_table *t) {
  tabq__adm_raw(q, "UPDATE ");
  tabq__adm_name(q, t->name);
  tabq__adm_raw(q, " SET ");
  tabq__adm_name(q, t->cancelled_at.name);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_NOW);
  where_id(q, t);
}

/* "SELECT COUNT(*) FROM t WHERE id = :id [AND processed_at IS NULL]" */
static void count_unfinished(tabq_adm_sql *q, const tabq_table *t) {
  tabq__adm_raw(q, "SELECT COUNT(*) FROM ");
  tabq__adm_name(q, t->name);
  where_id(q, t);
}

/* Runs statement `build` on tx: *changed the rows it changed. */
static int run(tabq_broker *b, tabq_tx *tx, const tabq_table *t, const tabq_adm_vals *v,
               void (*build)(tabq_adm_sql *, const tabq_table *), bool held_lease, int lease,
               uint64_t *changed, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  build(&q, t);
  if (lease)
    lease_is(&q, t, held_lease);
  int rc = tabq__adm_exec(tx, &q, v, changed, err);
  tabq__adm_free(&q);
  return rc;
}

static int unfinished(tabq_broker *b, tabq_tx *tx, const tabq_table *t, const tabq_adm_vals *v,
                      bool *there, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  count_unfinished(&q, t);
  int64_t n = 0;
  int rc = tabq__adm_count(tx, &q, v, &n, err);
  tabq__adm_free(&q);
  *there = n > 0;
  return rc;
}

static int lease_try(tabq_broker *b, tabq_tx *tx, const tabq_table *t, const tabq_adm_vals *v,
                     found *f, tabq_error *err) {
  uint64_t changed = 0;
  int rc = run(b, tx, t, v, finish, false, true, &changed, err);
  if (!rc && changed) {
    *f = FINISHED;
    return TABQ_OK;
  }
  if (!rc && t->cancelled_at.name && !(rc = run(b, tx, t, v, mark, true, true, &changed, err)) &&
      changed) {
    *f = MARKED;
    return TABQ_OK;
  }
  bool there = false;
  if (!rc)
    rc = unfinished(b, tx, t, v, &there, err);
  *f = !there ? ABSENT : t->cancelled_at.name ? MOVED : IN_WORK;
  return rc;
}

static int advisory_try(tabq_broker *b, tabq_tx *tx, const tabq_table *t, const tabq_adm_vals *v,
                        found *f, tabq_error *err) {
  uint64_t changed = 0;
  int rc = run(b, tx, t, v, finish, false, false, &changed, err);
  *f = changed ? FINISHED : ABSENT;
  return rc;
}

/* "SELECT id FROM t WHERE id = :id [AND processed_at IS NULL] FOR UPDATE SKIP LOCKED": the row,
 * locked for this transaction, unless a delivery's transaction holds it. */
static void probe(tabq_adm_sql *q, const tabq_table *t) {
  tabq__adm_raw(q, "SELECT ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " FROM ");
  tabq__adm_name(q, t->name);
  where_id(q, t);
  tabq__adm_raw(q, " FOR UPDATE SKIP LOCKED");
}

static int count_row(void *user, const tabq_value *cells, unsigned ncols) {
  (void)cells;
  (void)ncols;
  (*(int64_t *)user)++;
  return 0;
}

static int rowlock_try(tabq_broker *b, tabq_tx *tx, const tabq_table *t, const tabq_adm_vals *v,
                       found *f, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  probe(&q, t);
  int64_t free_rows = 0;
  int rc = tabq__adm_query(tx, &q, v, 1, count_row, &free_rows, err);
  tabq__adm_free(&q);
  if (!rc && free_rows > 0) {
    uint64_t changed = 0;
    rc = run(b, tx, t, v, finish, false, false, &changed, err);
    *f = changed ? FINISHED : MOVED;
    return rc;
  }
  bool there = false;
  if (!rc)
    rc = unfinished(b, tx, t, v, &there, err);
  *f = there ? IN_WORK : ABSENT;
  return rc;
}

/* One try in a transaction of its own: committed when it changed the row, else rolled back. */
static int one_try(tabq_broker *b, const tabq_table *t, tabq_form form, const tabq_adm_vals *v,
                   found *f, tabq_error *err) {
  tabq_tx *tx;
  int rc = tabq_begin(b, &tx, err);
  if (rc)
    return rc;
  if (form == TABQ_FORM_LEASE)
    rc = lease_try(b, tx, t, v, f, err);
  else if (form == TABQ_FORM_ADVISORY)
    rc = advisory_try(b, tx, t, v, f, err);
  else
    rc = rowlock_try(b, tx, t, v, f, err);
  tabq_error ignored;
  if (!rc && (*f == FINISHED || *f == MARKED))
    return tabq_commit(tx, err);
  tabq_rollback(tx, &ignored);
  return rc;
}

static const char *form_name(tabq_form form) {
  return form == TABQ_FORM_LEASE      ? "lease"
         : form == TABQ_FORM_ADVISORY ? "advisory lock"
                                      : "row lock";
}

/* The id as text, for messages. */
static void id_text(const tabq_value *id, char *out, size_t cap) {
  if (id->type == TABQ_T_INT)
    snprintf(out, cap, "%lld", (long long)id->u.i);
  else
    snprintf(out, cap, "'%.*s'", (int)(id->u.buf.len > 64 ? 64 : id->u.buf.len),
             (const char *)id->u.buf.ptr);
}

int tabq_cancel(tabq_broker *b, const tabq_table *table, tabq_value id, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table)
    return tabq__err_set(err, TABQ_INVALID, NULL, "cancel",
                         "tabq_cancel needs a broker and a table");
  tabq_table t;
  int rc = tabq__table_take(table, &t, err);
  if (!rc)
    rc = tabq__table_rules(&t, err);
  if (rc)
    return rc;
  if (id.type != TABQ_T_INT && id.type != TABQ_T_TEXT)
    return tabq__err_set(err, TABQ_INVALID, t.name, "cancel",
                         "table %s: a cancel names its row by the id, an integer or text "
                         "(tabq_int, tabq_text), not a value of type %s",
                         t.name, tabq__type_name(id.type));
  tabq_form form = tabq_table_form(&t);
  const tabq_form_ops *ops = form == TABQ_FORM_LEASE      ? &tabq_lease_ops
                             : form == TABQ_FORM_ADVISORY ? &tabq_advisory_ops
                                                          : &tabq_rowlock_ops;
  if (!ops->served(b->plugin.plugin))
    return tabq__err_set(err, TABQ_DIALECT, t.name, "cancel",
                         "table %s takes its rows in the %s form, which the %s dialect does not "
                         "serve; nothing was cancelled",
                         t.name, form_name(form), tabq_dialect_name(b));
  /* The advisory form cannot tell a row in work from a queued one (its hold is a lock on a key
   * no statement sees without taking it), so every cancel there may reach a delivery. */
  if (form == TABQ_FORM_ADVISORY && !t.cancelled_at.name)
    return tabq__err_set(err, TABQ_DECLARATION, t.name, "cancel",
                         "table %s (advisory lock form) has no cancelled_at role: a cancel there "
                         "may reach a row in work, whose delivery learns it from that column; "
                         "describe one (a nullable time column) to cancel; nothing was cancelled",
                         t.name);
  tabq_adm_vals v = {.id = id, .now = tabq__now_us()};
  found f = MOVED;
  for (int i = 0; !rc && f == MOVED && i < TRIES; i++) {
    v.now = tabq__now_us();
    rc = one_try(b, &t, form, &v, &f, err);
  }
  if (rc)
    return rc;
  char shown[80];
  id_text(&id, shown, sizeof shown);
  switch (f) {
  case FINISHED:
    tabq__cancel_tell(b, t.name, &id, TABQ__CANCEL_FINISHED); /* an expired lease still running */
    return TABQ_OK;
  case MARKED:
    tabq__cancel_tell(b, t.name, &id, TABQ__CANCEL_MARKED);
    return TABQ_OK;
  case ABSENT:
    return tabq__err_set(err, TABQ_NOT_FOUND, t.name, "cancel",
                         "table %s has no unfinished row with id %s; nothing was changed", t.name,
                         shown);
  case MOVED:
    return tabq__err_set(err, TABQ_BACKEND, t.name, "cancel",
                         "table %s: row %s changed hands %d times while it was cancelled; "
                         "nothing was changed, try again",
                         t.name, shown, TRIES);
  case IN_WORK:
    break;
  }
  if (form == TABQ_FORM_LEASE)
    return tabq__err_set(err, TABQ_DECLARATION, t.name, "cancel",
                         "table %s: row %s is in work (its lease holds), and the table has no "
                         "cancelled_at role to mark it for its handler; describe one (a nullable "
                         "time column) to cancel rows in work; nothing was changed",
                         t.name, shown);
  /* Row lock: the delivery's transaction holds the row. This broker's own delivery learns it in
   * the process; another's cannot without waiting for its handler. */
  if (tabq__cancel_tell(b, t.name, &id, TABQ__CANCEL_MARKED))
    return TABQ_OK;
  return tabq__err_set(err, TABQ_TRANSACTION_HELD, t.name, "cancel",
                       "table %s: row %s is in work under a row lock held by another broker's "
                       "delivery (its transaction locks the row, and a cancel will not wait for "
                       "the handler); nothing was changed: cancel it from the process that "
                       "runs it, again once it settles, or use the lease or advisory form",
                       t.name, shown);
}
