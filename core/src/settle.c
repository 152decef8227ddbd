/* Settling a delivery by its outcome (SPEC 2): the settlement a worker runs when a handler
 * returns, or a handler runs itself (tabq_delivery_settle). It settles with the acks of other
 * workers (coalesce_acks), inside the delivery's own transaction (transactional mode), or by
 * the form's own settlement (form_*.c, with what settle_rows.c shares), then counts it and wakes
 * the subscription where the row is due again at once. */
#include "deadline.h"
#include "engine.h"
#include "error.h"

int tabq__settle(tabq_delivery *d, tabq_outcome o, tabq_error *err) {
  tabq_subscription *s = d->sub;
  tabq_action a = ACT_RELEASE;
  int rc = TABQ_OK;
  bool settled = false;
  o = tabq__cancel_outcome(d, o); /* a cancelled row's settlement is a drop (cancel_delivery.c) */
  if (s->coalescer.ready && tabq__choose(d, o) == ACT_ACK) {
    a = ACT_ACK;
    rc = tabq__ack_coalesced(d, o, &settled, err);
  }
  if (settled)
    ; /* with the acks of other workers (coalesce_acks) */
  else if (tabq__tx_open(d->tx))
    rc = tabq__settle_tx(d, o, &a, err);
  else
    rc = s->ops->settle(d, o, &a, err);
  if (rc == TABQ_INVALID || rc == TABQ_CLOSED)
    return rc; /* nothing was settled */
  if (rc == TABQ_LEASE_LOST && d->by_deadline && !tabq__deadline_settling)
    return rc; /* nothing either: the core settled the row at its deadline (deadline.c) */
  tabq__settle_count(d, a, rc);
  /* A row retried or released is due at once (as is, in the row lock form, one whose failed
   * settlement rolled back): claim it now rather than a poll interval on. */
  if (s->ops->due_now(a, rc))
    tabq__sub_wake(s);
  return rc;
}

int tabq__settle_logged(tabq_delivery *d, tabq_outcome o, tabq_error *err) {
  pthread_mutex_lock(&d->mu);
  bool settled = d->settled;
  pthread_mutex_unlock(&d->mu);
  if (settled)
    return tabq__err_set(err, TABQ_INVALID, d->sub->t->name, NULL,
                         "table %s: the delivery is settled already", d->sub->t->name);
  int rc = tabq__settle(d, o, err);
  if (rc)
    tabq__logf(&d->sub->b->log, rc == TABQ_LEASE_LOST ? TABQ_LOG_WARN : TABQ_LOG_ERROR,
               "settlement on table %s failed (%s): %s", d->sub->t->name, tabq_code_name(err->code),
               err->message);
  return rc;
}

void tabq__settle_returned(tabq_delivery *d, tabq_outcome o) {
  tabq_error err;
  tabq__settle_logged(d, o, &err);
}

void tabq__settle_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                         tabq_batch_scratch *x, bool pooled) {
  if (!n)
    return;
  tabq_action actions[n];
  for (unsigned i = 0; i < n; i++)
    actions[i] = tabq__choose(ds[i], outcomes[i]);
  if (tabq__settle_joined_try(ds, n, outcomes, actions, x, pooled))
    return;
  for (unsigned i = 0; i < n; i++) { /* one by one, each as a handler's returned outcome */
    tabq_error err;
    x->rcs[i] = tabq__settle_logged(ds[i], outcomes[i], &err);
    if (x->rcs[i] && !x->err.code)
      x->err = err;
  }
}
