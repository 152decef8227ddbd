/* tabq schedule: publishes a periodic job's slots until Ctrl-C, as tabq_schedule does in a
 * service; or, with --next, prints the slots a spec gives, without a database. */
#define _GNU_SOURCE /* strptime, timegm */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tabq/schedule.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file (its table needs a unique_key)", false},
    {"table-name", "NAME", "the table of the file to write (needed when it has several)", false},
    {"name", "NAME", "the job's name, the first part of each slot's unique key", false},
    {"cron", "EXPR", "a cron expression: \"*/5 * * * *\", \"30 6 * * mon-fri\", \"@daily\"", false},
    {"every", "INTERVAL", "an interval instead: 30s, 5m, 1h30m, 1d", false},
    {"zone", "ZONE", "the cron expression's zone, an IANA name (default UTC)", false},
    {"missed", "POLICY", "skip (the default) or catch-up: the latest missed slot once", false},
    {"queue", "QUEUE", "each row's group (required when the table has a group column)", false},
    {"header", "NAME=VALUE", "a header of each row (repeatable)", true},
    {"lead", "DURATION", "write each row this long before its slot (default 5s)", false},
    {"next", "N", "print the next N slots and their keys instead, without a database", false},
    {"after", "TIME", "with --next: from TIME (2027-03-26T12:00:00Z, or Unix seconds)", false},
    {NULL, NULL, NULL, false},
};

static int pick_table(tabq_args *a, const tabq_app *app, const tabq_table **t) {
  const char *name = opt(a, "table-name");
  if (name) {
    *t = tabq_app_table_named(app, name);
    return *t ? EXIT_DONE : fail(a, EXIT_USAGE, "%s describes no table %s", opt(a, "table"), name);
  }
  if (tabq_app_table_count(app) != 1)
    return fail(a, EXIT_USAGE, "%s describes %zu tables: name one with --table-name",
                opt(a, "table"), tabq_app_table_count(app));
  *t = tabq_app_table(app, 0);
  return EXIT_DONE;
}

