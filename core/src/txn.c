/* The transactions the engine begins and ends on a pooled connection. Every rollback's result
 * is checked: a session whose rollback failed is in a state nobody knows (a transaction may
 * still be open, holding its locks), so its connection is closed when it goes back to the pool
 * rather than handed to the next caller. Savepoints and the service's own transactions
 * (tabq_tx) are to live here too. */
#include <stdio.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "engine.h"
#include "error.h"

int tabq__txn_render_begin(tabq_broker *b, const tabq_build *build, bool table_level, char *out,
                           size_t cap, tabq_error *err) {
  tabq_table plain;
  tabq_build at = *build;
  if (!table_level) {
    plain = *build->table;
    plain.isolation = TABQ_ISOLATION_DEFAULT;
    plain.mode = TABQ_SQLITE_MODE_DEFAULT;
    at.table = &plain;
  }
  const char *table = build->table->name;
  tabq_stmt st;
  tabq_sql_init(&st, b->host);
  int rc = b->plugin.plugin->dialect->begin(&at, &st);
  if (!rc)
    rc = st.status;
  if (!rc && (!st.sql || st.len >= cap))
    rc = tabq__err_set(err, TABQ_DIALECT, table, "begin", "the dialect's begin is unusable");
  else if (rc)
    tabq__err_from_plugin(err, rc, table, "begin");
  else
    memcpy(out, st.sql, st.len + 1);
  tabq_sql_free(&st);
  return rc;
}

int tabq__txn_begin(tabq_broker *b, const char *table, tabq_pconn *c, const char *begin_sql,
                    tabq_error *err) {
  tabq__round_trip();
  int rc = tabq__pconn_check(c, b->drv->begin(c->conn, begin_sql));
  if (rc)
    tabq__err_from_plugin(err, rc, table, "begin");
  return rc;
}

int tabq__txn_commit(tabq_broker *b, const char *table, tabq_pconn *c, tabq_error *err) {
  tabq__round_trip();
  int rc = tabq__pconn_check(c, b->drv->commit(c->conn));
  if (rc)
    tabq__err_from_plugin(err, rc, table, "commit");
  return rc;
}

bool tabq__txn_rollback(tabq_broker *b, const char *table, tabq_pconn *c) {
  tabq__round_trip();
  int rc = b->drv->rollback(c->conn);
  if (!rc)
    return true;
  /* The caller's error stays the one that made it roll back. */
  tabq_error rb;
  tabq__err_from_plugin(&rb, rc, table, "rollback");
  tabq__logf(&b->log, TABQ_LOG_ERROR,
             "table %s: a rollback failed (%s): %s; the connection is closed rather than pooled",
             table ? table : "?", tabq_code_name(rb.code), rb.message);
  c->suspect = c->broken = true;
  return false;
}

int tabq__txn_end(tabq_broker *b, const char *table, tabq_pconn *c, int rc, tabq_error *err) {
  if (!rc)
    rc = tabq__txn_commit(b, table, c, err);
  if (rc)
    tabq__txn_rollback(b, table, c);
  return rc;
}

int tabq__txn_render_savepoint(tabq_broker *b, const tabq_build *build, char *set, char *back,
                               size_t cap, tabq_error *err) {
  const tabq_dialect_v1 *dl = b->plugin.plugin->dialect;
  const char *table = build->table->name;
  if (!dl->savepoint) { /* a dialect before ABI 1.6: the SQL standard's */
    snprintf(set, cap, "SAVEPOINT tabq_handler");
    snprintf(back, cap, "ROLLBACK TO SAVEPOINT tabq_handler");
    return TABQ_OK;
  }
  tabq_stmt s1, s2;
  tabq_sql_init(&s1, b->host);
  tabq_sql_init(&s2, b->host);
  int rc = dl->savepoint(build, &s1, &s2);
  if (!rc)
    rc = s1.status ? s1.status : s2.status;
  if (!rc && (!s1.sql || !s2.sql || s1.len >= cap || s2.len >= cap))
    rc =
        tabq__err_set(err, TABQ_DIALECT, table, "savepoint", "the dialect's savepoint is unusable");
  else if (rc)
    tabq__err_from_plugin(err, rc, table, "savepoint");
  else {
    memcpy(set, s1.sql, s1.len + 1);
    memcpy(back, s2.sql, s2.len + 1);
  }
  tabq_sql_free(&s1);
  tabq_sql_free(&s2);
  return rc;
}
