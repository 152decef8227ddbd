/* The service's hooks around each delivery (tabq/trace.h, docs/tracing.md): on_delivery_start
 * before its handler, on_delivery_end after its settlement, both on the handler's thread. */
#include <stdint.h>

#include "engine.h"
#include "error.h"
#include "sized.h"

#define TABQ_DELIVERY_HOOKS_SIZE_FIRST (offsetof(tabq_delivery_hooks, user) + sizeof(void *))

int tabq_set_delivery_hooks(tabq_broker *b, const tabq_delivery_hooks *hooks, tabq_error *err) {
  tabq__err_clear(err);
  if (!b)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_set_delivery_hooks needs a broker");
  pthread_mutex_lock(&b->mu);
  bool subscribed = b->subs != NULL;
  pthread_mutex_unlock(&b->mu);
  if (subscribed)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "the delivery hooks are set before the broker's first subscription "
                         "(its workers read them without a lock)");
  tabq_delivery_hooks taken = {0};
  int rc = hooks ? TABQ_TAKE(hooks, &taken, TABQ_DELIVERY_HOOKS_SIZE_FIRST, NULL, err) : TABQ_OK;
  if (rc)
    return rc;
  b->hooks = taken;
  b->has_hooks = hooks && (taken.on_delivery_start || taken.on_delivery_end);
  return TABQ_OK;
}

void tabq__hooks_start(tabq_delivery *d) {
  tabq_broker *b = d->sub->b;
  d->settled_as = ACT_RELEASE;
  d->settled_rc = TABQ_OK;
  d->handler_us = 0;
  if (!b->has_hooks)
    return;
  d->hook_began_us = tabq__mono_us();
  d->hook_token = b->hooks.on_delivery_start ? b->hooks.on_delivery_start(d, b->hooks.user) : NULL;
}

static tabq_outcome_kind outcome_of(tabq_action a) {
  switch (a) {
  case ACT_ACK:
    return TABQ_OUTCOME_ACK;
  case ACT_DISCARD:
    return TABQ_OUTCOME_DROP;
  case ACT_RETRY:
    return TABQ_OUTCOME_RETRY;
  case ACT_RETRY_AFTER:
    return TABQ_OUTCOME_RETRY_AFTER;
  case ACT_DEAD:
    return TABQ_OUTCOME_DEAD_LETTER;
  default:
    return TABQ_OUTCOME_NONE;
  }
}

void tabq__hooks_end(tabq_delivery *d) {
  tabq_broker *b = d->sub->b;
  if (!b->has_hooks || !b->hooks.on_delivery_end)
    return;
  tabq_delivery_end end = {
      .size = sizeof end,
      .outcome = outcome_of(d->settled_as),
      .code = (tabq_code)d->settled_rc,
      .handler_us = d->handler_us,
      .total_us = tabq__mono_us() - d->hook_began_us,
  };
  b->hooks.on_delivery_end(d, &end, d->hook_token, b->hooks.user);
  d->hook_token = NULL;
}

const char *tabq_outcome_name(tabq_outcome_kind kind) {
  switch (kind) {
  case TABQ_OUTCOME_ACK:
    return "ack";
  case TABQ_OUTCOME_DROP:
    return "drop";
  case TABQ_OUTCOME_RETRY:
    return "retry";
  case TABQ_OUTCOME_RETRY_AFTER:
    return "retry_after";
  case TABQ_OUTCOME_DEAD_LETTER:
    return "dead_letter";
  default:
    return "none";
  }
}
