/* tabq_web_listen: the dashboard's site on an HTTP listener of tabq's (http_listen.c). It routes
 * each request, serves the page with this listener's CSRF token in it, and lets no POST through
 * without that token: a page of another site can make a browser post here, but cannot read the
 * token, which only this listener's page carries (and the Host check keeps other names away). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <tabq/metrics.h>
#include <tabq/web.h>

#include "error.h"
#include "http_auth.h"
#include "http_listen.h"
#include "web_api.h"
#include "web_assets.h"

#define CSRF_BYTES 32

typedef struct web_site {
  tabq_broker *b;
  const tabq_app *app;
  char csrf[2 * CSRF_BYTES + 1];
  char *page; /* index.html with the token in */
} web_site;

static void site_free(void *p) {
  web_site *w = p;
  if (w) {
    free(w->page);
    free(w);
  }
}

static int make_token(char *out, tabq_error *err) {
  unsigned char raw[CSRF_BYTES];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0)
      return tabq__err_set(err, TABQ_IO, NULL, "web",
                           "cannot make the dashboard's CSRF token: getrandom failed");
    got += (size_t)n;
  }
  for (size_t i = 0; i < sizeof raw; i++)
    sprintf(out + 2 * i, "%02x", raw[i]);
  return TABQ_OK;
}

/* The page with "{{csrf}}" replaced by the token. */
static char *page_with(const char *token) {
  const char *page = (const char *)tabq__web_index_html, *mark = strstr(page, "{{csrf}}");
  size_t head = mark ? (size_t)(mark - page) : strlen(page), len = strlen(page) + strlen(token);
  char *out = malloc(len + 1);
  if (out)
    snprintf(out, len + 1, "%.*s%s%s", (int)head, page, mark ? token : "",
             mark ? mark + strlen("{{csrf}}") : "");
  return out;
}

static bool csrf_ok(const web_site *w, const tabq_http_request *r) {
  char given[2 * CSRF_BYTES + 8];
  return tabq__http_form(r, "csrf", given, sizeof given) && tabq__http_secret_equal(given, w->csrf);
}

static void metrics(tabq_broker *b, tabq_http_reply *out) {
  char *text;
  tabq_error err;
  if (tabq_metrics_write(b, &text, &err))
    tabq__http_error(out, 500, err.message);
  else
    tabq__http_take(out, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text));
}

static void serve(void *site, const tabq_http_request *r, tabq_http_reply *out) {
  web_site *w = site;
  const char *path = r->path;
  bool get = !strcmp(r->method, "GET") || !strcmp(r->method, "HEAD");
  bool post = !strcmp(r->method, "POST");
  bool writes = !strcmp(path, "/api/requeue") || !strcmp(path, "/api/purge");
  if (writes && !post) {
    out->allow = "POST";
    tabq__http_error(out, 405, "this action is a POST");
  } else if (writes && !csrf_ok(w, r)) {
    tabq__http_error(out, 403,
                     "the request carries no CSRF token or a wrong one (csrf=...): reload the "
                     "dashboard; nothing was changed");
  } else if (!strcmp(path, "/api/requeue")) {
    tabq__web_requeue(w->b, w->app, r, out);
  } else if (!strcmp(path, "/api/purge")) {
    tabq__web_purge(w->b, w->app, r, out);
  } else if (!get) {
    out->allow = "GET, HEAD";
    tabq__http_error(out, 405, "this page answers GET");
  } else if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
    tabq__http_text(out, 200, "text/html; charset=utf-8", w->page);
  } else if (!strcmp(path, "/app.js")) {
    tabq__http_text(out, 200, "text/javascript; charset=utf-8", (const char *)tabq__web_app_js);
  } else if (!strcmp(path, "/style.css")) {
    tabq__http_text(out, 200, "text/css; charset=utf-8", (const char *)tabq__web_style_css);
  } else if (!strcmp(path, "/api/stats")) {
    tabq__web_stats(w->b, w->app, out);
  } else if (!strcmp(path, "/api/rows")) {
    tabq__web_rows(w->b, w->app, r, out);
  } else if (!strcmp(path, "/metrics")) {
    metrics(w->b, out);
  } else {
    tabq__http_error(out, 404, "not found: the dashboard is at /, the metrics at /metrics");
  }
}

int tabq_web_listen(tabq_broker *b, const tabq_app *app, const char *address,
                    const tabq_listen_options *options, tabq_http_listener **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!app)
    return tabq__err_set(err, TABQ_INVALID, NULL, "web", "tabq_web_listen needs an app");
  web_site *w = calloc(1, sizeof *w);
  if (!w)
    return tabq__err_set(err, TABQ_NOMEM, NULL, "web", "cannot allocate the dashboard");
  w->b = b;
  w->app = app;
  int rc = make_token(w->csrf, err);
  if (!rc && !(w->page = page_with(w->csrf)))
    rc = tabq__err_set(err, TABQ_NOMEM, NULL, "web", "cannot allocate the dashboard's page");
  if (rc) {
    site_free(w);
    return rc;
  }
  return tabq__http_listen(b, address, options, "dashboard", serve, w, site_free, out, err);
}
