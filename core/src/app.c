/* The app (tabq/app.h): tables, subscriptions and routes added with the rules a broker would apply
 * to them, so an app that was built or read is one a service can open as it stands. */
#include <stdlib.h>
#include <string.h>

#include "app_model.h"
#include "error.h"
#include "mount.h"
#include "sized.h"
#include "table.h"

static int no_memory(tabq_error *err) {
  return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "out of memory building the app");
}

static bool remember(tabq_app *app, void *p) {
  if (app->nowned == app->owned_cap) {
    size_t cap = app->owned_cap ? app->owned_cap * 2 : 32;
    void **grown = realloc(app->owned, cap * sizeof *grown);
    if (!grown)
      return false;
    app->owned = grown;
    app->owned_cap = cap;
  }
  app->owned[app->nowned++] = p;
  return true;
}

void *tabq__app_alloc(tabq_app *app, size_t size) {
  void *p = calloc(1, size ? size : 1);
  if (p && !remember(app, p)) {
    free(p);
    return NULL;
  }
  return p;
}

const char *tabq__app_strdup(tabq_app *app, const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *copy = tabq__app_alloc(app, n);
  if (copy)
    memcpy(copy, s, n);
  return copy;
}

/* Appends `item` to one of the app's lists; the list itself is the app's too. */
static bool append(tabq_app *app, void ***list, size_t *n, void *item) {
  /* Room for 4, then doubled at every power of two; the old list stays the app's until freed. */
  if (*n == 0 || (*n >= 4 && (*n & (*n - 1)) == 0)) {
    void **grown = tabq__app_alloc(app, (*n ? *n * 2 : 4) * sizeof *grown);
    if (!grown)
      return false;
    if (*n)
      memcpy(grown, *list, *n * sizeof *grown);
    *list = grown;
  }
  (*list)[(*n)++] = item;
  return true;
}
#define APPEND(app, list, n, item) append((app), (void ***)(list), (n), (item))

static bool copy_col(tabq_app *app, const tabq_col *in, tabq_col *out) {
  *out = *in;
  out->name = tabq__app_strdup(app, in->name);
  return !in->name || out->name;
}

int tabq__app_copy_table(tabq_app *app, const tabq_table *in, tabq_table *out, tabq_error *err) {
  *out = *in;
  bool ok = (out->name = tabq__app_strdup(app, in->name)) != NULL;
  tabq_col *roles[] = {&out->id,          &out->group,   &out->priority,     &out->partition_key,
                       &out->retry_after, &out->attempt, &out->processed_at, &out->locked_until,
                       &out->headers,     &out->payload};
  const tabq_col *from[] = {&in->id,          &in->group,   &in->priority,     &in->partition_key,
                            &in->retry_after, &in->attempt, &in->processed_at, &in->locked_until,
                            &in->headers,     &in->payload};
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    ok = ok && copy_col(app, from[i], roles[i]);
  out->advisory_lock = tabq__app_strdup(app, in->advisory_lock);
  ok = ok && (!in->advisory_lock || out->advisory_lock);
  out->deadline_column = tabq__app_strdup(app, in->deadline_column);
  ok = ok && (!in->deadline_column || out->deadline_column);
  if (in->ndata) {
    tabq_col *data = tabq__app_alloc(app, in->ndata * sizeof *data);
    ok = ok && data;
    for (size_t i = 0; ok && i < in->ndata; i++)
      ok = copy_col(app, &in->data[i], &data[i]);
    out->data = data;
  }
  const char **ev = (const char **)&out->events;
  const char *const *ev_in = (const char *const *)&in->events;
  for (size_t i = 0; i < sizeof out->events / sizeof *ev; i++) {
    ev[i] = tabq__app_strdup(app, ev_in[i]);
    ok = ok && (!ev_in[i] || ev[i]);
  }
  return ok ? TABQ_OK : no_memory(err);
}

int tabq_app_new(const char *name, const char *version, tabq_app **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_app_new needs somewhere to put it");
  *out = NULL;
  if (!name || !name[0])
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "an app needs a name");
  tabq_app *app = calloc(1, sizeof *app);
  if (!app)
    return no_memory(err);
  app->name = tabq__app_strdup(app, name);
  app->version = tabq__app_strdup(app, version);
  if (!app->name || (version && !app->version)) {
    tabq_app_free(app);
    return no_memory(err);
  }
  *out = app;
  return TABQ_OK;
}

