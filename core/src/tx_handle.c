/* tabq_tx handles (tx_handle.h): taken and given back, opened on a connection, ended with their
 * transaction, and the wake-ups of the rows they published kept until the commit. */
#include "tx_handle.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "error.h"

tabq_tx *tabq__tx_take(tabq_broker *b) {
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

void tabq__tx_give_back(tabq_tx *tx) {
  tabq_broker *b = tx->b;
  pthread_mutex_lock(&b->mu);
  tx->next_free = b->free_txs;
  b->free_txs = tx;
  pthread_mutex_unlock(&b->mu);
}

static void free_buffers(tabq_tx *tx) {
  tabq__buf_free(&tx->wakes);
  tabq__buf_free(&tx->groups);
  tabq__buf_free(&tx->headers);
}

void tabq__txs_free(tabq_broker *b) {
  for (tabq_tx *tx = b->txs, *next; tx; tx = next) {
    next = tx->next;
    if (atomic_load(&tx->open) && tx->c) { /* never ended: its connection goes with the pool */
      b->drv->rollback(tx->c->conn);
      tabq__pool_release(&b->pool, tx->c);
    }
    free_buffers(tx);
    free(tx);
  }
  b->txs = b->free_txs = NULL;
}

int tabq__delivery_txs_init(tabq_subscription *s, tabq_error *err) {
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_tx *tx = calloc(1, sizeof *tx);
    if (!tx)
      return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the transactions");
    tx->b = s->b;
    tx->d = &s->slots[i];
    s->slots[i].tx = tx;
  }
  return TABQ_OK;
}

void tabq__delivery_txs_free(tabq_subscription *s) {
  for (unsigned i = 0; s->slots && i < s->nslots; i++) {
    tabq_tx *tx = s->slots[i].tx;
    if (!tx)
      continue;
    free_buffers(tx);
    free(tx);
    s->slots[i].tx = NULL;
  }
}

void tabq__tx_start(tabq_tx *tx, tabq_pconn *c) {
  tx->c = c;
  tx->owner = pthread_self();
  tx->wakes.len = tx->groups.len = 0;
  atomic_store(&tx->open, true);
}

/* The wake-ups of the rows the transaction published, after its commit. */
static void wake_all(tabq_tx *tx) {
  for (size_t at = 0; at < tx->wakes.len; at += sizeof(tabq_tx_wake)) {
    tabq_tx_wake w;
    memcpy(&w, tx->wakes.p + at, sizeof w);
    tabq__publish_wake(tx->b, w.t, w.has_group ? tx->groups.p + w.group_at : NULL);
  }
}

void tabq__tx_close(tabq_tx *tx, bool wake) {
  if (wake)
    wake_all(tx);
  tx->wakes.len = tx->groups.len = 0;
  tx->c = NULL;
  atomic_store(&tx->open, false);
}

tabq_pconn *tabq__tx_conn(const tabq_tx *tx) {
  return tx->c;
}

bool tabq__tx_open(const tabq_tx *tx) {
  return tx && atomic_load(&tx->open);
}

int tabq__tx_usable(const tabq_tx *tx, const char *call, tabq_error *err) {
  tabq__err_clear(err);
  if (!tx)
    return tabq__err_set(err, TABQ_INVALID, NULL, call, "%s needs a transaction", call);
  if (tx->d && !atomic_load(&tx->open))
    return tabq__err_set(err, TABQ_TRANSACTION_HELD, tx->d->sub->t->name, call,
                         "%s: the delivery's transaction ended with its settlement; a handler "
                         "uses it only until it returns",
                         call);
  if (!atomic_load(&tx->open) || !pthread_equal(tx->owner, pthread_self()))
    return tabq__err_set(err, TABQ_INVALID, NULL, call, "%s: the transaction %s", call,
                         !atomic_load(&tx->open)
                             ? "has ended (committed or rolled back)"
                             : "belongs to another thread (a transaction is used from the "
                               "thread that began it)");
  return TABQ_OK;
}

int tabq__tx_keep_wake(tabq_tx *tx, const tabq_table *t, const char *group, tabq_error *err) {
  size_t glen = group ? strlen(group) + 1 : 0;
  if (tabq__buf_reserve(&tx->wakes, tx->wakes.len + sizeof(tabq_tx_wake)) ||
      tabq__buf_reserve(&tx->groups, tx->groups.len + glen))
    return tabq__err_set(err, TABQ_NOMEM, t->name, "insert", "cannot keep the wake-up");
  tabq_tx_wake w = {.t = t, .group_at = tx->groups.len, .has_group = group != NULL};
  memcpy(tx->wakes.p + tx->wakes.len, &w, sizeof w);
  tx->wakes.len += sizeof w;
  if (group)
    memcpy(tx->groups.p + tx->groups.len, group, glen);
  tx->groups.len += glen;
  return TABQ_OK;
}
