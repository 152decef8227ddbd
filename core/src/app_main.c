/* tabq_app_main: the command line every tabq service gets for free (docs/app-main.md). It
 * reads its own options by hand, not with getopt, whose global state belongs to the service. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_model.h"
#include <tabq/asyncapi.h>
#include <tabq/retention.h>
#include <tabq/schedule.h>
#include <tabq/check.h>
#include "error.h"
#include "sized.h"

enum { EXIT_RAN = 0, EXIT_CHECK_FAILED = 1, EXIT_USAGE = 2 };

typedef struct main_options {
  const char *url;
  long workers; /* -1: as the app says */
  int log_level;
  bool help, version;
  /* One of these instead of a run: the statement check, the schema, the AsyncAPI document. */
  bool check, print_schema, asyncapi;
  int argc; /* what is no option, for the service */
  char **argv;
} main_options;

/* The run as the hooks see it, with what only tabq_app_main touches. */
typedef struct app_run {
  tabq_app_run pub; /* first: the hooks get &pub */
  atomic_bool stopping;
} app_run;

static const char *program(char **argv) {
  const char *slash = argv && argv[0] ? strrchr(argv[0], '/') : NULL;
  return slash ? slash + 1 : argv && argv[0] ? argv[0] : "service";
}

TABQ_PRINTF_(2, 3)
static int usage_error(char **argv, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", program(argv));
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (try --help)\n");
  va_end(ap);
  return EXIT_USAGE;
}

static int failed(char **argv, const char *what, const tabq_error *err) {
  fprintf(stderr, "%s: %s: %s: %s\n", program(argv), what, tabq_code_name(err->code), err->message);
  return EXIT_USAGE;
}

static void print_help(const tabq_app *app, char **argv) {
  printf("NAME\n"
         "    %s - %s%s%s\n\n"
         "SYNOPSIS\n"
         "    %s [--url URL] [--workers N] [--log-level LEVEL] [ARGS...]\n"
         "    %s --check | --print-schema | --asyncapi [--url URL]\n"
         "    %s --help | --version\n\n"
         "DESCRIPTION\n"
         "    Runs the app's subscriptions until SIGINT or SIGTERM, then lets the deliveries in\n"
         "    work settle.\n\n"
         "OPTIONS\n"
         "    --url URL          the database (postgres://..., mysql://..., sqlite:FILE);\n"
         "                       default: the environment's TABQ_URL\n"
         "    --workers N        workers of every subscription that may have several\n"
         "    --log-level LEVEL  error, warn (the default), info or debug\n"
         "    --check            prepare every statement the app would run on the database\n"
         "                       (nothing is run or written), print what failed, and exit\n"
         "    --print-schema     print the CREATE statements of the app's tables, their\n"
         "                       claim-order indexes and dead letter tables, and exit\n"
         "    --asyncapi         print the app's AsyncAPI 3.0 document (the --url, if any,\n"
         "                       as its server, never its password), and exit\n"
         "    --version          the app's version and tabq's\n"
         "    --help             this text\n\n"
         "EXIT STATUS\n"
         "    0  ran and stopped, or printed what was asked; --check: every statement\n"
         "       prepared (warnings allowed)\n"
         "    1  --check: a statement failed\n"
         "    2  a usage, description or connection error, said on stderr\n",
         program(argv), app->description ? app->description : "a tabq service, app ",
         app->description ? "" : tabq_app_name(app), "", program(argv), program(argv),
         program(argv));
}

static int parse_level(const char *text) {
  static const char *const levels[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(text, levels[i]))
      return TABQ_LOG_ERROR + i;
  return -1;
}

/* "--name value" or "--name=value"; *i moves past what it took. NULL when missing. */
static const char *value_of(int argc, char **argv, int *i, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (eq)
    return eq + 1;
  return *i + 1 < argc ? argv[++*i] : NULL;
}

static bool is(const char *arg, const char *name) {
  size_t n = strlen(name);
  return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

static int parse(int argc, char **argv, main_options *o, char **rest) {
  *o = (main_options){.workers = -1, .log_level = TABQ_LOG_WARN, .argv = rest};
  rest[o->argc++] = argc > 0 ? argv[0] : (char *)"service";
  bool options_end = false;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (options_end || arg[0] != '-' || !strcmp(arg, "-")) {
      rest[o->argc++] = argv[i];
      continue;
    }
    const char *value = NULL;
    if (!strcmp(arg, "--")) {
      options_end = true;
    } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      o->help = true;
    } else if (!strcmp(arg, "--version")) {
      o->version = true;
    } else if (!strcmp(arg, "--check")) {
      o->check = true;
    } else if (!strcmp(arg, "--print-schema")) {
      o->print_schema = true;
    } else if (!strcmp(arg, "--asyncapi")) {
      o->asyncapi = true;
    } else if (is(arg, "--url")) {
      if (!(o->url = value_of(argc, argv, &i, arg)) || !o->url[0])
        return usage_error(argv, "--url needs a URL");
    } else if (is(arg, "--workers")) {
      char *end;
      value = value_of(argc, argv, &i, arg);
      o->workers = value ? strtol(value, &end, 10) : 0;
      if (!value || *end || o->workers < 1 || o->workers > 1000)
        return usage_error(argv, "--workers takes a number from 1 to 1000");
    } else if (is(arg, "--log-level")) {
      value = value_of(argc, argv, &i, arg);
      if (!value || (o->log_level = parse_level(value)) < 0)
        return usage_error(argv, "--log-level is error, warn, info or debug");
    } else {
      return usage_error(argv, "unknown option %s", arg);
    }
  }
  rest[o->argc] = NULL;
  if (o->check + o->print_schema + o->asyncapi > 1)
    return usage_error(argv, "--check, --print-schema and --asyncapi go one at a time");
  if (!o->url)
    o->url = getenv("TABQ_URL");
  return EXIT_RAN;
}

