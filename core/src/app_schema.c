/* An app's schema (tabq/app.h): each table's, rendered and applied by tabq/schema.h with the
 * dead letter table the app's subscriptions name. tabq_app_main --print-schema and
 * `tabq schema` print it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_model.h"
#include "error.h"

#include <tabq/schema.h>

/* The dead letter table the app's subscriptions of `table` name: the first, as a table has one
 * schema; NULL when none names one. */
static const char *dead_letter_of(const tabq_app *app, const tabq_app_desc *table) {
  for (size_t i = 0; i < app->nsubs; i++)
    if (app->subs[i]->table == table && app->subs[i]->o.dead_letter_table)
      return app->subs[i]->o.dead_letter_table;
  return NULL;
}

static tabq_schema_options schema_options(const tabq_app *app, const tabq_app_desc *table,
                                          bool if_not_exists) {
  tabq_schema_options o = TABQ_SCHEMA_OPTIONS_INIT;
  o.dead_letter_table = dead_letter_of(app, table);
  o.if_not_exists = if_not_exists;
  return o;
}

int tabq_app_schema_sql(tabq_broker *b, const tabq_app *app, bool if_not_exists, char **out_sql,
                        tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app || !out_sql)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_app_schema_sql needs a broker, an app and a place for the text");
  *out_sql = NULL;
  char *all = NULL;
  size_t len = 0;
  FILE *text = open_memstream(&all, &len);
  if (!text)
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "out of memory");
  int rc = TABQ_OK;
  bool first = true;
  for (size_t i = 0; !rc && i < app->ntables; i++) {
    if (tabq__app_holds_dead_letters(app, app->tables[i]->t.name))
      continue;
    tabq_schema_options o = schema_options(app, app->tables[i], if_not_exists);
    char *sql = NULL;
    rc = tabq_schema_sql(b, &app->tables[i]->t, &o, &sql, err);
    if (!rc)
      fprintf(text, "%s-- table %s\n%s", first ? "" : "\n", app->tables[i]->t.name, sql);
    first = false;
    tabq_schema_free(sql);
  }
  if (fclose(text) && !rc)
    rc = tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "out of memory");
  if (rc)
    free(all);
  else
    *out_sql = all;
  return rc;
}

int tabq_app_schema_apply(tabq_broker *b, const tabq_app *app, bool if_not_exists,
                          tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_app_schema_apply needs a broker and an app");
  for (size_t i = 0; i < app->ntables; i++) {
    if (tabq__app_holds_dead_letters(app, app->tables[i]->t.name))
      continue;
    tabq_schema_options o = schema_options(app, app->tables[i], if_not_exists);
    int rc = tabq_schema_apply(b, &app->tables[i]->t, &o, err);
    if (rc)
      return rc;
  }
  return TABQ_OK;
}
