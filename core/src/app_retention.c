/* A table's retention in an app (tabq/retention.h): kept with the table's description, read and
 * written with the description file's "retention" member, applied by tabq_app_main. */
#include <stddef.h>

#include "app_model.h"
#include "error.h"
#include "retention_int.h"
#include "sized.h"

/* The app's entry of a table: its description is the entry's first member. */
static tabq_app_desc *entry_of(const tabq_app *app, const char *table) {
  const tabq_table *t = app && table ? tabq_app_table_named(app, table) : NULL;
  return t ? (tabq_app_desc *)((char *)t - offsetof(tabq_app_desc, t)) : NULL;
}

int tabq_app_set_retention(tabq_app *app, const char *table, const tabq_retention_options *options,
                           tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, table, "retain",
                         "tabq_app_set_retention needs an app, a table and options");
  tabq_app_desc *d = entry_of(app, table);
  if (!d)
    return tabq__err_set(err, TABQ_INVALID, table, "retain",
                         "table %s: the app has no such table (add it first)", table);
  tabq_retention_options o;
  int rc = TABQ_TAKE(options, &o, TABQ_RETENTION_OPTIONS_SIZE_1_0, table, err);
  if (!rc)
    rc = tabq__retention_check(&d->t, &o, true, err);
  if (rc)
    return rc;
  d->retention = o;
  d->has_retention = true;
  return TABQ_OK;
}

const tabq_retention_options *tabq_app_retention(const tabq_app *app, const char *table) {
  const tabq_app_desc *d = entry_of(app, table);
  return d && d->has_retention ? &d->retention : NULL;
}
