/* A process of the pause tests (test_pause.c): a broker given the controls table, subscribed to
 * queue "q" of the jobs table with two workers, printing each row its handler starts and ends:
 *
 *   pause_child URL POLL_MS LISTEN
 *
 * prints "subscribed" (or "refused MESSAGE" and exits 4), then "start ID" and "end ID" per row (a
 * row whose payload begins "slow" takes 1.5 s in its handler), and on a line on stdin shuts down
 * and exits 0. LISTEN 1 sets listen_notify. The form and database follow TABQ_TEST_FORM and
 * TABQ_TEST_DB, as in the parent. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>

#include "support.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *what, long long id) {
  pthread_mutex_lock(&out_mu);
  printf("%s %lld\n", what, id);
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

static tabq_outcome handler(tabq_delivery *d, void *user) {
  (void)user;
  long long id = (long long)tabq_delivery_id(d);
  say("start", id);
  size_t n = 0;
  const void *p = tabq_delivery_payload(d, &n);
  if (n >= 4 && !memcmp(p, "slow", 4)) {
    struct timespec ts = {.tv_sec = 1, .tv_nsec = 500000000};
    nanosleep(&ts, NULL);
  }
  say("end", id);
  return tabq_ack();
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  tabq_broker_options bo = {.size = sizeof(tabq_broker_options),
                            .poll_interval_ms = (unsigned)atoi(argv[2]),
                            .pool_size = 4,
                            .listen_notify = atoi(argv[3]) != 0};
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(argv[1], &bo, &b, &err)) {
    fprintf(stderr, "pause_child: %s\n", err.message);
    return 3;
  }
  tabq_controls c = TABQ_CONTROLS_INIT;
  c.name = "queue_controls";
  c.table_column = "queue_table";
  c.queue_column = "queue";
  c.paused_column = "paused";
  c.paused_at_column = "paused_at";
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = "q", .workers = 2, .handler = handler};
  if (tabq_set_controls(b, &c, &err) || tabq_subscribe(b, jobs_table(), &o, NULL, &err)) {
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
