/* A subscription's statements: the build the dialect's builders get for it (table, form,
 * mount, server), and the slots its built statements fill, where a statement of the service's
 * own (custom.c) takes precedence. */
#include "engine.h"

tabq_build tabq__sub_build(const tabq_subscription *s) {
  tabq_build b = {.table = s->t,
                  .form = s->form,
                  .dead_letter_table = s->dead_letter_table,
                  .server_version = s->server_version,
                  .server_version_text = s->server_version_text,
                  .database = s->database[0] ? s->database : NULL,
                  .project_due = s->proj.due >= 0};
  return b;
}

int tabq__sub_stmt(tabq_subscription *s, tabq_build_fn fn, const char *name, tabq_sq q,
                   tabq_error *err) {
  if (s->st[q] != TABQ_NO_STMT)
    return TABQ_OK; /* the service's own */
  tabq_build build = tabq__sub_build(s);
  return tabq__stmt_build(s->reg, s->b->host, fn, &build, name, &s->st[q], err);
}

/* The begins of the transactions tabq opens. A table's isolation level (or SQLite mode)
 * governs the transactions of deliveries: the row lock form's claims (claims_at_level), and a
 * transactional delivery's own in the lease and advisory forms (docs/transactions.md). The
 * engine's short ones (FIFO guard, stamps, dead letters) run at the database's default (READ
 * COMMITTED on MySQL; BEGIN IMMEDIATE on SQLite). */
int tabq__sub_begins(tabq_subscription *s, bool claims_at_level, tabq_error *err) {
  tabq_build build = tabq__sub_build(s);
  int rc =
      tabq__txn_render_begin(s->b, &build, claims_at_level, s->begin_sql, sizeof s->begin_sql, err);
  if (!rc && s->o.transactional && !claims_at_level)
    rc = tabq__txn_render_begin(s->b, &build, true, s->tx_begin_sql, sizeof s->tx_begin_sql, err);
  return rc;
}
