/* Routes (SPEC 9): a name leads into a table. A publish by name writes the name into the table's
 * group column; a subscription by name opens on that table with the name as its queue. A name
 * ending in '*' is a prefix; an exact name wins over every prefix and the longest prefix over
 * shorter ones, so the most specific route always decides. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "error.h"
#include "mount.h"
#include "sized.h"

typedef struct tabq_route_entry {
  char *name;       /* as routed: "signups", "billing.*" */
  bool prefix;      /* the name ends in '*' */
  size_t match_len; /* the bytes compared: a prefix's without its '*' */
  tabq_table table; /* the description at full size (sized.h), which publishers key on */
  struct tabq_route_entry *next;
} tabq_route_entry;

static bool covers(const tabq_route_entry *r, const char *name) {
  return r->prefix ? !strncmp(r->name, name, r->match_len) : !strcmp(r->name, name);
}

/* Exact names outrank every prefix; prefixes rank by length. */
static size_t rank(const tabq_route_entry *r) {
  return r->prefix ? r->match_len : SIZE_MAX;
}

/* The route that decides for `name` among `list` and `extra` (a route not listed yet, or NULL).
 * Patterns are unique, so no two candidates tie. Called with b->mu held. */
static const tabq_route_entry *resolve(const tabq_route_entry *list, const tabq_route_entry *extra,
                                       const char *name) {
  const tabq_route_entry *best = extra && covers(extra, name) ? extra : NULL;
  for (const tabq_route_entry *r = list; r; r = r->next)
    if (covers(r, name) && (!best || rank(r) > rank(best)))
      best = r;
  return best;
}

static const tabq_route_entry *lookup(tabq_broker *b, const char *name, const char *what,
                                      tabq_error *err) {
  pthread_mutex_lock(&b->mu);
  const tabq_route_entry *r = resolve(b->routes, NULL, name);
  pthread_mutex_unlock(&b->mu);
  if (!r)
    tabq__err_set(err, TABQ_NO_ROUTE, NULL, NULL,
                  "%s '%s': no route leads this name to a table (declare one with tabq_route)",
                  what, name);
  return r;
}

/* Adding `r` must not move a name an open subscription by name reads to another table: its rows
 * would go where it never reads. Called with b->mu held. */
static int check_shadow(tabq_broker *b, const tabq_route_entry *r, tabq_error *err) {
  for (tabq_subscription *s = b->subs; s; s = s->next) {
    if (!s->by_name || resolve(b->routes, r, s->queue) != r || !strcmp(s->t->name, r->table.name))
      continue;
    return tabq__err_set(err, TABQ_INVALID, r->table.name, NULL,
                         "route '%s' to table %s would take '%s', which a subscription by name "
                         "reads on table %s; declare routes before subscribing by name",
                         r->name, r->table.name, s->queue, s->t->name);
  }
  return TABQ_OK;
}

/* Lists `r`, or finds the same pattern routed already: to the same table it stays as it is
 * (*kept), to another it is refused. Called with b->mu held. */
static int add_locked(tabq_broker *b, tabq_route_entry *r, bool *kept, tabq_error *err) {
  for (const tabq_route_entry *o = b->routes; o; o = o->next) {
    if (strcmp(o->name, r->name))
      continue;
    if (!strcmp(o->table.name, r->table.name)) {
      *kept = true;
      return TABQ_OK;
    }
    return tabq__err_set(err, TABQ_INVALID, r->table.name, NULL,
                         "route '%s' leads to table %s already; it cannot lead to table %s too",
                         r->name, o->table.name, r->table.name);
  }
  int rc = check_shadow(b, r, err);
  if (!rc) {
    r->next = b->routes;
    b->routes = r;
  }
  return rc;
}

int tabq__route_check(const char *name, const tabq_table *t, tabq_error *err) {
  int rc = tabq__route_name_check(name, true, "route", err);
  if (!rc && !t->group.name)
    rc = tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                       "route '%s' to table %s: a routed table needs a group column, which "
                       "receives the name a row is published to",
                       name, t->name);
  return rc;
}

