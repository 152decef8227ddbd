/* The publisher of the failover test (test_failover.py): publishes rows one at a time into
 * tables of the fault worker's shape, round robin, until SIGTERM, through a broker whose URL may
 * name several hosts. A publish that fails (the server went away, the standby is not promoted
 * yet) is counted and the next one tried after a short pause.
 *
 *   failover_publisher URL TABLE...
 *
 * It prints "ready" once connected; on SIGTERM, one JSON line: {"ok": [per table], "failed": N}
 * — a row counted in "ok" is one whose commit the server confirmed. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>

#define MAX_TABLES 8

static volatile sig_atomic_t stopping;

static void *wait_for_term(void *set) {
  int sig;
  sigwait(set, &sig);
  stopping = 1;
  return NULL;
}

static void pause_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  if (argc < 3 || argc - 2 > MAX_TABLES) {
    fprintf(stderr, "usage: failover_publisher URL TABLE... (at most %d)\n", MAX_TABLES);
    return 2;
  }
  static sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  pthread_t waiter;
  pthread_create(&waiter, NULL, wait_for_term, &set);

  size_t ntables = (size_t)argc - 2;
  tabq_table tables[MAX_TABLES];
  for (size_t i = 0; i < ntables; i++)
    tables[i] = (tabq_table){.size = sizeof(tabq_table),
                             .name = argv[2 + i],
                             .id = {.name = "id", .generated = true},
                             .group = {.name = "queue"},
                             .retry_after = {.name = "retry_after"},
                             .attempt = {.name = "attempt", .generated = true},
                             .payload = {.name = "payload"}};
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.pool_size = 2;
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(argv[1], &bo, &b, &err)) {
    fprintf(stderr, "failover_publisher: connect: %s\n", err.message);
    return 3;
  }
  printf("ready\n");
  fflush(stdout);
  unsigned long ok[MAX_TABLES] = {0}, failed = 0;
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = "x";
  m.payload_len = 1;
  for (size_t turn = 0; !stopping; turn = (turn + 1) % ntables) {
    if (tabq_publish(b, &tables[turn], &m, &err) == TABQ_OK) {
      ok[turn]++;
      pause_ms(5);
    } else {
      if (failed++ == 0)
        fprintf(stderr, "failover_publisher: first failure: %s\n", err.message);
      pause_ms(20);
    }
  }
  tabq_close(b);
  printf("{\"ok\": [");
  for (size_t i = 0; i < ntables; i++)
    printf("%s%lu", i ? ", " : "", ok[i]);
  printf("], \"failed\": %lu}\n", failed);
  return 0;
}
