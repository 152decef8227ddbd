/* Handlers the tests mount and what they share with tabq's own live tests: a recorder that
 * answers with a scripted outcome, a handler held at a gate, and exactly-once counting. */
#include "handlers.h"

#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void recorder_init(recorder *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
}

void recorder_free(recorder *r) {
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

tabq_outcome recorder_handler(tabq_delivery *d, void *user) {
  recorder *r = user;
  pthread_mutex_lock(&r->mu);
  unsigned call = r->calls;
  if (call < 64) {
    r->ids[call] = tabq_delivery_id(d);
    r->attempts[call] = tabq_delivery_attempt(d);
    size_t len = 0;
    const char *p = tabq_delivery_payload(d, &len);
    snprintf(r->payloads[call], sizeof r->payloads[call], "%.*s", (int)len, p ? p : "");
  }
  pthread_mutex_unlock(&r->mu);
  tabq_outcome o = r->script ? r->script(r, d, call) : tabq_ack();
  pthread_mutex_lock(&r->mu);
  r->calls++;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return o;
}

unsigned recorder_calls(recorder *r) {
  pthread_mutex_lock(&r->mu);
  unsigned n = r->calls;
  pthread_mutex_unlock(&r->mu);
  return n;
}

void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

bool recorder_wait(recorder *r, unsigned calls, int timeout_ms) {
  for (int waited = 0;; waited += 10) {
    if (recorder_calls(r) >= calls)
      return true;
    if (waited >= timeout_ms)
      return false;
    sleep_ms(10);
  }
}

static atomic_int once_seen[ONCE_MAX + 1];
static int once_n;

void once_reset(int n) {
  once_n = n;
  for (int i = 0; i <= ONCE_MAX; i++)
    atomic_store(&once_seen[i], 0);
}

void ack_every_row(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)ds, (void)user;
  for (size_t i = 0; i < n; i++)
    out[i] = tabq_ack();
}

tabq_outcome once_handler(tabq_delivery *d, void *user) {
  (void)user;
  int64_t id = tabq_delivery_id(d);
  if (id >= 1 && id <= once_n)
    atomic_fetch_add(&once_seen[id], 1);
  return tabq_ack();
}

void once_check(void) {
  int twice = 0, never = 0;
  for (int i = 1; i <= once_n; i++) {
    twice += atomic_load(&once_seen[i]) > 1;
    never += atomic_load(&once_seen[i]) == 0;
  }
  CU_ASSERT_EQUAL(twice, 0);
  CU_ASSERT_EQUAL(never, 0);
}

void gate_init(gate *g) {
  memset(g, 0, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
}

tabq_outcome wait_at_gate(tabq_delivery *d, void *user) {
  (void)d;
  gate *g = user;
  pthread_mutex_lock(&g->mu);
  g->in = true;
  pthread_cond_broadcast(&g->cv);
  while (!g->out)
    pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
  return tabq_ack();
}

void gate_wait_in(gate *g) {
  pthread_mutex_lock(&g->mu);
  while (!g->in)
    pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

void gate_open(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->out = true;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}