/* "2026-12-04T12:00:00Z" */
static void iso(int64_t us, char *out, size_t cap) {
  time_t s = (time_t)(us / 1000000);
  struct tm tm;
  gmtime_r(&s, &tm);
  strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int print_next(tabq_args *a, const char *spec, const char *zone) {
  char *end;
  errno = 0;
  long n = strtol(opt(a, "next"), &end, 10);
  if (errno || *end || n < 1 || n > 10000)
    return fail(a, EXIT_USAGE, "--next %s: write a count from 1 to 10000", opt(a, "next"));
  const char *name = opt(a, "name"), *after = opt(a, "after");
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t t = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
  if (after) {
    struct tm tm = {0};
    const char *rest = strptime(after, "%Y-%m-%dT%H:%M:%SZ", &tm);
    errno = 0;
    long long secs = rest && !*rest ? (long long)timegm(&tm) : strtoll(after, &end, 10);
    if ((!rest || *rest) && (errno || *end || end == after))
      return fail(a, EXIT_USAGE, "--after %s: write 2027-03-26T12:00:00Z or Unix seconds", after);
    t = secs * 1000000;
  }
  json_t *slots = a->json ? json_array() : NULL;
  for (long i = 0; i < n; i++) {
    tabq_error err;
    if (tabq_schedule_next(spec, zone, t, &t, &err)) {
      json_decref(slots);
      return fail_err(a, EXIT_USAGE, "the spec", &err);
    }
    char at[32], key[256] = "";
    iso(t, at, sizeof at);
    if (name)
      tabq_schedule_key(name, spec, t, key, sizeof key);
    if (slots)
      json_array_append_new(slots, json_pack("{s:s,s:I,s:s?}", "slot", at, "unix",
                                             (json_int_t)(t / 1000000), "key", name ? key : NULL));
    else
      printf("%s%s%s\n", at, name ? "  " : "", key);
  }
  if (slots)
    print_json(
        json_pack("{s:s,s:s,s:o}", "spec", spec, "zone", zone ? zone : "UTC", "slots", slots));
  return EXIT_DONE;
}

static void block_stops(sigset_t *stop) {
  sigemptyset(stop);
  sigaddset(stop, SIGINT);
  sigaddset(stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, stop, NULL);
}

/* The description file's own schedules (its "schedules"), or the one --name picks. */
static int run_file(tabq_args *a) {
  sigset_t stop;
  block_stops(&stop);
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  const char *only = opt(a, "name");
  size_t started = 0;
  int rc = load_tables(a, &app);
  if (!rc && !tabq_app_schedule_count(app))
    rc = fail(a, EXIT_USAGE,
              "give the job's slots with --cron EXPR or --every INTERVAL (%s has no schedules)",
              opt(a, "table"));
  if (!rc)
    rc = connect_url(a, &b);
  for (size_t i = 0; !rc && i < tabq_app_schedule_count(app); i++) {
    const tabq_schedule_options *o = tabq_app_schedule_options(app, i);
    if (only && strcmp(only, o->name))
      continue;
    tabq_error err;
    if (tabq_schedule(b, tabq_app_schedule_table(app, i), o, &err))
      rc = fail_err(a, EXIT_USAGE, "scheduling", &err);
    else if (!a->json)
      printf("scheduling %s (%s%s%s) into %s\n", o->name, o->spec, o->zone ? ", zone " : "",
             o->zone ? o->zone : "", tabq_app_schedule_table(app, i)->name);
    started++;
  }
  if (!rc && !started)
    rc = fail(a, EXIT_USAGE, "%s has no schedule named %s", opt(a, "table"), only);
  if (!rc) {
    if (a->json)
      print_json(json_pack("{s:I}", "schedules", (json_int_t)started));
    else
      printf("%zu schedule%s running; Ctrl-C stops\n", started, started == 1 ? "" : "s");
    fflush(stdout);
    tabq_run(b);
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

static int run(tabq_args *a) {
  const char *cron = opt(a, "cron"), *every = opt(a, "every");
  if (!cron && !every && !opt(a, "next"))
    return run_file(a);
  if (!cron == !every)
    return fail(a, EXIT_USAGE, "give the job's slots with --cron EXPR or --every INTERVAL");
  char spec[256];
  snprintf(spec, sizeof spec, "%s%s", cron ? "" : "every ", cron ? cron : every);
  if (opt(a, "next"))
    return print_next(a, spec, opt(a, "zone"));
  if (!opt(a, "name"))
    return fail(a, EXIT_USAGE, "--name NAME is needed: it keys each slot across processes");
  tabq_schedule_options o = TABQ_SCHEDULE_OPTIONS_INIT;
  o.name = opt(a, "name");
  o.spec = spec;
  o.zone = opt(a, "zone");
  const char *missed = opt(a, "missed");
  if (missed && !strcmp(missed, "catch-up"))
    o.missed = TABQ_MISSED_CATCH_UP;
  else if (missed && strcmp(missed, "skip"))
    return fail(a, EXIT_USAGE, "--missed %s: write skip or catch-up", missed);
  if (opt(a, "lead")) {
    long long ms = parse_duration_ms(opt(a, "lead"));
    if (ms < 0 || ms > 3600000)
      return fail(a, EXIT_USAGE, "--lead %s: write a duration up to 1h, such as 5s",
                  opt(a, "lead"));
    o.lead_ms = ms ? (unsigned)ms : 1; /* 0 would mean the default */
  }
  tabq_header headers[TABQ_MAX_VALUES];
  const char **hv;
  size_t nh = opt_all(a, "header", &hv);
  for (size_t i = 0; i < nh; i++) {
    char *eq = strchr(hv[i], '=');
    if (!eq || eq == hv[i])
      return fail(a, EXIT_USAGE, "--header %s: write NAME=VALUE", hv[i]);
    *eq = '\0', headers[i].name = hv[i], headers[i].value = eq + 1;
  }
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = opt(a, "queue");
  m.headers = headers;
  m.nheaders = nh;
  m.payload = a->nrest ? a->rest[0] : NULL;
  m.payload_len = a->nrest ? strlen(a->rest[0]) : 0;
  o.message = &m;
  /* Ctrl-C and TERM are taken by tabq_run: blocked before any thread starts. */
  sigset_t stop;
  block_stops(&stop);
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  const tabq_table *t = NULL;
  tabq_error err;
  int rc = load_tables(a, &app);
  if (!rc)
    rc = pick_table(a, app, &t);
  if (!rc)
    rc = connect_url(a, &b);
  if (!rc && tabq_schedule(b, t, &o, &err))
    rc = fail_err(a, EXIT_USAGE, "scheduling", &err);
  if (!rc) {
    if (a->json)
      print_json(json_pack("{s:s,s:s,s:s,s:s}", "name", o.name, "spec", spec, "zone",
                           o.zone ? o.zone : "UTC", "table", t->name));
    else
      printf("scheduling %s (%s%s%s) into %s; Ctrl-C stops\n", o.name, spec,
             o.zone ? ", zone " : "", o.zone ? o.zone : "", t->name);
    fflush(stdout);
    tabq_run(b);
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_schedule = {
    .name = "schedule",
    .summary = "publish a periodic job's slots, or print the slots a cron spec gives",
    .synopsis =
        "tabq schedule --url URL --table FILE --name NAME (--cron EXPR | --every INTERVAL)\n"
        "               [--zone ZONE] [--missed skip|catch-up] [--queue QUEUE]\n"
        "               [--header NAME=VALUE]... [--lead DURATION] [PAYLOAD]\n"
        "       tabq schedule --next N (--cron EXPR | --every INTERVAL) [--zone ZONE]\n"
        "               [--name NAME]",
    .description =
        "    Publishes a row at every slot of the cron expression or the interval until\n"
        "    Ctrl-C or TERM, as tabq_schedule() does (docs/schedule.md): each row carries the\n"
        "    slot's unique key, NAME:2026-12-04T12:00Z, so any number of these (and of\n"
        "    services scheduling the same job) publish each slot exactly once; the table\n"
        "    needs a unique_key column. The payload, queue and headers are every row's.\n"
        "    Without --cron and --every, runs the file's own \"schedules\" (or the one\n"
        "    --name names).\n"
        "    With --next, prints the next N slots in UTC after now (or --after TIME), and\n"
        "    with --name their keys, touching no database: a way to check an expression\n"
        "    and its zone.\n",
    .opts = opts,
    .max_operands = 1,
    .run = run,
};
