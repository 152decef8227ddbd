/* tabq — an app: its tables, subscriptions and routes, in one value the library owns.
 *
 * An app is read from a description file (JSON, docs/description-files.md) or built in C from
 * the same structs a service compiles in. The `tabq` command, tabq_app_main() and the AsyncAPI
 * document read it; a service may also just print the file of what it compiled in:
 *
 *   tabq_app *app;
 *   if (tabq_app_load("jobs.tabq.json", &app, &err))
 *     fprintf(stderr, "%s\n", err.message);    // "jobs.tabq.json:7:19: tables[0].fifo: ..."
 *
 * Every string and struct an accessor returns belongs to the app and lives until
 * tabq_app_free(). An app is not changed by reading it, so reads from several threads are
 * safe; adding to it is not. */
#ifndef TABQ_APP_H
#define TABQ_APP_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tabq_app tabq_app;

/* ---- Reading a description file ----------------------------------------------------------
 * A file holds an app ({"name", "version", "tables", "subscriptions", "routes"}) or one table
 * (an object with "id"). A refusal is TABQ_DECLARATION (TABQ_IO when the file cannot be read)
 * with a message "FILE:LINE:COLUMN: FIELD: what is wrong", err.table naming the table where one
 * is concerned; nothing is returned. */
TABQ_API int tabq_app_load(const char *path, tabq_app **out, tabq_error *err);
/* The same from `len` bytes of text; `file` names the text in messages (NULL: "<text>"). */
TABQ_API int tabq_app_parse(const char *text, size_t len, const char *file, tabq_app **out,
                            tabq_error *err);

/* One table's description from the JSON object of one table; free it with tabq_table_free(). */
TABQ_API int tabq_table_parse(const char *text, size_t len, const char *file, tabq_table **out,
                              tabq_error *err);
TABQ_API void tabq_table_free(tabq_table *table);

/* ---- Writing it back ----------------------------------------------------------------------
 * The JSON text of a description, as a file would hold it (members in a fixed order, two-space
 * indents, a final newline), in *out: free() it. Reading it back gives the same description. */
TABQ_API int tabq_table_to_json(const tabq_table *table, char **out, tabq_error *err);
TABQ_API int tabq_app_to_json(const tabq_app *app, char **out, tabq_error *err);

/* ---- Building one in C -------------------------------------------------------------------- */

/* An empty app; `version` may be NULL. */
TABQ_API int tabq_app_new(const char *name, const char *version, tabq_app **out, tabq_error *err);
TABQ_API void tabq_app_free(tabq_app *app);
/* A sentence that says what the app does (--help, the AsyncAPI document). */
TABQ_API int tabq_app_set_description(tabq_app *app, const char *description, tabq_error *err);

/* Adds a copy of `table` (checked by R-DESC-1); a second table of the same name is refused. */
TABQ_API int tabq_app_add_table(tabq_app *app, const tabq_table *table, tabq_error *err);
/* A JSON Schema (JSON text) for the payloads of a table, or of one queue of it (`queue` NULL:
 * every queue of the table without a schema of its own). The AsyncAPI document carries it. */
TABQ_API int tabq_app_set_payload_schema(tabq_app *app, const char *table, const char *queue,
                                         const char *json_schema, tabq_error *err);
/* Adds a subscription to a table the app has (added first, by name): a copy of `options`,
 * checked by the mount's rules. A handler set in the options is kept; a subscription read from
 * a file names its handler instead (tabq_app_bind). Two subscriptions to one queue of one table
 * are refused. */
TABQ_API int tabq_app_add_subscription(tabq_app *app, const char *table,
                                       const tabq_subscription_options *options, tabq_error *err);
/* Adds a route (tabq_route()) to a table the app has, and a subscription by name to a route. */
TABQ_API int tabq_app_add_route(tabq_app *app, const char *name, const char *table,
                                tabq_error *err);
TABQ_API int tabq_app_add_subscription_to(tabq_app *app, const char *route,
                                          const tabq_subscription_options *options,
                                          tabq_error *err);
/* Gives the handler named `name` in the file its function: every subscription that names it
 * (a handler of one delivery; bind_batch for a subscription with a batch). TABQ_INVALID when no
 * subscription names it. */
TABQ_API int tabq_app_bind(tabq_app *app, const char *name, tabq_handler handler, void *user,
                           tabq_error *err);
TABQ_API int tabq_app_bind_batch(tabq_app *app, const char *name, tabq_batch_handler handler,
                                 void *user, tabq_error *err);

/* ---- Reading one -------------------------------------------------------------------------- */

TABQ_API const char *tabq_app_name(const tabq_app *app);
TABQ_API const char *tabq_app_version(const tabq_app *app); /* NULL when not given */
TABQ_API const char *tabq_app_description(const tabq_app *app);

TABQ_API size_t tabq_app_table_count(const tabq_app *app);
TABQ_API const tabq_table *tabq_app_table(const tabq_app *app, size_t i);
TABQ_API const tabq_table *tabq_app_table_named(const tabq_app *app, const char *name);
/* The payload schema of a queue of a table (falling back to the table's), NULL when none. */
TABQ_API const char *tabq_app_payload_schema(const tabq_app *app, const char *table,
                                             const char *queue);

