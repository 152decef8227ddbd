/* The broker: a dialect picked by URL scheme, a pool of its connections, the statements its
 * subscriptions and publishers built, and shutdown. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "concurrency_int.h"
#include "controls_int.h"
#include "engine.h"
#include "error.h"
#include "host.h"
#include "retention_int.h"
#include "sized.h"

#define DEFAULT_POOL_SIZE 8
#define DEFAULT_ACQUIRE_TIMEOUT_MS 30000
#define DEFAULT_POLL_INTERVAL_MS 1000
#define DEFAULT_LEASE_S 30

static int url_scheme(const char *url, char *scheme, size_t cap, tabq_error *err) {
  size_t n = 0;
  while (url[n] && (isalnum((unsigned char)url[n]) || strchr("+-.", url[n])))
    n++;
  if (!n || url[n] != ':' || n >= cap)
    return tabq__err_set(err, TABQ_BACKEND, NULL, NULL,
                         "the URL '%s' has no scheme (like sqlite:jobs.db)", url);
  memcpy(scheme, url, n);
  scheme[n] = '\0';
  return TABQ_OK;
}

/* A borrowed driver knows only its own plugin's schemes: it gets the URL with the lender's
 * first scheme in place of the borrower's ("pglease://h/db" -> "postgres://h/db"). */
static int driver_url(const tabq_loaded *l, const char *url, char **out, tabq_error *err) {
  const char *rest = strchr(url, ':');
  const char *scheme = l->lender ? l->lender->schemes[0] : NULL;
  size_t n = scheme ? strlen(scheme) + strlen(rest) + 1 : strlen(url) + 1;
  if (!(*out = malloc(n)))
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot copy the URL");
  if (scheme)
    snprintf(*out, n, "%s%s", scheme, rest);
  else
    memcpy(*out, url, n);
  return TABQ_OK;
}

/* Everything after the plugin is loaded; on failure the caller closes the broker. */
static int start_broker(tabq_broker *b, const char *url, const tabq_broker_options *o,
                        tabq_error *err) {
  b->poll_interval_ms = o && o->poll_interval_ms ? o->poll_interval_ms : DEFAULT_POLL_INTERVAL_MS;
  b->lease_s = o && o->lease_s ? o->lease_s : DEFAULT_LEASE_S;
  unsigned size = o && o->pool_size ? o->pool_size : DEFAULT_POOL_SIZE;
  unsigned timeout =
      o && o->acquire_timeout_ms ? o->acquire_timeout_ms : DEFAULT_ACQUIRE_TIMEOUT_MS;
  char *for_driver;
  int rc = driver_url(&b->plugin, url, &for_driver, err);
  if (rc)
    return rc;
  rc = tabq__pool_init(&b->pool, b->drv, b->host, for_driver, size, timeout, err);
  free(for_driver);
  if (rc)
    return rc;
  /* Connect once now, so a wrong URL or an unreachable database fails here. */
  tabq_pconn *c;
  if ((rc = tabq__pool_acquire(&b->pool, &c, err)))
    return rc;
  b->per_transaction = TABQ_HAS_MEMBER(b->drv, tabq_driver_v1, session_scope) &&
                       b->drv->session_scope &&
                       b->drv->session_scope(c->conn) == TABQ_SESSION_PER_TRANSACTION;
  tabq__pool_release(&b->pool, c);
  if (o && o->listen_notify) {
    if ((rc = tabq__listener_start(b, err)))
      return rc;
    b->listen_notify = true;
  }
  return TABQ_OK;
}