void tabq_app_free(tabq_app *app) {
  if (!app)
    return;
  for (size_t i = 0; i < app->nowned; i++)
    free(app->owned[i]);
  free(app->owned);
  free(app);
}

int tabq_app_set_description(tabq_app *app, const char *description, tabq_error *err) {
  tabq__err_clear(err);
  if (!app)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_app_set_description needs an app");
  app->description = tabq__app_strdup(app, description);
  return app->description || !description ? TABQ_OK : no_memory(err);
}

static tabq_app_desc *table_named(const tabq_app *app, const char *name) {
  for (size_t i = 0; name && i < app->ntables; i++)
    if (!strcmp(app->tables[i]->t.name, name))
      return app->tables[i];
  return NULL;
}

static int unknown_table(const char *what, const char *name, tabq_error *err) {
  return tabq__err_set(err, TABQ_DECLARATION, name, NULL, "%s: the app describes no table %s", what,
                       name ? name : "(none)");
}

int tabq_app_add_table(tabq_app *app, const tabq_table *table, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !table)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_app_add_table needs an app and a table");
  tabq_table taken;
  int rc = tabq__table_take(table, &taken, err);
  if (!rc)
    rc = tabq__table_rules(&taken, err);
  if (rc)
    return rc;
  if (table_named(app, taken.name))
    return tabq__err_set(err, TABQ_DECLARATION, taken.name, NULL,
                         "the app describes table %s twice", taken.name);
  tabq_app_desc *t = tabq__app_alloc(app, sizeof *t);
  if (!t)
    return no_memory(err);
  rc = tabq__app_copy_table(app, &taken, &t->t, err);
  if (!rc && !APPEND(app, &app->tables, &app->ntables, t))
    rc = no_memory(err);
  return rc;
}

const tabq_app_schema *tabq__app_schema_of(const tabq_app *app, const char *table,
                                           const char *queue) {
  for (size_t i = 0; i < app->nschemas; i++) {
    const tabq_app_schema *s = app->schemas[i];
    if (!strcmp(s->table, table) &&
        (s->queue && queue ? !strcmp(s->queue, queue) : s->queue == queue))
      return s;
  }
  return NULL;
}

int tabq_app_set_payload_schema(tabq_app *app, const char *table, const char *queue,
                                const char *json_schema, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !json_schema)
    return tabq__err_set(err, TABQ_INVALID, table, NULL,
                         "tabq_app_set_payload_schema needs an app and a schema");
  if (!table_named(app, table))
    return unknown_table("payload schema", table, err);
  tabq_app_schema *s = (tabq_app_schema *)tabq__app_schema_of(app, table, queue);
  if (!s) {
    s = tabq__app_alloc(app, sizeof *s);
    if (!s || !(s->table = tabq__app_strdup(app, table)) ||
        (queue && !(s->queue = tabq__app_strdup(app, queue))) ||
        !APPEND(app, &app->schemas, &app->nschemas, s))
      return no_memory(err);
  }
  return (s->json = tabq__app_strdup(app, json_schema)) ? TABQ_OK : no_memory(err);
}

/* The route a subscription by name reads: the exact name, else the longest prefix (SPEC 9). */
static const tabq_app_route *route_for(const tabq_app *app, const char *name) {
  const tabq_app_route *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; i < app->nroutes; i++) {
    const char *r = app->routes[i]->name;
    size_t len = strlen(r);
    if (!strcmp(r, name))
      return app->routes[i];
    if (r[len - 1] == '*' && !strncmp(r, name, len - 1) && (!best || len > best_len)) {
      best = app->routes[i];
      best_len = len;
    }
  }
  return best;
}

static tabq_outcome placeholder(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_no_outcome();
}
static void placeholder_batch(tabq_delivery *const *d, size_t n, tabq_outcome *o, void *user) {
  (void)d;
  (void)n;
  (void)o;
  (void)user;
}

