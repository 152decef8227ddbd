/* Unique jobs: one report job per customer and day, however often it is asked for. The table's
 * unique_key column holds "report:<customer>:<day>" under a unique index over the unfinished rows,
 * so a second request while the first is queued writes nothing and names the job that holds
 * the key; once that job is done the key is free again. Runs on a throwaway SQLite file
 * (tabq/testing.h) and checks itself: exit 0 when every step went as said. */
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>
#include <tabq/testing.h>

static const tabq_table reports = {
    .size = sizeof(tabq_table),
    .name = "report_jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .attempt = {"attempt", .generated = true},
    .processed_at = {"processed_at"},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .unique_key = {"report_key"},
};

static tabq_outcome build_report(tabq_delivery *d, void *user) {
  size_t len;
  const char *customer = tabq_delivery_payload(d, &len);
  printf("building the report of customer %.*s (job %lld)\n", (int)len, customer,
         (long long)tabq_delivery_id(d));
  ++*(int *)user;
  return tabq_ack();
}

static int request(tabq_broker *b, const char *customer, const char *day, tabq_error *err) {
  char key[128];
  snprintf(key, sizeof key, "report:%s:%s", customer, day);
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "reports";
  m.payload = customer;
  m.payload_len = strlen(customer);
  m.unique_key = key;
  int rc = tabq_publish(b, &reports, &m, err);
  if (rc == TABQ_DUPLICATE)
    printf("already queued: %s is job %lld\n", key, (long long)err->duplicate_id);
  else if (rc == TABQ_OK)
    printf("queued %s\n", key);
  return rc;
}

int main(void) {
  const tabq_table *tables[] = {&reports};
  tabq_broker *b;
  tabq_error err;
  if (tabq_test_open(tables, 1, NULL, &b, &err)) {
    fprintf(stderr, "open: %s\n", err.message);
    return 1;
  }
  int built = 0, ok = 1;
  ok &= request(b, "acme", "2026-12-04", &err) == TABQ_OK;
  ok &= request(b, "acme", "2026-12-04", &err) == TABQ_DUPLICATE; /* asked twice: one job */
  ok &= request(b, "globex", "2026-12-04", &err) == TABQ_OK;

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "reports";
  o.handler = build_report;
  o.user = &built;
  ok &= tabq_test_drain(b, &reports, &o, NULL, 0, &err) == TABQ_OK && built == 2;

  /* Done jobs free their keys: the index holds the unfinished rows alone. */
  ok &= request(b, "acme", "2026-12-04", &err) == TABQ_OK;
  tabq_test_close(b);
  printf("%s\n", ok ? "every step went as expected" : "a step went wrong");
  return ok ? 0 : 1;
}
