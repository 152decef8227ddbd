/* workers_by_key(n): the rows of one partition key handled in claim order on one worker. Claims
 * are serial (one claimer, so claim order is one order); each claimed row goes to the worker a
 * hash of its key picks (FNV-1a 64 of the key's bytes, modulo n), onto that worker's own FIFO,
 * which only that worker pops. A row without a key has no order to keep: it goes onto the shared
 * ring (s->ready) that any idle worker pops. The subscription has two slots per worker, so a
 * worker busy with a long row does not leave the others without rows while its key's later rows
 * wait behind it; every queue is as long as the slots, allocated at subscribe. Everything here
 * runs under s->mu. */
#include <stdlib.h>

#include "engine.h"
#include "error.h"

typedef struct key_queue {
  tabq_delivery **ring; /* s->nslots long: one key may take every slot */
  unsigned head, count;
} key_queue;

struct tabq_key_dispatch {
  unsigned n;
  key_queue q[]; /* one per worker */
};

static uint64_t fnv1a64(const unsigned char *p, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

int tabq__bykey_open(tabq_subscription *s, tabq_error *err) {
  unsigned n = s->o.workers_by_key;
  tabq_key_dispatch *k = calloc(1, sizeof *k + n * sizeof k->q[0]);
  if (!k)
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the key queues");
  k->n = n;
  s->bykey = k; /* freed by tabq__bykey_free, also when a ring below fails */
  for (unsigned i = 0; i < n; i++)
    if (!(k->q[i].ring = calloc(s->nslots, sizeof *k->q[i].ring)))
      return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the key queues");
  /* One claimer: two claims side by side could hand a key's rows out of claim order. */
  s->serial = true;
  return TABQ_OK;
}

void tabq__bykey_free(tabq_subscription *s) {
  if (!s->bykey)
    return;
  for (unsigned i = 0; i < s->bykey->n; i++)
    free(s->bykey->q[i].ring);
  free(s->bykey);
  s->bykey = NULL;
}

/* The worker a row's key belongs to, or -1 for a row without a key. */
static int worker_of(const tabq_subscription *s, const tabq_delivery *d) {
  if (s->proj.partition_key < 0)
    return -1;
  const tabq_value *v = &d->cells[s->proj.partition_key];
  uint64_t h;
  switch (v->type) {
  case TABQ_T_NULL:
    return -1;
  case TABQ_T_TEXT:
  case TABQ_T_BYTES:
  case TABQ_T_JSON:
    h = fnv1a64(v->u.buf.ptr, v->u.buf.len);
    break;
  default: /* a key column the driver reads as a number: its value's bytes */
    h = fnv1a64((const unsigned char *)&v->u.i, sizeof v->u.i);
    break;
  }
  return (int)(h % s->bykey->n);
}

bool tabq__bykey_push(tabq_subscription *s, tabq_delivery *d) {
  int w = worker_of(s, d);
  if (w < 0)
    return false;
  key_queue *q = &s->bykey->q[w];
  q->ring[(q->head + q->count) % s->nslots] = d;
  q->count++;
  return true;
}

tabq_delivery *tabq__bykey_pop(tabq_subscription *s, unsigned worker) {
  key_queue *q = &s->bykey->q[worker];
  if (!q->count)
    return NULL;
  tabq_delivery *d = q->ring[q->head];
  q->head = (q->head + 1) % s->nslots;
  q->count--;
  return d;
}

tabq_delivery *tabq__bykey_pop_any(tabq_subscription *s) {
  for (unsigned i = 0; i < s->bykey->n; i++) {
    tabq_delivery *d = tabq__bykey_pop(s, i);
    if (d)
      return d;
  }
  return NULL;
}
