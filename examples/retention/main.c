/* retention: a queue whose acks mark rows finished (processed_at), kept small by the broker's
 * pruner.
 *
 * Jobs keep arriving for three seconds and a subscription acks them, which marks each row
 * finished rather than deleting it. tabq_retain() has the broker delete the rows finished more
 * than half a second ago, a batch at a time, every 200 ms. Each second it prints how many rows
 * the table holds and how many the pruner deleted; at the end it checks itself: the table never
 * held more than a bound far below the rows published, and every finished row was pruned.
 *
 *   retention [DATABASE_FILE]        (default: retention.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <tabq/retention.h>
#include <unistd.h>

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .processed_at = {.name = "done_at"}, /* an ack sets it: the row stays, finished */
    .payload = {.name = "payload"},
};

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)d;
  atomic_fetch_add((atomic_int *)user, 1);
  return tabq_ack();
}

static int count_row(void *user, const tabq_value *cells, unsigned n) {
  (void)n;
  *(long long *)user = cells[0].u.i;
  return 0;
}

static long long rows(tabq_broker *b) {
  long long n = -1;
  tabq_tx *tx;
  tabq_error err;
  if (!tabq_begin(b, &tx, &err)) {
    tabq_tx_query(tx, "SELECT count(*) FROM jobs", NULL, 0, 1, count_row, &n, &err);
    tabq_rollback(tx, &err);
  }
  return n;
}

static int fail(const char *what, const tabq_error *err) {
  fprintf(stderr, "retention: %s: %s\n", what, err->message);
  return 1;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "retention.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);
  tabq_broker *b;
  tabq_error err;
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = 50;
  if (tabq_connect(url, &bo, &b, &err))
    return fail("connect", &err);
  if (tabq_exec(b,
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, "
                "locked_until TEXT, done_at TEXT, payload BLOB NOT NULL)",
                &err))
    return fail("create the table", &err);

  atomic_int handled = 0;
  tabq_subscription_options so = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  so.handler = handle;
  so.user = &handled;
  tabq_subscription *s;
  if (tabq_subscribe(b, &jobs, &so, &s, &err))
    return fail("subscribe", &err);

  /* The rows finished more than 500 ms ago go, 100 a statement, a round every 200 ms. */
  tabq_retention_options ro = TABQ_RETENTION_OPTIONS_INIT;
  ro.processed_age_ms = 500;
  ro.batch = 100;
  ro.interval_ms = 200;
  if (tabq_retain(b, &jobs, &ro, &err))
    return fail("retain", &err);

  enum { SECONDS = 3, A_TICK = 10, TICKS_A_SECOND = 20, BOUND = 300 };
  long long most = 0;
  int published = 0;
  for (int second = 1; second <= SECONDS; second++) {
    for (int tick = 0; tick < TICKS_A_SECOND; tick++) {
      for (int i = 0; i < A_TICK; i++, published++) {
        tabq_message m = TABQ_MESSAGE_INIT;
        m.payload = "job";
        m.payload_len = 3;
        if (tabq_publish(b, &jobs, &m, &err))
          return fail("publish", &err);
      }
      usleep(1000000 / TICKS_A_SECOND);
      long long n = rows(b);
      most = n > most ? n : most;
    }
    tabq_retention_stats st;
    tabq_retention_stats_read(b, "jobs", &st, sizeof st, &err);
    printf("%d s: %d published, %lld rows in the table, %llu pruned so far\n", second, published,
           rows(b), (unsigned long long)st.processed_deleted);
  }
  /* The inflow ends: the pruner takes the rest. A round counts its rows once its delete has
   * returned, a moment after they are gone from the table: wait for the count too. */
  tabq_retention_stats st;
  for (int waited = 0; waited < 10000; waited += 50) {
    tabq_retention_stats_read(b, "jobs", &st, sizeof st, &err);
    if (rows(b) == 0 && st.processed_deleted >= (uint64_t)published)
      break;
    usleep(50 * 1000);
  }
  printf("published %d, at most %lld rows at once, %llu pruned, %lld left\n", published, most,
         (unsigned long long)st.processed_deleted, rows(b));
  bool ok = most < BOUND && rows(b) == 0 && st.processed_deleted == (uint64_t)published &&
            atomic_load(&handled) == published;
  tabq_close(b);
  puts(ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
