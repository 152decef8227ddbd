/* tabq web: the dashboard of the described queues, served until Ctrl-C (tabq/web.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/web.h>

#include "common.h"

#define DEFAULT_LISTEN "127.0.0.1:8089"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "a description file: its tables and subscriptions (repeatable)", true},
    {"listen", "ADDRESS", "where to listen (default " DEFAULT_LISTEN "; :0 a free port)", false},
    {"allow-remote", NULL, "listen on an address that is not loopback (needs credentials)", false},
    {"token", "TOKEN", "ask for Authorization: Bearer TOKEN (else TABQ_WEB_TOKEN)", false},
    {"user", "USER", "ask for basic auth as USER, with --password", false},
    {"password", "PASSWORD", "basic auth's password (else TABQ_WEB_PASSWORD)", false},
    {NULL, NULL, NULL, false},
};

/* Every --table file's tables, routes and subscriptions in one app (one file: that file's). The
 * files' own apps are kept in `parts` until the end: the merged app names their strings. */
static int load_all(const tabq_args *a, tabq_app **out, tabq_app **parts, size_t *nparts) {
  const char **files;
  size_t n = opt_all(a, "table", &files);
  *nparts = 0;
  if (!n)
    return fail(a, EXIT_USAGE, "give --table FILE, a description file (try --help)");
  tabq_error err;
  for (size_t i = 0; i < n; i++) {
    if (tabq_app_load(files[i], &parts[i], &err))
      return fail(a, EXIT_USAGE, "%s", err.message);
    *nparts = i + 1;
  }
  if (n == 1) {
    *out = parts[0];
    *nparts = 0;
    return EXIT_DONE;
  }
  if (tabq_app_new("tabq web", NULL, out, &err))
    return fail_err(a, EXIT_USAGE, "merging the files", &err);
  int rc = TABQ_OK;
  for (size_t f = 0; f < n && !rc; f++) {
    const tabq_app *p = parts[f];
    for (size_t i = 0; i < tabq_app_table_count(p) && !rc; i++)
      rc = tabq_app_add_table(*out, tabq_app_table(p, i), &err);
    for (size_t i = 0; i < tabq_app_route_count(p) && !rc; i++)
      rc = tabq_app_add_route(*out, tabq_app_route_name(p, i), tabq_app_route_table(p, i)->name,
                              &err);
    for (size_t i = 0; i < tabq_app_subscription_count(p) && !rc; i++)
      rc = tabq_app_subscription_route(p, i)
               ? tabq_app_add_subscription_to(*out, tabq_app_subscription_route(p, i),
                                              tabq_app_subscription_options(p, i), &err)
               : tabq_app_add_subscription(*out, tabq_app_subscription_table(p, i)->name,
                                           tabq_app_subscription_options(p, i), &err);
    if (rc)
      return fail(a, EXIT_USAGE, "%s: %s", files[f], err.message);
  }
  return EXIT_DONE;
}

/* "http://HOST:PORT/" from the address given and the port bound. */
static void url_of(const char *address, int port, char *out, size_t cap) {
  const char *colon = address[0] == '[' ? strchr(address, ']') : strrchr(address, ':');
  size_t host = colon ? (size_t)(colon - address) + (address[0] == '[') : strlen(address);
  if (!host || (host == 9 && !strncmp(address, "localhost", 9)))
    snprintf(out, cap, "http://%s:%d/", host ? "localhost" : "127.0.0.1", port);
  else
    snprintf(out, cap, "http://%.*s:%d/", (int)host, address, port);
}

static int run(tabq_args *a) {
  const char *address = opt(a, "listen") ? opt(a, "listen") : DEFAULT_LISTEN;
  tabq_listen_options lo = TABQ_LISTEN_OPTIONS_INIT;
  lo.allow_remote = opt(a, "allow-remote") != NULL;
  lo.bearer_token = opt(a, "token") ? opt(a, "token") : getenv("TABQ_WEB_TOKEN");
  lo.basic_user = opt(a, "user");
  lo.basic_password = opt(a, "password") ? opt(a, "password") : getenv("TABQ_WEB_PASSWORD");
  if (!lo.basic_user)
    lo.basic_password = NULL;
  else if (!lo.basic_password)
    return fail(a, EXIT_USAGE, "--user needs --password PASSWORD (or TABQ_WEB_PASSWORD)");
  /* Ctrl-C and TERM are taken by sigwait below: blocked before any thread starts, so every
   * thread inherits the mask and none is interrupted. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  tabq_app *app = NULL, *parts[TABQ_MAX_VALUES];
  size_t nparts = 0;
  tabq_broker *b = NULL;
  tabq_http_listener *l = NULL;
  tabq_error err;
  int rc = load_all(a, &app, parts, &nparts);
  if (!rc)
    rc = connect_url(a, &b);
  if (!rc && tabq_web_listen(b, app, address, &lo, &l, &err)) {
    if (err.code == TABQ_INVALID && !lo.allow_remote && strstr(err.message, "allow_remote"))
      rc = fail(a, EXIT_USAGE,
                "listening: %s is not a loopback address: give --allow-remote with --token "
                "TOKEN or --user USER --password PASSWORD to listen there",
                address);
    else if (err.code == TABQ_INVALID && lo.allow_remote && strstr(err.message, "allow_remote"))
      rc = fail(a, EXIT_USAGE,
                "listening: --allow-remote on %s needs --token TOKEN or --user USER "
                "--password PASSWORD",
                address);
    else
      rc = fail_err(a, EXIT_USAGE, "listening", &err);
  }
  if (!rc) {
    char url[128];
    url_of(address, tabq_http_port(l), url, sizeof url);
    if (a->json)
      print_json(json_pack("{s:s,s:i}", "url", url, "port", tabq_http_port(l)));
    else
      printf("serving the dashboard of %s at %s (metrics at %smetrics); Ctrl-C stops\n",
             tabq_app_name(app), url, url);
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    /* The order tabq/http.h asks: requests from here on get 503, the listener joins those in
     * flight, then the broker closes. */
    tabq_shutdown(b);
    tabq_http_stop(l);
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  for (size_t i = 0; i < nparts; i++)
    tabq_app_free(parts[i]);
  return rc;
}

const tabq_cmd tabq_cmd_web = {
    .name = "web",
    .summary = "serve a dashboard of the queues: counts, rows, requeue and purge",
    .synopsis = "tabq web --url URL --table FILE... [--listen ADDRESS]\n"
                "               [--allow-remote (--token TOKEN | --user USER --password PASSWORD)]",
    .description =
        "    Serves, until Ctrl-C, a page of every queue of the description files' tables:\n"
        "    due, delayed, in work, processed and dead rows and the age of the oldest due\n"
        "    row, refreshed every two seconds; a selected queue's due rows, rows in work and\n"
        "    dead letters; buttons that requeue its dead letters and purge old finished rows\n"
        "    and dead letters (each a POST carrying the page's CSRF token). /metrics is served\n"
        "    beside it. It listens on loopback (" DEFAULT_LISTEN " unless --listen says\n"
        "    otherwise; :0 takes a free port); any other address needs --allow-remote and a\n"
        "    token or basic auth. The first line on stdout gives the URL (--json: {url, port}).\n"
        "    Exit 2 when the address is refused or in use.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
