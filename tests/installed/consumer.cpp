// A C++ service against the installed prefix, built with -Wall -Wextra -Werror: every TABQ_*_INIT
// initialiser, the value and outcome helpers, a description written as a file and read back
// (tabq/app.h), then one job drained on SQLite.
//   consumer FILE.db  ->  "handled 1"
#include <atomic>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <tabq/app.h>
#include <tabq/tabq.h>
#include <unistd.h>

static std::atomic<int> handled(0);

static tabq_outcome handle(tabq_delivery *d, void *) {
  size_t len = 0;
  const void *p = tabq_delivery_payload(d, &len);
  if (len == 5 && !std::memcmp(p, "hello", 5))
    handled++;
  return tabq_ack();
}

static int decode(const void *, size_t, void **out, char *, size_t, void *) {
  *out = nullptr;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer FILE.db\n");
    return 2;
  }
  char url[512];
  std::snprintf(url, sizeof url, "sqlite:%s", argv[1]);
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = 50;
  tabq_error err;
  tabq_broker *b = nullptr;
  if (tabq_connect(url, &bo, &b, &err)) {
    std::printf("error %s\n", err.message);
    return 1;
  }
  if (tabq_exec(b,
                "CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, "
                "attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL)",
                &err)) {
    std::printf("error %s\n", err.message);
    return 1;
  }
  tabq_table jobs = tabq_table();
  jobs.size = sizeof jobs;
  jobs.name = "jobs";
  jobs.id.name = "id";
  jobs.id.generated = true;
  jobs.group.name = "queue";
  jobs.attempt.name = "attempt";
  jobs.locked_until.name = "locked_until";
  jobs.payload.name = "payload";

  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "mail";
  m.payload = "hello";
  m.payload_len = 5;
  tabq_codec codec = TABQ_CODEC_INIT;
  codec.name = "bytes";
  codec.decode = decode;
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "mail";
  o.handler = handle;
  o.codec = &codec;
  char *text = nullptr; // the description as a file, read back
  tabq_table *back = nullptr;
  if (tabq_table_to_json(&jobs, &text, &err) ||
      tabq_table_parse(text, std::strlen(text), "jobs.json", &back, &err)) {
    std::printf("error %s\n", err.message);
    return 1;
  }
  std::free(text);
  tabq_table_free(back);
  tabq_value v[] = {tabq_int(1), tabq_text("x", 1), tabq_null()};
  (void)v;
  tabq_outcome outcomes[] = {tabq_ack(),  tabq_retry(),       tabq_retry_after(10),
                             tabq_drop(), tabq_dead_letter(), tabq_no_outcome()};
  (void)outcomes;
  if (tabq_publish(b, &jobs, &m, &err) || tabq_subscribe(b, &jobs, &o, nullptr, &err)) {
    std::printf("error %s\n", err.message);
    return 1;
  }
  for (int i = 0; i < 200 && handled.load() < 1; i++)
    usleep(10000);
  tabq_close(b);
  std::printf("handled %d\n", handled.load());
  return handled.load() == 1 ? 0 : 1;
}
