/* A service run by tabq_app_main, for test_app_main.py: its description from a file, its table
 * made by the connected hook, its jobs published there.
 *
 *   app_service FILE.tabq.json [tabq_app_main's options] JOBS [wait | pruned]
 *
 * It publishes JOBS rows into queue "work"; the handler "work" sleeps SLOW_MS (environment)
 * and acks. Without "wait" it stops itself once every job is handled (with "pruned", once the
 * table is empty too, or 20 s on: the retention the file gives deletes the finished rows); with
 * it, it runs until a signal. Then it prints "handled H remaining R peak P" (P: the most handlers
 * at once). With UNBOUND set it binds no handler. APP_DDL (environment) is the table's SQL,
 * statements separated by ';', run first. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* usleep */
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/app.h>
#include <unistd.h>

static atomic_int handled, running_now, peak;

static tabq_outcome work(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  int now = atomic_fetch_add(&running_now, 1) + 1;
  for (int p = atomic_load(&peak); now > p && !atomic_compare_exchange_weak(&peak, &p, now);)
    ;
  const char *slow = getenv("SLOW_MS");
  if (slow)
    usleep((useconds_t)atoi(slow) * 1000);
  atomic_fetch_sub(&running_now, 1);
  atomic_fetch_add(&handled, 1);
  return tabq_ack();
}

static int jobs;

static int connected(tabq_app_run *run) {
  const tabq_table *t = tabq_app_table(run->app, 0);
  tabq_error err;
  const char *ddl = getenv("APP_DDL");
  char *copy = ddl ? strdup(ddl) : NULL, *save = NULL;
  for (char *sql = copy ? strtok_r(copy, ";", &save) : NULL; sql; sql = strtok_r(NULL, ";", &save))
    if (tabq_exec(run->broker, sql, &err)) { /* one statement a call, as MySQL needs */
      fprintf(stderr, "app_service: APP_DDL: %s\n", err.message);
      free(copy);
      return 2;
    }
  free(copy);
  jobs = run->argc > 1 ? atoi(run->argv[1]) : 0;
  for (int i = 0; i < jobs; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = "work";
    m.payload = "job";
    m.payload_len = 3;
    if (tabq_publish(run->broker, t, &m, &err)) {
      fprintf(stderr, "app_service: publish: %s\n", err.message);
      return 2;
    }
  }
  return 0;
}

static int count_row(void *user, const tabq_value *cells, unsigned n) {
  (void)n;
  *(long long *)user = cells[0].u.i;
  return 0;
}

static long long rows(tabq_broker *b) {
  long long n = -1;
  tabq_tx *tx;
  tabq_error err;
  if (!tabq_begin(b, &tx, &err)) {
    tabq_tx_query(tx, "SELECT count(*) FROM app_jobs", NULL, 0, 1, count_row, &n, &err);
    tabq_rollback(tx, &err);
  }
  return n;
}

static void running(tabq_app_run *run) {
  bool wait = run->argc > 2 && !strcmp(run->argv[2], "wait");
  bool pruned = run->argc > 2 && !strcmp(run->argv[2], "pruned");
  printf("running\n");
  fflush(stdout);
  while (!tabq_app_stopping(run) && (wait || atomic_load(&handled) < jobs))
    usleep(10 * 1000);
  for (int waited = 0; pruned && waited < 20000 && rows(run->broker) != 0; waited += 50)
    usleep(50 * 1000);
  tabq_stop(run->broker);
  while (!tabq_app_stopping(run))
    usleep(10 * 1000);
  long long remaining = rows(run->broker);
  printf("handled %d remaining %lld peak %d\n", atomic_load(&handled), remaining,
         atomic_load(&peak));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: app_service FILE.tabq.json [options] JOBS [wait]\n");
    return 2;
  }
  tabq_app *app;
  tabq_error err;
  if (tabq_app_load(argv[1], &app, &err)) {
    fprintf(stderr, "app_service: %s\n", err.message);
    return 2;
  }
  tabq_app_hooks hooks = TABQ_APP_HOOKS_INIT;
  hooks.connected = connected;
  hooks.running = running;
  if ((!getenv("UNBOUND") && tabq_app_bind(app, "work", work, NULL, &err)) ||
      tabq_app_set_hooks(app, &hooks, &err)) {
    fprintf(stderr, "app_service: %s\n", err.message);
    return 2;
  }
  argv[1] = argv[0]; /* tabq_app_main reads the rest */
  int status = tabq_app_main(app, argc - 1, argv + 1);
  tabq_app_free(app);
  return status;
}
