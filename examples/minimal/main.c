/* minimal: the smallest service — one SQLite table in the lease form, three jobs published,
 * a handler that prints each, and a stop once all three are done.
 *
 *   minimal [DATABASE_FILE]        (default: minimal.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <unistd.h>

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static tabq_broker *broker;
static atomic_int done;

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *text = tabq_delivery_payload(d, &len);
  printf("job %lld: %.*s\n", (long long)tabq_delivery_id(d), (int)len, text);
  if (atomic_fetch_add(&done, 1) + 1 == 3)
    tabq_stop(broker); /* a service would run until SIGINT or SIGTERM */
  return tabq_ack();
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "minimal.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) ||
      tabq_exec(broker,
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                " locked_until TEXT, payload BLOB NOT NULL)",
                &err))
    return fprintf(stderr, "%s\n", err.message), 1;

  const char *texts[] = {"resize photo.jpg", "send welcome mail", "rebuild index"};
  for (int i = 0; i < 3; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.payload = texts[i];
    m.payload_len = strlen(texts[i]);
    if (tabq_publish(broker, &jobs, &m, &err))
      return fprintf(stderr, "%s\n", err.message), 1;
  }

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "jobs";
  o.handler = handle;
  if (tabq_subscribe(broker, &jobs, &o, NULL, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;
  tabq_run(broker); /* returns after tabq_stop, once the deliveries in work have settled */
  tabq_close(broker);
  printf("done: %d jobs\n", atomic_load(&done));
  return 0;
}
