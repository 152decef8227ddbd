/* A table's indexes as the dialect's catalog query lists them (Dialect.indexes, ABI 1.7): one
 * row per column of each index, read into one index at a time and handed to a visitor, which
 * says whether it is the one sought. The claim-order check (claim_index.c) and the unique key's
 * check (unique_index.c) walk them. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "catalog.h"
#include "engine.h"
#include "error.h"

/* "(processed_at IS NULL)", "\"processed_at\" IS NULL": letters, digits and '_' alone, lower
 * case, read "processed_atisnull". */
static bool says_unfinished(const char *pred, size_t len, const char *processed_at) {
  char want[TABQ_INDEX_NAME_CAP + 8], got[TABQ_INDEX_NAME_CAP + 8];
  size_t n = 0, m = 0;
  for (const char *p = processed_at; *p && n + 1 < TABQ_INDEX_NAME_CAP; p++)
    if (isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80)
      want[n++] = (char)tolower((unsigned char)*p);
  memcpy(want + n, "isnull", 7);
  for (size_t i = 0; i < len && m + 1 < sizeof got; i++)
    if (isalnum((unsigned char)pred[i]) || pred[i] == '_' || (unsigned char)pred[i] >= 0x80)
      got[m++] = (char)tolower((unsigned char)pred[i]);
  got[m] = '\0';
  return !strcmp(want, got);
}

static void copy_cell(const tabq_value *v, char *out, size_t cap) {
  bool text = v->type == TABQ_T_TEXT || v->type == TABQ_T_BYTES || v->type == TABQ_T_JSON;
  snprintf(out, cap, "%.*s", text ? (int)v->u.buf.len : 0, text ? (const char *)v->u.buf.ptr : "");
}

static bool cell_true(const tabq_value *v) {
  if (v->type == TABQ_T_INT)
    return v->u.i != 0;
  if (v->type == TABQ_T_TEXT || v->type == TABQ_T_BYTES)
    return v->u.buf.len && ((const char *)v->u.buf.ptr)[0] != '0' &&
           ((const char *)v->u.buf.ptr)[0] != 'f' && ((const char *)v->u.buf.ptr)[0] != 'F';
  return false;
}

/* The rows, an index's rows one after another, until the visitor finds its index. */
static int read_indexes(tabq_broker *b, tabq_prepared *p, const tabq_table *t, unsigned ncells,
                        tabq_index_visit visit, void *user, bool *found) {
  tabq_index_seen x = {0};
  bool row, any = false;
  int rc = TABQ_OK;
  while (!*found && !(rc = b->drv->next(p, &row)) && row) {
    tabq_value v[5];
    for (unsigned i = 0; i < ncells && !rc; i++)
      rc = b->drv->cell(p, i, &v[i]);
    if (rc)
      return rc;
    char this[TABQ_INDEX_NAME_CAP];
    copy_cell(&v[0], this, sizeof this);
    if (any && strcmp(this, x.name)) {
      if ((*found = visit(t, &x, user)))
        break;
      memset(&x, 0, sizeof x);
    }
    any = true;
    snprintf(x.name, sizeof x.name, "%s", this);
    if (x.ncols < TABQ_INDEX_MAX_KEY)
      copy_cell(&v[2], x.cols[x.ncols++], TABQ_INDEX_NAME_CAP);
    bool text = v[3].type == TABQ_T_TEXT || v[3].type == TABQ_T_JSON;
    x.partial = v[3].type != TABQ_T_NULL;
    x.unfinished_only = text && t->processed_at.name &&
                        says_unfinished(v[3].u.buf.ptr, v[3].u.buf.len, t->processed_at.name);
    x.unique_known = ncells > 4;
    x.unique = ncells > 4 && cell_true(&v[4]);
  }
  if (!*found && any && rc == TABQ_OK)
    *found = visit(t, &x, user);
  return rc;
}

int tabq__indexes_walk(tabq_broker *b, tabq_pconn *on, const tabq_build *build, const char *what,
                       tabq_index_visit visit, void *user, bool *found, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  const tabq_table *t = build->table;
  *found = false;
  if (!TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, indexes))
    return tabq__err_set(err, TABQ_DIALECT, t->name, "indexes",
                         "the %s dialect (%s, plugin ABI %u.%u) lists no indexes (ABI 1.7's "
                         "Dialect.indexes), so %s of table %s was not looked for",
                         p->name, b->plugin.path, TABQ_ABI_MAJOR_OF(p->abi),
                         TABQ_ABI_MINOR_OF(p->abi), what, t->name);
  /* ABI 1.9 brings the fifth cell, whether the index is unique, with find_unique: a plugin
   * rebuilt against 1.9's headers without serving unique keys keeps its four. */
  unsigned ncells = TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, find_unique) ? 5 : 4;
  tabq_stmt st;
  tabq_sql_init(&st, b->host);
  int rc = p->dialect->indexes(build, &st);
  if (!rc && (st.status || !st.sql))
    rc = tabq__err_set(err, st.status ? st.status : TABQ_DIALECT, t->name, "indexes",
                       "the dialect built no query of table %s's indexes", t->name);
  else if (rc)
    tabq__err_from_plugin(err, rc, t->name, "indexes");
  tabq_pconn *c = on;
  if (rc || (!on && (rc = tabq__pool_acquire(&b->pool, &c, err)))) {
    tabq_sql_free(&st);
    return rc;
  }
  tabq_prepared *q = NULL;
  rc = tabq__pconn_check(c, b->drv->prepare(c->conn, st.sql, 0, "indexes", &q));
  if (!rc)
    rc = tabq__pconn_check(c, b->drv->execute(q, NULL, 0));
  if (!rc)
    rc = tabq__pconn_check(c, read_indexes(b, q, t, ncells, visit, user, found));
  if (rc)
    tabq__err_from_plugin(err, rc, t->name, "indexes");
  if (q) {
    b->drv->reset(q);
    b->drv->finalize(q);
  }
  if (!on)
    tabq__pool_release(&b->pool, c);
  tabq_sql_free(&st);
  return rc;
}
