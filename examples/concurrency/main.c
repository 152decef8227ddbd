/* concurrency: at most two reports of a customer built at once, over two brokers, through a
 * slots table (docs/concurrency.md), on a SQLite file. Two brokers stand for two processes,
 * each subscribed to queue "reports" with four workers and a limit of two handlers of a
 * customer (the table's partition key) at once; both are given the same slots table, where each
 * delivery takes one of its customer's two slots before its handler runs. Twelve reports of
 * three customers go in; the handlers count how many of a customer run at once. A delivery whose
 * customer has both slots held steps aside and comes back a poll interval on. The program checks
 * itself: never three of a customer at once, every report built once.
 *
 *   concurrency_limit [DATABASE_FILE]        (default: concurrency.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/concurrency.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 50
#define CUSTOMERS 3
#define PER_CUSTOMER 4
#define LIMIT 2

static const tabq_table reports = {
    .size = sizeof(tabq_table),
    .name = "reports",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .retry_after = {.name = "retry_after"}, /* where a delivery that steps aside waits */
    .attempt = {.name = "attempt"},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
    .partition_key = {.name = "customer"},
};

static atomic_int running[CUSTOMERS], most[CUSTOMERS], built;

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

static tabq_outcome build_report(tabq_delivery *d, void *user) {
  (void)user;
  int c = tabq_delivery_partition_key(d)[0] - 'a'; /* customers "a", "b", "c" */
  int now = atomic_fetch_add(&running[c], 1) + 1;
  for (int m = atomic_load(&most[c]); now > m && !atomic_compare_exchange_weak(&most[c], &m, now);)
    ;
  sleep_ms(40); /* the report's work */
  atomic_fetch_sub(&running[c], 1);
  atomic_fetch_add(&built, 1);
  return tabq_ack();
}

/* A broker with the slots table and its subscription: what each process of the service does. */
static tabq_broker *start(const char *url, tabq_error *err) {
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = POLL_MS;
  tabq_broker *b;
  if (tabq_connect(url, &bo, &b, err))
    return NULL;
  tabq_concurrency_slots slots = TABQ_CONCURRENCY_SLOTS_INIT;
  slots.name = "concurrency_slots";
  slots.key_column = "slot";
  slots.holder_column = "holder";
  slots.expires_column = "expires";
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "reports";
  o.handler = build_report;
  o.workers = 4;
  o.concurrency_key = "customer"; /* the key: the value of this column */
  o.concurrency_limit = LIMIT;    /* at most two of a customer at once, over every process */
  if (tabq_set_concurrency_slots(b, &slots, err) || /* before the subscription */
      tabq_subscribe(b, &reports, &o, NULL, err)) {
    tabq_close(b);
    return NULL;
  }
  return b;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "concurrency.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  tabq_broker *setup;
  tabq_error err;
  if (tabq_connect(url, &bo, &setup, &err) ||
      tabq_exec(setup,
                "CREATE TABLE reports (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, retry_after"
                " TEXT, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT"
                " NULL, customer TEXT)",
                &err) ||
      tabq_exec(setup,
                "CREATE TABLE concurrency_slots (slot TEXT PRIMARY KEY, holder TEXT NOT NULL,"
                " expires TEXT NOT NULL)",
                &err))
    return fprintf(stderr, "setup: %s\n", err.message), 1;
  tabq_broker *one = start(url, &err), *two = one ? start(url, &err) : NULL;
  if (!two)
    return fprintf(stderr, "start: %s\n", err.message), 1;

  for (int i = 0; i < PER_CUSTOMER; i++)
    for (int c = 0; c < CUSTOMERS; c++) {
      char customer[2] = {(char)('a' + c), '\0'};
      tabq_message m = TABQ_MESSAGE_INIT;
      m.group = "reports";
      m.payload = "monthly";
      m.payload_len = 7;
      m.partition_key = customer;
      if (tabq_publish(setup, &reports, &m, &err))
        return fprintf(stderr, "publish: %s\n", err.message), 1;
    }
  for (int i = 0; i < 1000 && atomic_load(&built) < CUSTOMERS * PER_CUSTOMER; i++)
    sleep_ms(10);
  tabq_close(one); /* every slot given back */
  tabq_close(two);
  tabq_close(setup);

  bool within = true;
  for (int c = 0; c < CUSTOMERS; c++) {
    printf("customer %c: at most %d report(s) at once\n", 'a' + c, atomic_load(&most[c]));
    within = within && atomic_load(&most[c]) <= LIMIT;
  }
  printf("%d reports built of %d\n", atomic_load(&built), CUSTOMERS * PER_CUSTOMER);
  return within && atomic_load(&built) == CUSTOMERS * PER_CUSTOMER ? 0 : 1;
}
