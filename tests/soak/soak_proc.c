/* A process of the soak (soak.py, docs/reliability.md): the publisher or a drainer of one queue
 * table, run for minutes while the driver samples its memory and descriptors.
 *
 *   soak_proc URL TABLE FORM publish RATE
 *   soak_proc URL TABLE FORM drain WORKERS POOL
 *
 * FORM: rowlock, lease or advisory. The table (queue "q": id, queue, retry_after, attempt,
 * locked_until in the lease form, headers, payload) and its dead letter table TABLE_dead are
 * created as tabq renders them, by the publisher before it writes. On PostgreSQL both roles
 * LISTEN/NOTIFY.
 *
 * publish: RATE rows a second, a tenth of them every 100 ms, in turn one tabq_publish_many and
 * the same count of tabq_publish; pool of 2. It prints "ready", then "published N" once a
 * second.
 *
 * drain: WORKERS handlers on a pool of POOL, max_attempts 3 into TABLE_dead, whose dead letters
 * the broker's pruner deletes after 10 s. The handler reads the row's header "n" (its number
 * in the publisher's count) and settles by it, so every settlement comes round: of each 20 rows, 14
 * are acked, 2 retried after 300 ms and 1 retried at once (each acked at its second attempt), 1
 * dropped, 1 retried after 100 ms at every attempt (dead-lettered at the third) and 1 dead-lettered
 * at once. It prints "ready".
 *
 * On SIGTERM either shuts down and prints its counters as one JSON line, exit 0. Exit 3: it
 * could not connect, create, subscribe or retain (the message on stderr). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/retention.h>
#include <tabq/schema.h>
#include <tabq/tabq.h>
#include <time.h>
#include <unistd.h>

#define DEAD_LETTER_AGE_MS 10000
#define PAYLOAD_BYTES 200

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  const char *n = tabq_delivery_header(d, "n");
  if (!n)
    return tabq_dead_letter(); /* not a row the publisher wrote: kept for a look */
  long attempt = tabq_delivery_attempt(d);
  switch (strtoll(n, NULL, 10) % 20) {
  case 14:
  case 15:
    return attempt < 2 ? tabq_retry_after(300) : tabq_ack();
  case 16:
    return attempt < 2 ? tabq_retry() : tabq_ack();
  case 17:
    return tabq_drop();
  case 18:
    return tabq_retry_after(100);
  case 19:
    return tabq_dead_letter();
  default:
    return tabq_ack();
  }
}

static void log_line(int level, const char *message, void *user) {
  (void)user;
  if (level <= TABQ_LOG_WARN)
    fprintf(stderr, "soak_proc %d: %s\n", (int)getpid(), message);
}

static void sleep_ms(long ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};
  nanosleep(&t, NULL);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One tick's rows: payloads of PAYLOAD_BYTES, and the header "n", the row's number in the
 * publisher's count, by which the handler settles it (not the id: a rolled back insert spends
 * ids). */
static int publish_tick(tabq_broker *b, const tabq_table *t, unsigned count, bool many,
                        uint64_t *published, tabq_error *err) {
  enum { MOST = 100 };
  char numbers[MOST][24];
  tabq_header headers[MOST];
  tabq_message messages[MOST];
  const tabq_message *pointers[MOST];
  static char payload[PAYLOAD_BYTES];
  if (count > MOST)
    count = MOST;
  for (unsigned i = 0; i < count; i++) {
    snprintf(numbers[i], sizeof numbers[i], "%llu", (unsigned long long)(*published + i + 1));
    memset(payload, 'a' + (int)((*published + i) % 26), sizeof payload);
    headers[i] = (tabq_header){.name = "n", .value = numbers[i]};
    messages[i] = (tabq_message)TABQ_MESSAGE_INIT;
    messages[i].group = "q";
    messages[i].payload = payload;
    messages[i].payload_len = sizeof payload;
    messages[i].headers = &headers[i];
    messages[i].nheaders = 1;
    pointers[i] = &messages[i];
  }
  if (many) {
    int rc = tabq_publish_many(b, t, pointers, count, err);
    if (rc == 0)
      *published += count;
    return rc;
  }
  for (unsigned i = 0; i < count; i++) {
    int rc = tabq_publish(b, t, &messages[i], err);
    if (rc)
      return rc;
    (*published)++;
  }
  return 0;
}

struct publisher {
  tabq_broker *b;
  const tabq_table *t;
  unsigned rate;
  volatile sig_atomic_t stop;
  uint64_t published, failures;
};

