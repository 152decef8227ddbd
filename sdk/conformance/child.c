/* The other process of the crash, lease and drain tests: this executable run with the hidden
 * --child MODE. It claims from the test's table and tells the test, line by line on stdout,
 * where it stands, so the test can kill, stop or signal it at a known point.
 *
 *   crash   - lease 1 s; in the handler: "claimed ID ATTEMPT", then waits forever
 *   lapse   - lease 1 s; in the handler: "claimed ID", waits for a line on stdin, acks and
 *             prints the ack's code ("OK", "LEASE_LOST")
 *   run     - in the handler: "claimed ID", 300 ms of work, ack; tabq_run() until SIGTERM, then
 *             "stopped ACKED"
 *   drain   - four workers print each id they ack, one a line, until "stop" on stdin
 *   publish - publishes one row to queue q with listen_notify, and exits
 *   tx-crash - transactional, lease 1 s; in the handler: a business row into {dead} in the
 *             delivery's transaction, "claimed ID", then waits forever (SIGKILLed mid-transaction)
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

static atomic_bool done;

static tabq_outcome crash_handler(tabq_delivery *d, void *user) {
  (void)user;
  printf("claimed %lld %ld\n", (long long)tabq_delivery_id(d), tabq_delivery_attempt(d));
  fflush(stdout);
  for (;;)
    pause();
  return tabq_ack();
}

static tabq_outcome tx_crash_handler(tabq_delivery *d, void *user) {
  (void)user;
  char sql[256];
  snprintf(sql, sizeof sql, "INSERT INTO %s (id, queue, payload) VALUES (77, 'biz', 'x')",
           dead_name());
  tabq_error err;
  if (tabq_tx_exec(tabq_delivery_tx(d), sql, NULL, 0, NULL, &err))
    fprintf(stderr, "child: %s\n", err.message);
  printf("claimed %lld\n", (long long)tabq_delivery_id(d));
  fflush(stdout);
  for (;;)
    pause();
  return tabq_ack();
}

static tabq_outcome lapse_handler(tabq_delivery *d, void *user) {
  (void)user;
  printf("claimed %lld\n", (long long)tabq_delivery_id(d));
  fflush(stdout);
  char line[32];
  if (!fgets(line, sizeof line, stdin))
    return tabq_no_outcome();
  tabq_error err;
  int rc = tabq_delivery_settle(d, tabq_ack(), &err);
  printf("%s\n", tabq_code_name((tabq_code)rc));
  fflush(stdout);
  atomic_store(&done, true);
  return tabq_no_outcome();
}

static tabq_outcome run_handler(tabq_delivery *d, void *user) {
  (void)user;
  printf("claimed %lld\n", (long long)tabq_delivery_id(d));
  fflush(stdout);
  struct timespec work = {.tv_nsec = 300 * 1000000L};
  nanosleep(&work, NULL);
  return tabq_ack();
}

static pthread_mutex_t print_mu = PTHREAD_MUTEX_INITIALIZER;

static tabq_outcome drain_handler(tabq_delivery *d, void *user) {
  (void)user;
  pthread_mutex_lock(&print_mu);
  printf("%lld\n", (long long)tabq_delivery_id(d));
  fflush(stdout);
  pthread_mutex_unlock(&print_mu);
  return tabq_ack();
}

static int publish_one(const char *url) {
  tabq_broker_options bo = broker_options(0, 0);
  bo.listen_notify = true;
  tabq_broker *b;
  tabq_error err;
  tabq_message m = message("q", "from-child", 10);
  if (tabq_connect(url, &bo, &b, &err) || tabq_publish(b, jobs_table(), &m, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 5;
  }
  tabq_close(b);
  return 0;
}

int child_main(const char *mode, const char *url, tabq_form form, const char *jobs) {
  kit.url = url;
  kit.form = form;
  db_set_names(jobs);
  if (!strcmp(mode, "publish"))
    return publish_one(url);
  /* A SIGTERM may come as soon as a handler has said "claimed", before tabq_run: blocked here,
   * in every thread the broker starts, it waits for tabq_run (tabq.h). */
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, NULL);
  tabq_broker_options bo = broker_options(50, 4);
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(url, &bo, &b, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 3;
  }
  tabq_subscription_options o = sub_options("q", run_handler, NULL);
  o.lease_s = 1;
  if (!strcmp(mode, "crash"))
    o.handler = crash_handler;
  else if (!strcmp(mode, "lapse"))
    o.handler = lapse_handler;
  else if (!strcmp(mode, "tx-crash")) {
    o.handler = tx_crash_handler;
    o.transactional = true;
  } else if (!strcmp(mode, "drain")) {
    o.handler = drain_handler;
    o.workers = 4;
    o.lease_s = 10;
  }
  tabq_subscription *s;
  if (tabq_subscribe(b, jobs_table(), &o, &s, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    tabq_close(b);
    return 4;
  }
  if (!strcmp(mode, "run")) {
    tabq_run(b);
    tabq_stats st;
    stats_of(s, &st);
    printf("stopped %llu\n", (unsigned long long)st.acked);
    fflush(stdout);
  } else if (!strcmp(mode, "drain")) {
    char line[32];
    while (fgets(line, sizeof line, stdin) && strncmp(line, "stop", 4)) {
    }
  } else {
    while (!atomic_load(&done))
      usleep(10000);
  }
  tabq_close(b);
  return 0;
}
