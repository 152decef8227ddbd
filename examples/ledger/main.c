/* ledger: each account's entries applied in the order they were published, by three workers
 * that share the accounts. The table's `account` column is the partition key; workers_by_key(3)
 * runs one account's rows one at a time, in claim order, on one worker, so a withdrawal never comes
 * before the deposit that covers it. Exits 1 if a balance ever went below zero.
 *
 *   ledger [DATABASE_FILE]        (default: ledger.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>
#include <unistd.h>

static const tabq_table ledger = {
    .size = sizeof(tabq_table),
    .name = "ledger",
    .id = {.name = "id", .generated = true},
    .partition_key = {.name = "account"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

#define ACCOUNTS 3
#define ENTRIES 4
static const char *const accounts[ACCOUNTS] = {"ada", "bob", "cyd"};
static const char *const entries[ENTRIES] = {"+100", "-30", "-70", "+5"};

static tabq_broker *broker;
static long balance[ACCOUNTS]; /* each account's only ever touched by its key's worker */
static atomic_int applied, overdrawn;

static tabq_outcome apply(tabq_delivery *d, void *user) {
  (void)user;
  const char *account = tabq_delivery_partition_key(d);
  size_t len;
  const char *p = tabq_delivery_payload(d, &len);
  char amount[16];
  snprintf(amount, sizeof amount, "%.*s", (int)len, p);
  for (int a = 0; a < ACCOUNTS; a++)
    if (account && !strcmp(account, accounts[a])) {
      balance[a] += strtol(amount, NULL, 10);
      printf("%s %5s -> %ld\n", account, amount, balance[a]);
      if (balance[a] < 0)
        atomic_store(&overdrawn, 1);
    }
  if (atomic_fetch_add(&applied, 1) + 1 == ACCOUNTS * ENTRIES)
    tabq_stop(broker); /* a service would run until SIGINT or SIGTERM */
  return tabq_ack();
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "ledger.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) ||
      tabq_exec(broker,
                "CREATE TABLE ledger (id INTEGER PRIMARY KEY, account TEXT, attempt INTEGER NOT "
                "NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL)",
                &err))
    return fprintf(stderr, "%s\n", err.message), 1;

  /* Entries of the three accounts interleaved, each account's in its own order. */
  for (int e = 0; e < ENTRIES; e++)
    for (int a = 0; a < ACCOUNTS; a++) {
      tabq_message m = TABQ_MESSAGE_INIT;
      m.partition_key = accounts[a];
      m.payload = entries[e];
      m.payload_len = strlen(entries[e]);
      if (tabq_publish(broker, &ledger, &m, &err))
        return fprintf(stderr, "%s\n", err.message), 1;
    }

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "ledger";
  o.handler = apply;
  o.workers_by_key = 3;
  if (tabq_subscribe(broker, &ledger, &o, NULL, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;
  tabq_run(broker);
  tabq_close(broker);
  for (int a = 0; a < ACCOUNTS; a++)
    printf("%s: %ld\n", accounts[a], balance[a]);
  return atomic_load(&overdrawn) || atomic_load(&applied) != ACCOUNTS * ENTRIES;
}
