/* deadlines: a handler's time budget on a SQLite queue (docs/deadlines.md).
 *
 * Three exports are queued; each row may carry a budget of its own in milliseconds, and the
 * subscription gives every handler 2 s at most. "small" finishes in time. "huge" would take far
 * longer than the 300 ms its row allows: at its deadline the core retries the row after a delay,
 * while the handler, which C cannot stop, still runs — it watches tabq_delivery_held() and
 * stops early, and its own ack is refused with TABQ_LEASE_LOST. "medium" is on time too. The
 * program checks itself: two rows acked, one waiting for its retry, one deadline counted.
 *
 *   deadlines [DATABASE_FILE]        (default: deadlines.db, created afresh) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>
#include <unistd.h>

/* The row's own budget is a data column the publish writes and the claim brings back. */
static const tabq_col columns[] = {{.name = "budget_ms", .type = TABQ_T_INT}};
static const tabq_table exports = {
    .size = sizeof(tabq_table),
    .name = "exports",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .retry_after = {.name = "retry_after"},
    .payload = {.name = "payload"},
    .data = columns,
    .ndata = 1,
    .deadline_column = "budget_ms",
};

static tabq_broker *broker;
static int handled, refused;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Works in 50 ms steps, as long as the payload asks ("huge" asks 100 of them); a cooperative
 * handler checks its hold between steps and stops once the deadline took the row away. */
static tabq_outcome export_rows(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *what = tabq_delivery_payload(d, &len);
  int steps = len == 4 && !memcmp(what, "huge", 4) ? 100 : 2;
  printf("%.*s: %lld ms to go\n", (int)len, what,
         (long long)(tabq_delivery_deadline(d) - now_us()) / 1000);
  for (int i = 0; i < steps; i++) {
    if (!tabq_delivery_held(d)) {
      printf("%.*s: the deadline passed; stopping early\n", (int)len, what);
      break;
    }
    usleep(50 * 1000);
  }
  tabq_error err;
  if (tabq_delivery_settle(d, tabq_ack(), &err) == TABQ_LEASE_LOST) {
    printf("%.*s: ack refused: %s\n", (int)len, what, err.message);
    refused++;
  }
  if (++handled == 3)
    tabq_stop(broker);
  return tabq_no_outcome(); /* settled above, or by the deadline */
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "deadlines.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) || tabq_schema_apply(broker, &exports, NULL, &err))
    return fprintf(stderr, "%s\n", err.message), 1;
  const char *names[] = {"small", "huge", "medium"};
  const tabq_value budgets[] = {tabq_null(), tabq_int(300), tabq_int(1500)};
  for (int i = 0; i < 3; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.payload = names[i];
    m.payload_len = strlen(names[i]);
    m.data = &budgets[i];
    m.ndata = 1;
    if (tabq_publish(broker, &exports, &m, &err))
      return fprintf(stderr, "%s\n", err.message), 1;
  }

  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "exports";
  o.handler = export_rows;
  o.poll_interval_ms = 20;
  o.deadline_ms = 2000;                      /* every handler; a row's smaller budget wins */
  o.on_deadline = TABQ_DEADLINE_RETRY_AFTER; /* the default */
  o.deadline_retry_ms = 60000;               /* back in a minute */
  tabq_subscription *s;
  if (tabq_subscribe(broker, &exports, &o, &s, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;
  tabq_run(broker);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(broker);
  printf("acked %llu, retried after a delay %llu, deadlines passed %llu\n",
         (unsigned long long)st.acked, (unsigned long long)st.delayed,
         (unsigned long long)st.deadline_expired);
  return st.acked == 2 && st.delayed == 1 && st.deadline_expired == 1 && refused == 1 ? 0 : 1;
}
