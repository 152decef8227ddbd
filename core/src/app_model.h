/* The app (tabq/app.h) inside: its tables, subscriptions, routes and payload schemas, every
 * string and struct owned by the app and freed with it. app.c builds and reads it; app_read.c
 * fills it from a description file, app_write.c writes it back. */
#ifndef TABQ_APP_MODEL_H
#define TABQ_APP_MODEL_H

#include <tabq/app.h>
#include <tabq/concurrency.h>
#include <tabq/controls.h>
#include <tabq/retention.h>
#include <tabq/schedule.h>

typedef struct tabq_app_desc {
  tabq_table t; /* full size; its strings are the app's */
  /* app_retention.c: the table's retention (full size, no destinations), when has_retention */
  tabq_retention_options retention;
  bool has_retention;
} tabq_app_desc;

typedef struct tabq_app_sub {
  const tabq_app_desc *table;  /* the table, or the route's for one by name */
  const char *route;           /* a subscription by name: the name */
  const char *handler_name;    /* the handler a file names, bound later; NULL when built in C */
  bool batch;                  /* a file's subscription that takes a batch handler */
  tabq_subscription_options o; /* full size; a by-name one's queue stays NULL */
} tabq_app_sub;

typedef struct tabq_app_route {
  const char *name;
  const tabq_app_desc *table;
} tabq_app_route;

/* app_schedule.c: a periodic job of the app (tabq/schedule.h), its strings the app's. */
typedef struct tabq_app_sched {
  const tabq_app_desc *table;
  tabq_schedule_options o; /* full size; o.message is &m */
  tabq_message m;          /* full size: group, payload, priority, partition key, headers */
} tabq_app_sched;

typedef struct tabq_app_schema {
  const char *table, *queue; /* queue NULL: the table's */
  const char *json;
} tabq_app_schema;

struct tabq_app {
  const char *name, *version, *description;
  tabq_app_desc **tables;
  size_t ntables;
  tabq_app_sub **subs;
  size_t nsubs;
  tabq_app_route **routes;
  size_t nroutes;
  tabq_app_schema **schemas;
  size_t nschemas;
  tabq_app_hooks hooks;    /* tabq_app_main's, full size */
  tabq_app_sched **scheds; /* app_schedule.c */
  size_t nscheds;
  tabq_controls *controls; /* app_controls.c: full size, the app's strings; NULL: none */
  /* app_controls.c: the slots table of concurrency limits, as controls; NULL: none */
  tabq_concurrency_slots *conc_slots;
  void **owned; /* every allocation above, freed with the app */
  size_t nowned, owned_cap;
};

/* Allocations the app owns (zeroed), and copies of strings (NULL stays NULL). NULL when out of
 * memory. */
void *tabq__app_alloc(tabq_app *app, size_t size);
const char *tabq__app_strdup(tabq_app *app, const char *s);
/* A copy of a full-size description, every string and the data columns the app's. */
int tabq__app_copy_table(tabq_app *app, const tabq_table *in, tabq_table *out, tabq_error *err);

/* Adding, with the rules checked; `handler_name`/`batch` as a file gives them (NULL/false from
 * C). tabq_app_add_subscription and tabq_app_add_subscription_to are these with NULL names. */
int tabq__app_add_sub(tabq_app *app, const char *table, const char *route,
                      const tabq_subscription_options *o, const char *handler_name, bool batch,
                      tabq_error *err);

/* Whether a subscription of the app names `table` as its dead letter table: such a table is
 * written by that subscription's dead letter statements, and its schema is rendered with the
 * table whose dead letters it holds. */
bool tabq__app_holds_dead_letters(const tabq_app *app, const char *table);
/* Whether a subscription or a route of the app claims from or publishes into `table`. */
bool tabq__app_uses_table(const tabq_app *app, const char *table);
/* The payload schema entries: of a queue exactly (queue NULL: the table's own). */
const tabq_app_schema *tabq__app_schema_of(const tabq_app *app, const char *table,
                                           const char *queue);

#endif