/* --workers: every subscription that may run several (not FIFO, not by key). */
static void take_workers(tabq_app *app, long workers) {
  for (size_t i = 0; workers > 0 && i < app->nsubs; i++) {
    tabq_app_sub *s = app->subs[i];
    if (!s->table->t.fifo && !s->o.workers_by_key)
      s->o.workers = (unsigned)workers;
  }
}

static int open_subscriptions(tabq_app *app, tabq_broker *b, tabq_subscription **subs,
                              char **argv) {
  tabq_error err;
  for (size_t i = 0; i < app->nsubs; i++) {
    const tabq_app_sub *s = app->subs[i];
    if (!s->o.handler && !s->o.batch_handler) {
      fprintf(stderr, "%s: subscription %zu (table %s, %s %s) has no handler: bind '%s'\n",
              program(argv), i, s->table->t.name, s->route ? "route" : "queue",
              s->route     ? s->route
              : s->o.queue ? s->o.queue
                           : "(none)",
              s->handler_name ? s->handler_name : "(unnamed)");
      return EXIT_USAGE;
    }
    int rc = s->route ? tabq_subscribe_to(b, s->route, &s->o, &subs[i], &err)
                      : tabq_subscribe(b, &s->table->t, &s->o, &subs[i], &err);
    if (rc)
      return failed(argv, "subscribing", &err);
  }
  return EXIT_RAN;
}

/* Whether `name` is among the first n of `names`. */
static bool listed(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], name))
      return true;
  return false;
}

/* Each table's retention handed to the broker's pruner (tabq/retention.h), its dead letters
 * where the app's subscriptions to the table put them. */
static int retain_tables(tabq_app *app, tabq_broker *b, char **argv) {
  const char **groups = calloc(app->nsubs + 1, sizeof *groups);
  const char **tables = calloc(app->nsubs + 1, sizeof *tables);
  int status = groups && tables ? EXIT_RAN : usage_error(argv, "out of memory");
  for (size_t i = 0; !status && i < app->ntables; i++) {
    const tabq_app_desc *d = app->tables[i];
    if (!d->has_retention)
      continue;
    tabq_retention_options o = d->retention;
    size_t ng = 0, nt = 0;
    for (size_t k = 0; o.dead_letter_age_ms && k < app->nsubs; k++) {
      const tabq_app_sub *s = app->subs[k];
      if (s->table != d)
        continue;
      if (s->o.dead_letter_group && !listed(groups, ng, s->o.dead_letter_group))
        groups[ng++] = s->o.dead_letter_group;
      if (s->o.dead_letter_table && !listed(tables, nt, s->o.dead_letter_table))
        tables[nt++] = s->o.dead_letter_table;
    }
    o.dead_letter_groups = groups;
    o.ndead_letter_groups = ng;
    o.dead_letter_tables = tables;
    o.ndead_letter_tables = nt;
    tabq_error err;
    if (tabq_retain(b, &d->t, &o, &err))
      status = failed(argv, "retaining", &err);
  }
  free(groups);
  free(tables);
  return status;
}

/* Each of the app's periodic jobs on the broker's scheduler (tabq/schedule.h). */
static int schedule_jobs(tabq_app *app, tabq_broker *b, char **argv) {
  for (size_t i = 0; i < app->nscheds; i++) {
    tabq_error err;
    if (tabq_schedule(b, &app->scheds[i]->table->t, &app->scheds[i]->o, &err))
      return failed(argv, "scheduling", &err);
  }
  return EXIT_RAN;
}

static void *running(void *arg) {
  app_run *run = arg;
  run->pub.app->hooks.running(&run->pub);
  return NULL;
}

