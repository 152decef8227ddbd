/* A process of the concurrency limit tests (test_concurrency.c): a broker given the slots table,
 * subscribed to queue "q" of the jobs table (with a partition_key column) with four workers and a
 * limit of LIMIT handlers of a partition key at once, printing each row its handler starts and
 * ends with the key and the time (CLOCK_MONOTONIC, microseconds: one clock for every process of
 * the machine):
 *
 *   concurrency_child URL POLL_MS TTL_MS LIMIT HANGS
 *
 * prints "subscribed" (or "refused MESSAGE" and exits 4), then "start ID KEY T" and "end ID KEY
 * T" per row; a handler takes 30 ms, and with HANGS 1 one whose payload begins "hang" never
 * returns (the test kills the process). On a line on stdin it shuts down and exits 0; it never
 * lives more than two minutes. The form
 * and database follow TABQ_TEST_FORM and TABQ_TEST_DB, as in the parent. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/concurrency.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static bool hangs;

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void say(const char *what, tabq_delivery *d) {
  const char *key = tabq_delivery_partition_key(d);
  pthread_mutex_lock(&out_mu);
  printf("%s %lld %s %lld\n", what, (long long)tabq_delivery_id(d), key ? key : "-", now_us());
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

static tabq_outcome handler(tabq_delivery *d, void *user) {
  (void)user;
  say("start", d);
  size_t n = 0;
  const void *p = tabq_delivery_payload(d, &n);
  if (hangs && n >= 4 && !memcmp(p, "hang", 4))
    for (;;)
      pause();
  struct timespec ts = {.tv_sec = 0, .tv_nsec = 30000000};
  nanosleep(&ts, NULL);
  say("end", d);
  return tabq_ack();
}

int main(int argc, char **argv) {
  if (argc != 6)
    return 2;
  hangs = atoi(argv[5]) != 0;
  alarm(120); /* never outlives a test that failed before it could say quit */
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = (unsigned)atoi(argv[2]);
  bo.pool_size = 8;
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(argv[1], &bo, &b, &err)) {
    fprintf(stderr, "concurrency_child: %s\n", err.message);
    return 3;
  }
  tabq_concurrency_slots c = TABQ_CONCURRENCY_SLOTS_INIT;
  c.name = "concurrency_slots";
  c.key_column = "slot";
  c.holder_column = "holder";
  c.expires_column = "expires";
  c.ttl_ms = (unsigned)atoi(argv[3]);
  tabq_table keyed = *jobs_table();
  keyed.partition_key.name = "partition_key";
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.workers = 4;
  o.handler = handler;
  o.concurrency_key = "partition_key";
  o.concurrency_limit = (unsigned)atoi(argv[4]);
  if (tabq_set_concurrency_slots(b, &c, &err) || tabq_subscribe(b, &keyed, &o, NULL, &err)) {
    printf("refused %s\n", err.message);
    fflush(stdout);
    tabq_close(b);
    return 4;
  }
  printf("subscribed\n");
  fflush(stdout);
  char line[32];
  if (!fgets(line, sizeof line, stdin))
    line[0] = '\0';
  tabq_close(b);
  return 0;
}
