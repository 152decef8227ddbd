/* A publisher for the server pause test (test_server_pause.py): how long a publish takes, and
 * how it ends, while the server is paused and after.
 *
 *   pause_probe URL TABLE
 *
 * Connects one broker (a pool of two) to TABLE (id, queue, retry_after, attempt, payload, as
 * fault_worker's), prints "ready", then for each line read from stdin publishes one row whose
 * group (the queue column) is that line, and prints "ok MS" or "err MS CODE MESSAGE": the
 * milliseconds the call took and its outcome. Ends at the end of stdin, exit 0; exit 3 when it
 * cannot connect. */
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>

static long long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void quiet(int level, const char *message, void *user) {
  (void)level, (void)message, (void)user; /* the outcome goes to stdout, one line a publish */
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pause_probe URL TABLE\n");
    return 2;
  }
  tabq_table t = {.size = sizeof(tabq_table),
                  .name = argv[2],
                  .id = {.name = "id", .generated = true},
                  .group = {.name = "queue"},
                  .retry_after = {.name = "retry_after"},
                  .attempt = {.name = "attempt", .generated = true},
                  .payload = {.name = "payload"}};
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.pool_size = 2;
  bo.log = quiet;
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(argv[1], &bo, &b, &err)) {
    fprintf(stderr, "pause_probe: connect: %s\n", err.message);
    return 3;
  }
  printf("ready\n");
  fflush(stdout);
  char line[128];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = line;
    m.payload = "p";
    m.payload_len = 1;
    long long start = mono_ms();
    int rc = tabq_publish(b, &t, &m, &err);
    long long took = mono_ms() - start;
    if (rc)
      printf("err %lld %s %s\n", took, tabq_code_name(rc), err.message);
    else
      printf("ok %lld\n", took);
    fflush(stdout);
  }
  tabq_close(b);
  return 0;
}
