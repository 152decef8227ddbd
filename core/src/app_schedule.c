/* An app's periodic jobs (tabq/schedule.h): added from C or from a description file's
 * "schedules", checked as tabq_schedule checks them, every string the app's. */
#include <string.h>

#include "app_model.h"
#include "error.h"
#include "schedule_int.h"
#include "sized.h"

static tabq_app_desc *table_of(tabq_app *app, const char *name) {
  for (size_t i = 0; i < app->ntables; i++)
    if (!strcmp(app->tables[i]->t.name, name))
      return app->tables[i];
  return NULL;
}

static bool append(tabq_app *app, tabq_app_sched *s) {
  size_t n = app->nscheds;
  if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) { /* 4, then doubled; the old list the app's */
    tabq_app_sched **grown = tabq__app_alloc(app, (n ? n * 2 : 4) * sizeof *grown);
    if (!grown)
      return false;
    if (n)
      memcpy(grown, app->scheds, n * sizeof *grown);
    app->scheds = grown;
  }
  app->scheds[app->nscheds++] = s;
  return true;
}

/* The template's strings and headers into the app's memory. */
static bool copy_template(tabq_app *app, tabq_message *m) {
  bool ok = true;
  if (m->group)
    ok &= (m->group = tabq__app_strdup(app, m->group)) != NULL;
  if (m->partition_key)
    ok &= (m->partition_key = tabq__app_strdup(app, m->partition_key)) != NULL;
  if (m->payload) {
    void *p = tabq__app_alloc(app, m->payload_len + 1);
    if (p)
      memcpy(p, m->payload, m->payload_len);
    ok &= (m->payload = p) != NULL;
  }
  if (m->nheaders) {
    tabq_header *h = tabq__app_alloc(app, m->nheaders * sizeof *h);
    for (size_t i = 0; h && i < m->nheaders; i++) {
      h[i].name = tabq__app_strdup(app, m->headers[i].name);
      h[i].value = tabq__app_strdup(app, m->headers[i].value);
      ok &= h[i].name && h[i].value;
    }
    ok &= (m->headers = h) != NULL;
  } else {
    m->headers = NULL;
  }
  return ok;
}

int tabq_app_add_schedule(tabq_app *app, const char *table, const tabq_schedule_options *options,
                          tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, table, "schedule",
                         "tabq_app_add_schedule needs an app, a table and options");
  tabq_app_desc *d = table_of(app, table);
  if (!d)
    return tabq__err_set(err, TABQ_INVALID, table, "schedule",
                         "table %s: the app has no such table (add it first)", table);
  tabq_app_sched *s = tabq__app_alloc(app, sizeof *s);
  if (!s)
    return tabq__err_set(err, TABQ_NOMEM, table, "schedule", "out of memory");
  int rc = TABQ_TAKE(options, &s->o, TABQ_SCHEDULE_OPTIONS_SIZE_1_0, table, err);
  s->m = (tabq_message)TABQ_MESSAGE_INIT;
  if (!rc && s->o.message)
    rc = TABQ_TAKE(s->o.message, &s->m, TABQ_MESSAGE_SIZE_1_0, table, err);
  if (!rc && (s->m.ndata || s->m.id.type != TABQ_T_NULL))
    rc = tabq__err_set(err, TABQ_INVALID, table, "schedule",
                       "schedule %s: an app's schedule carries a group, a payload, a priority, a "
                       "partition key and headers; not data values or an id",
                       s->o.name ? s->o.name : "");
  if (!rc)
    rc = tabq__schedule_check(&d->t, &s->o, &s->m, err);
  for (size_t i = 0; !rc && i < app->nscheds; i++)
    if (!strcmp(app->scheds[i]->o.name, s->o.name))
      rc = tabq__err_set(err, TABQ_INVALID, table, "schedule",
                         "schedule %s: the app has a schedule of that name already", s->o.name);
  if (rc)
    return rc;
  s->table = d;
  s->o.name = tabq__app_strdup(app, s->o.name);
  s->o.spec = tabq__app_strdup(app, s->o.spec);
  s->o.zone = s->o.zone ? tabq__app_strdup(app, s->o.zone) : NULL;
  s->o.message = &s->m;
  if (!s->o.name || !s->o.spec || !copy_template(app, &s->m) || !append(app, s))
    return tabq__err_set(err, TABQ_NOMEM, table, "schedule", "out of memory");
  return TABQ_OK;
}

size_t tabq_app_schedule_count(const tabq_app *app) {
  return app ? app->nscheds : 0;
}

const tabq_table *tabq_app_schedule_table(const tabq_app *app, size_t i) {
  return app && i < app->nscheds ? &app->scheds[i]->table->t : NULL;
}

const tabq_schedule_options *tabq_app_schedule_options(const tabq_app *app, size_t i) {
  return app && i < app->nscheds ? &app->scheds[i]->o : NULL;
}
