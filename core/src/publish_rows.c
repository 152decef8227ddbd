/* The statements tabq_publish_many writes many rows with (Dialect.insert_rows, ABI 1.4): a batch
 * goes in chunks of the publisher's `chunk` rows, then its remainder by powers of two (300 rows
 * in chunks of 128: 128, 128, 32, 8, 4), each one statement, so a batch costs a round trip per
 * chunk and at most log2(chunk) more, and the per-table statements stay few (one per power of
 * two, built the first time a batch needs it). A single row left over is the one-row insert. */
#include "engine.h"
#include "publishing.h"

/* A size whose statement the dialect declined (wrote no SQL): smaller ones take its rows. */
#define ROWS_DECLINED (TABQ_NO_STMT - 1)

/* The most placeholders a statement of many rows binds. Every database takes far more (SQLite
 * 32766, PostgreSQL and MySQL 65535); the bound keeps a wide table's statement text and the
 * driver's per-statement buffers small, where a chunk of fewer rows costs little: a table of
 * 8 parameters keeps chunks of 128, one of 40 takes 32. */
#define ROWS_MAX_PARAMS 2048

void tabq__rows_init(tabq_broker *b, tabq_publisher *p) {
  for (unsigned k = 0; k < TABQ_ROWS_STEPS; k++)
    p->rows[k] = TABQ_NO_STMT;
  p->chunk = 0;
  const tabq_dialect_v1 *dl = b->plugin.plugin->dialect;
  unsigned np = p->reg->defs[p->insert].nparams;
  /* A unique key's conflict is told row by row: one insert each. */
  if (!TABQ_HAS_MEMBER(dl, tabq_dialect_v1, insert_rows) || p->table.unique_key.name)
    return;
  unsigned chunk = TABQ_INSERT_ROWS_MAX;
  while (chunk > 1 && chunk * np > ROWS_MAX_PARAMS)
    chunk /= 2;
  p->chunk = chunk > 1 ? chunk : 0;
}

/* log2 of the largest power of two not above n (n >= 1). */
static unsigned floor_log2(size_t n) {
  unsigned k = 0;
  while (n >>= 1)
    k++;
  return k;
}

static bool usable(const tabq_publisher *p, unsigned k) {
  return p->rows[k] != TABQ_NO_STMT && p->rows[k] != ROWS_DECLINED;
}

/* The first step to try with `left` rows to go: 2^k rows, the most up to the chunk; 0 is the
 * one-row insert. A step whose statement is declined gives way to the next smaller one. */
static unsigned first_step(const tabq_publisher *p, size_t left) {
  return p->chunk && left > 1 ? floor_log2(left < p->chunk ? left : p->chunk) : 0;
}

/* Builds the statement of 2^k rows (b->mu held). */
static int build_step(tabq_broker *b, tabq_publisher *p, unsigned k, tabq_error *err) {
  tabq_build build = {.table = &p->table, .form = tabq_table_form(&p->table), .rows = 1u << k};
  unsigned id;
  bool built;
  int rc = tabq__stmt_build_rows(p->reg, b->host, b->plugin.plugin->dialect->insert_rows, &build,
                                 "insert_rows", &id, &built, err);
  if (!rc)
    p->rows[k] = built ? id : ROWS_DECLINED;
  return rc;
}

int tabq__rows_build_every(tabq_broker *b, tabq_publisher *p, tabq_error *err) {
  int rc = TABQ_OK;
  for (unsigned k = 1; !rc && p->chunk && (1u << k) <= p->chunk; k++)
    if (p->rows[k] == TABQ_NO_STMT)
      rc = build_step(b, p, k, err);
  return rc;
}

int tabq__rows_plan(tabq_broker *b, tabq_publisher *p, size_t n, unsigned *rows, size_t *values,
                    tabq_error *err) {
  *rows = 0;
  *values = 0;
  /* The walk tabq__rows_next takes, building each statement it meets unbuilt; a step taken while
   * at least its rows are left is taken again, so the full chunks are one step here. */
  for (size_t left = n; left > 1;) {
    unsigned k = first_step(p, left);
    for (; k >= 1; k--) {
      int rc = p->rows[k] == TABQ_NO_STMT ? build_step(b, p, k, err) : TABQ_OK;
      if (rc)
        return rc;
      if (usable(p, k))
        break;
    }
    if (k == 0)
      break;
    unsigned size = 1u << k;
    size_t bound = (size_t)size * b->stmts.defs[p->rows[k]].nparams;
    *rows = size > *rows ? size : *rows;
    *values = bound > *values ? bound : *values;
    left %= size;
  }
  return TABQ_OK;
}

unsigned tabq__rows_next(const tabq_publisher *p, size_t left, unsigned *stmt) {
  unsigned k = first_step(p, left);
  while (k >= 1 && !usable(p, k))
    k--;
  *stmt = k ? p->rows[k] : p->insert;
  return 1u << k;
}
