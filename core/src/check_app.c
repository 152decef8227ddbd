/* The statement check of a whole app (tabq_check_app, tabq/app.h): each subscription as it
 * would open (one by name as its route), each route, and the publish of each table, into one
 * report. One refusal does not stop the others: a deploy gate wants every broken statement of
 * the app at once. */
#include <stdbool.h>
#include <string.h>

#include <tabq/app.h>

#include "app_model.h"
#include "error.h"

static void never_batch(tabq_delivery *const *d, size_t n, tabq_outcome *outcomes, void *user) {
  (void)d;
  (void)n;
  (void)outcomes;
  (void)user;
}

/* Keeps the first failure's code and message in *first / *err. */
static void keep(int rc, const tabq_error *e, int *first, tabq_error *err) {
  if (rc && !*first) {
    *first = rc;
    if (err)
      *err = *e;
  }
}

/* Whether route `name` was checked already, by a subscription to it. */
static bool route_subscribed(const tabq_app *app, const char *name) {
  for (size_t i = 0; i < tabq_app_subscription_count(app); i++) {
    const char *route = tabq_app_subscription_route(app, i);
    if (route && !strcmp(route, name))
      return true;
  }
  return false;
}

/* A stop with no item (no connection, no memory) ends the whole check: the report would only
 * repeat it. */
static bool stops(int rc, const tabq_check_report *report, size_t before) {
  return rc && tabq_check_report_count(report) == before;
}

int tabq_check_app(tabq_broker *b, const tabq_app *app, tabq_check_report *report,
                   tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app || !report)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_check_app needs a broker, an app and a report");
  int first = TABQ_OK;
  tabq_error e;
  for (size_t i = 0; i < tabq_app_subscription_count(app); i++) {
    const tabq_table *t = tabq_app_subscription_table(app, i);
    const char *route = tabq_app_subscription_route(app, i);
    size_t before = tabq_check_report_count(report);
    int rc;
    if (route) {
      rc = tabq_check_route(b, route, t, report, &e);
    } else {
      /* A file's batch subscription, its handler not bound yet, is checked as a batch. */
      tabq_subscription_options o = *tabq_app_subscription_options(app, i);
      if (app->subs[i]->batch && !o.batch_handler)
        o.batch_handler = never_batch;
      rc = tabq_check_subscription(b, t, &o, report, &e);
    }
    keep(rc, &e, &first, err);
    if (stops(rc, report, before))
      return first;
  }
  for (size_t i = 0; i < tabq_app_route_count(app); i++) {
    const char *name = tabq_app_route_name(app, i);
    if (route_subscribed(app, name))
      continue;
    size_t before = tabq_check_report_count(report);
    int rc = tabq_check_route(b, name, tabq_app_route_table(app, i), report, &e);
    keep(rc, &e, &first, err);
    if (stops(rc, report, before))
      return first;
  }
  for (size_t i = 0; i < tabq_app_table_count(app); i++) {
    /* A dead letter table only a subscription's dead letter statements write (checked with
     * it) is no queue of its own: nothing publishes into it. */
    const char *name = tabq_app_table(app, i)->name;
    if (tabq__app_holds_dead_letters(app, name) && !tabq__app_uses_table(app, name))
      continue;
    size_t before = tabq_check_report_count(report);
    int rc = tabq_check_publish(b, tabq_app_table(app, i), report, &e);
    keep(rc, &e, &first, err);
    if (stops(rc, report, before))
      return first;
  }
  return first;
}
