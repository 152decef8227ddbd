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
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "engine.h"
#include "error.h"

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
static bool starts_with(const tabq_index_seen *x, const char *const *key, size_t n) {
  if (x->ncols < n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcasecmp(x->cols[i], key[i]))
      return false;
  return true;
}

static bool serves(const tabq_table *t, const tabq_index_seen *x, void *name) {
  const char *led[5], *plain[5];
  size_t nled = claim_key(t, true, led), nplain = claim_key(t, false, plain);
  bool holds_due = t->processed_at.name ? x->unfinished_only : !x->partial;
  bool found = ((!x->partial || x->unfinished_only) && starts_with(x, led, nled)) ||
               (holds_due && starts_with(x, plain, nplain));
  if (found)
    snprintf(name, TABQ_INDEX_NAME_CAP, "%s", x->name);
  return found;
}

int tabq__claim_index_find(tabq_broker *b, const tabq_build *build, bool *found, char *name,
                           size_t cap, tabq_error *err) {
  char seen[TABQ_INDEX_NAME_CAP] = "";
  int rc = tabq__indexes_walk(b, NULL, build, "the claim-order index", serves, seen, found, err);
  snprintf(name, cap, "%s", rc || !*found ? "" : seen);
  return rc;
}
