/* A table with a unique_key column (docs/unique-jobs.md): the plugin must write the key and find
 * its holder (ABI 1.9), and the database must hold the key unique by an index of that column
 * alone, over every row or over the unfinished ones ("WHERE processed_at IS NULL"), the shapes
 * the insert's "ON CONFLICT (key) WHERE processed_at IS NULL" can name. Checked from the catalog
 * when a publisher of the table opens, so a missing index is an error before the first row, not
 * a duplicate job later. */
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "engine.h"
#include "error.h"

int tabq__unique_servable(tabq_broker *b, const tabq_table *t, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  if (!t->unique_key.name || TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, find_unique))
    return TABQ_OK;
  return tabq__err_set(err, TABQ_DIALECT, t->name, "insert",
                       "table %s has a unique_key column (%s); the %s dialect (%s, plugin ABI "
                       "%u.%u) writes no unique keys: that needs ABI 1.9's Dialect.find_unique",
                       t->name, t->unique_key.name, p->name, b->plugin.path,
                       TABQ_ABI_MAJOR_OF(p->abi), TABQ_ABI_MINOR_OF(p->abi));
}

static bool holds_key(const tabq_table *t, const tabq_index_seen *x, void *user) {
  (void)user;
  return x->unique && x->ncols == 1 && !strcasecmp(x->cols[0], t->unique_key.name) &&
         (!x->partial || x->unfinished_only);
}

int tabq__unique_index_check(tabq_broker *b, tabq_pconn *on, const tabq_build *build,
                             tabq_error *err) {
  const tabq_table *t = build->table;
  if (!t->unique_key.name)
    return TABQ_OK;
  bool found;
  int rc = tabq__indexes_walk(b, on, build, "the unique key's index", holds_key, NULL, &found, err);
  if (rc || found)
    return rc;
  return tabq__err_set(
      err, TABQ_SCHEMA, t->name, "indexes",
      "table %s: its unique_key column %s has no unique index of that column "
      "alone%s, so two publishes of one key could both write a row; create it "
      "(tabq_schema_sql renders it as %s_unique; docs/unique-jobs.md)",
      t->name, t->unique_key.name,
      t->processed_at.name ? " (over every row, or WHERE processed_at IS NULL)" : "", t->name);
}
