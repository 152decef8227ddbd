/* LISTEN/NOTIFY wake-ups (SPEC 6): one pooled connection listens for the broker's life on the
 * channel of each subscribed table; a notification wakes the subscriptions it names. */
#ifndef TABQ_LISTEN_H
#define TABQ_LISTEN_H

#include <pthread.h>
#include <stdbool.h>
#include <tabq/tabq.h>

#include "pool.h"

#define TABQ_MAX_CHANNELS 64
#define TABQ_CHANNEL_CAP 128

typedef struct tabq_listener {
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a channel listened to, or the listener stopped */
  bool stop;
  char channels[TABQ_MAX_CHANNELS][TABQ_CHANNEL_CAP];
  unsigned nchannels;
  unsigned nlistened;  /* channels[0, nlistened) are listened to on the current connection */
  unsigned generation; /* connections made so far */
  tabq_pconn *conn;
} tabq_listener;

/* Starts listening; refuses a dialect without notifications (TABQ_DIALECT). */
int tabq__listener_start(tabq_broker *b, tabq_error *err);
/* Listens on `channel` (once per channel) and returns when the listener has. */
int tabq__listener_add(tabq_broker *b, const char *channel, const char *table, tabq_error *err);
void tabq__listener_stop(tabq_broker *b);

#endif
