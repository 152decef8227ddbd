/* The tabq_tx API: transactions of the service's own (tabq_begin ... tabq_commit, the
 * transactional outbox: a business row and its job commit together, the publishes' wake-ups
 * wait for the commit), and the calls a handler makes on its delivery's transaction. The
 * handles themselves are tx_handle.c's: an ended one is handed out again by a later tabq_begin,
 * so a late call finds it ended, or owned by another thread, and fails (TABQ_INVALID). */
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "engine.h"
#include "publishing.h"
#include "error.h"
#include "sized.h"
#include "tx_handle.h"

static const char *const no_name = "(transaction)";

/* The most cells tabq_tx_query reads of a row (documented in tabq.h). */
#define TABQ_TX_MAX_COLS 64

/* The begin every service transaction runs: the dialect's, for a table at the default level. */
static int begin_sql(tabq_broker *b, tabq_error *err) {
  if (b->tx_begin_sql[0])
    return TABQ_OK;
  tabq_table plain = {.size = sizeof(tabq_table), .name = no_name};
  tabq_build build = {.table = &plain, .form = TABQ_FORM_LEASE};
  return tabq__txn_render_begin(b, &build, false, b->tx_begin_sql, sizeof b->tx_begin_sql, err);
}

int tabq_begin(tabq_broker *b, tabq_tx **out, tabq_error *err) {
  tabq__err_clear(err);
  if (out)
    *out = NULL;
  if (!b || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, "begin", "tabq_begin needs a broker and out");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  pthread_mutex_lock(&b->mu);
  int rc = begin_sql(b, err);
  tabq_tx *tx = rc ? NULL : tabq__tx_take(b);
  pthread_mutex_unlock(&b->mu);
  if (!rc && !tx)
    rc = tabq__err_set(err, TABQ_NOMEM, NULL, "begin", "cannot allocate a transaction");
  tabq_pconn *c = NULL;
  if (!rc && !(rc = tabq__pool_acquire(&b->pool, &c, err)) &&
      (rc = tabq__txn_begin(b, NULL, c, b->tx_begin_sql, err)))
    tabq__pool_release(&b->pool, c);
  if (rc) {
    if (tx)
      tabq__tx_give_back(tx);
  } else {
    tabq__tx_start(tx, c);
    *out = tx;
  }
  tabq__log_leave(outer);
  return rc;
}

/* Refuses a call on an ended handle, or from a thread other than its owner's. */
/* Prepares and runs the service's SQL; the caller reads the rows, then finalizes. */
static int run_own(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                   tabq_prepared **out, tabq_error *err) {
  const tabq_driver_v1 *drv = tx->b->drv;
  if (!sql)
    return tabq__err_set(err, TABQ_INVALID, NULL, "exec", "no SQL");
  if (n && !params)
    return tabq__err_set(err, TABQ_INVALID, NULL, "exec", "%u parameters but no values", n);
  int rc = tabq__values_bindable(&tx->b->plugin, params, n, NULL, "exec", err);
  if (rc)
    return rc;
  rc = tabq__pconn_check(tx->c, drv->prepare(tx->c->conn, sql, n, "service", out));
  if (!rc && (rc = tabq__pconn_check(tx->c, drv->execute(*out, params, n)))) {
    drv->finalize(*out);
    *out = NULL;
  }
  return rc ? tabq__err_from_plugin(err, rc, NULL, "exec") : TABQ_OK;
}

static int tx_exec(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                   uint64_t *changed, tabq_error *err) {
  int rc = tabq__tx_usable(tx, "tabq_tx_exec", err);
  tabq_prepared *p = NULL;
  if (!rc && !(rc = run_own(tx, sql, params, n, &p, err))) {
    if (changed)
      *changed = tx->b->drv->affected(p);
    tx->b->drv->finalize(p);
  }
  return rc;
}

static int tx_query(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                    unsigned ncols, tabq_row_fn row, void *user, tabq_error *err) {
  int rc = tabq__tx_usable(tx, "tabq_tx_query", err);
  if (!rc && (!row || ncols > TABQ_TX_MAX_COLS))
    rc = tabq__err_set(err, TABQ_INVALID, NULL, "query",
                       "tabq_tx_query needs a row callback and at most %d columns",
                       TABQ_TX_MAX_COLS);
  tabq_prepared *p = NULL;
  if (rc || (rc = run_own(tx, sql, params, n, &p, err)))
    return rc;
  const tabq_driver_v1 *drv = tx->b->drv;
  tabq_value cells[TABQ_TX_MAX_COLS];
  bool more = false;
  while (!rc && !(rc = drv->next(p, &more)) && more) {
    for (unsigned i = 0; !rc && i < ncols; i++)
      rc = drv->cell(p, i, &cells[i]);
    if (rc)
      break;
    int stop = row(user, cells, ncols);
    if (stop) {
      drv->finalize(p);
      return stop;
    }
  }
  drv->finalize(p);
  return rc ? tabq__err_from_plugin(err, rc, NULL, "query") : TABQ_OK;
}

