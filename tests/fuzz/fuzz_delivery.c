/* tabq — the decoder targets' delivery (fuzz_delivery.h). */
#include "fuzz_delivery.h"

#include <string.h>

/* The driver's cell: the prepared statement is the fuzz_delivery itself. */
static int fuzz_cell(tabq_prepared *p, unsigned col, tabq_value *out) {
  const fuzz_delivery *f = (const fuzz_delivery *)p;
  *out = f->cells[col];
  return TABQ_OK;
}

/* Every line the decoders log is formatted, then dropped. */
static void fuzz_log(int level, const char *message, void *user) {
  (void)level;
  (void)user;
  if (strlen(message) > 4096)
    abort();
}

bool fuzz_delivery_open(fuzz_delivery *f, const tabq_table *table,
                        const tabq_subscription_options *options) {
  memset(f, 0, sizeof *f);
  f->b = calloc(1, sizeof *f->b);
  f->s = calloc(1, sizeof *f->s);
  if (!f->b || !f->s)
    abort();
  static tabq_driver_v1 driver = {.size = sizeof(tabq_driver_v1), .cell = fuzz_cell};
  f->b->drv = &driver;
  f->b->log = (tabq_logger){.fn = fuzz_log, .level = TABQ_LOG_DEBUG};
  f->s->b = f->b;
  f->s->table = *table;
  f->s->t = &f->s->table;
  f->s->o = *options;
  tabq__projection_init(&f->s->proj, f->s->t, false);
  if (f->s->proj.ncols > sizeof f->cells / sizeof f->cells[0])
    abort();
  f->d.sub = f->s;
  f->d.cells = f->filled;
  tabq_error err = {0};
  return tabq__decode_open(f->s, options, &err) == TABQ_OK;
}

void fuzz_delivery_fill(fuzz_delivery *f) {
  tabq_error err = {0};
  if (tabq__delivery_fill(&f->d, f->b->drv, (tabq_prepared *)f, &err))
    abort();
}

void fuzz_delivery_end(fuzz_delivery *f) {
  tabq__delivery_done(&f->d);
}

void fuzz_delivery_close(fuzz_delivery *f) {
  tabq__buf_free(&f->d.row);
  free(f->s);
  free(f->b);
}
