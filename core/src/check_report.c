/* The statement check's report (tabq/check.h): items in the order they were checked, each one
 * allocation holding the item and its strings, so an item's address stays while the report
 * grows. */
#include "check_report.h"

#include <stdlib.h>
#include <string.h>

struct tabq_check_report {
  tabq_check_item **items;
  size_t n, cap;
};

tabq_check_report *tabq_check_report_new(void) {
  return calloc(1, sizeof(tabq_check_report));
}

size_t tabq_check_report_count(const tabq_check_report *r) {
  return r ? r->n : 0;
}

const tabq_check_item *tabq_check_report_item(const tabq_check_report *r, size_t i) {
  return r && i < r->n ? r->items[i] : NULL;
}

tabq_check_severity tabq_check_report_worst(const tabq_check_report *r) {
  tabq_check_severity worst = TABQ_CHECK_OK;
  for (size_t i = 0; r && i < r->n; i++)
    if (r->items[i]->severity > worst)
      worst = r->items[i]->severity;
  return worst;
}

void tabq_check_report_free(tabq_check_report *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n; i++)
    free(r->items[i]);
  free(r->items);
  free(r);
}

/* Copies `s` (NULL as "") to *at and moves *at past it. */
static const char *put(char **at, const char *s) {
  const char *copy = *at;
  size_t n = strlen(s ? s : "") + 1;
  memcpy(*at, s ? s : "", n);
  *at += n;
  return copy;
}

int tabq__report_add(tabq_check_report *r, const tabq_check_item *in) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 16;
    tabq_check_item **grown = realloc(r->items, cap * sizeof *grown);
    if (!grown)
      return TABQ_NOMEM;
    r->items = grown;
    r->cap = cap;
  }
  const char *texts[] = {in->table, in->purpose, in->sql, in->sqlstate, in->message};
  size_t size = sizeof(tabq_check_item);
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    size += strlen(texts[i] ? texts[i] : "") + 1;
  tabq_check_item *item = malloc(size);
  if (!item)
    return TABQ_NOMEM;
  *item = *in;
  char *at = (char *)(item + 1);
  item->table = put(&at, in->table);
  item->purpose = put(&at, in->purpose);
  item->sql = put(&at, in->sql);
  item->sqlstate = put(&at, in->sqlstate);
  item->message = put(&at, in->message);
  r->items[r->n++] = item;
  return TABQ_OK;
}
