/* The other process of the database-specific crash test: it claims from the jobs table and, in
 * the handler, prints "claimed ID ATTEMPT" and waits forever, so the test can kill it at a known
 * point (the conformance kit has the other child modes).
 *
 *   child crash URL
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

int main(int argc, char **argv) {
  if (argc != 3 || strcmp(argv[1], "crash"))
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
                                 .handler = crash_handler};
  if (tabq_subscribe(b, jobs_table(), &o, NULL, &err)) {
    fprintf(stderr, "child: %s\n", err.message);
    return 4;
  }
  for (;;)
    pause();
}
