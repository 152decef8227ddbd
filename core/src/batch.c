/* A batch handler's call: the rows that decode go to the handler in claim order, the others
 * take the decode policy's outcome, and the claim's rows settle together — after the handler
 * returns, or inside it when the handler calls tabq_batch_settle to learn each row's result. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "error.h"

int tabq__batch_run_init(tabq_batch_run *r, unsigned cap) {
  memset(r, 0, sizeof *r);
  r->outcomes = calloc(cap, sizeof *r->outcomes);
  r->passed = calloc(cap, sizeof *r->passed);
  r->passed_at = calloc(cap, sizeof *r->passed_at);
  r->passed_outcomes = calloc(cap, sizeof *r->passed_outcomes);
  if (!r->outcomes || !r->passed || !r->passed_at || !r->passed_outcomes ||
      tabq__batch_scratch_init(&r->scratch, cap))
    return TABQ_NOMEM;
  return TABQ_OK;
}

void tabq__batch_run_free(tabq_batch_run *r) {
  free(r->outcomes);
  free(r->passed);
  free(r->passed_at);
  free(r->passed_outcomes);
  tabq__batch_scratch_free(&r->scratch);
  memset(r, 0, sizeof *r);
}

/* The handler's outcomes into the claim's places, then one settlement of the whole claim. */
static void settle_run(tabq_batch_run *r, const tabq_outcome *given) {
  for (unsigned k = 0; k < r->npassed; k++)
    r->outcomes[r->passed_at[k]] = given[k];
  for (unsigned i = 0; i < r->n; i++) /* a cancelled row's settlement is a drop */
    r->outcomes[i] = tabq__cancel_outcome(r->claimed[i], r->outcomes[i]);
  tabq_subscription *s = r->claimed[0]->sub;
  s->ops->settle_batch(r->claimed, r->n, r->outcomes, &r->scratch);
  r->settled = true;
}

void tabq__batch_handle(tabq_batch_run *r, tabq_delivery **claimed, unsigned n) {
  tabq_subscription *s = claimed[0]->sub;
  r->claimed = claimed;
  r->n = n;
  r->npassed = 0;
  r->settled = false;
  for (unsigned i = 0; i < n; i++) {
    r->outcomes[i] = tabq_no_outcome();
    if (tabq__decode_gate(claimed[i], &r->outcomes[i])) {
      r->passed_at[r->npassed] = i;
      r->passed_outcomes[r->npassed] = tabq_no_outcome();
      r->passed[r->npassed++] = claimed[i];
    }
  }
  for (unsigned i = 0; i < n; i++)
    claimed[i]->batch = r;
  for (unsigned i = 0; i < r->npassed; i++) {
    tabq__hooks_start(r->passed[i]);
    tabq__queue_latency_add(r->passed[i]); /* one sample a row the call hands over */
  }
  if (r->npassed) {
    int64_t began = tabq__mono_us();
    s->o.batch_handler(r->passed, r->npassed, r->passed_outcomes, s->o.user);
    int64_t took = tabq__mono_us() - began;
    /* one sample a call, in the first row's slot (the worker holds it for the call) */
    tabq__hist_add(&r->passed[0]->handler_time, took);
    for (unsigned i = 0; i < r->npassed; i++)
      r->passed[i]->handler_us = took;
  }
  if (!r->settled)
    settle_run(r, r->passed_outcomes);
  for (unsigned i = 0; i < r->npassed; i++)
    tabq__hooks_end(r->passed[i]);
  for (unsigned i = 0; i < n; i++) {
    claimed[i]->batch = NULL;
    tabq__delivery_done(claimed[i]);
  }
}

int tabq_batch_settle(tabq_delivery *const *ds, size_t n, const tabq_outcome *outcomes, int *codes,
                      tabq_error *err) {
  tabq__err_clear(err);
  tabq_batch_run *r = n && ds && ds[0] ? ds[0]->batch : NULL;
  bool same = r && n == r->npassed && outcomes && codes;
  for (size_t i = 0; same && i < n; i++)
    same = ds[i] == r->passed[i];
  if (!same)
    return tabq__err_set(err, TABQ_INVALID, r ? r->claimed[0]->sub->t->name : NULL, NULL,
                         "tabq_batch_settle takes the deliveries a batch handler was given, all "
                         "of them in their order, with an outcome and a code for each, from "
                         "inside that handler");
  if (r->settled)
    return tabq__err_set(err, TABQ_INVALID, ds[0]->sub->t->name, NULL,
                         "table %s: the batch is settled already", ds[0]->sub->t->name);
  settle_run(r, outcomes);
  for (size_t i = 0; i < n; i++)
    codes[i] = r->scratch.rcs[r->passed_at[i]];
  if (!r->scratch.err.code)
    return TABQ_OK;
  if (err)
    *err = r->scratch.err;
  return r->scratch.err.code;
}
