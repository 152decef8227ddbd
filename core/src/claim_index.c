/* Whether a table's claims have an index to walk, for the statement check: the table's indexes
 * as the dialect's catalog query lists them (Dialect.indexes, ABI 1.7), held against the claim
 * order docs/table-description.md recommends. A claim selects `group = :queue` (and, with
 * processed_at, `processed_at IS NULL`) and orders by [priority,] [retry_after,] id: an index
 * serves it when its columns start with
 *   (group, processed_at, priority, retry_after, id), each where the table has the role, the
 *     unfinished rows one range after the group (any index, partial or not), or
 *   (group, priority, retry_after, id) where it holds the unfinished rows alone (a partial index
 *     on "processed_at IS NULL"), or holds every row of a table without processed_at.
 * An index of every row without processed_at, on a processed_at table, leaves every claim to
 * step over the finished rows: it does not serve. The primary key serves a table whose order is
 * the id's alone. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <tabq/sys/sql.h>

#include "engine.h"
#include "error.h"

#define MAX_KEY 16 /* columns of an index compared; the claim order has 5 at most */
#define NAME_CAP 256

typedef struct index_seen {
  char name[NAME_CAP];
  char cols[MAX_KEY][NAME_CAP]; /* "" for an expression */
  unsigned ncols;
  bool partial;
  bool unfinished_only; /* its predicate is "processed_at IS NULL" */
} index_seen;

/* The claim order's columns after the group, with processed_at leading them or not. */
static size_t claim_key(const tabq_table *t, bool with_processed, const char **out) {
  size_t n = 0;
  const tabq_col *key[] = {&t->group, with_processed ? &t->processed_at : NULL, &t->priority,
                           &t->retry_after, &t->id};
  for (size_t i = 0; i < sizeof key / sizeof key[0]; i++)
    if (key[i] && key[i]->name)
      out[n++] = key[i]->name;
  return n;
}

/* Names compare as SQLite and MySQL compare them, without ASCII case. */
static bool starts_with(const index_seen *x, const char *const *key, size_t n) {
  if (x->ncols < n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcasecmp(x->cols[i], key[i]))
      return false;
  return true;
}

static bool serves(const tabq_table *t, const index_seen *x) {
  const char *led[5], *plain[5];
  size_t nled = claim_key(t, true, led), nplain = claim_key(t, false, plain);
  if ((!x->partial || x->unfinished_only) && starts_with(x, led, nled))
    return true;
  bool holds_due = t->processed_at.name ? x->unfinished_only : !x->partial;
  return holds_due && starts_with(x, plain, nplain);
}

/* "(processed_at IS NULL)", "\"processed_at\" IS NULL": letters, digits and '_' alone, lower
 * case, read "processed_atisnull". */
static bool says_unfinished(const char *pred, size_t len, const char *processed_at) {
  char want[NAME_CAP + 8], got[NAME_CAP + 8];
  size_t n = 0, m = 0;
  for (const char *p = processed_at; *p && n + 1 < NAME_CAP; p++)
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

/* Reads the query's rows, an index's rows one after another, and says whether one serves. */
static int read_indexes(tabq_broker *b, tabq_prepared *p, const tabq_table *t, bool *found,
                        char *name, size_t cap) {
  index_seen x = {0};
  bool row, any = false;
  int rc = TABQ_OK;
  while (!*found && !(rc = b->drv->next(p, &row)) && row) {
    tabq_value v[4];
    for (unsigned i = 0; i < 4 && !rc; i++)
      rc = b->drv->cell(p, i, &v[i]);
    if (rc)
      return rc;
    char this[NAME_CAP];
    copy_cell(&v[0], this, sizeof this);
    if (any && strcmp(this, x.name)) {
      if ((*found = serves(t, &x)))
        break;
      memset(&x, 0, sizeof x);
    }
    any = true;
    snprintf(x.name, sizeof x.name, "%s", this);
    if (x.ncols < MAX_KEY)
      copy_cell(&v[2], x.cols[x.ncols++], NAME_CAP);
    bool text = v[3].type == TABQ_T_TEXT || v[3].type == TABQ_T_JSON;
    x.partial = v[3].type != TABQ_T_NULL;
    x.unfinished_only = text && t->processed_at.name &&
                        says_unfinished(v[3].u.buf.ptr, v[3].u.buf.len, t->processed_at.name);
  }
  if (!*found && any && rc == TABQ_OK)
    *found = serves(t, &x);
  if (*found)
    snprintf(name, cap, "%s", x.name);
  return rc;
}

int tabq__claim_index_find(tabq_broker *b, const tabq_build *build, bool *found, char *name,
                           size_t cap, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  const tabq_table *t = build->table;
  *found = false;
  name[0] = '\0';
  if (!TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, indexes))
    return tabq__err_set(err, TABQ_DIALECT, t->name, "indexes",
                         "the %s dialect (%s, plugin ABI %u.%u) lists no indexes (ABI 1.7's "
                         "Dialect.indexes), so the claim-order index of table %s was not looked "
                         "for",
                         p->name, b->plugin.path, TABQ_ABI_MAJOR_OF(p->abi),
                         TABQ_ABI_MINOR_OF(p->abi), t->name);
  tabq_stmt st;
  tabq_sql_init(&st, b->host);
  int rc = p->dialect->indexes(build, &st);
  if (!rc && (st.status || !st.sql))
    rc = tabq__err_set(err, st.status ? st.status : TABQ_DIALECT, t->name, "indexes",
                       "the dialect built no query of table %s's indexes", t->name);
  else if (rc)
    tabq__err_from_plugin(err, rc, t->name, "indexes");
  tabq_pconn *c;
  if (rc || (rc = tabq__pool_acquire(&b->pool, &c, err))) {
    tabq_sql_free(&st);
    return rc;
  }
  tabq_prepared *q = NULL;
  rc = tabq__pconn_check(c, b->drv->prepare(c->conn, st.sql, 0, "indexes", &q));
  if (!rc)
    rc = tabq__pconn_check(c, b->drv->execute(q, NULL, 0));
  if (!rc)
    rc = tabq__pconn_check(c, read_indexes(b, q, t, found, name, cap));
  if (rc)
    tabq__err_from_plugin(err, rc, t->name, "indexes");
  if (q) {
    b->drv->reset(q);
    b->drv->finalize(q);
  }
  tabq__pool_release(&b->pool, c);
  tabq_sql_free(&st);
  return rc;
}
