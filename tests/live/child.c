/* The other process of the crash and lease tests: it claims from the jobs table and tells the
 * test, line by line on stdout, where it stands, so the test can kill, stop or signal it at a
 * known point.
 *
 *   child crash URL  - lease 1 s; in the handler: "claimed ID ATTEMPT", then waits forever
 *   child lapse URL  - lease 1 s; in the handler: "claimed ID", waits for a line on stdin, acks
 *                      and prints the ack's code ("OK", "LEASE_LOST")
 *   child run URL    - in the handler: "claimed ID", 300 ms of work, ack; tabq_run() until
 *                      SIGTERM, then "stopped ACKED"
 *   child drain URL  - four workers print each id they ack, one a line, until "stop" on stdin
 *   child publish URL - publishes one row to queue q with listen_notify, and exits
 * The form and database follow TABQ_TEST_FORM and TABQ_TEST_DB, as in the parent. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

static atomic_bool done;

static tabq_outcome crash_handler(tabq_delivery *d, void *user) {
  (void)user;
  printf("claimed %lld %ld\n", (long long)tabq_delivery_id(d), tabq_delivery_attempt(d));
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
  tabq_broker_options bo = {.size = sizeof(tabq_broker_options), .listen_notify = true};
  tabq_broker *b;
  tabq_error err;
  tabq_message m = {
      .size = sizeof(tabq_message), .group = "q", .payload = "from-child", .payload_len = 10};
  if (tabq_connect(url, &bo, &b, &err) || tabq_publish(b, jobs_table(), &m, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 5;
  }
  tabq_close(b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  const char *mode = argv[1];
  if (!strcmp(mode, "publish"))
    return publish_one(argv[2]);
  tabq_broker_options bo = {
      .size = sizeof(tabq_broker_options), .poll_interval_ms = 50, .pool_size = 4};
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(argv[2], &bo, &b, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 3;
  }
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .lease_s = 1};
  if (!strcmp(mode, "crash"))
    o.handler = crash_handler;
  else if (!strcmp(mode, "lapse"))
    o.handler = lapse_handler;
  else if (!strcmp(mode, "drain")) {
    o.handler = drain_handler;
    o.workers = 4;
    o.lease_s = 10;
  } else
    o.handler = run_handler;
  tabq_subscription *s;
  if (tabq_subscribe(b, jobs_table(), &o, &s, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 4;
  }
  if (!strcmp(mode, "run")) {
    tabq_run(b);
    tabq_stats st;
    tabq_subscription_stats(s, &st, sizeof st);
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
