#include "listen.h"

#include <errno.h>
#include <string.h>
#include <tabq/sys/sql.h>
#include <time.h>

#include "clock.h"
#include "controls_int.h"
#include "engine.h"
#include "error.h"

#define WAIT_MS 200 /* how long one wait for a notification lasts: bounds a new channel's delay */
#define ADD_TIMEOUT_MS 10000

/* Wakes the subscriptions a notification names: its channel, and its group unless the payload
 * is empty (an empty payload wakes every subscription of the table). */
static void wake_named(tabq_broker *b, const char *channel, const char *group) {
  pthread_mutex_lock(&b->mu);
  for (tabq_subscription *s = b->subs; s; s = s->next) {
    if (strcmp(s->channel, channel))
      continue;
    if (group[0] && s->t->group.name && s->queue && strcmp(s->queue, group))
      continue;
    tabq__sub_wake(s);
  }
  pthread_mutex_unlock(&b->mu);
}

static void wake_all(tabq_broker *b) {
  pthread_mutex_lock(&b->mu);
  for (tabq_subscription *s = b->subs; s; s = s->next)
    if (s->channel[0])
      tabq__sub_wake(s);
  pthread_mutex_unlock(&b->mu);
  tabq__controls_stale(b, NULL); /* a pause or resume may have been missed too */
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) && errno == EINTR) {
  }
}

/* Connects and listens on every channel; called and returning with l->mu held. */
static bool connect_listening(tabq_broker *b, tabq_listener *l) {
  if (!l->conn) {
    pthread_mutex_unlock(&l->mu);
    tabq_pconn *c = NULL;
    tabq_error err;
    int rc = tabq__pool_acquire(&b->pool, &c, &err);
    pthread_mutex_lock(&l->mu);
    if (rc)
      return false;
    l->conn = c;
    l->nlistened = 0;
    l->generation++;
  }
  while (l->nlistened < l->nchannels) {
    char channel[TABQ_CHANNEL_CAP];
    memcpy(channel, l->channels[l->nlistened], sizeof channel);
    pthread_mutex_unlock(&l->mu);
    int rc = b->drv->listen(l->conn->conn, channel);
    pthread_mutex_lock(&l->mu);
    if (rc)
      return false;
    l->nlistened++;
    pthread_cond_broadcast(&l->cv);
  }
  return true;
}

static void drop_connection(tabq_broker *b, tabq_listener *l) {
  tabq__pool_discard(&b->pool, l->conn);
  l->conn = NULL;
}

static void *listener_main(void *arg) {
  tabq_broker *b = arg;
  tabq__log_enter(&b->log);
  tabq_listener *l = &b->listener;
  int64_t backoff_ms = 100;
  unsigned woken_for = 1; /* the first connection needs no wake-up: nothing was missed */
  pthread_mutex_lock(&l->mu);
  while (!l->stop) {
    if (!connect_listening(b, l)) {
      if (l->conn)
        drop_connection(b, l);
      pthread_mutex_unlock(&l->mu);
      tabq__logf(&b->log, TABQ_LOG_WARN,
                 "the listening connection is lost; reconnecting in %lld ms",
                 (long long)backoff_ms);
      sleep_ms(backoff_ms);
      backoff_ms = backoff_ms < 5000 ? backoff_ms * 2 : 5000;
      pthread_mutex_lock(&l->mu);
      continue;
    }
    backoff_ms = 100;
    bool reconnected = l->generation != woken_for;
    woken_for = l->generation;
    tabq_pconn *c = l->conn;
    pthread_mutex_unlock(&l->mu);
    if (reconnected) /* notifications may have come while no one listened */
      wake_all(b);
    char channel[TABQ_CHANNEL_CAP], payload[256];
    bool got = false;
    int rc = b->drv->wait_notify(c->conn, WAIT_MS, channel, sizeof channel, payload, sizeof payload,
                                 &got);
    if (!rc && got && !tabq__controls_note(b, channel, payload))
      wake_named(b, channel, payload);
    pthread_mutex_lock(&l->mu);
    if (rc)
      drop_connection(b, l);
  }
  if (l->conn)
    tabq__pool_release(&b->pool, l->conn);
  l->conn = NULL;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

int tabq__listener_start(tabq_broker *b, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  /* The driver's optional members may lie past an older plugin's table: read through size. */
  if (!TABQ_HAS_MEMBER(b->drv, tabq_driver_v1, listen) ||
      !TABQ_HAS_MEMBER(b->drv, tabq_driver_v1, wait_notify) || !p->dialect->channel ||
      !p->dialect->notify)
    return tabq__err_set(err, TABQ_DIALECT, NULL, NULL,
                         "listen_notify: the %s dialect has no notifications (LISTEN/NOTIFY is "
                         "PostgreSQL's); leave the option off and rely on the poll interval",
                         p->name);
  if (b->per_transaction)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "listen_notify: LISTEN needs a server session of its own, and the URL "
                         "declares a transaction pooler (pooler=transaction): connect the "
                         "broker directly or through session pooling, or leave the option off "
                         "and rely on the poll interval");
  tabq_listener *l = &b->listener;
  pthread_mutex_init(&l->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cv, &attr);
  pthread_condattr_destroy(&attr);
  if (pthread_create(&l->thread, NULL, listener_main, b))
    return tabq__err_set(err, TABQ_IO, NULL, NULL, "cannot start the listener thread");
  l->started = true;
  return TABQ_OK;
}

