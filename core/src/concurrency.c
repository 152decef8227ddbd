/* Concurrency limits across processes (tabq/concurrency.h, docs/concurrency.md): the broker's
 * slots table, taken, checked on the database and its statements built once by
 * tabq_set_concurrency_slots, which then starts the keeper (concurrency_slot.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "admin_sql.h"
#include "concurrency_int.h"
#include "error.h"
#include "sized.h"

/* The names copied into one block the state owns. */
static int take(const tabq_concurrency_slots *in, tabq_conc_state *st, tabq_error *err) {
  int rc = TABQ_TAKE(in, &st->c, TABQ_CONCURRENCY_SLOTS_SIZE_1_0, NULL, err);
  if (!rc)
    rc = tabq__conc_check(&st->c, "tabq_set_concurrency_slots", err);
  if (rc)
    return rc;
  tabq_concurrency_slots *c = &st->c;
  const char **names[] = {&c->name, &c->key_column, &c->holder_column, &c->expires_column};
  size_t total = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    total += strlen(*names[i]) + 1;
  if (!(st->names = malloc(total)))
    return tabq__err_set(err, TABQ_NOMEM, c->name, "concurrency_slots",
                         "cannot copy the slots table");
  char *at = st->names;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t n = strlen(*names[i]) + 1;
    memcpy(at, *names[i], n);
    *names[i] = at;
    at += n;
  }
  return TABQ_OK;
}

static int no_row(void *user, const tabq_value *cells, unsigned ncols) {
  (void)user;
  (void)cells;
  (void)ncols;
  return 0;
}

/* The table and its columns, by a query naming each that reads no row (as tabq_admin_verify). */
static int verify(tabq_broker *b, const tabq_concurrency_slots *c, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  tabq__adm_raw(&q, "SELECT ");
  tabq__adm_name(&q, c->key_column);
  tabq__adm_raw(&q, ", ");
  tabq__adm_name(&q, c->holder_column);
  tabq__adm_raw(&q, ", ");
  tabq__adm_name(&q, c->expires_column);
  tabq__adm_raw(&q, " FROM ");
  tabq__adm_name(&q, c->name);
  tabq__adm_raw(&q, " WHERE 1 = 0");
  tabq_tx *tx;
  int rc = tabq_begin(b, &tx, err);
  if (!rc) {
    tabq_adm_vals v = {0};
    rc = tabq__adm_query(tx, &q, &v, 3, no_row, NULL, err);
    tabq_error ignored;
    tabq_rollback(tx, &ignored);
  }
  tabq__adm_free(&q);
  if (rc && rc != TABQ_NOMEM && rc != TABQ_CLOSED) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    return tabq__err_set(err, TABQ_SCHEMA, c->name, "concurrency_slots",
                         "concurrency slots table %s does not match its description (the table "
                         "or one of its columns %s, %s, %s is missing): %s",
                         c->name, c->key_column, c->holder_column, c->expires_column, why);
  }
  return rc;
}

int tabq_set_concurrency_slots(tabq_broker *b, const tabq_concurrency_slots *slots,
                               tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !slots)
    return tabq__err_set(err, TABQ_INVALID, NULL, "concurrency_slots",
                         "tabq_set_concurrency_slots needs a broker and a slots table");
  tabq_conc_state *st = calloc(1, sizeof *st);
  if (!st)
    return tabq__err_set(err, TABQ_NOMEM, NULL, "concurrency_slots",
                         "cannot allocate the slots table");
  tabq__conc_init(st);
  const char *name = slots->name;
  int rc = take(slots, st, err);
  if (!rc && atomic_load(&b->shut))
    rc = tabq__err_set(err, TABQ_CLOSED, name, "concurrency_slots", "the broker is shut down");
  if (!rc) {
    pthread_mutex_lock(&b->mu);
    if (b->conc)
      rc = tabq__err_set(err, TABQ_INVALID, name, "concurrency_slots",
                         "tabq_set_concurrency_slots: the broker has its slots table (%s) "
                         "already; a broker takes one, once",
                         b->conc->c.name);
    else if (b->subs)
      rc = tabq__err_set(err, TABQ_INVALID, name, "concurrency_slots",
                         "tabq_set_concurrency_slots: slots table %s comes after the broker's "
                         "first subscription (to table %s), which could not take a limit; give "
                         "the slots table before subscribing",
                         name, b->subs->t->name);
    pthread_mutex_unlock(&b->mu);
  }
  const tabq_logger *outer = tabq__log_enter(&b->log);
  if (!rc)
    rc = verify(b, &st->c, err);
  if (!rc)
    rc = tabq__conc_build(b, st, err);
  tabq__log_leave(outer);
  if (!rc) {
    pthread_mutex_lock(&b->mu);
    if (b->conc || b->subs) /* another thread got there meanwhile */
      rc = tabq__err_set(err, TABQ_INVALID, name, "concurrency_slots",
                         "tabq_set_concurrency_slots: the broker got %s meanwhile, on another "
                         "thread",
                         b->conc ? "its slots table" : "a subscription");
    else
      b->conc = st;
    pthread_mutex_unlock(&b->mu);
    if (!rc && (rc = tabq__conc_launch(b, err))) {
      pthread_mutex_lock(&b->mu);
      b->conc = NULL;
      pthread_mutex_unlock(&b->mu);
    }
  }
  if (rc)
    tabq__conc_state_free(st);
  return rc;
}

const char *tabq_concurrency_holder(const tabq_broker *b) {
  return b && b->conc ? b->conc->holder : "";
}
