/* Statements of the service's own (SPEC 8), where the plugin has ABI 1.1: a claim and a fetch of
 * its own, a settlement of its own in each form, an extension of its own (lease), and the
 * refusals at startup that leave every row as it was. The SQL is plain enough for any SQL
 * database (LIMIT; FOR UPDATE SKIP LOCKED in the row lock form's claim). */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "kit.h"

static tabq_error err;

/* The newest rows first: an order no built-in claim takes, so the test sees whose claim ran. */
static const char *own_claim(void) {
  if (kit.form == TABQ_FORM_ROWLOCK)
    return "SELECT id FROM {jobs} WHERE queue = :queue ORDER BY id DESC LIMIT :limit FOR UPDATE "
           "SKIP LOCKED";
  return "SELECT id FROM {jobs} WHERE queue = :queue AND (locked_until IS NULL OR locked_until <= "
         ":now) ORDER BY id DESC LIMIT :limit";
}

/* Events name the test's table: {jobs} replaced, kept for the subscription's life. */
static const char *sql_for(int slot, const char *text) {
  static char sql[4][512];
  size_t n = 0;
  for (const char *p = text; *p && n + 1 < sizeof sql[slot];) {
    if (!strncmp(p, "{jobs}", 6)) {
      n += (size_t)snprintf(sql[slot] + n, sizeof sql[slot] - n, "%s", jobs_name());
      p += 6;
    } else
      sql[slot][n++] = *p++;
  }
  sql[slot][n < sizeof sql[slot] ? n : sizeof sql[slot] - 1] = '\0';
  return sql[slot];
}

/* The projection of the jobs table: id, attempt, group, headers, payload. */
static const char *own_fetch(void) {
  return sql_for(1, "SELECT id, attempt, queue, headers, payload FROM {jobs} WHERE id = :id");
}

static void unchanged(void) {
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q'"), 3);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt <> 1"), 0);
}

/* A claim of the service's own with no fetch of its own: a dialect with a fetch by a list of
 * ids reads the rows with it; one without stops the subscription at startup. */
static void claim_without_fetch(void) {
  fresh_db();
  db_fill("q", 3);
  tabq_table t = *jobs_table();
  t.events.claim = sql_for(0, own_claim());
  tabq_broker *b = connect_broker(20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  int rc = tabq_subscribe(b, &t, &o, NULL, &err);
  if (kit.plugin.fetch_by_ids) {
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
    CU_ASSERT(recorder_wait(&r, 3, 20000));
    CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
    CU_ASSERT_EQUAL(r.ids[0], 3); /* the service's order */
    CU_ASSERT_STRING_EQUAL(r.payloads[0], "job-3");
  } else {
    char table[80];
    snprintf(table, sizeof table, "table %s", jobs_name());
    CU_ASSERT_EQUAL(rc, TABQ_DIALECT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, table));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no fetch by a list of ids"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "events.fetch"));
    sleep_ms(100);
    CU_ASSERT_EQUAL(recorder_calls(&r), 0);
    unchanged();
  }
  close_broker(b);
  recorder_free(&r);
}

static tabq_outcome retry_first(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r, (void)d;
  return call == 0 ? tabq_retry() : tabq_ack();
}

/* A claim and a fetch of the service's own: its order, the attempt counted by the form. */
static void claim_and_fetch(void) {
  fresh_db();
  db_fill("q", 3);
  tabq_table t = *jobs_table();
  t.events.claim = sql_for(0, own_claim());
  t.events.fetch = own_fetch();
  tabq_broker *b = connect_broker(20);
  recorder r;
  recorder_init(&r);
  r.script = retry_first;
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 4, 20000));
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
  close_broker(b);
  /* 3 first and retried, then 3 again on its second attempt, then 2 and 1 */
  CU_ASSERT_EQUAL(r.calls, 4);
  CU_ASSERT_EQUAL(r.ids[0], 3);
  CU_ASSERT_STRING_EQUAL(r.payloads[0], "job-3");
  CU_ASSERT_EQUAL(r.ids[1], 3);
  CU_ASSERT_EQUAL(r.attempts[1], r.attempts[0] + 1);
  CU_ASSERT_EQUAL(r.ids[2], 2);
  CU_ASSERT_EQUAL(r.ids[3], 1);
  recorder_free(&r);
}

/* A fetch of the service's own after tabq's claim: the payload is the service's, and a claimed
 * id without a row is dropped, not claimed again and again. */
