/* A delivery slot: the claimed row's projection, copied once into a buffer the slot keeps from
 * one row to the next; taken out of work again; and the lock that orders its settlement against
 * the lease extender. The accessors a handler reads it through are delivery_api.c's. */
#include <string.h>

#include "engine.h"
#include "error.h"

/* Reads every cell of the current row. The driver's buffers end at its next step, so text and
 * bytes are copied (each NUL-terminated) into d->row, grown only when a row is larger than any
 * before. */
int tabq__delivery_fill(tabq_delivery *d, const tabq_driver_v1 *drv, tabq_prepared *p,
                        tabq_error *err) {
  tabq_subscription *s = d->sub;
  unsigned n = s->proj.ncols;
  size_t need = 0;
  for (unsigned i = 0; i < n; i++) {
    int rc = drv->cell(p, i, &d->cells[i]);
    if (rc)
      return tabq__err_from_plugin(err, rc, s->t->name, "claim");
    if (tabq__has_buffer(d->cells[i].type))
      need += d->cells[i].u.buf.len + 1;
  }
  if (tabq__buf_reserve(&d->row, need))
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, "claim", "cannot hold a row of %zu bytes",
                         need);
  size_t at = 0;
  for (unsigned i = 0; i < n; i++) {
    tabq_value *v = &d->cells[i];
    if (!tabq__has_buffer(v->type))
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
  d->cancel = TABQ__CANCEL_NONE;
  return TABQ_OK;
}

void tabq__delivery_unclaim(tabq_delivery **slots, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    pthread_mutex_lock(&slots[i]->mu); /* the extender and shutdown read these under it */
    slots[i]->in_work = false;
    atomic_store(&slots[i]->work_id, 0);
    slots[i]->conn = NULL;
    pthread_mutex_unlock(&slots[i]->mu);
  }
}

void tabq__delivery_done(tabq_delivery *d) {
  tabq__decode_release(d);
  if (d->headers) {
    json_decref(d->headers);
    d->headers = NULL;
  }
}

void tabq__delivery_lock(tabq_delivery *d) {
  pthread_mutex_lock(&d->mu);
  while (d->extending)
    pthread_cond_wait(&d->cv, &d->mu);
}

bool tabq__conn_held(tabq_delivery *d) {
  return d->conn && !d->conn->suspect && d->sub->b->drv->alive(d->conn->conn);
}

bool tabq__same_id(const tabq_value *a, const tabq_value *b) {
  if (a->type != b->type)
    return false;
  if (a->type == TABQ_T_INT)
    return a->u.i == b->u.i;
  return a->type == TABQ_T_TEXT && a->u.buf.len == b->u.buf.len &&
         !memcmp(a->u.buf.ptr, b->u.buf.ptr, a->u.buf.len);
}
