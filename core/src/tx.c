/* Transactions of the service's own (tabq_begin ... tabq_commit): the transactional outbox. A
 * business row and its job commit together; the publishes' wake-ups wait for the commit.
 *
 * Handles live as long as the broker: an ended one goes back to the broker's free list and is
 * handed out again by a later tabq_begin. A call on a handle after its commit therefore finds it
 * ended (TABQ_INVALID), or, once reused by another thread, owned by that thread (TABQ_INVALID
 * too): a late call is an error, never a read of freed memory. */
#include <stdlib.h>
#include <string.h>
#include <tabq/sql.h>

#include "engine.h"
#include "error.h"
#include "sized.h"

/* A publish's wake-up, kept for the commit: the table and where its group starts in `groups`. */
typedef struct tx_wake {
  const tabq_table *t;
  size_t group_at;
  bool has_group;
} tx_wake;

struct tabq_tx {
  tabq_broker *b;
  tabq_pconn *c;
  pthread_t owner;
  atomic_bool open; /* read by the shutdown path while a handler runs */
  tabq_delivery *d; /* a delivery's transaction (transactional mode), else NULL */
  tabq_buf wakes;   /* tx_wake entries */
  tabq_buf groups;  /* their groups, NUL-terminated one after another */
  tabq_buf headers; /* a publish's headers, reused */
  tabq_tx *next;    /* every handle of the broker */
  tabq_tx *next_free;
};

static const char *const no_name = "(transaction)";

/* The most cells tabq_tx_query reads of a row (documented in tabq.h). */
#define TABQ_TX_MAX_COLS 64

/* The begin every service transaction runs: the dialect's, for a table at the default level. */
static int begin_sql(tabq_broker *b, tabq_error *err) {
  if (b->tx_begin_sql[0])
    return TABQ_OK;
  tabq_table plain = {.size = sizeof(tabq_table), .name = no_name};
  tabq_build build = {.table = &plain, .form = TABQ_FORM_LEASE};
  return tabq_txn_render_begin(b, &build, false, b->tx_begin_sql, sizeof b->tx_begin_sql, err);
}

/* A free handle, or a new one kept on the broker's list. Called with b->mu held. */
static tabq_tx *handle(tabq_broker *b) {
  tabq_tx *tx = b->free_txs;
  if (tx) {
    b->free_txs = tx->next_free;
    return tx;
  }
  if (!(tx = calloc(1, sizeof *tx)))
    return NULL;
  tx->b = b;
  tx->next = b->txs;
  b->txs = tx;
  return tx;
}

static void give_back(tabq_tx *tx) {
  tabq_broker *b = tx->b;
  pthread_mutex_lock(&b->mu);
  tx->next_free = b->free_txs;
  b->free_txs = tx;
  pthread_mutex_unlock(&b->mu);
}

void tabq_txs_free(tabq_broker *b) {
  for (tabq_tx *tx = b->txs, *next; tx; tx = next) {
    next = tx->next;
    if (atomic_load(&tx->open) && tx->c) { /* never ended: its connection goes with the pool */
      b->drv->rollback(tx->c->conn);
      tabq_pool_release(&b->pool, tx->c);
    }
    tabq_buf_free(&tx->wakes);
    tabq_buf_free(&tx->groups);
    tabq_buf_free(&tx->headers);
    free(tx);
  }
  b->txs = b->free_txs = NULL;
}

int tabq_begin(tabq_broker *b, tabq_tx **out, tabq_error *err) {
  tabq_err_clear(err);
  if (out)
    *out = NULL;
  if (!b || !out)
    return tabq_err_set(err, TABQ_INVALID, NULL, "begin", "tabq_begin needs a broker and out");
  const tabq_logger *outer = tabq_log_enter(&b->log);
  pthread_mutex_lock(&b->mu);
  int rc = begin_sql(b, err);
  tabq_tx *tx = rc ? NULL : handle(b);
  pthread_mutex_unlock(&b->mu);
  if (!rc && !tx)
    rc = tabq_err_set(err, TABQ_NOMEM, NULL, "begin", "cannot allocate a transaction");
  tabq_pconn *c = NULL;
  if (!rc && !(rc = tabq_pool_acquire(&b->pool, &c, err)) &&
      (rc = tabq_txn_begin(b, NULL, c, b->tx_begin_sql, err)))
    tabq_pool_release(&b->pool, c);
  if (rc) {
    if (tx)
      give_back(tx);
  } else {
    tx->c = c;
    tx->owner = pthread_self();
    atomic_store(&tx->open, true);
    tx->wakes.len = tx->groups.len = 0;
    *out = tx;
  }
  tabq_log_leave(outer);
  return rc;
}

