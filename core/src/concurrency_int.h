/* Concurrency limits across processes (tabq/concurrency.h, docs/concurrency.md): the broker's
 * slots table, its statements and keeper, and what a limited subscription does around each
 * handler call. */
#ifndef TABQ_CONCURRENCY_INT_H
#define TABQ_CONCURRENCY_INT_H

#include <tabq/concurrency.h>

#include "engine.h"

/* The most slots a key may have: the expired slots of a key are cleared by one statement that
 * names each of them. */
#define TABQ__CONC_MAX_LIMIT 32
#define TABQ__CONC_DEFAULT_TTL_MS 30000u
#define TABQ__CONC_MIN_TTL_MS 300u

typedef struct tabq_conc_state {
  tabq_concurrency_slots c; /* taken at full size; its names point into `names` */
  char *names;
  char holder[96]; /* "host/pid/random": this broker's name in the holder column */
  int64_t ttl_us;
  /* In the broker's registry: the take (the dialect's insert that writes nothing where the slot
   * is held), the give back (by slot and holder), the keeper's extension (by holder). */
  unsigned take, give, keep;
  /* The keeper thread, moving the expiry of this broker's slots every ttl/3. */
  pthread_t keeper;
  bool started, stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_uint held; /* slots held now: the keeper writes nothing while none is */
} tabq_conc_state;

/* concurrency_slot.c */
/* The slots description's rules (taken at full size): every member named, ttl_ms 0 (30 s) or at
 * least 300; TABQ_INVALID naming the member. `call` opens the message. */
int tabq__conc_check(tabq_concurrency_slots *c, const char *call, tabq_error *err);
/* The broker's statements on its slots table, built with the dialect and registered; the holder
 * name made. */
int tabq__conc_build(tabq_broker *b, tabq_conc_state *st, tabq_error *err);
/* The state's lock and condition, made once it is allocated (freed by tabq__conc_state_free). */
void tabq__conc_init(tabq_conc_state *st);
/* Starts the keeper thread of b->conc, once the state is the broker's. */
int tabq__conc_launch(tabq_broker *b, tabq_error *err);
/* Stops the keeper (tabq_shutdown, once the subscriptions stopped); frees the state
 * (tabq_close). */
void tabq__conc_stop(tabq_broker *b);
void tabq__conc_free(tabq_broker *b);
void tabq__conc_state_free(tabq_conc_state *st);

/* The subscription's concurrency options checked (TABQ_INVALID naming the table and the rule)
 * and, with a limit, its statements built: the step aside and the clear of a key's expired
 * slots. Nothing without a limit. */
int tabq__conc_sub_open(tabq_subscription *s, tabq_error *err);
void tabq__conc_sub_free(tabq_subscription *s);
/* Before a handler call of a limited subscription (s->conc_limit): takes one of the row's key's
 * slots and returns true, or finds them all held and returns false (the caller steps aside). A
 * row whose key cell is NULL is not limited: true, no slot. */
bool tabq__conc_take(tabq_delivery *d);
/* After the handler returned and the row settled: gives the slot back, where one is held. */
void tabq__conc_give_back(tabq_delivery *d);

#endif