int tabq__listener_add(tabq_broker *b, const char *channel, const char *table, tabq_error *err) {
  tabq_listener *l = &b->listener;
  pthread_mutex_lock(&l->mu);
  unsigned i = 0;
  while (i < l->nchannels && strcmp(l->channels[i], channel))
    i++;
  if (i == l->nchannels) {
    if (l->nchannels == TABQ_MAX_CHANNELS || strlen(channel) >= TABQ_CHANNEL_CAP) {
      pthread_mutex_unlock(&l->mu);
      return tabq__err_set(err, TABQ_INVALID, table, "listen",
                           "a broker listens on at most %d channels", TABQ_MAX_CHANNELS);
    }
    snprintf(l->channels[l->nchannels++], TABQ_CHANNEL_CAP, "%s", channel);
  }
  /* Before the first claim: a row written from now on announces itself to this subscription. */
  int64_t deadline = tabq__mono_ms() + ADD_TIMEOUT_MS;
  int rc = TABQ_OK;
  while (l->nlistened <= i && !l->stop && !rc) {
    struct timespec until = tabq__deadline_ms(deadline);
    if (pthread_cond_timedwait(&l->cv, &l->mu, &until) == ETIMEDOUT && l->nlistened <= i)
      rc = tabq__err_set(err, TABQ_BACKEND, table, "listen",
                         "table %s: the listener could not LISTEN on channel '%s' within %d ms",
                         table, channel, ADD_TIMEOUT_MS);
  }
  if (!rc && l->stop)
    rc = tabq__err_set(err, TABQ_CLOSED, table, "listen", "the broker is shut down");
  pthread_mutex_unlock(&l->mu);
  return rc;
}

void tabq__listener_stop(tabq_broker *b) {
  tabq_listener *l = &b->listener;
  if (!l->started)
    return;
  pthread_mutex_lock(&l->mu);
  l->stop = true;
  pthread_mutex_unlock(&l->mu);
  pthread_join(l->thread, NULL);
  l->started = false;
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
}

int tabq__channel_of(tabq_broker *b, const tabq_table *t, char *out, size_t cap, tabq_error *err) {
  tabq_build build = {.table = t, .form = tabq_table_form(t)};
  tabq_stmt st;
  tabq_sql_init(&st, b->host);
  int rc = b->plugin.plugin->dialect->channel(&build, &st);
  if (!rc)
    rc = st.status;
  if (rc)
    tabq__err_from_plugin(err, rc, t->name, "listen");
  else if (!st.sql || st.len >= cap)
    rc = tabq__err_set(err, TABQ_DIALECT, t->name, "listen", "the dialect's channel is unusable");
  else
    memcpy(out, st.sql, st.len + 1);
  tabq_sql_free(&st);
  return rc;
}