static void fetch_after_builtin_claim(void) {
  fresh_db();
  db_fill("q", 2);
  tabq_table t = *jobs_table();
  t.events.fetch =
      sql_for(1, "SELECT id, attempt, queue, headers, payload FROM {jobs} WHERE id = :id AND id "
                 "<> 2");
  tabq_broker *b = connect_broker(20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
  close_broker(b);
  CU_ASSERT_EQUAL(r.calls, 1);
  CU_ASSERT_EQUAL(r.ids[0], 1);
  recorder_free(&r);
}

/* An acknowledgement of the service's own keeps the row, moved to another queue. */
static void own_ack(void) {
  fresh_db();
  db_fill("q", 3);
  tabq_table t = *jobs_table();
  t.events.ack = sql_for(2, "UPDATE {jobs} SET queue = 'done' WHERE id = :id");
  tabq_broker *b = connect_broker(20);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'done'", 3, 20000));
  close_broker(b);
  CU_ASSERT_EQUAL(r.calls, 3);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 3);
  recorder_free(&r);
}

/* A name tabq does not know, and a database placeholder, stop the subscription at startup. */
static void bad_names(void) {
  fresh_db();
  db_fill("q", 3);
  tabq_broker *b = connect_broker(20);
  tabq_subscription_options o = sub_options("q", recorder_handler, NULL);
  tabq_table t = *jobs_table();
  t.events.ack = sql_for(2, "DELETE FROM {jobs} WHERE id = :row");
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "events.ack"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, ":row"));
  t.events.ack = sql_for(2, "DELETE FROM {jobs} WHERE id = ?");
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "database placeholder"));
  t.events.ack = NULL;
  t.events.retry_after = sql_for(3, "UPDATE {jobs} SET retry_after = :destination WHERE id = :id");
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "not a parameter of this statement"));
  t.events.retry_after = NULL;
  t.events.ack = "UPDATE no_such_table SET queue = 'x' WHERE id = :id";
  CU_ASSERT_EQUAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.statement, "ack"));
  sleep_ms(100);
  unchanged();
  close_broker(b);
}

static tabq_outcome always_retry(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r, (void)d, (void)call;
  return tabq_retry();
}

/* A dead letter of the service's own: one statement, given the destination. */
static void own_dead_letter(void) {
  fresh_db();
  db_fill("q", 2);
  tabq_table t = *jobs_table();
  t.events.dead_letter = sql_for(2, "UPDATE {jobs} SET queue = :destination WHERE id = :id");
  tabq_broker *b = connect_broker(20);
  recorder r;
  recorder_init(&r);
  r.script = always_retry;
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.max_attempts = 1;
  o.dead_letter_group = "q.dead";
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'q.dead'", 2, 20000));
  close_broker(b);
  CU_ASSERT_EQUAL(r.calls, 2);
  recorder_free(&r);
}

static tabq_outcome slow_ack(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r, (void)d, (void)call;
  sleep_ms(1600); /* past three half leases of one second */
  return tabq_ack();
}

/* Lease form: an extension of the service's own keeps a slow handler's lease, and confirms it
 * before an acknowledgement of the service's own. */
static void own_extend(void) {
  fresh_db();
  db_fill("q", 1);
  tabq_table t = *jobs_table();
  t.events.extend =
      sql_for(1, "UPDATE {jobs} SET locked_until = :until WHERE id = :id AND locked_until = :held");
  t.events.ack = sql_for(2, "UPDATE {jobs} SET queue = 'done' WHERE id = :id");
  tabq_broker *b = connect_broker(20);
  recorder r;
  recorder_init(&r);
  r.script = slow_ack;
  tabq_subscription *sub = NULL;
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.lease_s = 1;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, &sub, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'done'", 1, 20000));
  tabq_stats st;
  stats_after(sub, 1, &st);
  CU_ASSERT(st.extensions >= 2);
  CU_ASSERT_EQUAL(st.lease_lost, 0);
  CU_ASSERT_EQUAL(st.acked, 1);
  close_broker(b);
  CU_ASSERT_EQUAL(r.calls, 1);
  recorder_free(&r);
}

#define CLAIMING (TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE)

/* The advisory form's claim of its own returns rendered keys, which differ per database: the
 * settlements and the fetch are what it is tested with here (a lock of its own is database SQL:
 * tabq's live tests cover PostgreSQL's and MySQL's). */
const kit_test custom_tests[] = {
    {"custom events: a claim of its own without a fetch of its own", claim_without_fetch, CLAIMING,
     needs_custom_events, NULL},
    {"custom events: a claim and a fetch of its own", claim_and_fetch, CLAIMING,
     needs_custom_events, NULL},
    {"custom events: a fetch of its own after tabq's claim", fetch_after_builtin_claim, ALL_FORMS,
     needs_custom_events, NULL},
    {"custom events: an ack of its own", own_ack, ALL_FORMS, needs_custom_events, NULL},
    {"custom events: unknown names and placeholders stop it at startup", bad_names, ALL_FORMS,
     needs_custom_events, NULL},
    {"custom events: a dead letter of its own", own_dead_letter, ALL_FORMS, needs_custom_events,
     NULL},
    {"custom events: an extension of its own", own_extend, TABQ_FORM_LEASE, needs_custom_events,
     NULL},
    {NULL, NULL, 0, NULL, NULL},
};
