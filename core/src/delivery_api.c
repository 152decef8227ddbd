/* A delivery as its handler sees it (tabq.h): the row's id, attempt, payload, group, key,
 * headers and columns, whether its hold stands, its lease token, and its early settlement. */
#include <string.h>

#include "engine.h"
#include "error.h"

int64_t tabq_delivery_id(const tabq_delivery *d) {
  return d->id.type == TABQ_T_INT ? d->id.u.i : 0;
}

tabq_value tabq_delivery_id_value(const tabq_delivery *d) {
  return d->id;
}

long tabq_delivery_attempt(const tabq_delivery *d) {
  return d->attempt;
}

static const char *text_cell(const tabq_delivery *d, int col) {
  if (col < 0 || !tabq__has_buffer(d->cells[col].type))
    return NULL;
  return d->cells[col].u.buf.ptr;
}

const void *tabq_delivery_payload(const tabq_delivery *d, size_t *len) {
  const char *p = text_cell(d, d->sub->proj.payload);
  if (len)
    *len = p ? d->cells[d->sub->proj.payload].u.buf.len : 0;
  return p;
}

const char *tabq_delivery_group(const tabq_delivery *d) {
  return text_cell(d, d->sub->proj.group);
}

const char *tabq_delivery_partition_key(const tabq_delivery *d) {
  return text_cell(d, d->sub->proj.partition_key);
}

const char *tabq_delivery_table(const tabq_delivery *d) {
  return d->sub->t->name;
}

const char *tabq_delivery_queue(const tabq_delivery *d) {
  return d->sub->queue ? d->sub->queue : "";
}

const char *tabq_delivery_header(tabq_delivery *d, const char *name) {
  return tabq__headers_get(d, name);
}

int tabq_delivery_column(const tabq_delivery *d, const char *name, tabq_value *out) {
  const tabq_table *t = d->sub->t;
  for (size_t i = 0; i < t->ndata; i++)
    if (!strcmp(t->data[i].name, name)) {
      *out = d->cells[d->sub->proj.data0 + (int)i];
      return TABQ_OK;
    }
  *out = tabq_null();
  return TABQ_INVALID;
}

bool tabq_delivery_held(tabq_delivery *d) {
  tabq_subscription *s = d->sub;
  pthread_mutex_lock(&d->mu);
  bool held = d->in_work && s->ops->held(d);
  pthread_mutex_unlock(&d->mu);
  return held;
}

int64_t tabq_delivery_lease_token(tabq_delivery *d) {
  pthread_mutex_lock(&d->mu);
  int64_t token = d->in_work ? d->sub->ops->token(d) : 0;
  pthread_mutex_unlock(&d->mu);
  return token;
}

int tabq_delivery_settle(tabq_delivery *d, tabq_outcome outcome, tabq_error *err) {
  tabq__err_clear(err);
  return tabq__settle(d, outcome, err);
}

bool tabq_delivery_trace(tabq_delivery *d, tabq_trace_context *out) {
  const char *tp = d ? tabq_delivery_header(d, "traceparent") : NULL;
  return tp && tabq_trace_parse(tp, tabq_delivery_header(d, "tracestate"), out);
}
