/* tabq_test_deliver (tabq/testing.h): a service's handler run once on a delivery made in memory.
 * The delivery belongs to a subscription opened as tabq_subscribe opens one (the same rules,
 * decode policy and codec), but of a form of its own here whose settlement runs no statement:
 * it only keeps what the row would be settled as, so the answer is tabq's own choice (a retry at
 * max_attempts a dead letter, a retry after a delay a plain retry without a retry_after column). */
#include <stdlib.h>
#include <string.h>
#include <tabq/testing.h>

#include "engine.h"
#include "publishing.h"
#include "error.h"
#include "sized.h"

/* What the settlement chose, and the outcome it was asked (its delay). */
typedef struct settled_as {
  tabq_action action;
  tabq_outcome asked;
  bool done;
} settled_as;

static int settle(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err) {
  settled_as *k = d->sub->worker_ctx;
  pthread_mutex_lock(&d->mu);
  int rc = TABQ_OK;
  if (!d->in_work)
    rc = tabq__not_in_work(d, err);
  else {
    *a = tabq__choose(d, o);
    *k = (settled_as){.action = *a, .asked = o, .done = true};
    tabq__leave_work(d);
  }
  pthread_mutex_unlock(&d->mu);
  return rc;
}

static bool due_now(tabq_action a, int rc) {
  (void)a;
  (void)rc;
  return false;
}

static bool held(tabq_delivery *d) {
  (void)d;
  return true;
}

static int64_t token(const tabq_delivery *d) {
  (void)d;
  return 0;
}

static const tabq_form_ops synthetic_ops = {
    .name = "test", .settle = settle, .due_now = due_now, .held = held, .token = token};

static tabq_value payload_value(const tabq_table *t, const tabq_message *m) {
  if (!m->payload)
    return tabq_null();
  tabq_value v = tabq_bytes(m->payload, m->payload_len);
  if (t->payload.type == TABQ_T_TEXT || t->payload.type == TABQ_T_JSON)
    v.type = t->payload.type;
  return v;
}

/* The cells a claim would read for `m`: the projection's order (table.h). */
static void fill(tabq_delivery *d, const tabq_message *m, long attempt, const tabq_buf *headers) {
  tabq_subscription *s = d->sub;
  const tabq_projection *p = &s->proj;
  for (unsigned i = 0; i < p->ncols; i++)
    d->cells[i] = tabq_null();
  d->id = m->id.type != TABQ_T_NULL ? m->id : tabq_int(1);
  d->attempt = attempt;
  d->cells[p->id] = d->id;
  if (p->attempt >= 0)
    d->cells[p->attempt] = tabq_int(attempt);
  if (p->group >= 0 && m->group)
    d->cells[p->group] = tabq_text(m->group, strlen(m->group));
  if (p->partition_key >= 0 && m->partition_key)
    d->cells[p->partition_key] = tabq_text(m->partition_key, strlen(m->partition_key));
  if (p->headers >= 0 && headers->len)
    d->cells[p->headers] = tabq_text(headers->p, headers->len);
  if (p->payload >= 0)
    d->cells[p->payload] = payload_value(s->t, m);
  for (size_t i = 0; i < m->ndata && i < s->t->ndata; i++)
    d->cells[p->data0 + (int)i] = m->data[i];
  d->in_work = true;
  d->settled = false;
}

static tabq_outcome answer(const settled_as *k) {
  switch (k->action) {
  case ACT_ACK:
    return tabq_ack();
  case ACT_DISCARD:
    return tabq_drop();
  case ACT_RETRY:
    return tabq_retry();
  case ACT_RETRY_AFTER:
    return tabq_retry_after(k->asked.delay_ms);
  case ACT_DEAD:
    return tabq_dead_letter();
  default:
    return tabq_no_outcome();
  }
}

static int run(tabq_subscription *s, const tabq_message *m, long attempt, tabq_outcome *out,
               tabq_error *err) {
  tabq_buf headers = {0};
  int rc = m->nheaders ? tabq__headers_render(m->headers, m->nheaders, &headers, err, s->t->name)
                       : TABQ_OK;
  if (rc)
    return rc;
  settled_as k = {0};
  s->worker_ctx = &k;
  tabq_delivery *d = &s->slots[0];
  fill(d, m, attempt, &headers);
  tabq_outcome policy;
  if (!tabq__decode_gate(d, &policy))
    rc = tabq__settle(d, policy, err);
  else {
    tabq_outcome o = s->o.handler(d, s->o.user);
    if (!k.done) /* else the handler settled itself: what it returned is ignored */
      rc = tabq__settle(d, o, err);
  }
  tabq__delivery_done(d);
  s->worker_ctx = NULL;
  tabq__buf_free(&headers);
  *out = answer(&k);
  return rc;
}

int tabq_test_deliver(const tabq_table *table, const tabq_subscription_options *options,
                      const tabq_test_message *caller, tabq_outcome *out, tabq_error *err) {
  tabq__err_clear(err);
  if (!table || !options || !caller || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_test_deliver needs a table, options, a message and an outcome");
  *out = tabq_no_outcome();
  tabq_test_message tm;
  tabq_message m;
  int rc =
      TABQ_TAKE(caller, &tm, offsetof(tabq_test_message, attempt) + sizeof(long), table->name, err);
  if (!rc && !tm.message.size) /* TABQ_TEST_MESSAGE_INIT leaves the inner size to us */
    tm.message.size = sizeof tm.message;
  if (!rc)
    rc = TABQ_TAKE(&tm.message, &m, TABQ_MESSAGE_SIZE_1_0, table->name, err);
  if (rc)
    return rc;
  if (!m.group) /* a row of the subscription's queue, unless the message says otherwise */
    m.group = options->queue;
  if (options->size >= offsetof(tabq_subscription_options, transactional) + sizeof(bool) &&
      options->transactional)
    return tabq__err_set(err, TABQ_INVALID, table->name, NULL,
                         "tabq_test_deliver cannot run a transactional handler: its transaction "
                         "needs a database (use tabq_test_open and tabq_test_drain)");
  if (!options->handler)
    return tabq__err_set(err, TABQ_INVALID, table->name, NULL,
                         "tabq_test_deliver runs a handler of one delivery; a batch handler runs "
                         "with tabq_test_drain");
  /* A broker of no database: only its logger serves (what the delivery logs goes there). */
  tabq_broker *b = calloc(1, sizeof *b);
  if (!b)
    return tabq__err_set(err, TABQ_NOMEM, table->name, NULL, "cannot allocate a delivery");
  tabq__logger_init(&b->log, NULL);
  tabq_subscription *s = NULL;
  rc = tabq__sub_open_synthetic(b, table, options, &synthetic_ops, &s, err);
  if (!rc)
    rc = tabq__message_check(s->t, &m, err);
  if (!rc)
    rc = run(s, &m, tm.attempt > 0 ? tm.attempt : 1, out, err);
  if (s)
    tabq__sub_free(s);
  free(b);
  return rc;
}