/* The mount's rules as the broker applies them, with a stand-in for a handler a file names. */
static int check_sub(const tabq_table *t, const char *route, const tabq_subscription_options *o,
                     const char *handler_name, bool batch, tabq_error *err) {
  tabq_subscription_options probe = *o;
  if (handler_name && batch)
    probe.batch_handler = placeholder_batch;
  else if (handler_name)
    probe.handler = placeholder;
  int rc = TABQ_OK;
  if (route) {
    rc = tabq__route_name_check(route, false, "subscription", err);
    if (!rc)
      rc = tabq__by_name_check(route, t, &probe, err);
    probe.queue = route;
  }
  return rc ? rc : tabq__mount_check(t, &probe, err);
}

static bool same_queue(const tabq_app_sub *s, const tabq_table *t, const char *queue) {
  const char *q = s->route ? s->route : s->o.queue;
  return !strcmp(s->table->t.name, t->name) && (q && queue ? !strcmp(q, queue) : q == queue);
}

static bool copy_options(tabq_app *app, tabq_subscription_options *o) {
  const char **strings[] = {&o->queue, &o->dead_letter_group, &o->dead_letter_table,
                            &o->concurrency_key};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    if (*strings[i] && !(*strings[i] = tabq__app_strdup(app, *strings[i])))
      return false;
  return true;
}

int tabq__app_add_sub(tabq_app *app, const char *table, const char *route,
                      const tabq_subscription_options *options, const char *handler_name,
                      bool batch, tabq_error *err) {
  tabq_subscription_options o;
  int rc = tabq__options_take(options, &o, table, err);
  if (rc)
    return rc;
  const tabq_app_desc *t;
  if (route) {
    const tabq_app_route *r = route_for(app, route);
    if (!r)
      return tabq__err_set(err, TABQ_NO_ROUTE, NULL, NULL,
                           "subscription by name '%s': no route of the app leads it to a table",
                           route);
    t = r->table;
  } else if (!(t = table_named(app, table)))
    return unknown_table("subscription", table, err);
  if ((rc = check_sub(&t->t, route, &o, handler_name, batch, err)))
    return rc;
  const char *queue = route ? route : o.queue;
  for (size_t i = 0; i < app->nsubs; i++)
    if (same_queue(app->subs[i], &t->t, queue))
      return tabq__err_set(err, TABQ_DECLARATION, t->t.name, NULL,
                           "table %s: queue %s has two subscriptions in the app", t->t.name,
                           queue ? queue : "(the table's only one)");
  tabq_app_sub *s = tabq__app_alloc(app, sizeof *s);
  if (!s)
    return no_memory(err);
  s->table = t;
  s->batch = batch;
  s->o = o;
  if ((route && !(s->route = tabq__app_strdup(app, route))) ||
      (handler_name && !(s->handler_name = tabq__app_strdup(app, handler_name))) ||
      !copy_options(app, &s->o) || !APPEND(app, &app->subs, &app->nsubs, s))
    return no_memory(err);
  return TABQ_OK;
}

int tabq_app_add_subscription(tabq_app *app, const char *table,
                              const tabq_subscription_options *options, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, table, NULL,
                         "tabq_app_add_subscription needs an app, a table and options");
  return tabq__app_add_sub(app, table, NULL, options, NULL, false, err);
}

int tabq_app_add_subscription_to(tabq_app *app, const char *route,
                                 const tabq_subscription_options *options, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !route || !options)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_app_add_subscription_to needs an app, a name and options");
  return tabq__app_add_sub(app, NULL, route, options, NULL, false, err);
}

int tabq_app_add_route(tabq_app *app, const char *name, const char *table, tabq_error *err) {
  tabq__err_clear(err);
  if (!app)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_app_add_route needs an app");
  int rc = tabq__route_name_check(name, true, "route", err);
  if (rc)
    return rc;
  const tabq_app_desc *t = table_named(app, table);
  if (!t)
    return unknown_table("route", table, err);
  if (!t->t.group.name)
    return tabq__err_set(err, TABQ_DECLARATION, t->t.name, NULL,
                         "route '%s': table %s has no group column to write the name into", name,
                         t->t.name);
  for (size_t i = 0; i < app->nroutes; i++)
    if (!strcmp(app->routes[i]->name, name))
      return tabq__err_set(err, TABQ_DECLARATION, t->t.name, NULL,
                           "route '%s' is given twice in the app", name);
  tabq_app_route *r = tabq__app_alloc(app, sizeof *r);
  if (!r || !(r->name = tabq__app_strdup(app, name)))
    return no_memory(err);
  r->table = t;
  return APPEND(app, &app->routes, &app->nroutes, r) ? TABQ_OK : no_memory(err);
}

