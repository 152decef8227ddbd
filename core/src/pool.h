/* The connection pool: a fixed number of slots, connected lazily, replaced when broken. */
#ifndef TABQ_POOL_H
#define TABQ_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

#define TABQ_MAX_STATEMENTS 256 /* statements a broker prepares, over all its subscriptions */

typedef struct tabq_pconn {
  tabq_conn *conn;
  tabq_prepared **prepared; /* by statement id; prepared on first use on this connection */
  bool in_use;
  bool suspect;          /* a call failed on it: ask the driver whether it still lives */
  bool broken;           /* its session's state is unknown (a rollback failed): close it */
  int64_t idle_since_ms; /* when it was last given back */
} tabq_pconn;

/* Marks a connection whose call failed, so the pool asks the driver about it when it comes back.
 * Returns rc, for `return tabq__pconn_check(c, rc);`. */
static inline int tabq__pconn_check(tabq_pconn *c, int rc) {
  if (rc)
    c->suspect = true;
  return rc;
}

typedef struct tabq_pool {
  pthread_mutex_t mu;
  pthread_cond_t freed;
  const tabq_driver_v1 *drv;
  const tabq_host *host; /* the broker's: connections opened with Driver.connect_host (1.6) */
  char *url;
  tabq_pconn *slots;
  unsigned size;
  unsigned timeout_ms;
  uint64_t waits, timeouts; /* under mu */
  _Atomic uint64_t connects;
} tabq_pool;

int tabq__pool_init(tabq_pool *p, const tabq_driver_v1 *drv, const tabq_host *host, const char *url,
                    unsigned size, unsigned timeout_ms, tabq_error *err);
/* Waits up to the acquire timeout for a free connection (TABQ_POOL_TIMEOUT); *out is NULL
 * whenever it fails, never a connection another user holds. */
int tabq__pool_acquire(tabq_pool *p, tabq_pconn **out, tabq_error *err);
/* Gives a connection back; one marked broken, or whose call failed and that the driver finds
 * broken, is closed and replaced later. The driver is not asked on the hot path: only after a
 * failure, or when a connection comes out of the pool after more than a second idle (a server may
 * have ended it). */
void tabq__pool_release(tabq_pool *p, tabq_pconn *c);
/* Gives a connection back closed: its session ends (and every session lock with it). */
void tabq__pool_discard(tabq_pool *p, tabq_pconn *c);
/* The server's version (as text into `text`, cap bytes, and as the driver's number) and, where
 * the driver tells it and `database` is not NULL, the connection's current database, read on a
 * pooled connection; failures name `table`. */
int tabq__pool_server(tabq_pool *p, const char *table, char *text, size_t cap, uint32_t *number,
                      char *database, size_t database_cap, tabq_error *err);
/* The pool's counts (tabq_broker_pool_stats; held_by_deliveries is the broker's to fill). */
void tabq__pool_stats(tabq_pool *p, tabq_pool_stats *out);
void tabq__pool_destroy(tabq_pool *p);

#endif