/* Subscriptions, in the order added. For one by name, `route` is the route's name and the table
 * is the route's. The options are full size; their handler is NULL until bound. */
TABQ_API size_t tabq_app_subscription_count(const tabq_app *app);
TABQ_API const tabq_table *tabq_app_subscription_table(const tabq_app *app, size_t i);
TABQ_API const char *tabq_app_subscription_route(const tabq_app *app, size_t i);
TABQ_API const char *tabq_app_subscription_handler(const tabq_app *app, size_t i);
TABQ_API const tabq_subscription_options *tabq_app_subscription_options(const tabq_app *app,
                                                                        size_t i);

TABQ_API size_t tabq_app_route_count(const tabq_app *app);
TABQ_API const char *tabq_app_route_name(const tabq_app *app, size_t i);
TABQ_API const tabq_table *tabq_app_route_table(const tabq_app *app, size_t i);

/* ---- Checking one (docs/check.md) --------------------------------------------------------- */

/* The statement check (tabq/check.h) of everything the app would run on `b`'s database: each
 * subscription as tabq_check_subscription (one by name as tabq_check_route of its route), each
 * route no subscription names as tabq_check_route, and each table's publish as
 * tabq_check_publish, in that order, into `report`. Handlers need not be bound. A failing
 * subscription, route or publish does not stop the others; the return is the first failure's
 * code with `err` from it (TABQ_OK when every statement prepared, warnings allowed), or a code
 * with no item when the check could not run (no connection: the rest is not tried). */
TABQ_API int tabq_check_app(tabq_broker *b, const tabq_app *app, tabq_check_report *report,
                            tabq_error *err);

/* The schema (tabq/schema.h) of every table of the app on `b`'s database, in the app's order:
 * each table's with the dead letter table the first of its subscriptions that names one names
 * (another one a subscription names: tabq_schema_sql with that name). A table of the app that
 * a subscription names as its dead letter table is rendered there, not again as a table of
 * its own. The text, each table's
 * part under a "-- table NAME" line, is in *out_sql: free() it. `if_not_exists` as
 * tabq_schema_options. Fails as tabq_schema_sql on the first table that fails, nothing
 * returned. */
TABQ_API int tabq_app_schema_sql(tabq_broker *b, const tabq_app *app, bool if_not_exists,
                                 char **out_sql, tabq_error *err);
/* The same applied: tabq_schema_apply table by table (each its own transaction); stops at the
 * first failure, the tables before it created. */
TABQ_API int tabq_app_schema_apply(tabq_broker *b, const tabq_app *app, bool if_not_exists,
                                   tabq_error *err);

/* ---- Running one (tabq_app_main) ---------------------------------------------------------- */

/* What the hooks of a run see. */
typedef struct tabq_app_run {
  tabq_broker *broker;
  const tabq_app *app;
  int argc; /* the arguments tabq_app_main left to the service: those that are no option */
  char **argv;
  tabq_subscription *const *subscriptions; /* the app's, in its order, once open (else NULL) */
  size_t nsubscriptions;
  void *user; /* the hooks' */
} tabq_app_run;

typedef struct tabq_app_hooks {
  uint32_t size; /* sizeof(tabq_app_hooks): TABQ_APP_HOOKS_INIT sets it */
  /* After the broker connected and the routes are in, before any subscription opens (creating
   * the service's tables, a first publish). A nonzero return ends tabq_app_main with that
   * status, nothing subscribed. */
  int (*connected)(tabq_app_run *run);
  /* On a thread of its own once every subscription is open: the service's own loop. It ends
   * the run with tabq_stop(run->broker), and returns once tabq_app_stopping(run) says so. */
  void (*running)(tabq_app_run *run);
  void *user;
} tabq_app_hooks;

#define TABQ_APP_HOOKS_INIT TABQ_SIZED_INIT(tabq_app_hooks)
#define TABQ_APP_HOOKS_SIZE_1_0 (offsetof(tabq_app_hooks, user) + sizeof(void *))

TABQ_API int tabq_app_set_hooks(tabq_app *app, const tabq_app_hooks *hooks, tabq_error *err);
/* Whether the run is ending (a signal, or tabq_stop()): a `running` hook returns then. */
TABQ_API bool tabq_app_stopping(const tabq_app_run *run);

/* The standard command line of a tabq service (docs/app-main.md), for main() to return:
 *
 *   SERVICE [--url URL] [--workers N] [--log-level LEVEL] [ARGS...]   run until SIGINT/SIGTERM
 *   SERVICE --check | --print-schema | --asyncapi [--url URL]         check, print, and exit
 *   SERVICE --help | --version
 *
 * The URL comes from --url, else the environment's TABQ_URL. A run connects, routes, opens
 * every subscription (each handler bound: tabq_app_bind) and runs until a signal or
 * tabq_stop(), then lets the deliveries in work settle. Returns 0 when it ran and stopped (or
 * printed what was asked), 1 when --check found a failing statement, 2 on a usage, description
 * or connection error, said in one line on stderr. */
TABQ_API int tabq_app_main(tabq_app *app, int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
