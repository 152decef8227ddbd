/* Row mode and decoding (SPEC 7): a table without a payload hands its handler typed data
 * columns; a codec decodes payloads before the handler; and whatever does not decode — a payload
 * the codec refuses, a column that does not read as its declared type, headers that are not an
 * object of strings, a claimed id without a row — is settled by the decode policy before any
 * handler sees it, its attempt counted. */
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kit.h"

static tabq_error err;

/* 2026-01-02 03:04:05.678901 UTC */
#define AT_US INT64_C(1767323045678901)

/* Subscribes, waits until `left` rows answer `count_sql`, then for `settled` settlements, and
 * closes the broker: the stats as they stood. */
static tabq_stats drain(tabq_broker *b, const tabq_table *t, const tabq_subscription_options *o,
                        const char *count_sql, long long left, uint64_t settled) {
  tabq_subscription *s = NULL;
  tabq_stats st = {0};
  int rc = tabq_subscribe(b, t, o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT(wait_count(count_sql, left, 20000));
  stats_after(s, settled, &st);
  close_broker(b);
  return st;
}

/* ---- Row mode ---------------------------------------------------------------------------- */

typedef struct rows_seen {
  atomic_int calls, wrong, order_broken;
  atomic_llong last_n;
  char wrong_what[128];
} rows_seen;

static rows_seen seen;

static void mismatch(const char *what) {
  if (atomic_fetch_add(&seen.wrong, 1) == 0)
    snprintf(seen.wrong_what, sizeof seen.wrong_what, "%s", what);
}

static bool buf_is(const tabq_value *v, tabq_type type, const char *text) {
  return v->type == type && v->u.buf.len == strlen(text) &&
         !memcmp(v->u.buf.ptr, text, v->u.buf.len);
}

/* The real row n carries: n + 0.5. The core binds no real through a driver before ABI 1.5, so
 * there the integer n is written, which the real column reads back as the real n. */
static double real_of(long long n) {
  return kit.plugin.reals ? (double)n + 0.5 : (double)n;
}

/* Row n carries n, real_of(n), "text-<n>", bytes "\0b<n>", AT_US + n seconds and {"n": n}; row 0
 * carries NULL in every column but n. */
static void check_row(tabq_delivery *d) {
  tabq_value n, r, t, b, at, doc;
  if (tabq_delivery_column(d, "n", &n) || tabq_delivery_column(d, "r", &r) ||
      tabq_delivery_column(d, "t", &t) || tabq_delivery_column(d, "b", &b) ||
      tabq_delivery_column(d, "at", &at) || tabq_delivery_column(d, "doc", &doc)) {
    mismatch("a declared column is unknown");
    return;
  }
  tabq_value none;
  if (tabq_delivery_column(d, "nope", &none) != TABQ_INVALID)
    mismatch("an undeclared column reads");
  if (n.type != TABQ_T_INT) {
    mismatch("n is no integer");
    return;
  }
  long long i = n.u.i;
  if (i < atomic_exchange(&seen.last_n, i))
    atomic_fetch_add(&seen.order_broken, 1);
  if (i == 0) {
    if (r.type != TABQ_T_NULL || t.type != TABQ_T_NULL || b.type != TABQ_T_NULL ||
        at.type != TABQ_T_NULL || doc.type != TABQ_T_NULL)
      mismatch("a NULL column reads as a value");
    return;
  }
  char text[32], bytes[32], json[32];
  snprintf(text, sizeof text, "text-%lld", i);
  int blen = snprintf(bytes + 1, sizeof bytes - 1, "b%lld", i) + 1;
  bytes[0] = '\0';
  snprintf(json, sizeof json, "{\"n\": %lld}", i);
  if (r.type != TABQ_T_REAL || r.u.r != real_of(i))
    mismatch("r is not the real written");
  if (!buf_is(&t, TABQ_T_TEXT, text))
    mismatch("t is not the text written");
  if (b.type != TABQ_T_BYTES || b.u.buf.len != (size_t)blen ||
      memcmp(b.u.buf.ptr, bytes, (size_t)blen))
    mismatch("b is not the bytes written");
  if (at.type != TABQ_T_TIME || at.u.time_us != AT_US + i * 1000000)
    mismatch("at is not the time written");
  json_t *j = doc.type == TABQ_T_JSON ? json_loadb(doc.u.buf.ptr, doc.u.buf.len, 0, NULL) : NULL;
  if (!j || json_integer_value(json_object_get(j, "n")) != i)
    mismatch("doc is not the JSON written");
  json_decref(j);
}

static tabq_outcome check_and_ack(tabq_delivery *d, void *user) {
  (void)user;
  check_row(d);
  if (tabq_delivery_payload(d, NULL))
    mismatch("a row mode delivery has a payload");
  atomic_fetch_add(&seen.calls, 1);
  return tabq_ack();
}

static void check_batch(tabq_delivery *const *ds, size_t n, tabq_outcome *outcomes, void *user) {
  for (size_t i = 0; i < n; i++)
    outcomes[i] = check_and_ack(ds[i], user);
}

/* Publishes rows 0..n-1 into the rows table. */
static void publish_rows(tabq_broker *b, int n) {
  for (int i = 0; i < n; i++) {
    char text[32], bytes[32], json[32];
    snprintf(text, sizeof text, "text-%d", i);
    int blen = snprintf(bytes + 1, sizeof bytes - 1, "b%d", i) + 1;
    bytes[0] = '\0';
    snprintf(json, sizeof json, "{\"n\": %d}", i);
    tabq_value data[6] = {tabq_int(i),
                          kit.plugin.reals ? tabq_real(real_of(i)) : tabq_int(i),
                          tabq_text(text, strlen(text)),
                          tabq_bytes(bytes, (size_t)blen),
                          tabq_time(AT_US + (int64_t)i * 1000000),
                          tabq_text(json, strlen(json))};
    data[5].type = TABQ_T_JSON;
    if (i == 0)
      for (int k = 1; k < 6; k++)
        data[k] = tabq_null();
    tabq_message m = message("q", NULL, 0);
    m.data = data;
    m.ndata = 6;
    int rc = tabq_publish(b, rows_table(), &m, &err);
    if (rc)
      fprintf(stderr, "row mode publish: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
}

static void reset_seen(void) {
  memset(&seen, 0, sizeof seen);
  atomic_store(&seen.last_n, -1);
}

static void report_wrong(void) {
  if (atomic_load(&seen.wrong))
    fprintf(stderr, "row mode: %s\n", seen.wrong_what);
  CU_ASSERT_EQUAL(atomic_load(&seen.wrong), 0);
}

static void row_mode_round_trip(void) {
  fresh_db();
  db_make_rows();
  tabq_broker *b = connect_broker(20);
  publish_rows(b, 6);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {rows}"), 6);
  reset_seen();
  tabq_subscription_options o = sub_options("q", check_and_ack, NULL);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, rows_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {rows}", 0, 20000));
  close_broker(b);
  CU_ASSERT_EQUAL(atomic_load(&seen.calls), 6);
  report_wrong();
}

static void row_mode_batch_in_claim_order(void) {
  fresh_db();
  db_make_rows();
  tabq_broker *b = connect_broker(20);
  publish_rows(b, 12);
  reset_seen();
  tabq_subscription_options o = batch_options("q", check_batch, NULL, 5);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, rows_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {rows}", 0, 20000));
  close_broker(b);
  CU_ASSERT_EQUAL(atomic_load(&seen.calls), 12);
  CU_ASSERT_EQUAL(atomic_load(&seen.order_broken), 0);
  report_wrong();
}

/* Column t (text in the database) described as an integer: '42' reads as 42, 'forty' does not
 * and is settled by the policy — here retry_after, so the row stays with its attempt counted and
 * its retry_after moved. */
static tabq_outcome count_ints(tabq_delivery *d, void *user) {
  (void)user;
  tabq_value t;
  if (tabq_delivery_column(d, "t", &t) || t.type != TABQ_T_INT || t.u.i != 42)
    mismatch("t did not read as the integer 42");
  atomic_fetch_add(&seen.calls, 1);
  return tabq_ack();
}

static void row_mode_column_that_does_not_read(void) {
  fresh_db();
  db_make_rows();
  db_exec("INSERT INTO {rows} (queue, t) VALUES ('q', '42')");
  db_exec("INSERT INTO {rows} (queue, t) VALUES ('q', 'forty')");
  tabq_table t = *rows_table();
  static const tabq_col t_as_int[] = {{.name = "t", .type = TABQ_T_INT}};
  t.data = t_as_int;
  t.ndata = 1;
  reset_seen();
  tabq_broker *b = connect_broker(20);
  tabq_subscription_options o = sub_options("q", count_ints, NULL);
  o.on_decode_failure = TABQ_DECODE_RETRY_AFTER;
  o.decode_retry_ms = 60000;
  tabq_stats st = drain(b, &t, &o, "SELECT count(*) FROM {rows}", 1, 2);
  CU_ASSERT_EQUAL(atomic_load(&seen.calls), 1);
  report_wrong();
  CU_ASSERT_EQUAL(st.decode_failed, 1);
  CU_ASSERT_EQUAL(st.retried, 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {rows} WHERE t = 'forty' AND attempt = 2"), 1);
  long long due = db_ms_from_now("SELECT retry_after FROM {rows}");
  CU_ASSERT(due > 30000);
}

/* A publish of a value the column's declared type does not take writes nothing. */
static void row_mode_publish_refused(void) {
  fresh_db();
  db_make_rows();
  tabq_broker *b = connect_broker(20);
  tabq_value data[2] = {tabq_text("seven", 5), tabq_real(1.0)};
  tabq_message m = message("q", NULL, 0);
  m.data = data;
  m.ndata = 2;
  CU_ASSERT_EQUAL(tabq_publish(b, rows_table(), &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "data column n is declared integer"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rows_name()));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {rows}"), 0);
  close_broker(b);
}

/* ---- The JSON codec and the policy -------------------------------------------------------- */

static tabq_outcome read_json(tabq_delivery *d, void *user) {
  (void)user;
  const json_t *j = tabq_delivery_decoded(d);
  if (!json_is_object(j) || json_integer_value(json_object_get(j, "n")) < 1)
    mismatch("the decoded payload is not the object published");
  atomic_fetch_add(&seen.calls, 1);
  return tabq_ack();
}

static void publish_payload(tabq_broker *b, const char *payload) {
  tabq_message m = message("q", payload, strlen(payload));
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_OK);
}

static void json_codec_drops_what_does_not_decode(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  publish_payload(b, "{\"n\": 1}");
  publish_payload(b, "{\"n\": ");
  publish_payload(b, "{\"n\": 3}");
  reset_seen();
  tabq_subscription_options o = sub_options("q", read_json, NULL);
  o.codec = tabq_json_codec();
  tabq_stats st = drain(b, jobs_table(), &o, "SELECT count(*) FROM {jobs}", 0, 3);
  CU_ASSERT_EQUAL(atomic_load(&seen.calls), 2);
  report_wrong();
  CU_ASSERT_EQUAL(st.decode_failed, 1);
  CU_ASSERT_EQUAL(st.acked, 3); /* the drop counts as acks do */
}

/* The dead letter policy moves the row at its first failure, whatever max_attempts says. */
static void json_codec_dead_letters(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  publish_payload(b, "not json");
  publish_payload(b, "{\"n\": 2}");
  reset_seen();
  tabq_subscription_options o = sub_options("q", read_json, NULL);
  o.codec = tabq_json_codec();
  o.on_decode_failure = TABQ_DECODE_DEAD_LETTER;
  o.max_attempts = 5;
  o.dead_letter_group = "dead";
  tabq_stats st = drain(b, jobs_table(), &o, "SELECT count(*) FROM {jobs} WHERE queue = 'q'", 0, 2);
  CU_ASSERT_EQUAL(atomic_load(&seen.calls), 1);
  CU_ASSERT_EQUAL(st.decode_failed, 1);
  CU_ASSERT_EQUAL(st.dead_lettered, 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'dead' AND attempt = 2"), 1);
}

/* With a codec, headers are checked before the handler: an array, or a value that is not a
 * string, is settled by the policy (drop). */
static void headers_that_do_not_decode(void) {
  fresh_db();
  db_exec("INSERT INTO {jobs} (queue, headers, payload) VALUES ('q', '{\"n\": \"1\"}', "
          "'{\"n\": 1}')");
  db_exec("INSERT INTO {jobs} (queue, headers, payload) VALUES ('q', '[\"n\"]', '{\"n\": 2}')");
  db_exec("INSERT INTO {jobs} (queue, headers, payload) VALUES ('q', '{\"n\": 3}', '{\"n\": 3}')");
  db_exec("INSERT INTO {jobs} (queue, payload) VALUES ('q', '{\"n\": 4}')");
  reset_seen();
  tabq_broker *b = connect_broker(20);
  tabq_subscription_options o = sub_options("q", read_json, NULL);
  o.codec = tabq_json_codec();
  tabq_stats st = drain(b, jobs_table(), &o, "SELECT count(*) FROM {jobs}", 0, 4);
  CU_ASSERT_EQUAL(atomic_load(&seen.calls), 2);
  CU_ASSERT_EQUAL(st.decode_failed, 2);
}

/* A claimed id the fetch finds no row for: settled by the policy by its id (here a dead
 * letter into the group "dead"), never handed out. */
static void claimed_id_without_a_row(void) {
  fresh_db();
  db_fill("q", 2);
  static char fetch[256];
  snprintf(fetch, sizeof fetch,
           "SELECT id, attempt, queue, headers, payload FROM %s WHERE id = :id AND id <> 2",
           jobs_name());
  tabq_table t = *jobs_table();
  t.events.fetch = fetch;
  recorder r;
  recorder_init(&r);
  tabq_broker *b = connect_broker(20);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.on_decode_failure = TABQ_DECODE_DEAD_LETTER;
  o.max_attempts = 5;
  o.dead_letter_group = "dead";
  tabq_stats st = drain(b, &t, &o, "SELECT count(*) FROM {jobs} WHERE queue = 'q'", 0, 1);
  CU_ASSERT_EQUAL(r.calls, 1);
  CU_ASSERT_EQUAL(r.ids[0], 1);
  CU_ASSERT_EQUAL(st.decode_failed, 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'dead' AND id = 2"), 1);
  recorder_free(&r);
}

/* ---- Refusals --------------------------------------------------------------------------------
 */

static void refused(const tabq_table *t, const tabq_subscription_options *o, const char *rule) {
  tabq_broker *b = connect_broker(20);
  int rc = tabq_subscribe(b, t, o, NULL, &err);
  CU_ASSERT(rc == TABQ_DECLARATION || rc == TABQ_INVALID);
  if (!strstr(err.message, rule))
    fprintf(stderr, "refusal '%s': %s\n", rule, err.message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rule));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, t->name));
  close_broker(b);
}

static void decode_misused_is_refused(void) {
  fresh_db();
  db_make_rows();
  db_fill("q", 2);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.codec = tabq_json_codec();
  refused(rows_table(), &o, "the table is in row mode");

  o = sub_options("q", recorder_handler, &r);
  o.on_decode_failure = TABQ_DECODE_RETRY_AFTER;
  refused(jobs_table(), &o, "decode_retry_ms above 0");

  o = sub_options("q", recorder_handler, &r);
  o.on_decode_failure = TABQ_DECODE_DEAD_LETTER;
  refused(jobs_table(), &o, "needs the mount's dead letter");

  o = sub_options("q", recorder_handler, &r);
  o.decode_retry_ms = 10;
  refused(jobs_table(), &o, "decode_retry_ms needs the decode policy");

  o = sub_options("q", recorder_handler, &r);
  o.on_decode_failure = (tabq_decode_policy)7;
  refused(jobs_table(), &o, "on_decode_failure is none of");

  tabq_codec no_decode = TABQ_CODEC_INIT;
  no_decode.name = "rows-only";
  o = sub_options("q", recorder_handler, &r);
  o.codec = &no_decode;
  refused(jobs_table(), &o, "codec rows-only has no decode");

  tabq_table t = *rows_table();
  static const tabq_col odd[] = {{.name = "n", .type = TABQ_T_INT_LIST}};
  t.data = odd;
  t.ndata = 1;
  o = sub_options("q", recorder_handler, &r);
  refused(&t, &o, "data column 'n' declares type");

  sleep_ms(100);
  CU_ASSERT_EQUAL(recorder_calls(&r), 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 2);
  recorder_free(&r);
}

const kit_test decode_tests[] = {
    {"row mode: typed columns round trip (integer, real, text, bytes, time, JSON, NULL)",
     row_mode_round_trip, ALL_FORMS, needs_rows, "row mode"},
    {"row mode: a batch handler gets a claim's rows in claim order", row_mode_batch_in_claim_order,
     ALL_FORMS, needs_rows, "row mode"},
    {"row mode: a column that does not read as declared is settled by the decode policy",
     row_mode_column_that_does_not_read, ALL_FORMS, needs_rows, "row mode"},
    {"row mode: a value the declared type does not take is refused at publish",
     row_mode_publish_refused, ALL_FORMS, needs_rows, "row mode"},
    {"decode: the JSON codec; a payload that does not decode is dropped before the handler",
     json_codec_drops_what_does_not_decode, ALL_FORMS, NULL, NULL},
    {"decode: the dead letter policy moves a payload that does not decode", json_codec_dead_letters,
     ALL_FORMS, NULL, NULL},
    {"decode: headers that are not an object of strings are settled by the policy",
     headers_that_do_not_decode, ALL_FORMS, NULL, "headers"},
    {"decode: a claimed id without a row is settled by the policy", claimed_id_without_a_row,
     ALL_FORMS, needs_custom_events, NULL},
    {"decode: misused options are refused at subscribe, nothing claimed", decode_misused_is_refused,
     ALL_FORMS, needs_rows, "refusals at subscribe, nothing claimed"},
    {NULL, NULL, 0, NULL, NULL},
};
