/* A service whose drain has known outcomes, for tabq_metrics_write's test:
 *   metrics_service FILE --url URL ACKS DROPS FAILS DELAYS
 * makes its table (METRICS_DDL in the environment, statements split on ';'), publishes ACKS rows
 * its handler acks, DROPS it drops, FAILS it retries (each then dead-lettered at its second
 * attempt) and DELAYS it retries after 10 ms at their first attempt and acks at their second,
 * runs until every row is settled, then prints the metrics after a "# metrics" line.
 * METRICS_SLOW_MS makes each handler call sleep that long; METRICS_WAIT_MS leaves the published
 * rows waiting that long before the subscription starts (their queue latency). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tabq/app.h>
#include <tabq/metrics.h>

static int counts[4]; /* ack, drop, fail, delay */

static tabq_outcome work(tabq_delivery *d, void *user) {
  (void)user;
  const char *slow = getenv("METRICS_SLOW_MS"); /* each handler call takes at least this */
  if (slow)
    usleep((useconds_t)atoi(slow) * 1000);
  size_t len;
  const char *p = tabq_delivery_payload(d, &len);
  if (len == 4 && !memcmp(p, "drop", 4))
    return tabq_drop();
  if (len == 4 && !memcmp(p, "fail", 4))
    return tabq_retry();
  if (len == 4 && !memcmp(p, "dely", 4) && tabq_delivery_attempt(d) == 1)
    return tabq_retry_after(10);
  return tabq_ack();
}

static int connected(tabq_app_run *run) {
  tabq_error err;
  const char *ddl = getenv("METRICS_DDL");
  char *copy = ddl ? strdup(ddl) : NULL, *save = NULL;
  for (char *sql = copy ? strtok_r(copy, ";", &save) : NULL; sql; sql = strtok_r(NULL, ";", &save))
    if (tabq_exec(run->broker, sql, &err)) { /* one statement a call, as MySQL needs */
      fprintf(stderr, "metrics_service: METRICS_DDL: %s\n", err.message);
      free(copy);
      return 2;
    }
  free(copy);
  static const char *const payloads[] = {"ack_", "drop", "fail", "dely"};
  for (int k = 0; k < 4; k++) {
    counts[k] = run->argc > k + 1 ? atoi(run->argv[k + 1]) : 0;
    for (int i = 0; i < counts[k]; i++) {
      tabq_message m = TABQ_MESSAGE_INIT;
      m.group = "work";
      m.payload = payloads[k];
      m.payload_len = 4;
      if (tabq_publish(run->broker, tabq_app_table(run->app, 0), &m, &err)) {
        fprintf(stderr, "metrics_service: publish: %s\n", err.message);
        return 2;
      }
    }
  }
  const char *wait = getenv("METRICS_WAIT_MS");
  if (wait)
    usleep((useconds_t)atoi(wait) * 1000);
  return 0;
}

static void running(tabq_app_run *run) {
  uint64_t want = (uint64_t)(counts[0] + counts[1] + counts[2] + counts[3]);
  for (;;) {
    tabq_stats st;
    tabq_subscription_stats(run->subscriptions[0], &st, sizeof st);
    if (st.acked + st.dead_lettered >= want || tabq_app_stopping(run))
      break;
    usleep(10 * 1000);
  }
  tabq_stop(run->broker);
  while (!tabq_app_stopping(run))
    usleep(10 * 1000);
  char *text;
  tabq_error err;
  if (tabq_metrics_write(run->broker, &text, &err)) {
    fprintf(stderr, "metrics_service: metrics: %s\n", err.message);
    return;
  }
  printf("# metrics\n%s", text);
  free(text);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: metrics_service FILE --url URL ACKS DROPS FAILS DELAYS\n");
    return 2;
  }
  tabq_app *app;
  tabq_error err;
  if (tabq_app_load(argv[1], &app, &err) || tabq_app_bind(app, "work", work, NULL, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 2;
  }
  tabq_app_hooks hooks = TABQ_APP_HOOKS_INIT;
  hooks.connected = connected;
  hooks.running = running;
  tabq_app_set_hooks(app, &hooks, &err);
  argv[1] = argv[0];
  int status = tabq_app_main(app, argc - 1, argv + 1);
  tabq_app_free(app);
  return status;
}
