/* The transactions the engine begins and ends on a pooled connection. Every rollback's result
 * is checked: a session whose rollback failed is in a state nobody knows (a transaction may
 * still be open, holding its locks), so its connection is closed when it goes back to the pool
 * rather than handed to the next caller. Savepoints and the service's own transactions
 * (tabq_tx) are to live here too. */
#include <string.h>
#include <tabq/sql.h>

#include "engine.h"
#include "error.h"

int tabq_txn_render_begin(tabq_broker *b, const tabq_build *build, bool table_level, char *out,
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
    rc = tabq_err_set(err, TABQ_DIALECT, table, "begin", "the dialect's begin is unusable");
  else if (rc)
    tabq_err_from_plugin(err, rc, table, "begin");
  else
    memcpy(out, st.sql, st.len + 1);
  tabq_sql_free(&st);
  return rc;
}

int tabq_txn_begin(tabq_broker *b, const char *table, tabq_pconn *c, const char *begin_sql,
                   tabq_error *err) {
  int rc = tabq_pconn_check(c, b->drv->begin(c->conn, begin_sql));
  if (rc)
    tabq_err_from_plugin(err, rc, table, "begin");
  return rc;
}

int tabq_txn_commit(tabq_broker *b, const char *table, tabq_pconn *c, tabq_error *err) {
  int rc = tabq_pconn_check(c, b->drv->commit(c->conn));
  if (rc)
    tabq_err_from_plugin(err, rc, table, "commit");
  return rc;
}

bool tabq_txn_rollback(tabq_broker *b, const char *table, tabq_pconn *c) {
  int rc = b->drv->rollback(c->conn);
  if (!rc)
    return true;
  /* The caller's error stays the one that made it roll back. */
  tabq_error rb;
  tabq_err_from_plugin(&rb, rc, table, "rollback");
  tabq_logf(&b->log, TABQ_LOG_ERROR,
            "table %s: a rollback failed (%s): %s; the connection is closed rather than pooled",
            table ? table : "?", tabq_code_name(rb.code), rb.message);
  c->suspect = c->broken = true;
  return false;
}
