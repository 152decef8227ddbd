/* The tabq_tx handle: a transaction a service holds, its own (tabq_begin) or its delivery's
 * (transactional mode, one handle per delivery slot). The engine's own short transactions are
 * txn.c's and have no handle.
 *
 * Handles live as long as the broker (a service's go back to a free list, a slot's stay with
 * it), so a late call finds an ended handle and fails with a code, never touches freed memory. */
#ifndef TABQ_TX_HANDLE_H
#define TABQ_TX_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <tabq/tabq.h>

#include "buf.h"
#include "pool.h"

/* A publish's wake-up, kept for the commit: the table and where its group starts in `groups`. */
typedef struct tabq_tx_wake {
  const tabq_table *t;
  size_t group_at;
  bool has_group;
} tabq_tx_wake;

struct tabq_tx {
  tabq_broker *b;
  tabq_pconn *c;
  pthread_t owner;
  atomic_bool open; /* read by the shutdown path while a handler runs */
  tabq_delivery *d; /* a delivery's transaction (transactional mode), else NULL */
  tabq_buf wakes;   /* tabq_tx_wake entries */
  tabq_buf groups;  /* their groups, NUL-terminated one after another */
  tabq_buf headers; /* a publish's headers, reused */
  tabq_tx *next;    /* every handle of the broker */
  tabq_tx *next_free;
};

/* A free handle of the broker's, or a new one kept on its list; NULL without memory. Called
 * with b->mu held. tabq__tx_give_back returns it to the free list. */
tabq_tx *tabq__tx_take(tabq_broker *b);
void tabq__tx_give_back(tabq_tx *tx);
/* Frees every handle of the broker (tabq_close), rolling back one never ended. */
void tabq__txs_free(tabq_broker *b);
/* Transactional mode: a handle per delivery slot (subscribe), freed with the subscription. */
int tabq__delivery_txs_init(tabq_subscription *s, tabq_error *err);
void tabq__delivery_txs_free(tabq_subscription *s);

/* The handle's transaction has begun on c, for the calling thread. */
void tabq__tx_start(tabq_tx *tx, tabq_pconn *c);
/* Ends the handle once its transaction ended (committed: `wake` runs the publishes' wake-ups). */
void tabq__tx_close(tabq_tx *tx, bool wake);
/* The connection the transaction runs on; whether it is open. */
tabq_pconn *tabq__tx_conn(const tabq_tx *tx);
bool tabq__tx_open(const tabq_tx *tx);
/* TABQ_OK when the calling thread may use the handle for `call` now. */
int tabq__tx_usable(const tabq_tx *tx, const char *call, tabq_error *err);
/* Keeps a publish's wake-up for the commit. */
int tabq__tx_keep_wake(tabq_tx *tx, const tabq_table *t, const char *group, tabq_error *err);

#endif
