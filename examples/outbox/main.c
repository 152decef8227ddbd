/* outbox: an order and the mail job it needs commit together, or neither does. One SQLite file,
 * a business table `orders` and a queue table `mails`; the second order's transaction rolls
 * back, so only the first order and its mail exist, and only that mail is sent.
 *
 *   outbox [DATABASE_FILE]        (default: outbox.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <unistd.h>

static const tabq_table mails = {
    .size = sizeof(tabq_table),
    .name = "mails",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static tabq_broker *broker;
static atomic_int sent;

static tabq_outcome send_mail(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *to = tabq_delivery_payload(d, &len);
  printf("mail to %.*s\n", (int)len, to);
  atomic_fetch_add(&sent, 1);
  tabq_stop(broker); /* one mail is all this example expects */
  return tabq_ack();
}

/* Writes an order and its mail in one transaction; commits, or rolls back when asked to. */
static int place_order(long long id, const char *customer, int commit, tabq_error *err) {
  tabq_tx *tx;
  int rc = tabq_begin(broker, &tx, err);
  if (rc)
    return rc;
  tabq_value order[] = {tabq_int(id), tabq_text(customer, strlen(customer))};
  tabq_message mail = TABQ_MESSAGE_INIT;
  mail.payload = customer;
  mail.payload_len = strlen(customer);
  if ((rc = tabq_tx_exec(tx, "INSERT INTO orders (id, customer) VALUES (?1, ?2)", order, 2, NULL,
                         err)) ||
      (rc = tabq_publish_tx(tx, &mails, &mail, err))) {
    tabq_error ignored;
    tabq_rollback(tx, &ignored);
    return rc;
  }
  return commit ? tabq_commit(tx, err) : tabq_rollback(tx, err);
}

static int count_row(void *user, const tabq_value *cells, unsigned n) {
  (void)n;
  *(long long *)user = cells[0].u.i;
  return 0;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "outbox.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) ||
      tabq_exec(broker, "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL)",
                &err) ||
      tabq_exec(broker,
                "CREATE TABLE mails (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                " locked_until TEXT, payload BLOB NOT NULL)",
                &err) ||
      place_order(1, "ada@example.org", 1, &err) || place_order(2, "bob@example.org", 0, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;

  /* Only the committed order is there (and only its mail is queued). */
  long long orders = -1;
  tabq_tx *tx;
  if (tabq_begin(broker, &tx, &err) ||
      tabq_tx_query(tx, "SELECT count(*) FROM orders", NULL, 0, 1, count_row, &orders, &err) ||
      tabq_commit(tx, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "mails";
  o.handler = send_mail;
  if (tabq_subscribe(broker, &mails, &o, NULL, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;
  tabq_run(broker); /* until the mail is sent */
  tabq_close(broker);
  printf("done: %lld order, %d mail\n", orders, atomic_load(&sent));
  return orders == 1 && atomic_load(&sent) == 1 ? 0 : 1;
}
