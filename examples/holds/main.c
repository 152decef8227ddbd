/* holds: what a handler knows of its hold on a row, in two SQLite tables of one file:
 * - `mails` in the advisory lock form (a key per row, kept in this process; due times read from
 *   the database's clock): the hold is the key;
 * - `reports` in the lease form: the hold is the lease, whose token (the expiry the row holds)
 *   the handler can read.
 * The example checks itself: each row handled once, its hold standing in its handler, a lease
 * token only in the lease form.
 *
 *   holds [DATABASE_FILE]        (default: holds.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <tabq/tabq.h>
#include <unistd.h>

static const tabq_table mails = {
    .size = sizeof(tabq_table),
    .name = "mails",
    .id = {.name = "id", .generated = true},
    .retry_after = {.name = "retry_after"},
    .attempt = {.name = "attempt", .generated = true},
    .payload = {.name = "payload"},
    .advisory_lock = "mail-{id}", /* the advisory lock form */
    .clock = TABQ_CLOCK_DATABASE, /* "now" is SQLite's, not this host's */
};

static const tabq_table reports = {
    .size = sizeof(tabq_table),
    .name = "reports",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"}, /* the lease form */
    .payload = {.name = "payload"},
};

static atomic_int handled, wrong;

static tabq_outcome check_hold(tabq_delivery *d, void *user) {
  const char *form = user;
  int64_t token = tabq_delivery_lease_token(d);
  printf("%s row %lld: held %s, lease token %lld\n", form, (long long)tabq_delivery_id(d),
         tabq_delivery_held(d) ? "yes" : "no", (long long)token);
  bool lease = form[0] == 'l';
  if (!tabq_delivery_held(d) || (lease ? token <= 0 : token != 0))
    atomic_fetch_add(&wrong, 1);
  atomic_fetch_add(&handled, 1);
  return tabq_ack();
}

static int fail(const tabq_error *err) {
  fprintf(stderr, "%s: %s\n", tabq_code_name(err->code), err->message);
  return 1;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "holds.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_broker *broker;
  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) ||
      tabq_exec(broker,
                "CREATE TABLE mails (id INTEGER PRIMARY KEY, retry_after TEXT, attempt INTEGER NOT "
                "NULL DEFAULT 1, payload BLOB NOT NULL)",
                &err) ||
      tabq_exec(broker,
                "CREATE TABLE reports (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                " locked_until TEXT, payload BLOB NOT NULL)",
                &err))
    return fail(&err);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = "x";
  m.payload_len = 1;
  if (tabq_publish(broker, &mails, &m, &err) || tabq_publish(broker, &reports, &m, &err))
    return fail(&err);

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = check_hold;
  o.user = "advisory";
  if (tabq_subscribe(broker, &mails, &o, NULL, &err))
    return fail(&err);
  o.user = "lease";
  if (tabq_subscribe(broker, &reports, &o, NULL, &err))
    return fail(&err);
  for (int i = 0; i < 1000 && atomic_load(&handled) < 2; i++)
    usleep(10000);
  tabq_close(broker);
  printf("handled %d, wrong %d\n", atomic_load(&handled), atomic_load(&wrong));
  return atomic_load(&handled) == 2 && atomic_load(&wrong) == 0 ? 0 : 1;
}