static int bind(tabq_app *app, const char *name, tabq_handler one, tabq_batch_handler many,
                void *user, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !name || (!one && !many))
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "binding needs an app, a name and a handler");
  size_t bound = 0;
  for (size_t i = 0; i < app->nsubs; i++) {
    tabq_app_sub *s = app->subs[i];
    if (!s->handler_name || strcmp(s->handler_name, name))
      continue;
    if (s->batch != (many != NULL))
      return tabq__err_set(err, TABQ_INVALID, s->table->t.name, NULL,
                           "handler '%s': the subscription to table %s takes a %s handler", name,
                           s->table->t.name, s->batch ? "batch" : "one-delivery");
    s->o.handler = one;
    s->o.batch_handler = many;
    s->o.user = user;
    bound++;
  }
  if (!bound)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "handler '%s': no subscription of the app names it", name);
  return TABQ_OK;
}

int tabq_app_bind(tabq_app *app, const char *name, tabq_handler handler, void *user,
                  tabq_error *err) {
  return bind(app, name, handler, NULL, user, err);
}

int tabq_app_bind_batch(tabq_app *app, const char *name, tabq_batch_handler handler, void *user,
                        tabq_error *err) {
  return bind(app, name, NULL, handler, user, err);
}

const char *tabq_app_name(const tabq_app *app) {
  return app->name;
}
const char *tabq_app_version(const tabq_app *app) {
  return app->version;
}
const char *tabq_app_description(const tabq_app *app) {
  return app->description;
}

size_t tabq_app_table_count(const tabq_app *app) {
  return app->ntables;
}
const tabq_table *tabq_app_table(const tabq_app *app, size_t i) {
  return i < app->ntables ? &app->tables[i]->t : NULL;
}
const tabq_table *tabq_app_table_named(const tabq_app *app, const char *name) {
  const tabq_app_desc *t = table_named(app, name);
  return t ? &t->t : NULL;
}

const char *tabq_app_payload_schema(const tabq_app *app, const char *table, const char *queue) {
  const tabq_app_schema *s = queue ? tabq__app_schema_of(app, table, queue) : NULL;
  if (!s)
    s = tabq__app_schema_of(app, table, NULL);
  return s ? s->json : NULL;
}

size_t tabq_app_subscription_count(const tabq_app *app) {
  return app->nsubs;
}
const tabq_table *tabq_app_subscription_table(const tabq_app *app, size_t i) {
  return i < app->nsubs ? &app->subs[i]->table->t : NULL;
}
const char *tabq_app_subscription_route(const tabq_app *app, size_t i) {
  return i < app->nsubs ? app->subs[i]->route : NULL;
}
const char *tabq_app_subscription_handler(const tabq_app *app, size_t i) {
  return i < app->nsubs ? app->subs[i]->handler_name : NULL;
}
const tabq_subscription_options *tabq_app_subscription_options(const tabq_app *app, size_t i) {
  return i < app->nsubs ? &app->subs[i]->o : NULL;
}

size_t tabq_app_route_count(const tabq_app *app) {
  return app->nroutes;
}
const char *tabq_app_route_name(const tabq_app *app, size_t i) {
  return i < app->nroutes ? app->routes[i]->name : NULL;
}
const tabq_table *tabq_app_route_table(const tabq_app *app, size_t i) {
  return i < app->nroutes ? &app->routes[i]->table->t : NULL;
}

bool tabq__app_holds_dead_letters(const tabq_app *app, const char *table) {
  for (size_t i = 0; i < app->nsubs; i++)
    if (app->subs[i]->o.dead_letter_table && !strcmp(app->subs[i]->o.dead_letter_table, table))
      return true;
  return false;
}

bool tabq__app_uses_table(const tabq_app *app, const char *table) {
  for (size_t i = 0; i < app->nsubs; i++)
    if (!strcmp(app->subs[i]->table->t.name, table))
      return true;
  for (size_t i = 0; i < app->nroutes; i++)
    if (!strcmp(app->routes[i]->table->t.name, table))
      return true;
  return false;
}
