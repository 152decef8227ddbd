/* A worker process of the fault tests (test_server_faults.py): one broker draining one table in
 * one form while the test restarts the server under it and ends its connections.
 *
 *   fault_worker URL TABLE FORM WORKERS OUT [HANDLER_MS [POOL]]
 *
 * Queue "q" of TABLE (id, queue, retry_after, attempt, payload; locked_until in the lease form,
 * the key "TABLE-{id}" in the advisory form; acks delete). Each handler call appends one line
 * "ID START_US END_US PID" to OUT (one write on an O_APPEND descriptor, so lines of several
 * processes never mix), sleeps HANDLER_MS (default 10) and acks. POOL: the broker's pool_size
 * (default 6). It prints "ready" once subscribed; on SIGTERM it
 * shuts down and prints its counters as one JSON line, exit 0. Exit 3: it could not connect or
 * subscribe (the message on stderr). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>
#include <unistd.h>

static int out_fd = -1;
static long handler_ms = 10;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  int64_t start = now_us();
  if (handler_ms > 0) {
    struct timespec pause = {.tv_sec = handler_ms / 1000, .tv_nsec = handler_ms % 1000 * 1000000};
    nanosleep(&pause, NULL);
  }
  char line[96];
  int n = snprintf(line, sizeof line, "%lld %lld %lld %d\n", (long long)tabq_delivery_id(d),
                   (long long)start, (long long)now_us(), (int)getpid());
  if (write(out_fd, line, (size_t)n) != n)
    return tabq_retry(); /* unrecorded: let it come again */
  return tabq_ack();
}

static void log_line(int level, const char *message, void *user) {
  (void)user;
  if (level <= TABQ_LOG_WARN)
    fprintf(stderr, "fault_worker %d: %s\n", (int)getpid(), message);
}

int main(int argc, char **argv) {
  if (argc < 6 || argc > 8) {
    fprintf(
        stderr,
        "usage: fault_worker URL TABLE rowlock|lease|advisory WORKERS OUT [HANDLER_MS [POOL]]\n");
    return 2;
  }
  if (argc > 6)
    handler_ms = atol(argv[6]);
  const char *url = argv[1], *table = argv[2], *form = argv[3], *out = argv[5];
  out_fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (out_fd < 0) {
    perror(out);
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread tabq starts inherits it */

  tabq_table t = {.size = sizeof(tabq_table),
                  .name = table,
                  .id = {.name = "id", .generated = true},
                  .group = {.name = "queue"},
                  .retry_after = {.name = "retry_after"},
                  .attempt = {.name = "attempt", .generated = true},
                  .payload = {.name = "payload"}};
  char key[160];
  if (!strcmp(form, "lease"))
    t.locked_until.name = "locked_until";
  else if (!strcmp(form, "advisory")) {
    snprintf(key, sizeof key, "%s-{id}", table);
    t.advisory_lock = key;
  }
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = 50;
  bo.pool_size = argc > 7 ? (unsigned)atoi(argv[7]) : 6;
  bo.lease_s = 2;
  bo.log = log_line;
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(url, &bo, &b, &err)) {
    fprintf(stderr, "fault_worker: connect: %s\n", err.message);
    return 3;
  }
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = handle;
  o.workers = (unsigned)atoi(argv[4]);
  tabq_subscription *s;
  if (tabq_subscribe(b, &t, &o, &s, &err)) {
    fprintf(stderr, "fault_worker: subscribe: %s\n", err.message);
    return 3;
  }
  printf("ready\n");
  fflush(stdout);
  int sig;
  sigwait(&set, &sig);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(b);
  printf("{\"claimed\": %llu, \"acked\": %llu, \"retried\": %llu, \"released\": %llu, "
         "\"lease_lost\": %llu, \"failed\": %llu, \"claims\": %llu}\n",
         (unsigned long long)st.claimed, (unsigned long long)st.acked,
         (unsigned long long)st.retried, (unsigned long long)st.released,
         (unsigned long long)st.lease_lost, (unsigned long long)st.failed,
         (unsigned long long)st.claims);
  return 0;
}
