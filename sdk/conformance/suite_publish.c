/* Publishing many rows at once: tabq_publish_many writes a batch through the dialect's
 * insert_rows (ABI 1.4) in statements of up to TABQ_INSERT_ROWS_MAX rows, then the rest in
 * smaller ones. A batch of two and a half of those and a few more rows lands every row once,
 * each with its own payload and headers, in the order given. A plugin without insert_rows runs
 * one insert a row and is held to the same. And a payload over 64 KiB arrives whole, published
 * alone or in a batch (the DDL's payload column holds it: MySQL's BLOB would not). */
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

#define BATCH (2 * TABQ_INSERT_ROWS_MAX + TABQ_INSERT_ROWS_MAX / 2 + 3)

static tabq_error err;

/* What the handler saw of each message "job-<i>": how often, whether its header matched, and
 * the order the messages came in. */
typedef struct batch_seen {
  atomic_int count[BATCH];
  atomic_int header_wrong, foreign, total;
  atomic_int last, out_of_order;
} batch_seen;

static batch_seen seen;

static tabq_outcome count_once(tabq_delivery *d, void *user) {
  (void)user;
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  char text[32], again[32];
  snprintf(text, sizeof text, "%.*s", (int)(len < 31 ? len : 31), p ? p : "");
  int i = -1;
  if (sscanf(text, "job-%d", &i) != 1 || i < 0 || i >= BATCH ||
      (size_t)snprintf(again, sizeof again, "job-%d", i) != len || strcmp(again, text)) {
    atomic_fetch_add(&seen.foreign, 1);
  } else {
    atomic_fetch_add(&seen.count[i], 1);
    /* Even messages carry a header "n" holding their index; odd ones none. */
    const char *n = tabq_delivery_header(d, "n");
    char want[16];
    snprintf(want, sizeof want, "%d", i);
    if (i % 2 ? n != NULL : !n || strcmp(n, want))
      atomic_fetch_add(&seen.header_wrong, 1);
    if (i < atomic_exchange(&seen.last, i))
      atomic_fetch_add(&seen.out_of_order, 1);
  }
  atomic_fetch_add(&seen.total, 1);
  return tabq_ack();
}

static void a_batch_lands_each_row_once(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  static char payload[BATCH][16], index[BATCH][16];
  static tabq_header header[BATCH];
  static tabq_message m[BATCH];
  static const tabq_message *p[BATCH];
  for (int i = 0; i < BATCH; i++) {
    int len = snprintf(payload[i], sizeof payload[i], "job-%d", i);
    snprintf(index[i], sizeof index[i], "%d", i);
    header[i] = (tabq_header){.name = "n", .value = index[i]};
    m[i] = message("q", payload[i], (size_t)len);
    if (i % 2 == 0) {
      m[i].headers = &header[i];
      m[i].nheaders = 1;
    }
    p[i] = &m[i];
  }
  int rc = tabq_publish_many(b, jobs_table(), p, BATCH, &err);
  if (rc)
    fprintf(stderr, "publish_many: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), BATCH);
  CU_ASSERT_EQUAL(db_int("SELECT count(DISTINCT payload) FROM {jobs}"), BATCH);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), BATCH);

  memset(&seen, 0, sizeof seen);
  atomic_store(&seen.last, -1);
  tabq_subscription_options o = sub_options("q", count_once, NULL);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 60000));
  close_broker(b);
  int twice = 0, never = 0;
  for (int i = 0; i < BATCH; i++) {
    twice += atomic_load(&seen.count[i]) > 1;
    never += atomic_load(&seen.count[i]) == 0;
  }
  CU_ASSERT_EQUAL(twice, 0);
  CU_ASSERT_EQUAL(never, 0);
  CU_ASSERT_EQUAL(atomic_load(&seen.total), BATCH);
  CU_ASSERT_EQUAL(atomic_load(&seen.foreign), 0);
  CU_ASSERT_EQUAL(atomic_load(&seen.header_wrong), 0);
  /* One worker takes the rows in claim order: the order they were given. */
  CU_ASSERT_EQUAL(atomic_load(&seen.out_of_order), 0);
}

/* A publish writes nothing that no subscription could claim: a row in the queue '' (every
 * subscription reads a named one), or a row of a table in a form the plugin does not serve.
 * Each is refused naming the table, and the table stays empty. */
static void publish_refuses_what_cannot_be_claimed(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  tabq_message m = message("", "job", 3);
  CU_ASSERT_EQUAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_name()));
  const tabq_message *one[] = {&m};
  CU_ASSERT_EQUAL(tabq_publish_many(b, jobs_table(), one, 1, &err), TABQ_INVALID);
  static const tabq_form forms[] = {TABQ_FORM_ROWLOCK, TABQ_FORM_LEASE, TABQ_FORM_ADVISORY};
  for (int f = 0; f < 3; f++) {
    if (kit.plugin.forms & forms[f])
      continue;
    tabq_table t = table_in_form(forms[f]);
    m.group = "q";
    CU_ASSERT_EQUAL(tabq_publish(b, &t, &m, &err), TABQ_DIALECT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_name()));
  }
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
  close_broker(b);
}

#define LARGE 100000 /* over 64 KiB: a BLOB's 65,535 bytes on MySQL */

typedef struct large_seen {
  const char *want;
  atomic_int calls, same;
} large_seen;

static tabq_outcome compare_large(tabq_delivery *d, void *user) {
  large_seen *s = user;
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  if (len == LARGE && p && !memcmp(p, s->want, LARGE))
    atomic_fetch_add(&s->same, 1);
  atomic_fetch_add(&s->calls, 1);
  return tabq_ack();
}

static void a_large_payload_arrives_whole(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  char *big = malloc(LARGE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(big);
  /* Every byte value, NULs included, in no repeating pattern a cut would keep. */
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < LARGE; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    big[i] = (char)(x >> 24);
  }
  tabq_message m = message("q", big, LARGE);
  int rc = tabq_publish(b, jobs_table(), &m, &err);
  if (rc)
    fprintf(stderr, "publish: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  const tabq_message *p[] = {&m, &m};
  rc = tabq_publish_many(b, jobs_table(), p, 2, &err);
  if (rc)
    fprintf(stderr, "publish_many: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 3);
  large_seen s = {.want = big};
  tabq_subscription_options o = sub_options("q", compare_large, &s);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
  close_broker(b);
  CU_ASSERT_EQUAL(atomic_load(&s.calls), 3);
  CU_ASSERT_EQUAL(atomic_load(&s.same), 3);
  free(big);
}

const kit_test publish_tests[] = {
    {"a publish refuses rows no subscription could claim (queue '', a form not served)",
     publish_refuses_what_cannot_be_claimed, ALL_FORMS, NULL,
     "refusals at subscribe, nothing claimed"},
    {"publish_many: 2.5 chunks and 3 rows land every row once, in order",
     a_batch_lands_each_row_once, ALL_FORMS, NULL, NULL},
    {"a payload over 64 KiB arrives whole, published alone and in a batch",
     a_large_payload_arrives_whole, ALL_FORMS, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
