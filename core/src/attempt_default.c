/* A generated attempt column is filled by the database's default, and everything tabq counts
 * assumes it starts at 1: a default of 0 makes the first delivery read 0 and lets max_attempts
 * deliver once more. Checked at open from the catalog, where the dialect can read it. */
#include <ctype.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "engine.h"
#include "error.h"

/* "1", "'1'", "(1)", "'1'::integer", " 1 " all read as 1; anything else is not 1. */
static bool reads_one(const char *expr, size_t n) {
  for (bool changed = true; changed;) {
    changed = false;
    while (n && isspace((unsigned char)*expr))
      expr++, n--;
    while (n && isspace((unsigned char)expr[n - 1]))
      n--;
    const char *cast = NULL;
    for (size_t i = 0; i + 1 < n; i++)
      if (expr[i] == ':' && expr[i + 1] == ':')
        cast = expr + i;
    if (cast && !memchr(cast, ')', n - (size_t)(cast - expr))) {
      n = (size_t)(cast - expr);
      changed = true;
    } else if (n >= 2 && ((expr[0] == '(' && expr[n - 1] == ')') ||
                          (expr[0] == '\'' && expr[n - 1] == '\''))) {
      expr++, n -= 2;
      changed = true;
    }
  }
  return n == 1 && expr[0] == '1';
}

int tabq__check_attempt_default(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_table *t = s->t;
  const tabq_dialect_v1 *dl = b->plugin.plugin->dialect;
  if (!t->attempt.name || !t->attempt.generated ||
      !TABQ_HAS_MEMBER(dl, tabq_dialect_v1, column_default))
    return TABQ_OK;
  tabq_build build = tabq__sub_build(s);
  tabq_stmt st;
  tabq_sql_init(&st, b->host);
  int rc = dl->column_default(&build, t->attempt.name, &st);
  if (rc) {
    tabq_sql_free(&st);
    return tabq__err_from_plugin(err, rc, t->name, "column_default");
  }
  tabq_pconn *c;
  if ((rc = tabq__pool_acquire(&b->pool, &c, err))) {
    tabq_sql_free(&st);
    return rc;
  }
  tabq_prepared *p = NULL;
  bool row = false;
  tabq_value v = tabq_null();
  rc = tabq__pconn_check(c, b->drv->prepare(c->conn, st.sql, 0, "column_default", &p));
  if (!rc)
    rc = tabq__pconn_check(c, b->drv->execute(p, NULL, 0));
  if (!rc)
    rc = tabq__pconn_check(c, b->drv->next(p, &row));
  if (!rc && row)
    rc = tabq__pconn_check(c, b->drv->cell(p, 0, &v));
  if (rc)
    tabq__err_from_plugin(err, rc, t->name, "column_default");
  else if (row && !(v.type == TABQ_T_TEXT && reads_one(v.u.buf.ptr, v.u.buf.len)) &&
           !(v.type == TABQ_T_INT && v.u.i == 1))
    rc = tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                       "table %s: attempt column %s is generated, so the database fills it, but "
                       "its default is %.*s, not 1 (the first delivery must read 1, and "
                       "max_attempts counts from there): give it DEFAULT 1",
                       t->name, t->attempt.name, v.type == TABQ_T_TEXT ? (int)v.u.buf.len : 4,
                       v.type == TABQ_T_TEXT ? (const char *)v.u.buf.ptr : "none");
  /* No row: no such column; the statements' prepare names it (R-DESC-2). */
  if (p) {
    b->drv->reset(p);
    b->drv->finalize(p);
  }
  tabq__pool_release(&b->pool, c);
  tabq_sql_free(&st);
  return rc;
}
