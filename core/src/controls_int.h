/* Pauses across processes (tabq/controls.h, docs/pause.md): the broker's controls table and
 * what its subscriptions read of it. */
#ifndef TABQ_CONTROLS_INT_H
#define TABQ_CONTROLS_INT_H

#include <tabq/controls.h>

#include "engine.h"

typedef struct tabq_controls_state {
  tabq_controls c; /* taken at full size; its names point into `names` */
  char *names;
  /* "SELECT paused FROM controls WHERE table_column = :key AND queue_column = :group", in the
   * broker's registry. */
  unsigned read;
  /* The controls table's channel where the dialect notifies, else "": each write notifies it;
   * listened to with listen_notify. */
  char channel[TABQ_CHANNEL_CAP];
} tabq_controls_state;

/* controls_flag.c */
/* The description's rules (taken at full size): every member but paused_at_column named (an
 * empty paused_at_column reads as none); TABQ_INVALID naming the member missing. `call` opens the
 * message ("tabq_set_controls"). */
int tabq__controls_check(tabq_controls *c, const char *call, tabq_error *err);
/* Marks a subscription about to start controlled where its broker has controls (before its
 * workers start). */
void tabq__controls_sub_open(tabq_subscription *s);
/* Called by a worker about to claim, with s->mu held (which it may let go of and take again):
 * false when the claim may go on; true when it must not now (the queue is paused, or its row was
 * just read or is being read: the worker then looks again at everything), with s->next_claim_ms
 * moved to when it is worth asking again. Reads the row where the last read is a poll interval
 * old or a notification came since. */
bool tabq__controls_hold(tabq_subscription *s);
/* A notification on `channel` with `payload`: true when it is the controls table's, whose
 * payload names the queue table whose subscriptions read their rows again at once. */
bool tabq__controls_note(tabq_broker *b, const char *channel, const char *payload);
/* Every controlled subscription of `table` (NULL: of every table) reads its row again at once. */
void tabq__controls_stale(tabq_broker *b, const char *table);
void tabq__controls_free(tabq_broker *b);

#endif
