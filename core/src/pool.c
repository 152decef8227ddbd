#include "pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"

#define IDLE_CHECK_MS 1000

static void disconnect(tabq_pool *p, tabq_pconn *c);

int tabq__pool_init(tabq_pool *p, const tabq_driver_v1 *drv, const tabq_host *host, const char *url,
                    unsigned size, unsigned timeout_ms, tabq_error *err) {
  memset(p, 0, sizeof *p);
  p->drv = drv;
  p->host = host;
  p->size = size;
  p->timeout_ms = timeout_ms;
  p->url = strdup(url);
  p->slots = calloc(size, sizeof *p->slots);
  if (!p->url || !p->slots) {
    free(p->url);
    free(p->slots);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate a pool of %u", size);
  }
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&p->freed, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&p->mu, NULL);
  return TABQ_OK;
}

static tabq_pconn *take_free(tabq_pool *p) {
  tabq_pconn *unconnected = NULL;
  for (unsigned i = 0; i < p->size; i++) {
    tabq_pconn *c = &p->slots[i];
    if (c->in_use)
      continue;
    if (c->conn) {
      c->in_use = true;
      return c;
    }
    if (!unconnected)
      unconnected = c;
  }
  if (unconnected)
    unconnected->in_use = true;
  return unconnected;
}

int tabq__pool_acquire(tabq_pool *p, tabq_pconn **out, tabq_error *err) {
  *out = NULL;
  int64_t deadline = tabq__mono_ms() + p->timeout_ms;
  pthread_mutex_lock(&p->mu);
  tabq_pconn *c = take_free(p);
  if (!c)
    p->waits++;
  while (!c) {
    struct timespec ts = tabq__deadline_ms(deadline);
    if (pthread_cond_timedwait(&p->freed, &p->mu, &ts) == ETIMEDOUT && !(c = take_free(p))) {
      p->timeouts++;
      pthread_mutex_unlock(&p->mu);
      return tabq__err_set(err, TABQ_POOL_TIMEOUT, NULL, NULL,
                           "no pooled connection became free within %u ms (pool size %u)",
                           p->timeout_ms, p->size);
    }
    if (!c)
      c = take_free(p);
  }
  pthread_mutex_unlock(&p->mu);
  if (c->conn && tabq__mono_ms() - c->idle_since_ms > IDLE_CHECK_MS && !p->drv->alive(c->conn))
    disconnect(p, c); /* ended while idle: connect anew below */
  if (!c->conn) {
    if (!c->prepared && !(c->prepared = calloc(TABQ_MAX_STATEMENTS, sizeof *c->prepared))) {
      tabq__pool_release(p, c);
      return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate a connection's cache");
    }
    /* With the broker's host where the driver takes it, so its log lines reach that broker. */
    int rc = p->drv->connect_host ? p->drv->connect_host(p->host, p->url, &c->conn)
                                  : p->drv->connect(p->url, &c->conn);
    if (rc) {
      c->conn = NULL;
      tabq__pool_release(p, c);
      return tabq__err_from_plugin(err, rc, NULL, "connect");
    }
    atomic_fetch_add_explicit(&p->connects, 1, memory_order_relaxed);
  }
  *out = c;
  return TABQ_OK;
}

static void disconnect(tabq_pool *p, tabq_pconn *c) {
  for (unsigned i = 0; i < TABQ_MAX_STATEMENTS && c->prepared; i++)
    if (c->prepared[i]) {
      p->drv->finalize(c->prepared[i]);
      c->prepared[i] = NULL;
    }
  if (c->conn)
    p->drv->close(c->conn);
  c->conn = NULL;
}

void tabq__pool_release(tabq_pool *p, tabq_pconn *c) {
  if (c->conn && (c->broken || (c->suspect && !p->drv->alive(c->conn))))
    disconnect(p, c); /* the next acquire of this slot connects anew */
  c->suspect = c->broken = false;
  c->idle_since_ms = tabq__mono_ms();
  pthread_mutex_lock(&p->mu);
  c->in_use = false;
  pthread_cond_signal(&p->freed);
  pthread_mutex_unlock(&p->mu);
}

void tabq__pool_discard(tabq_pool *p, tabq_pconn *c) {
  disconnect(p, c);
  tabq__pool_release(p, c);
}

int tabq__pool_server(tabq_pool *p, const char *table, char *text, size_t cap, uint32_t *number,
                      char *database, size_t database_cap, tabq_error *err) {
  tabq_pconn *c;
  int rc = tabq__pool_acquire(p, &c, err);
  if (rc)
    return rc;
  rc = tabq__pconn_check(c, p->drv->server_version(c->conn, text, cap, number));
  if (rc)
    tabq__err_from_plugin(err, rc, table, "server_version");
  else if (database && TABQ_HAS_MEMBER(p->drv, tabq_driver_v1, database) &&
           (rc = p->drv->database(c->conn, database, database_cap)))
    tabq__err_from_plugin(err, rc, table, "database");
  tabq__pool_release(p, c);
  return rc;
}

void tabq__pool_stats(tabq_pool *p, tabq_pool_stats *out) {
  memset(out, 0, sizeof *out);
  out->connections = p->size;
  out->connects = atomic_load_explicit(&p->connects, memory_order_relaxed);
  pthread_mutex_lock(&p->mu);
  for (unsigned i = 0; i < p->size; i++)
    out->in_use += p->slots[i].in_use;
  out->waits = p->waits;
  out->timeouts = p->timeouts;
  pthread_mutex_unlock(&p->mu);
}

void tabq__pool_destroy(tabq_pool *p) {
  for (unsigned i = 0; i < p->size; i++) {
    disconnect(p, &p->slots[i]);
    free(p->slots[i].prepared);
  }
  free(p->slots);
  free(p->url);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->freed);
}