int tabq_publish_tx(tabq_tx *tx, const tabq_table *table, const tabq_message *message,
                    tabq_error *err) {
  int rc = tabq__tx_usable(tx, "tabq_publish_tx", err);
  if (rc)
    return rc;
  if (!table || !message)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert",
                         "tabq_publish_tx needs a table and a message");
  tabq_broker *b = tx->b;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  tabq_publisher *p;
  pthread_mutex_lock(&b->mu);
  rc = tabq__publisher_of(b, table, tx->c, &p, err);
  pthread_mutex_unlock(&b->mu);
  tabq_message m;
  if (!rc)
    rc = TABQ_TAKE(message, &m, TABQ_MESSAGE_SIZE_1_0, table->name, err);
  if (!rc)
    rc = tabq__publish_on(b, p, tx->c, &m, &tx->headers, err);
  if (!rc)
    rc = tabq__tx_keep_wake(tx, &p->table, m.group, err);
  tabq__log_leave(outer);
  return rc;
}

/* Ends the handle: the transaction (woken on a commit), the connection back to the pool, the
 * handle to the broker's free list. */
static void end(tabq_tx *tx, bool committed) {
  tabq_pconn *c = tx->c;
  tabq__tx_close(tx, committed);
  tabq__pool_release(&tx->b->pool, c);
  tabq__tx_give_back(tx);
}

/* A delivery's transaction ends with its settlement, not by the handler's hand. */
static int bound(const tabq_tx *tx, const char *call, tabq_error *err) {
  return tabq__err_set(err, TABQ_INVALID, tx->d->sub->t->name, call,
                       "%s: a delivery's transaction ends with its settlement: return the "
                       "outcome (an ack commits the handler's writes, any other rolls them back)",
                       call);
}

int tabq_commit(tabq_tx *tx, tabq_error *err) {
  int rc = tabq__tx_usable(tx, "tabq_commit", err);
  if (rc)
    return rc;
  if (tx->d)
    return bound(tx, "tabq_commit", err);
  tabq_broker *b = tx->b;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  rc = tabq__txn_end(b, NULL, tx->c, TABQ_OK, err);
  end(tx, rc == TABQ_OK);
  tabq__log_leave(outer);
  return rc;
}

static int rollback(tabq_tx *tx, tabq_error *err) {
  int rc = tabq__tx_usable(tx, "tabq_rollback", err);
  if (rc)
    return rc;
  if (tx->d)
    return bound(tx, "tabq_rollback", err);
  if (!tabq__txn_rollback(tx->b, NULL, tx->c))
    rc = tabq__err_set(err, TABQ_BACKEND, NULL, "rollback",
                       "the rollback failed; the connection is closed, which ends the transaction");
  end(tx, false);
  return rc;
}

/* The calls on a transaction run in the service's thread: a plugin before ABI 1.6 logs to the
 * broker that thread works for, named around each call (log.h). */
int tabq_tx_exec(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                 uint64_t *changed, tabq_error *err) {
  const tabq_logger *outer = tx ? tabq__log_enter(&tx->b->log) : NULL;
  int rc = tx_exec(tx, sql, params, n, changed, err);
  if (tx)
    tabq__log_leave(outer);
  return rc;
}

int tabq_tx_query(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                  unsigned ncols, tabq_row_fn row, void *user, tabq_error *err) {
  const tabq_logger *outer = tx ? tabq__log_enter(&tx->b->log) : NULL;
  int rc = tx_query(tx, sql, params, n, ncols, row, user, err);
  if (tx)
    tabq__log_leave(outer);
  return rc;
}

int tabq_rollback(tabq_tx *tx, tabq_error *err) {
  const tabq_logger *outer = tx ? tabq__log_enter(&tx->b->log) : NULL;
  int rc = rollback(tx, err);
  if (tx)
    tabq__log_leave(outer);
  return rc;
}

tabq_tx *tabq_delivery_tx(tabq_delivery *d) {
  return d && d->tx && atomic_load(&d->tx->open) ? d->tx : NULL;
}