int tabq__byname_served(tabq_broker *b, const char *name, const char *table, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  if (p->byname)
    return TABQ_OK;
  return tabq__err_set(err, TABQ_DIALECT, table, NULL,
                       "subscription by name '%s': the %s dialect (%s) has no ByName interface, "
                       "so it serves no subscriptions by name; subscribe to table %s with "
                       "tabq_subscribe()",
                       name, p->name, b->plugin.path, table);
}

static int route(tabq_broker *b, const char *name, const tabq_table *table, tabq_error *err) {
  int rc = tabq__route_name_check(name, true, "route", err);
  if (rc)
    return rc;
  tabq_route_entry *r = calloc(1, sizeof *r);
  if (!r || !(r->name = strdup(name))) {
    free(r);
    return tabq__err_set(err, TABQ_NOMEM, table->name, NULL, "cannot allocate a route");
  }
  r->match_len = strlen(name);
  r->prefix = name[r->match_len - 1] == '*';
  r->match_len -= r->prefix;
  rc = tabq__table_take(table, &r->table, err);
  if (!rc)
    rc = tabq__table_rules(&r->table, err);
  if (!rc)
    rc = tabq__route_check(name, &r->table, err);
  bool kept = false;
  if (!rc) {
    pthread_mutex_lock(&b->mu);
    rc = add_locked(b, r, &kept, err);
    pthread_mutex_unlock(&b->mu);
  }
  if (rc || kept) {
    free(r->name);
    free(r);
  }
  return rc;
}

int tabq_route(tabq_broker *b, const char *name, const tabq_table *table, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_route needs a broker and a table");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = route(b, name, table, err);
  tabq__log_leave(outer);
  return rc;
}

static int publish_to(tabq_broker *b, const char *name, const tabq_message *message,
                      tabq_error *err) {
  tabq_message m;
  int rc = tabq__route_name_check(name, false, "publish", err);
  if (!rc)
    rc = TABQ_TAKE(message, &m, TABQ_MESSAGE_SIZE_1_0, NULL, err);
  if (rc)
    return rc;
  /* One source for the group: a second one could only disagree with the name. */
  if (m.group)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert",
                         "publish to '%s': the name is the row's group; leave message.group NULL",
                         name);
  const tabq_route_entry *r = lookup(b, name, "publish", err);
  if (!r)
    return TABQ_NO_ROUTE;
  m.group = name;
  return tabq_publish(b, &r->table, &m, err);
}

int tabq_publish_to(tabq_broker *b, const char *name, const tabq_message *m, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !m)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert",
                         "tabq_publish_to needs a broker, a name and a message");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = publish_to(b, name, m, err);
  tabq__log_leave(outer);
  return rc;
}

static int subscribe_to(tabq_broker *b, const char *name, const tabq_subscription_options *options,
                        tabq_subscription **out, tabq_error *err) {
  tabq_subscription_options o;
  int rc = tabq__route_name_check(name, false, "subscription", err);
  if (!rc)
    rc = TABQ_TAKE(options, &o, TABQ_SUBSCRIPTION_OPTIONS_SIZE_1_0, NULL, err);
  if (rc)
    return rc;
  const tabq_route_entry *r = lookup(b, name, "subscription", err);
  if (!r)
    return TABQ_NO_ROUTE;
  if ((rc = tabq__by_name_check(name, &r->table, &o, err)))
    return rc;
  if ((rc = tabq__byname_served(b, name, r->table.name, err)))
    return rc;
  o.queue = name;
  return tabq__sub_open(b, &r->table, &o, true, out, err);
}

int tabq_subscribe_to(tabq_broker *b, const char *name, const tabq_subscription_options *options,
                      tabq_subscription **out, tabq_error *err) {
  tabq__err_clear(err);
  if (out)
    *out = NULL;
  if (!b || !options)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_subscribe_to needs a broker, a name and options");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = subscribe_to(b, name, options, out, err);
  tabq__log_leave(outer);
  return rc;
}

void tabq__routes_free(tabq_broker *b) {
  for (tabq_route_entry *r = b->routes, *next; r; r = next) {
    next = r->next;
    free(r->name);
    free(r);
  }
  b->routes = NULL;
}