static void *publish_loop(void *arg) {
  struct publisher *p = arg;
  unsigned per_tick = p->rate / 10 ? p->rate / 10 : 1;
  int64_t next = now_ms(), last_print = next;
  for (unsigned tick = 0; !p->stop; tick++) {
    tabq_error err;
    /* A publish that fails is counted and logged; the next tick goes on. */
    if (publish_tick(p->b, p->t, per_tick, tick % 2 == 0, &p->published, &err)) {
      p->failures++;
      fprintf(stderr, "soak_proc %d: publish: %s\n", (int)getpid(), err.message);
    }
    if (now_ms() - last_print >= 1000) {
      last_print = now_ms();
      printf("published %llu\n", (unsigned long long)p->published);
      fflush(stdout);
    }
    next += 100;
    int64_t wait = next - now_ms();
    if (wait > 0)
      sleep_ms((long)wait);
  }
  return NULL;
}

int main(int argc, char **argv) {
  bool publish = argc == 6 && !strcmp(argv[4], "publish");
  bool drain = argc == 7 && !strcmp(argv[4], "drain");
  if (!publish && !drain) {
    fprintf(stderr, "usage: soak_proc URL TABLE rowlock|lease|advisory publish RATE\n"
                    "       soak_proc URL TABLE rowlock|lease|advisory drain WORKERS POOL\n");
    return 2;
  }
  const char *url = argv[1], *table = argv[2], *form = argv[3];
  char dead[160], key[160];
  snprintf(dead, sizeof dead, "%s_dead", table);

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
                  .headers = {.name = "headers"},
                  .payload = {.name = "payload"}};
  if (!strcmp(form, "lease"))
    t.locked_until.name = "locked_until";
  else if (!strcmp(form, "advisory")) {
    snprintf(key, sizeof key, "%s-{id}", table);
    t.advisory_lock = key;
  }
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = 200;
  bo.pool_size = publish ? 2 : (unsigned)atoi(argv[6]);
  bo.lease_s = 3;
  bo.log = log_line;
  bo.listen_notify = !strncmp(url, "postgres", 8);
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(url, &bo, &b, &err)) {
    fprintf(stderr, "soak_proc: connect: %s\n", err.message);
    return 3;
  }

  if (publish) {
    tabq_schema_options so = TABQ_SCHEMA_OPTIONS_INIT;
    so.dead_letter_table = dead;
    so.if_not_exists = true;
    if (tabq_schema_apply(b, &t, &so, &err)) {
      fprintf(stderr, "soak_proc: schema: %s\n", err.message);
      return 3;
    }
    struct publisher p = {.b = b, .t = &t, .rate = (unsigned)atoi(argv[5])};
    pthread_t thread;
    pthread_create(&thread, NULL, publish_loop, &p);
    printf("ready\n");
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    p.stop = 1;
    pthread_join(thread, NULL);
    tabq_close(b);
    printf("{\"published\": %llu, \"publish_failures\": %llu}\n", (unsigned long long)p.published,
           (unsigned long long)p.failures);
    return 0;
  }

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = handle;
  o.workers = (unsigned)atoi(argv[5]);
  o.max_attempts = 3;
  o.dead_letter_table = dead;
  tabq_subscription *s;
  if (tabq_subscribe(b, &t, &o, &s, &err)) {
    fprintf(stderr, "soak_proc: subscribe: %s\n", err.message);
    return 3;
  }
  tabq_retention_options ro = TABQ_RETENTION_OPTIONS_INIT;
  ro.dead_letter_age_ms = DEAD_LETTER_AGE_MS;
  ro.dead_letter_tables = (const char *[]){dead};
  ro.ndead_letter_tables = 1;
  ro.interval_ms = 2000;
  if (tabq_retain(b, &t, &ro, &err)) {
    fprintf(stderr, "soak_proc: retain: %s\n", err.message);
    return 3;
  }
  printf("ready\n");
  fflush(stdout);
  int sig;
  sigwait(&set, &sig);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_retention_stats rs;
  tabq_retention_stats_read(b, table, &rs, sizeof rs, NULL);
  tabq_close(b);
  printf("{\"claimed\": %llu, \"acked\": %llu, \"dropped\": %llu, \"retried\": %llu, "
         "\"delayed\": %llu, \"dead_lettered\": %llu, \"released\": %llu, \"lease_lost\": %llu, "
         "\"failed\": %llu, \"dead_pruned\": %llu}\n",
         (unsigned long long)st.claimed, (unsigned long long)st.acked,
         (unsigned long long)st.dropped, (unsigned long long)st.retried,
         (unsigned long long)st.delayed, (unsigned long long)st.dead_lettered,
         (unsigned long long)st.released, (unsigned long long)st.lease_lost,
         (unsigned long long)st.failed, (unsigned long long)rs.dead_deleted);
  return 0;
}
