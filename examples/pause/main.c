/* pause: a queue paused and resumed across brokers through a controls table (docs/pause.md), on
 * a SQLite file. Two brokers stand for two processes: "worker" subscribes to queue "emails";
 * "operator" pauses and resumes it, as `tabq pause` would from a shell. Both are given the same
 * controls table; the worker reads the queue's row there once per poll interval before it
 * claims, so within one poll interval of the pause it claims nothing, and after the resume it
 * drains what waited. The program checks itself.
 *
 *   pause_queue [DATABASE_FILE]        (default: pause.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/controls.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 50

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static tabq_controls controls(void) {
  tabq_controls c = TABQ_CONTROLS_INIT;
  c.name = "queue_controls";
  c.table_column = "queue_table";
  c.queue_column = "queue";
  c.paused_column = "paused";
  c.paused_at_column = "paused_at";
  return c;
}

static atomic_int sent;

static tabq_outcome send_email(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  atomic_fetch_add(&sent, 1);
  return tabq_ack();
}

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

static int publish(tabq_broker *b, int n, tabq_error *err) {
  for (int i = 0; i < n; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = "emails";
    m.payload = "hello";
    m.payload_len = 5;
    if (tabq_publish(b, &jobs, &m, err))
      return 1;
  }
  return 0;
}

static bool wait_sent(int want) {
  for (int i = 0; i < 500 && atomic_load(&sent) < want; i++)
    sleep_ms(10);
  return atomic_load(&sent) == want;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "pause.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = POLL_MS;
  tabq_broker *worker, *operator;
  tabq_error err;
  tabq_controls c = controls();
  if (tabq_connect(url, &bo, &worker, &err) ||
      tabq_exec(worker,
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
                " attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL)",
                &err) ||
      tabq_exec(worker,
                "CREATE TABLE queue_controls (queue_table TEXT NOT NULL, queue TEXT NOT NULL,"
                " paused INTEGER NOT NULL DEFAULT 0, paused_at TEXT,"
                " PRIMARY KEY (queue_table, queue))",
                &err) ||
      tabq_set_controls(worker, &c, &err)) /* before the subscription */
    return fprintf(stderr, "worker: %s\n", err.message), 1;
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "emails";
  o.handler = send_email;
  o.workers = 2;
  if (tabq_subscribe(worker, &jobs, &o, NULL, &err))
    return fprintf(stderr, "subscribe: %s\n", err.message), 1;
  if (tabq_connect(url, &bo, &operator, & err) || tabq_set_controls(operator, & c, &err))
    return fprintf(stderr, "operator: %s\n", err.message), 1;

  /* Running: three emails go out. */
  if (publish(operator, 3, &err))
    return fprintf(stderr, "publish: %s\n", err.message), 1;
  bool ran = wait_sent(3);

  /* Paused by the other broker: within one poll interval the worker claims nothing more. */
  if (tabq_pause(operator, & jobs, "emails", &err))
    return fprintf(stderr, "pause: %s\n", err.message), 1;
  sleep_ms(2 * POLL_MS);
  if (publish(operator, 5, &err))
    return fprintf(stderr, "publish: %s\n", err.message), 1;
  sleep_ms(10 * POLL_MS);
  bool held = atomic_load(&sent) == 3;
  bool paused = false;
  tabq_paused(operator, & jobs, "emails", &paused, &err);

  /* Resumed: the five that waited go out. */
  if (tabq_resume(operator, & jobs, "emails", &err))
    return fprintf(stderr, "resume: %s\n", err.message), 1;
  bool drained = wait_sent(8);
  tabq_close(operator);
  tabq_close(worker);

  printf("sent %d before the pause, %s while paused (paused: %s), %d in all after the resume\n", 3,
         held ? "none" : "some", paused ? "yes" : "no", atomic_load(&sent));
  return ran && held && paused && drained ? 0 : 1;
}
