/* The broker's statements: built once by the dialect, prepared on each connection at first use,
 * and run with values bound by parameter id. */
#ifndef TABQ_STATEMENTS_H
#define TABQ_STATEMENTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

#include "loader.h"
#include "pool.h"

typedef struct tabq_sdef {
  char *sql;
  uint16_t params[TABQ_STMT_MAX_PARAMS];
  unsigned nparams;
  /* The copies of params the text binds, one after another: an insert_rows statement's rows,
   * else 1. The driver is told nparams * rows. */
  unsigned rows;
  char name[24];
  const char *table;
} tabq_sdef;

typedef struct tabq_registry {
  pthread_mutex_t mu;
  tabq_sdef defs[TABQ_MAX_STATEMENTS];
  atomic_uint n;
} tabq_registry;

/* The values a statement's parameters take, by id. Buffers must outlive the execution. */
typedef struct tabq_bind {
  tabq_value id, ids, group, dest, key, partition_key, headers, payload, channel, unique_key;
  int64_t now, lease_until, token, retry_at, limit, priority, attempt;
  const tabq_value *data;
  size_t ndata;
} tabq_bind;

void tabq__registry_init(tabq_registry *r);
void tabq__registry_destroy(tabq_registry *r, const tabq_host *host);
/* Builds a statement with the dialect's builder and registers it under *id. */
int tabq__stmt_build(tabq_registry *r, const tabq_host *host, tabq_build_fn fn, const tabq_build *b,
                     const char *name, unsigned *id, tabq_error *err);
/* As tabq__stmt_build, for an optional builder that may decline: no SQL with TABQ_OK registers
 * nothing and sets *built false. */
int tabq__stmt_build_optional(tabq_registry *r, const tabq_host *host, tabq_build_fn fn,
                              const tabq_build *b, const char *name, unsigned *id, bool *built,
                              tabq_error *err);
/* As tabq__stmt_build_optional, for a builder of b->rows rows (Dialect.insert_rows) whose
 * statement binds b->rows copies of the list it builds. */
int tabq__stmt_build_rows(tabq_registry *r, const tabq_host *host, tabq_build_fn fn,
                          const tabq_build *b, const char *name, unsigned *id, bool *built,
                          tabq_error *err);
/* Registers a statement already built (takes its text). */
int tabq__stmt_register(tabq_registry *r, tabq_stmt *st, const char *name, const char *table,
                        unsigned *id, tabq_error *err);
/* Prepares statement `id` on `c` if it is not yet (R-DESC-2 failures come back as SCHEMA). */
int tabq__stmt_prepare(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                       tabq_prepared **out, tabq_error *err);
/* Binds by id and executes; the caller reads rows and then calls drv->reset(*out). */
int tabq__stmt_run(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                   const tabq_bind *v, tabq_prepared **out, tabq_error *err);
/* Runs a statement that returns no rows and reports the rows it changed. */
int tabq__stmt_change(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                      const tabq_bind *v, uint64_t *changed, tabq_error *err);
/* Runs a statement and reads the first cell of its first row (*row false: it returned none). */
int tabq__stmt_first(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c, unsigned id,
                     const tabq_bind *v, bool *row, tabq_value *first, tabq_error *err);
/* One copy of statement id's parameter list bound by id from v: nparams values into out. */
void tabq__stmt_values(const tabq_registry *r, unsigned id, const tabq_bind *v, tabq_value *out);
/* As tabq__stmt_change, with the values bound already: nparams * rows of them, copy after copy. */
int tabq__stmt_change_values(tabq_registry *r, const tabq_driver_v1 *drv, tabq_pconn *c,
                             unsigned id, const tabq_value *values, uint64_t *changed,
                             tabq_error *err);

/* Refuses a real among values a driver older than ABI 1.5 would bind (it came with 1.5),
 * naming the value, the table and the plugin. */
int tabq__values_bindable(const tabq_loaded *l, const tabq_value *v, size_t n, const char *table,
                          const char *what, tabq_error *err);

#endif
