/* A delivery: the claimed row's projection, copied once into a buffer the slot keeps from one
 * row to the next, and the accessors a handler reads it through. */
#include <string.h>

#include "engine.h"
#include "error.h"

static bool has_buffer(tabq_type t) {
  return t == TABQ_T_TEXT || t == TABQ_T_BYTES || t == TABQ_T_JSON;
}

/* Reads every cell of the current row. The driver's buffers end at its next step, so text and
 * bytes are copied (each NUL-terminated) into d->row, grown only when a row is larger than any
 * before. */
int tabq_delivery_fill(tabq_delivery *d, const tabq_driver_v1 *drv, tabq_prepared *p,
                       tabq_error *err) {
  tabq_subscription *s = d->sub;
  unsigned n = s->proj.ncols;
  size_t need = 0;
  for (unsigned i = 0; i < n; i++) {
    int rc = drv->cell(p, i, &d->cells[i]);
    if (rc)
      return tabq_err_from_plugin(err, rc, s->t->name, "claim");
    if (has_buffer(d->cells[i].type))
      need += d->cells[i].u.buf.len + 1;
  }
  if (tabq_buf_reserve(&d->row, need))
    return tabq_err_set(err, TABQ_NOMEM, s->t->name, "claim", "cannot hold a row of %zu bytes",
                        need);
  size_t at = 0;
  for (unsigned i = 0; i < n; i++) {
    tabq_value *v = &d->cells[i];
    if (!has_buffer(v->type))
      continue;
    if (v->u.buf.len)
      memcpy(d->row.p + at, v->u.buf.ptr, v->u.buf.len);
    d->row.p[at + v->u.buf.len] = '\0';
    v->u.buf.ptr = d->row.p + at;
    at += v->u.buf.len + 1;
  }
  d->row.len = at;
  d->id = d->cells[s->proj.id];
  /* A claim returns the attempt after counting it; the delivery reports it as it stood. */
  d->attempt = s->proj.attempt >= 0 && d->cells[s->proj.attempt].type == TABQ_T_INT
                   ? (long)d->cells[s->proj.attempt].u.i - 1
                   : 0;
  d->in_work = true;
  atomic_store(&d->work_id, d->id.type == TABQ_T_INT ? d->id.u.i : 0);
  d->settled = false;
  d->gone = false;
  d->lease_lost = false;
  return TABQ_OK;
}

void tabq_delivery_unclaim(tabq_delivery **slots, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    pthread_mutex_lock(&slots[i]->mu); /* the extender and shutdown read these under it */
    slots[i]->in_work = false;
    atomic_store(&slots[i]->work_id, 0);
    slots[i]->conn = NULL;
    pthread_mutex_unlock(&slots[i]->mu);
  }
}

void tabq_delivery_done(tabq_delivery *d) {
  tabq_decode_release(d);
  if (d->headers) {
    json_decref(d->headers);
    d->headers = NULL;
  }
}

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
  if (col < 0 || !has_buffer(d->cells[col].type))
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

const char *tabq_delivery_header(tabq_delivery *d, const char *name) {
  return tabq_headers_get(d, name);
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
  bool held = d->in_work;
  if (held && s->form == TABQ_FORM_LEASE)
    held = !d->lease_lost;
  else if (held)
    held = d->conn && !d->conn->suspect && s->b->drv->alive(d->conn->conn);
  pthread_mutex_unlock(&d->mu);
  return held;
}

int64_t tabq_delivery_lease_token(tabq_delivery *d) {
  pthread_mutex_lock(&d->mu);
  int64_t token = d->in_work && d->sub->form == TABQ_FORM_LEASE ? d->token : 0;
  pthread_mutex_unlock(&d->mu);
  return token;
}

void tabq_delivery_lock(tabq_delivery *d) {
  pthread_mutex_lock(&d->mu);
  while (d->extending)
    pthread_cond_wait(&d->cv, &d->mu);
}

int tabq_delivery_settle(tabq_delivery *d, tabq_outcome outcome, tabq_error *err) {
  tabq_err_clear(err);
  tabq_subscription *s = d->sub;
  /* A row lock batch shares one transaction: its settlements commit together at the end. */
  if (s->ops->claim_txn && s->o.batch_handler)
    return tabq_err_set(err, TABQ_INVALID, s->t->name, NULL,
                        "table %s: the rows of a row lock batch settle together; write the "
                        "outcome into the batch handler's array, or settle the batch with "
                        "tabq_batch_settle",
                        s->t->name);
  return tabq_settle(d, outcome, err);
}
