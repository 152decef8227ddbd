/* cancel: a queued job cancelled before any worker sees it, and a long job cancelled while its
 * handler runs (docs/cancel.md), on a SQLite lease table with a cancelled_at column.
 *
 * The "export" handler works in steps and asks tabq_delivery_cancelled() between them, and stops
 * early once it reads true: at once here, as the cancel comes from the broker that runs the job;
 * from another process, at the lease's next extension (every half lease: half a second here).
 * Whatever it returns then, its row is settled as a drop. The program checks
 * itself: the queued job never ran, the long one saw its cancel and was dropped, the third job
 * was acked, and a cancel of a finished row is TABQ_NOT_FOUND.
 *
 *   cancel [DATABASE_FILE]        (default: cancel.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/cancel.h>
#include <time.h>
#include <unistd.h>

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .retry_after = {.name = "retry_after"},
    .processed_at = {.name = "processed_at"},
    .payload = {.name = "payload"},
    .cancelled_at = {.name = "cancelled_at"}, /* where a cancel marks a row in work */
};

static atomic_int export_started, export_saw_cancel, reports_ran, done;

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  size_t len = 0;
  const char *what = tabq_delivery_payload(d, &len);
  tabq_outcome o = tabq_ack();
  if (len == 6 && !memcmp(what, "export", 6)) {
    atomic_store(&export_started, 1);
    for (int step = 0; step < 500; step++) { /* up to 10 s of work, in steps */
      if (tabq_delivery_cancelled(d)) {
        atomic_store(&export_saw_cancel, 1);
        break; /* stop early: the row is dropped whatever we return */
      }
      sleep_ms(20);
    }
    o = tabq_retry(); /* ignored once cancelled */
  } else if (len == 7 && !memcmp(what, "reports", 7)) {
    atomic_fetch_add(&reports_ran, 1);
  }
  atomic_fetch_add(&done, 1);
  return o;
}

static int64_t publish(tabq_broker *b, const char *what, tabq_error *err) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = what;
  m.payload_len = strlen(what);
  return tabq_publish(b, &jobs, &m, err);
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "cancel.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(url, NULL, &b, &err) ||
      tabq_exec(b,
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                " locked_until TEXT, retry_after TEXT, processed_at TEXT, cancelled_at TEXT,"
                " payload BLOB NOT NULL)",
                &err) ||
      publish(b, "invoices", &err) || publish(b, "export", &err) || publish(b, "reports", &err))
    return fprintf(stderr, "%s\n", err.message), 1;

  /* Row 1 is queued: the cancel finishes it (processed_at and cancelled_at), no claim takes it. */
  if (tabq_cancel(b, &jobs, tabq_int(1), &err))
    return fprintf(stderr, "cancel 1: %s\n", err.message), 1;

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "jobs";
  o.handler = handle;
  o.workers = 2;
  o.lease_s = 1; /* extended, and the mark read, every half second */
  o.poll_interval_ms = 20;
  tabq_subscription *s;
  if (tabq_subscribe(b, &jobs, &o, &s, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;
  for (int i = 0; i < 500 && !atomic_load(&export_started); i++)
    sleep_ms(10);

  /* Row 2 is in work: the cancel marks it for its handler. */
  if (tabq_cancel(b, &jobs, tabq_int(2), &err))
    return fprintf(stderr, "cancel 2: %s\n", err.message), 1;
  for (int i = 0; i < 1000 && atomic_load(&done) < 2; i++)
    sleep_ms(10);
  sleep_ms(100);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  int again = tabq_cancel(b, &jobs, tabq_int(2), &err); /* finished now: not found */
  tabq_close(b);

  printf("export saw its cancel: %s; reports ran %d time(s); %llu dropped by a cancel; "
         "cancel of a finished row: %s\n",
         atomic_load(&export_saw_cancel) ? "yes" : "no", atomic_load(&reports_ran),
         (unsigned long long)st.cancelled, tabq_code_name((tabq_code)again));
  bool ok = atomic_load(&export_saw_cancel) && atomic_load(&reports_ran) == 1 &&
            atomic_load(&done) == 2 && st.cancelled == 1 && st.acked == 2 && st.retried == 0 &&
            again == TABQ_NOT_FOUND;
  return ok ? 0 : 1;
}