/* Refuses a call on an ended handle, or from a thread other than its owner's. */
static int usable(const tabq_tx *tx, const char *call, tabq_error *err) {
  tabq_err_clear(err);
  if (!tx)
    return tabq_err_set(err, TABQ_INVALID, NULL, call, "%s needs a transaction", call);
  if (tx->d && !atomic_load(&tx->open))
    return tabq_err_set(err, TABQ_TRANSACTION_HELD, tx->d->sub->t->name, call,
                        "%s: the delivery's transaction ended with its settlement; a handler "
                        "uses it only until it returns",
                        call);
  if (!atomic_load(&tx->open) || !pthread_equal(tx->owner, pthread_self()))
    return tabq_err_set(err, TABQ_INVALID, NULL, call, "%s: the transaction %s", call,
                        !atomic_load(&tx->open)
                            ? "has ended (committed or rolled back)"
                            : "belongs to another thread (a transaction is used from the "
                              "thread that began it)");
  return TABQ_OK;
}

/* Prepares and runs the service's SQL; the caller reads the rows, then finalizes. */
static int run_own(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                   tabq_prepared **out, tabq_error *err) {
  const tabq_driver_v1 *drv = tx->b->drv;
  if (!sql)
    return tabq_err_set(err, TABQ_INVALID, NULL, "exec", "no SQL");
  if (n && !params)
    return tabq_err_set(err, TABQ_INVALID, NULL, "exec", "%u parameters but no values", n);
  int rc = tabq_values_bindable(tx->b, params, n, NULL, "exec", err);
  if (rc)
    return rc;
  rc = tabq_pconn_check(tx->c, drv->prepare(tx->c->conn, sql, n, "service", out));
  if (!rc && (rc = tabq_pconn_check(tx->c, drv->execute(*out, params, n)))) {
    drv->finalize(*out);
    *out = NULL;
  }
  return rc ? tabq_err_from_plugin(err, rc, NULL, "exec") : TABQ_OK;
}

int tabq_tx_exec(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                 uint64_t *changed, tabq_error *err) {
  int rc = usable(tx, "tabq_tx_exec", err);
  tabq_prepared *p = NULL;
  if (!rc && !(rc = run_own(tx, sql, params, n, &p, err))) {
    if (changed)
      *changed = tx->b->drv->affected(p);
    tx->b->drv->finalize(p);
  }
  return rc;
}

int tabq_tx_query(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                  unsigned ncols, tabq_row_fn row, void *user, tabq_error *err) {
  int rc = usable(tx, "tabq_tx_query", err);
  if (!rc && (!row || ncols > TABQ_TX_MAX_COLS))
    rc =
        tabq_err_set(err, TABQ_INVALID, NULL, "query",
                     "tabq_tx_query needs a row callback and at most %d columns", TABQ_TX_MAX_COLS);
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
  return rc ? tabq_err_from_plugin(err, rc, NULL, "query") : TABQ_OK;
}

/* Keeps a publish's wake-up for the commit. */
static int keep_wake(tabq_tx *tx, const tabq_table *t, const char *group, tabq_error *err) {
  size_t glen = group ? strlen(group) + 1 : 0;
  if (tabq_buf_reserve(&tx->wakes, tx->wakes.len + sizeof(tx_wake)) ||
      tabq_buf_reserve(&tx->groups, tx->groups.len + glen))
    return tabq_err_set(err, TABQ_NOMEM, t->name, "insert", "cannot keep the wake-up");
  tx_wake w = {.t = t, .group_at = tx->groups.len, .has_group = group != NULL};
  memcpy(tx->wakes.p + tx->wakes.len, &w, sizeof w);
  tx->wakes.len += sizeof w;
  if (group)
    memcpy(tx->groups.p + tx->groups.len, group, glen);
  tx->groups.len += glen;
  return TABQ_OK;
}

int tabq_publish_tx(tabq_tx *tx, const tabq_table *table, const tabq_message *message,
                    tabq_error *err) {
  int rc = usable(tx, "tabq_publish_tx", err);
  if (rc)
    return rc;
  if (!table || !message)
    return tabq_err_set(err, TABQ_INVALID, NULL, "insert",
                        "tabq_publish_tx needs a table and a message");
  tabq_broker *b = tx->b;
  const tabq_logger *outer = tabq_log_enter(&b->log);
  tabq_publisher *p;
  pthread_mutex_lock(&b->mu);
  rc = tabq_publisher_of(b, table, tx->c, &p, err);
  pthread_mutex_unlock(&b->mu);
  tabq_message m;
  if (!rc)
    rc = TABQ_TAKE(message, &m, TABQ_MESSAGE_SIZE_1_0, table->name, err);
  if (!rc)
    rc = tabq_publish_on(b, p, tx->c, &m, &tx->headers, err);
  if (!rc)
    rc = keep_wake(tx, &p->table, m.group, err);
  tabq_log_leave(outer);
  return rc;
}

/* The wake-ups of the rows the transaction published, after its commit. */
static void wake_all(tabq_tx *tx) {
  for (size_t at = 0; at < tx->wakes.len; at += sizeof(tx_wake)) {
    tx_wake w;
    memcpy(&w, tx->wakes.p + at, sizeof w);
    tabq_publish_wake(tx->b, w.t, w.has_group ? tx->groups.p + w.group_at : NULL);
  }
  tx->wakes.len = tx->groups.len = 0;
}