int tabq_connect(const char *url, const tabq_broker_options *options, tabq_broker **out,
                 tabq_error *err) {
  tabq__err_clear(err);
  if (!url || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_connect needs a URL and an out");
  *out = NULL;
  tabq_broker_options taken = TABQ_BROKER_OPTIONS_INIT, *o = NULL;
  if (options) {
    int rc = TABQ_TAKE(options, &taken, TABQ_BROKER_OPTIONS_SIZE_1_0, NULL, err);
    if (rc)
      return rc;
    o = &taken;
  }
  char scheme[32];
  int rc = url_scheme(url, scheme, sizeof scheme, err);
  if (rc)
    return rc;
  tabq_broker *b = calloc(1, sizeof *b);
  if (!b)
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate a broker");
  if ((rc = tabq__loader_open(scheme, &b->plugin, err))) {
    free(b);
    return rc;
  }
  b->drv = b->plugin.driver;
  tabq__logger_init(&b->log, o);
  tabq__host_of(&b->own_host, &b->log);
  b->host = &b->own_host;
  /* Which file serves the scheme, and what it shadows: a stale copy in a later folder is worth
   * a warning (docs/plugins.md). */
  if (b->plugin.shadowed[0])
    tabq__logf(&b->log, TABQ_LOG_WARN, "dialect for '%s': %s, which shadows %s", scheme,
               b->plugin.chosen, b->plugin.shadowed);
  else
    tabq__logf(&b->log, TABQ_LOG_INFO, "dialect for '%s': %s", scheme, b->plugin.chosen);
  tabq__registry_init(&b->stmts);
  pthread_mutex_init(&b->mu, NULL);
  const tabq_logger *outer = tabq__log_enter(&b->log);
  rc = start_broker(b, url, o, err);
  tabq__log_leave(outer);
  if (rc) {
    tabq_close(b);
    return rc;
  }
  *out = b;
  return TABQ_OK;
}

int tabq_exec(tabq_broker *b, const char *sql, tabq_error *err) {
  tabq__err_clear(err);
  tabq_pconn *c;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (!rc) {
    rc = tabq__pconn_check(c, b->drv->exec(c->conn, sql));
    if (rc)
      tabq__err_from_plugin(err, rc, NULL, "exec");
    tabq__pool_release(&b->pool, c);
  }
  tabq__log_leave(outer);
  return rc;
}

static void shut_down(tabq_broker *b);

void tabq_shutdown(tabq_broker *b) {
  const tabq_logger *outer = tabq__log_enter(&b->log);
  shut_down(b);
  tabq__log_leave(outer);
}

static void shut_down(tabq_broker *b) {
  if (atomic_exchange(&b->shut, true))
    return;
  /* No slot is published once shutdown begins: the other processes of a job publish them. */
  tabq__scheduler_stop(b);
  pthread_mutex_lock(&b->mu);
  tabq_subscription *subs = b->subs;
  pthread_mutex_unlock(&b->mu);
  /* Stop claiming everywhere first, then wait for each subscription's deliveries to settle. */
  for (tabq_subscription *s = subs; s; s = s->next) {
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
  for (tabq_subscription *s = subs; s; s = s->next)
    tabq__workers_stop(s);
  tabq__conc_stop(b); /* every slot given back: the keeper has nothing more to keep */
  tabq__retention_stop(b);
  tabq__listener_stop(b);
}

void tabq_close(tabq_broker *b) {
  if (!b)
    return;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  shut_down(b);
  tabq__scheduler_free(b);
  for (tabq_subscription *s = b->subs, *next; s; s = next) {
    next = s->next;
    tabq__sub_free(s);
  }
  for (tabq_publisher *p = b->publishers, *next; p; p = next) {
    next = p->next;
    free(p->name);
    free(p);
  }
  tabq__routes_free(b);
  tabq__retention_free(b);
  tabq__controls_free(b);
  tabq__conc_free(b);
  tabq__txs_free(b);
  if (b->pool.slots)
    tabq__pool_destroy(&b->pool);
  tabq__registry_destroy(&b->stmts, tabq__host_services());
  pthread_mutex_destroy(&b->mu);
  tabq__loader_close(&b->plugin);
  free(b->test_dir); /* closed by tabq_close instead of tabq_test_close: the folder stays */
  free(b);
  tabq__log_leave(outer);
}

const char *tabq_dialect_name(const tabq_broker *b) {
  return b->plugin.plugin->name;
}
const char *tabq_dialect_path(const tabq_broker *b) {
  return b->plugin.path;
}

void tabq_broker_pool_stats(tabq_broker *b, tabq_pool_stats *caller, size_t size) {
  tabq_pool_stats all;
  tabq__pool_stats(&b->pool, &all);
  all.held_by_deliveries = atomic_load(&b->conns_used);
  size = size < sizeof all ? size : sizeof all;
  all.size = (uint32_t)size;
  memcpy(caller, &all, size);
}
