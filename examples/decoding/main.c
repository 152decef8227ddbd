/* decoding: rows checked before their handler runs. One SQLite file, two queues:
 * - `invoices`, a row mode table (no payload column): the handler reads typed columns by name;
 *   a row whose amount is not a number never reaches it;
 * - `events`, a payload table read through the built-in JSON codec: the handler gets the parsed
 *   document; a payload that is not JSON never reaches it.
 * Both use the default decode policy, drop. The example checks itself: two rows handled, two
 * dropped, each counted in its subscription's stats.
 *
 *   decoding [DATABASE_FILE]        (default: decoding.db, created afresh) */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <unistd.h>

static const tabq_col invoice_columns[] = {
    {.name = "customer", .type = TABQ_T_TEXT},
    {.name = "amount", .type = TABQ_T_REAL},
    {.name = "due", .type = TABQ_T_TIME},
};

static const tabq_table invoices = {
    .size = sizeof(tabq_table),
    .name = "invoices",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .data = invoice_columns,
    .ndata = sizeof invoice_columns / sizeof invoice_columns[0],
};

static const tabq_table events = {
    .size = sizeof(tabq_table),
    .name = "events",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static atomic_int handled;

static tabq_outcome bill(tabq_delivery *d, void *user) {
  (void)user;
  tabq_value customer, amount, due;
  tabq_delivery_column(d, "customer", &customer);
  tabq_delivery_column(d, "amount", &amount);
  tabq_delivery_column(d, "due", &due);
  printf("invoice for %.*s: %.2f, due %lld s after 1970\n", (int)customer.u.buf.len,
         (const char *)customer.u.buf.ptr, amount.u.r, (long long)(due.u.time_us / 1000000));
  atomic_fetch_add(&handled, 1);
  return tabq_ack();
}

static tabq_outcome record(tabq_delivery *d, void *user) {
  (void)user;
  const json_t *event = tabq_delivery_decoded(d);
  printf("event %s\n", json_string_value(json_object_get(event, "kind")));
  atomic_fetch_add(&handled, 1);
  return tabq_ack();
}

static int fail(const tabq_error *err) {
  fprintf(stderr, "%s: %s\n", tabq_code_name(err->code), err->message);
  return 1;
}

/* Waits (at most 10 s) until both rows were handled and both bad ones dropped. */
static int settle(tabq_subscription *a, tabq_subscription *b) {
  tabq_stats sa, sb;
  for (int i = 0; i < 1000; i++) {
    tabq_subscription_stats(a, &sa, sizeof sa);
    tabq_subscription_stats(b, &sb, sizeof sb);
    if (sa.acked + sb.acked == 4)
      break;
    usleep(10000);
  }
  printf("handled %d, dropped undecodable %llu\n", atomic_load(&handled),
         (unsigned long long)(sa.decode_failed + sb.decode_failed));
  return atomic_load(&handled) == 2 && sa.decode_failed + sb.decode_failed == 2 ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "decoding.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_broker *broker;
  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) ||
      tabq_exec(broker,
                "CREATE TABLE invoices (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT"
                " 1, locked_until TEXT, customer TEXT, amount REAL, due TEXT)",
                &err) ||
      tabq_exec(broker,
                "CREATE TABLE events (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                " locked_until TEXT, payload BLOB NOT NULL)",
                &err))
    return fail(&err);

  /* A published invoice, typed; and one written by other code, whose amount is no number. */
  tabq_value invoice[] = {tabq_text("ada", 3), tabq_real(12.5), tabq_time(1767225600000000)};
  tabq_message m = TABQ_MESSAGE_INIT;
  m.data = invoice;
  m.ndata = 3;
  if (tabq_publish(broker, &invoices, &m, &err) ||
      tabq_exec(broker, "INSERT INTO invoices (customer, amount) VALUES ('bob', 'lots')", &err))
    return fail(&err);

  const char *payloads[] = {"{\"kind\": \"signup\"}", "{\"kind\": "};
  for (int i = 0; i < 2; i++) {
    tabq_message e = TABQ_MESSAGE_INIT;
    e.payload = payloads[i];
    e.payload_len = strlen(payloads[i]);
    if (tabq_publish(broker, &events, &e, &err))
      return fail(&err);
  }

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = bill;
  tabq_subscription *billing, *recording;
  if (tabq_subscribe(broker, &invoices, &o, &billing, &err))
    return fail(&err);
  o.handler = record;
  o.codec = tabq_json_codec(); /* on_decode_failure: TABQ_DECODE_DROP, the default */
  if (tabq_subscribe(broker, &events, &o, &recording, &err))
    return fail(&err);
  int rc = settle(billing, recording);
  tabq_close(broker);
  return rc;
}
