/* Wake-ups: a subscription waiting out its poll interval claims at once when something it may
 * claim appears (a publish through this broker, a retry or release it settled, a notification),
 * and the subscriptions of a table (and group) are found for a publish. */
#include <string.h>

#include "engine.h"

void tabq__sub_wake(tabq_subscription *s) {
  pthread_mutex_lock(&s->mu);
  s->wakes++;
  s->next_claim_ms = 0;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

void tabq__publish_wake(tabq_broker *b, const tabq_table *t, const char *group) {
  pthread_mutex_lock(&b->mu);
  for (tabq_subscription *s = b->subs; s; s = s->next) {
    if (strcmp(s->t->name, t->name))
      continue;
    if (t->group.name && group && s->queue && strcmp(s->queue, group))
      continue;
    tabq__sub_wake(s);
  }
  pthread_mutex_unlock(&b->mu);
}
