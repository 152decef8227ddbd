/* A table with every role at once — group, priority, partition key, retry_after, attempt,
 * processed_at, headers and payload (and locked_until in the lease form) — end to end: rows
 * published with all of them, read through the JSON codec by workers_by_key(2) with max_attempts
 * and a dead letter group; each outcome settles as it should and every role reads back. */
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kit.h"

static tabq_error err;

static long long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The rows, in publish order: name, priority, key, delay. "late" comes first in claim order but
 * is hidden for its delay; "flaky" asks for a retry after 100 ms once; "poison" always retries
 * and goes to the dead letter at its second attempt; "keyless" has no partition key. */
typedef struct row_spec {
  const char *name;
  int64_t priority;
  const char *key;
  uint32_t delay_ms;
} row_spec;

static const row_spec rows[] = {
    {"a", 1, "k1", 0},      {"flaky", 2, "k1", 0},  {"b", 3, "k1", 0},
    {"poison", 4, "k1", 0}, {"late", 0, "k2", 400}, {"keyless", 6, NULL, 0},
};
#define NROWS (sizeof rows / sizeof rows[0])

typedef struct every_seen {
  pthread_mutex_t mu;
  unsigned calls;
  char order_k1[16][16]; /* first deliveries of key k1, in the order handled */
  unsigned nk1;
  long attempts[NROWS][4];
  unsigned deliveries[NROWS];
  long long late_at_ms;
  unsigned wrong;
  char wrong_what[160];
} every_seen;

static every_seen seen;
static long long published_ms;

static void wrong(const char *what, const char *name) {
  if (seen.wrong++ == 0)
    snprintf(seen.wrong_what, sizeof seen.wrong_what, "%s (row %s)", what, name);
}

static int index_of(const char *name) {
  for (size_t i = 0; i < NROWS; i++)
    if (!strcmp(rows[i].name, name))
      return (int)i;
  return -1;
}

static tabq_outcome every_role_handler(tabq_delivery *d, void *user) {
  (void)user;
  const json_t *doc = tabq_delivery_decoded(d);
  const char *name = json_string_value(json_object_get(doc, "name"));
  int i = name ? index_of(name) : -1;
  pthread_mutex_lock(&seen.mu);
  seen.calls++;
  if (i < 0) {
    wrong("a payload the test did not publish", name ? name : "?");
    pthread_mutex_unlock(&seen.mu);
    return tabq_ack();
  }
  long attempt = tabq_delivery_attempt(d);
  if (seen.deliveries[i] < 4)
    seen.attempts[i][seen.deliveries[i]] = attempt;
  seen.deliveries[i]++;
  const char *key = tabq_delivery_partition_key(d);
  if (rows[i].key ? !key || strcmp(key, rows[i].key) : key != NULL)
    wrong("the partition key is not the row's", name);
  const char *n = tabq_delivery_header(d, "n");
  if (!n || strcmp(n, name))
    wrong("the header is not the row's", name);
  const char *group = tabq_delivery_group(d);
  if (!group || strcmp(group, "q"))
    wrong("the group is not the queue", name);
  if (key && !strcmp(key, "k1") && attempt == 1 && seen.nk1 < 16)
    snprintf(seen.order_k1[seen.nk1++], sizeof seen.order_k1[0], "%s", name);
  if (!strcmp(name, "late"))
    seen.late_at_ms = mono_ms();
  pthread_mutex_unlock(&seen.mu);
  if (!strcmp(name, "flaky") && attempt == 1)
    return tabq_retry_after(100);
  if (!strcmp(name, "poison"))
    return tabq_retry();
  return tabq_ack();
}

static void publish_rows(tabq_broker *b) {
  for (size_t i = 0; i < NROWS; i++) {
    char payload[64];
    int len = snprintf(payload, sizeof payload, "{\"name\": \"%s\"}", rows[i].name);
    tabq_header h = {.name = "n", .value = rows[i].name};
    tabq_message m = message("q", payload, (size_t)len);
    m.priority = rows[i].priority;
    m.partition_key = rows[i].key;
    m.delay_ms = rows[i].delay_ms;
    m.headers = &h;
    m.nheaders = 1;
    int rc = tabq_publish(b, every_role_table(), &m, &err);
    if (rc)
      fprintf(stderr, "publish: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
  /* Another queue's row, which the subscription must leave as it is. */
  tabq_message other = message("other", "{\"name\": \"other\"}", 17);
  other.partition_key = "k1";
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, every_role_table(), &other, &err), TABQ_OK);
}

static void every_role_end_to_end(void) {
  fresh_db();
  memset(&seen, 0, sizeof seen);
  pthread_mutex_init(&seen.mu, NULL);
  tabq_broker *b = connect_broker(20);
  published_ms = mono_ms();
  publish_rows(b);
  tabq_subscription_options o = sub_options("q", every_role_handler, NULL);
  o.workers_by_key = 2;
  o.codec = tabq_json_codec();
  o.max_attempts = 2;
  o.dead_letter_group = "dead";
  tabq_subscription *s = NULL;
  int rc = tabq_subscribe(b, every_role_table(), &o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'q' AND processed_at IS NULL", 0,
                       20000));
  tabq_stats st;
  stats_after(s, NROWS - 1 + 3, &st); /* five acks, two retries, one dead letter */
  close_broker(b);

  if (seen.wrong)
    fprintf(stderr, "every role: %s\n", seen.wrong_what);
  CU_ASSERT_EQUAL(seen.wrong, 0);
  /* processed_at: the finished rows stay, marked; the dead letter moved its row to "dead". */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q' AND processed_at IS NOT "
                         "NULL"),
                  (long long)NROWS - 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'dead' AND processed_at IS "
                         "NULL"),
                  1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'other' AND attempt = 1 AND "
                         "processed_at IS NULL"),
                  1);
  /* Priority: one key's first deliveries in claim order, on one worker. */
  const char *want[] = {"a", "flaky", "b", "poison"};
  CU_ASSERT_EQUAL_FATAL(seen.nk1, 4);
  for (unsigned k = 0; k < 4; k++)
    CU_ASSERT_STRING_EQUAL(seen.order_k1[k], want[k]);
  /* retry_after: hidden rows wait; attempts count. */
  CU_ASSERT(seen.late_at_ms - published_ms >= 350);
  int flaky = index_of("flaky"), poison = index_of("poison");
  CU_ASSERT_EQUAL(seen.deliveries[flaky], 2);
  CU_ASSERT(seen.attempts[flaky][0] == 1 && seen.attempts[flaky][1] == 2);
  CU_ASSERT_EQUAL(seen.deliveries[poison], 2);
  CU_ASSERT_EQUAL(seen.calls, NROWS + 2);
  CU_ASSERT_EQUAL(st.acked, NROWS - 1);
  CU_ASSERT_EQUAL(st.retried, 2);
  CU_ASSERT_EQUAL(st.dead_lettered, 1);
  CU_ASSERT_EQUAL(st.decode_failed, 0);
  pthread_mutex_destroy(&seen.mu);
}

const kit_test every_role_tests[] = {
    {"every role at once: group, priority, partition key, retry_after, attempt, processed_at, "
     "headers, payload, end to end",
     every_role_end_to_end, ALL_FORMS, needs_key_column, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
