/* schedule: a periodic job scheduled by two brokers at once, as two processes of a service
 * would, on a throwaway SQLite file. Each slot's row carries the key "tick:<slot in UTC>" under
 * the table's unique index, so whichever broker publishes a slot first writes its row and the
 * other learns TABQ_DUPLICATE: one row per slot, with no leader. The program checks itself:
 * after a few seconds every slot is one row, and the handler ran once per slot due.
 *
 *   schedule [SECONDS]        (default 3) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/schedule.h>
#include <tabq/testing.h>
#include <unistd.h>

static const tabq_table ticks = {
    .size = sizeof(tabq_table),
    .name = "ticks",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .retry_after = {"retry_after"}, /* each slot's row is written ahead, due at its slot */
    .processed_at = {"processed_at"},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .unique_key = {"tick_key"}, /* "tick:2026-12-04T12:00:05Z" */
};

static atomic_int handled;

static tabq_outcome tick(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  atomic_fetch_add(&handled, 1);
  return tabq_ack();
}

static int count_rows(void *user, const tabq_value *cells, unsigned n) {
  int64_t *out = user;
  for (unsigned i = 0; i < n; i++)
    out[i] = cells[i].u.i;
  return 0;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 3;
  const tabq_table *tables[] = {&ticks};
  tabq_broker *one, *two;
  tabq_error err;
  if (tabq_test_open(tables, 1, NULL, &one, &err)) {
    fprintf(stderr, "open: %s\n", err.message);
    return 1;
  }
  /* The second broker: a second process of the service, on the same database. */
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s/queue.db", tabq_test_folder(one));
  if (tabq_connect(url, NULL, &two, &err)) {
    fprintf(stderr, "connect: %s\n", err.message);
    tabq_test_close(one);
    return 1;
  }

  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = "tick";
  m.payload_len = 4;
  tabq_schedule_options o = TABQ_SCHEDULE_OPTIONS_INIT;
  o.name = "tick";
  o.spec = "every 1s";
  o.message = &m;
  o.lead_ms = 500;
  int ok = tabq_schedule(one, &ticks, &o, &err) == TABQ_OK;
  ok &= tabq_schedule(two, &ticks, &o, &err) == TABQ_OK;
  if (!ok)
    fprintf(stderr, "schedule: %s\n", err.message);

  tabq_subscription_options so = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  so.queue = "ticks";
  so.handler = tick;
  so.poll_interval_ms = 100;
  tabq_subscription *sub;
  ok &= tabq_subscribe(one, &ticks, &so, &sub, &err) == TABQ_OK;
  sleep((unsigned)seconds);
  tabq_shutdown(two);
  tabq_shutdown(one); /* the schedules stop, then the subscription's deliveries settle */

  /* Every slot published once: as many rows as distinct keys, and the due ones handled. */
  int64_t counts[3] = {0};
  tabq_tx *tx;
  ok &= tabq_begin(one, &tx, &err) == TABQ_OK;
  ok &=
      tabq_tx_query(tx, "SELECT COUNT(*), COUNT(DISTINCT tick_key), COUNT(processed_at) FROM ticks",
                    NULL, 0, 3, count_rows, counts, &err) == TABQ_OK;
  tabq_rollback(tx, &err);
  printf("%lld rows, %lld distinct slots, %lld handled (%d handler calls)\n", (long long)counts[0],
         (long long)counts[1], (long long)counts[2], atomic_load(&handled));
  ok &= counts[0] == counts[1] && counts[0] >= seconds && counts[2] == atomic_load(&handled) &&
        counts[2] >= seconds - 1;
  tabq_close(two);
  tabq_test_close(one);
  printf("%s\n", ok ? "one row per slot, as expected" : "a step went wrong");
  return ok ? 0 : 1;
}