/* Ends the handle: the connection back to the pool, the handle to the broker's free list. */
static void end(tabq_tx *tx) {
  tabq_pool_release(&tx->b->pool, tx->c);
  tx->c = NULL;
  atomic_store(&tx->open, false);
  give_back(tx);
}

/* A delivery's transaction ends with its settlement, not by the handler's hand. */
static int bound(const tabq_tx *tx, const char *call, tabq_error *err) {
  return tabq_err_set(err, TABQ_INVALID, tx->d->sub->t->name, call,
                      "%s: a delivery's transaction ends with its settlement: return the "
                      "outcome (an ack commits the handler's writes, any other rolls them back)",
                      call);
}

int tabq_commit(tabq_tx *tx, tabq_error *err) {
  int rc = usable(tx, "tabq_commit", err);
  if (rc)
    return rc;
  if (tx->d)
    return bound(tx, "tabq_commit", err);
  tabq_broker *b = tx->b;
  const tabq_logger *outer = tabq_log_enter(&b->log);
  if ((rc = tabq_txn_commit(b, NULL, tx->c, err)))
    tabq_txn_rollback(b, NULL, tx->c);
  else
    wake_all(tx);
  end(tx);
  tabq_log_leave(outer);
  return rc;
}

int tabq_rollback(tabq_tx *tx, tabq_error *err) {
  int rc = usable(tx, "tabq_rollback", err);
  if (rc)
    return rc;
  if (tx->d)
    return bound(tx, "tabq_rollback", err);
  if (!tabq_txn_rollback(tx->b, NULL, tx->c))
    rc = tabq_err_set(err, TABQ_BACKEND, NULL, "rollback",
                      "the rollback failed; the connection is closed, which ends the transaction");
  end(tx);
  return rc;
}

/* ---- A delivery's transaction (transactional mode) ---------------------------------------- */

/* The savepoint a row lock delivery's transaction rolls back to for any outcome but an ack: the
 * claim's writes (the counted attempt) before it stay. */
static const char *const savepoint = "SAVEPOINT tabq_handler";

int tabq_delivery_txs_init(tabq_subscription *s, tabq_error *err) {
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_tx *tx = calloc(1, sizeof *tx);
    if (!tx)
      return tabq_err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the transactions");
    tx->b = s->b;
    tx->d = &s->slots[i];
    s->slots[i].tx = tx;
  }
  return TABQ_OK;
}

void tabq_delivery_txs_free(tabq_subscription *s) {
  for (unsigned i = 0; s->slots && i < s->nslots; i++) {
    tabq_tx *tx = s->slots[i].tx;
    if (!tx)
      continue;
    tabq_buf_free(&tx->wakes);
    tabq_buf_free(&tx->groups);
    tabq_buf_free(&tx->headers);
    free(tx);
    s->slots[i].tx = NULL;
  }
}

static void open_tx(tabq_tx *tx, tabq_pconn *c) {
  tx->c = c;
  tx->owner = pthread_self();
  tx->wakes.len = tx->groups.len = 0;
  atomic_store(&tx->open, true);
}

int tabq_delivery_tx_open(tabq_delivery *d, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_broker *b = s->b;
  tabq_tx *tx = d->tx;
  tabq_pconn *c = d->conn;
  int rc;
  if (s->ops->claim_txn) {
    if ((rc = tabq_pconn_check(c, b->drv->exec(c->conn, savepoint))))
      tabq_err_from_plugin(err, rc, s->t->name, "savepoint");
  } else if (!c) { /* lease: a connection of its own, reserved by the claim */
    if (!(rc = tabq_pool_acquire(&b->pool, &c, err)) &&
        (rc = tabq_txn_begin(b, s->t->name, c, s->tx_begin_sql, err)))
      tabq_pool_release(&b->pool, c);
  } else {
    /* Advisory: the key's connection, under the delivery's lock, since shutdown releases the
     * key on that connection from another thread unless the transaction is open; once it has
     * released it, there is nothing to open. */
    pthread_mutex_lock(&d->mu);
    c = d->conn;
    rc = d->in_work && c ? tabq_txn_begin(b, s->t->name, c, s->tx_begin_sql, err)
                         : tabq_err_set(err, TABQ_CLOSED, s->t->name, "begin",
                                        "table %s: the broker shut down and released this "
                                        "delivery's lock",
                                        s->t->name);
    if (!rc)
      open_tx(tx, c);
    pthread_mutex_unlock(&d->mu);
    return rc;
  }
  if (!rc)
    open_tx(tx, c);
  return rc;
}

tabq_pconn *tabq_tx_conn(const tabq_tx *tx) {
  return tx->c;
}

bool tabq_tx_open(const tabq_tx *tx) {
  return tx && atomic_load(&tx->open);
}

void tabq_tx_close(tabq_tx *tx, bool wake) {
  if (wake)
    wake_all(tx);
  tx->wakes.len = tx->groups.len = 0;
  tx->c = NULL;
  atomic_store(&tx->open, false);
}

tabq_tx *tabq_delivery_tx(tabq_delivery *d) {
  return d && d->tx && atomic_load(&d->tx->open) ? d->tx : NULL;
}
