/* The other process of the database-specific tests (the conformance kit has the other child
 * modes):
 *
 *   child crash URL      - claims from the jobs table and, in the handler, prints "claimed ID
 *                          ATTEMPT" and waits forever, so the test can kill it at a known point
 *   child subscribe URL  - subscribes to the jobs table, acking every row, and prints
 *                          "subscribed", or "refused CODE MESSAGE" and exits 4; then waits for a
 *                          line on stdin, closes and exits 0
 * The form and database follow TABQ_TEST_FORM and TABQ_TEST_DB, as in the parent. */
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <unistd.h>

#include "support.h"

static tabq_outcome crash_handler(tabq_delivery *d, void *user) {
  (void)user;
  printf("claimed %lld %ld\n", (long long)tabq_delivery_id(d), tabq_delivery_attempt(d));
  fflush(stdout);
  for (;;)
    pause();
  return tabq_ack();
}

static tabq_outcome ack_handler(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

int main(int argc, char **argv) {
  bool subscribe = argc == 3 && !strcmp(argv[1], "subscribe");
  if (argc != 3 || (strcmp(argv[1], "crash") && !subscribe))
    return 2;
  tabq_broker_options bo = {
      .size = sizeof(tabq_broker_options), .poll_interval_ms = 50, .pool_size = 4};
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(argv[2], &bo, &b, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 3;
  }
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = "q",
                                 .lease_s = 1,
                                 .handler = subscribe ? ack_handler : crash_handler};
  if (tabq_subscribe(b, jobs_table(), &o, NULL, &err)) {
    if (subscribe)
      printf("refused %d %s\n", (int)err.code, err.message);
    fflush(stdout);
    fprintf(stderr, "child: %s\n", err.message);
    tabq_close(b);
    return 4;
  }
  if (subscribe) {
    printf("subscribed\n");
    fflush(stdout);
    char line[32];
    if (!fgets(line, sizeof line, stdin))
      line[0] = '\0';
    tabq_close(b);
    return 0;
  }
  for (;;)
    pause();
}