/* Connects, routes, calls `connected`, subscribes, starts `running`, then runs until stopped. */
static int run_app(tabq_app *app, const main_options *o, char **argv) {
  if (!o->url)
    return usage_error(argv, "no database: give --url URL or set TABQ_URL");
  /* Signals wait for tabq_run: the broker's threads inherit the mask (tabq.h, tabq_run). */
  sigset_t stops, old_mask;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, &old_mask);
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.log_level = o->log_level;
  tabq_error err;
  tabq_broker *b = NULL;
  int status = EXIT_RAN;
  if (tabq_connect(o->url, &bo, &b, &err))
    status = failed(argv, "connecting", &err);
  /* Before any subscription, the connected hook's included: each honours the pauses. */
  if (!status && app->controls && tabq_set_controls(b, app->controls, &err))
    status = failed(argv, "giving the controls table", &err);
  if (!status && app->conc_slots && tabq_set_concurrency_slots(b, app->conc_slots, &err))
    status = failed(argv, "giving the concurrency slots table", &err);
  for (size_t i = 0; !status && i < app->nroutes; i++)
    if (tabq_route(b, app->routes[i]->name, &app->routes[i]->table->t, &err))
      status = failed(argv, "routing", &err);
  app_run run = {
      .pub = {.broker = b, .app = app, .argc = o->argc, .argv = o->argv, .user = app->hooks.user}};
  if (!status && app->hooks.connected)
    status = app->hooks.connected(&run.pub);
  tabq_subscription **subs = calloc(app->nsubs ? app->nsubs : 1, sizeof *subs);
  if (!status && !subs)
    status = usage_error(argv, "out of memory");
  if (!status)
    status = open_subscriptions(app, b, subs, argv);
  if (!status)
    status = retain_tables(app, b, argv);
  if (!status)
    status = schedule_jobs(app, b, argv);
  pthread_t hook;
  bool hooked = false;
  if (!status) {
    run.pub.subscriptions = subs;
    run.pub.nsubscriptions = app->nsubs;
    hooked = app->hooks.running && !pthread_create(&hook, NULL, running, &run);
    tabq_run(b);
  }
  atomic_store(&run.stopping, true);
  if (hooked)
    pthread_join(hook, NULL);
  tabq_close(b);
  free(subs);
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  return status;
}

/* --check: the app's statements prepared, what failed printed; exit 1 when one failed. */
static int check_app(tabq_app *app, tabq_broker *b, char **argv) {
  tabq_check_report *report = tabq_check_report_new();
  if (!report)
    return usage_error(argv, "out of memory");
  tabq_error err;
  int rc = tabq_check_app(b, app, report, &err);
  int status = EXIT_RAN;
  if (rc && !tabq_check_report_count(report)) {
    status = failed(argv, "checking", &err); /* it could not run */
  } else {
    tabq_check_report_print(report, stdout, false);
    status = tabq_check_report_worst(report) == TABQ_CHECK_ERROR ? EXIT_CHECK_FAILED : EXIT_RAN;
  }
  tabq_check_report_free(report);
  return status;
}

/* --print-schema: the CREATE statements of the app's tables, as tabq_app_schema_sql. */
static int print_schema(tabq_app *app, tabq_broker *b, char **argv) {
  char *sql;
  tabq_error err;
  if (tabq_app_schema_sql(b, app, false, &sql, &err))
    return failed(argv, "rendering the schema", &err);
  fputs(sql, stdout);
  free(sql);
  return EXIT_RAN;
}

/* --asyncapi: the document, with the URL (if any) as its server; nothing is connected. */
static int print_asyncapi(const tabq_app *app, const char *url, char **argv) {
  char *doc;
  tabq_error err;
  if (tabq_asyncapi(app, url ? &url : NULL, url ? 1 : 0, &doc, &err))
    return failed(argv, "writing the AsyncAPI document", &err);
  fputs(doc, stdout);
  free(doc);
  return EXIT_RAN;
}

/* --check, --print-schema or --asyncapi: print, and exit. */
static int print_mode(tabq_app *app, const main_options *o, char **argv) {
  if (o->asyncapi)
    return print_asyncapi(app, o->url, argv);
  if (!o->url)
    return usage_error(argv, "no database: give --url URL or set TABQ_URL");
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.log_level = o->log_level;
  tabq_broker *b = NULL;
  tabq_error err;
  if (tabq_connect(o->url, &bo, &b, &err))
    return failed(argv, "connecting", &err);
  int status = o->check ? check_app(app, b, argv) : print_schema(app, b, argv);
  tabq_close(b);
  return status;
}

int tabq_app_main(tabq_app *app, int argc, char **argv) {
  if (!app)
    return usage_error(argv, "tabq_app_main needs an app");
  char **rest = calloc((size_t)(argc > 0 ? argc : 1) + 1, sizeof *rest);
  if (!rest)
    return usage_error(argv, "out of memory");
  main_options o;
  int status = parse(argc, argv, &o, rest);
  if (!status && o.help) {
    print_help(app, argv);
  } else if (!status && o.version) {
    printf("%s %s (tabq %s)\n", tabq_app_name(app), app->version ? app->version : "",
           tabq_version_string());
  } else if (!status && (o.check || o.print_schema || o.asyncapi)) {
    status = print_mode(app, &o, argv);
  } else if (!status) {
    take_workers(app, o.workers);
    status = run_app(app, &o, argv);
  }
  free(rest);
  return status;
}

int tabq_app_set_hooks(tabq_app *app, const tabq_app_hooks *hooks, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !hooks)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_app_set_hooks needs an app and hooks");
  return TABQ_TAKE(hooks, &app->hooks, TABQ_APP_HOOKS_SIZE_1_0, NULL, err);
}

bool tabq_app_stopping(const tabq_app_run *run) {
  return atomic_load(&((const app_run *)run)->stopping);
}
