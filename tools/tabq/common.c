/* The `tabq` command's common part (common.h): what every subcommand shares. */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t index_of(const tabq_args *a, const char *name) {
  for (size_t i = 0; a->c->opts[i].name; i++)
    if (!strcmp(a->c->opts[i].name, name))
      return i;
  return (size_t)-1;
}

const char *opt(const tabq_args *a, const char *name) {
  size_t i = index_of(a, name);
  if (i == (size_t)-1 || !a->nvalues[i])
    return NULL;
  return a->values[i][a->nvalues[i] - 1];
}

size_t opt_all(const tabq_args *a, const char *name, const char ***values) {
  size_t i = index_of(a, name);
  if (i == (size_t)-1)
    return 0;
  *values = (const char **)a->values[i];
  return a->nvalues[i];
}

int fail(const tabq_args *a, int code, const char *fmt, ...) {
  progress_done(a);
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tabq %s: ", a->cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

int fail_err(const tabq_args *a, int code, const char *what, const tabq_error *err) {
  return fail(a, code, "%s: %s: %s", what, tabq_code_name(err->code), err->message);
}

int need_url(const tabq_args *a, const char **url) {
  *url = opt(a, "url");
  if (!*url || !**url)
    *url = getenv("TABQ_URL");
  if (!*url || !**url)
    return fail(a, EXIT_USAGE, "no database: give --url URL or set TABQ_URL (try --help)");
  return EXIT_DONE;
}

/* The library logs warnings to stderr by default; the command says failures in its own line. */
static void quiet(int level, const char *message, void *user) {
  (void)level, (void)message, (void)user;
}

int connect_url(const tabq_args *a, tabq_broker **b) {
  const char *url;
  int rc = need_url(a, &url);
  if (rc)
    return rc;
  progress(a, "connecting");
  /* libpq waits for a host that does not answer as long as TCP does; the command bounds it
   * (a URL's own connect_timeout, or the environment's, still wins). The MySQL driver has a
   * default of its own. */
  setenv("PGCONNECT_TIMEOUT", "10", 0);
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.pool_size = 1;
  o.acquire_timeout_ms = 10000;
  o.log = quiet;
  tabq_error err;
  if (tabq_connect(url, &o, b, &err))
    return fail_err(a, EXIT_USAGE, "connecting", &err);
  return EXIT_DONE;
}

int load_tables(const tabq_args *a, tabq_app **app) {
  const char *file = opt(a, "table");
  if (!file)
    return fail(a, EXIT_USAGE, "give --table FILE, the description file (try --help)");
  tabq_error err;
  if (tabq_app_load(file, app, &err))
    return fail(a, EXIT_USAGE, "%s", err.message);
  return EXIT_DONE;
}

static bool drawn;

void progress(const tabq_args *a, const char *fmt, ...) {
  if (!a->tty || a->json)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("\r\033[K", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
  drawn = true;
}

void progress_done(const tabq_args *a) {
  (void)a;
  if (drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
    drawn = false;
  }
}

void print_json(json_t *doc) {
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (text) {
    puts(text);
    free(text);
  }
  json_decref(doc);
}

long long parse_duration_ms(const char *text) {
  char *end;
  if (!text || !*text)
    return -1;
  double v = strtod(text, &end);
  if (end == text || v < 0)
    return -1;
  static const struct {
    const char *unit;
    double ms;
  } units[] = {{"", 1000},     {"ms", 1},         {"s", 1000},       {"m", 60000},
               {"h", 3600000}, {"d", 86400000.0}, {"w", 604800000.0}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(end, units[i].unit))
      return (long long)(v * units[i].ms);
  return -1;
}

bool confirm(const char *prompt) {
  FILE *tty = fopen("/dev/tty", "r+");
  if (!tty)
    return false;
  fprintf(tty, "%s [y/N] ", prompt);
  fflush(tty);
  char line[16] = "";
  bool yes = fgets(line, sizeof line, tty) &&
             (!strcmp(line, "y\n") || !strcmp(line, "yes\n") || !strcmp(line, "Y\n"));
  fclose(tty);
  return yes;
}
