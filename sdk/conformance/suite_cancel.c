/* Cancelling a job (docs/cancel.md): tabq_cancel finishes a queued row at once, so no claim ever
 * takes it; a row in work is marked in its cancelled_at column, its handler learns it through
 * tabq_delivery_cancelled(), and whatever the handler returns the row ends dropped; an unknown or
 * finished id is TABQ_NOT_FOUND and changes nothing. The statements are tabq's, built with the
 * dialect's quoting, placeholders and lock clauses; the table comes from the dialect's schema. */
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/cancel.h>
#include <tabq/schema.h>

#include "kit.h"

static tabq_error err;

/* {jobs} in the suite's form, acks setting processed_at, with the cancel's mark. */
static const tabq_table *cancel_table(void) {
  static tabq_table t;
  t = *marked_table();
  t.cancelled_at = (tabq_col){.name = "cancelled_at"};
  return &t;
}

static void make_table(tabq_broker *b) {
  fresh_names();
  int rc = tabq_schema_apply(b, cancel_table(), NULL, &err);
  if (rc)
    fprintf(stderr, "\nschema: %s\n", err.message);
  db_made(DB_JOBS);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

static int64_t publish_one(tabq_broker *b, const char *payload) {
  tabq_message m = message("q", payload, strlen(payload));
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, cancel_table(), &m, &err), TABQ_OK);
  return db_int("SELECT max(id) FROM {jobs}"); /* the row just written */
}

/* Every column a cancel could change, folded into one number. */
static long long checksum(void) {
  return db_int("SELECT count(*) * 1000003 + coalesce(sum(id), 0) * 1009 + coalesce(sum(attempt), "
                "0) * 31 + count(processed_at) * 7 + count(cancelled_at) * 13 FROM {jobs}");
}

/* What the handlers saw: the victim's calls and whether it learnt of its cancel. */
static struct {
  atomic_llong victim;
  atomic_int victim_calls, others, learnt, in;
} seen;

static void reset_seen(int64_t victim) {
  atomic_store(&seen.victim, victim);
  atomic_store(&seen.victim_calls, 0);
  atomic_store(&seen.others, 0);
  atomic_store(&seen.learnt, 0);
  atomic_store(&seen.in, 0);
}

/* The victim works until it learns of its cancel (up to 10 s) and then asks for a retry: only
 * the cancel can turn its settlement into a drop. Every other row is acked. */
static tabq_outcome watch_for_cancel(tabq_delivery *d, void *user) {
  (void)user;
  if (tabq_delivery_id(d) != atomic_load(&seen.victim)) {
    atomic_fetch_add(&seen.others, 1);
    return tabq_ack();
  }
  atomic_fetch_add(&seen.victim_calls, 1);
  atomic_store(&seen.in, 1);
  for (int waited = 0; waited < 10000; waited += 10) {
    if (tabq_delivery_cancelled(d)) {
      atomic_store(&seen.learnt, 1);
      break;
    }
    sleep_ms(10);
  }
  return tabq_retry();
}

static tabq_subscription *subscribe(tabq_broker *b) {
  tabq_subscription_options o = sub_options("q", watch_for_cancel, NULL);
  o.workers = 2;
  o.lease_s = 1; /* the lease form learns at an extension, every half lease */
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, cancel_table(), &o, &s, &err), TABQ_OK);
  return s;
}

static bool wait_for(atomic_int *v, int want) {
  for (int waited = 0; waited < 10000; waited += 10) {
    if (atomic_load(v) >= want)
      return true;
    sleep_ms(10);
  }
  return false;
}

static void a_queued_row_is_finished_and_never_claimed(void) {
  tabq_broker *b = connect_broker(20);
  make_table(b);
  int64_t victim = publish_one(b, "victim");
  publish_one(b, "other");
  reset_seen(victim);
  int rc = tabq_cancel(b, cancel_table(), tabq_int(victim), &err);
  if (rc)
    fprintf(stderr, "\ncancel: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE processed_at IS NOT NULL AND "
                         "cancelled_at IS NOT NULL"),
                  1);
  subscribe(b);
  CU_ASSERT(wait_for(&seen.others, 1));
  sleep_ms(200); /* polls more: the victim must still not come */
  CU_ASSERT_EQUAL(atomic_load(&seen.victim_calls), 0);
}

static void an_unknown_or_finished_id_is_not_found(void) {
  tabq_broker *b = connect_broker(20);
  make_table(b);
  int64_t id = publish_one(b, "once");
  CU_ASSERT_EQUAL_FATAL(tabq_cancel(b, cancel_table(), tabq_int(id), &err), TABQ_OK);
  long long before = checksum();
  CU_ASSERT_EQUAL(tabq_cancel(b, cancel_table(), tabq_int(id), &err), TABQ_NOT_FOUND);
  CU_ASSERT_STRING_EQUAL(err.table, jobs_name());
  CU_ASSERT_EQUAL(tabq_cancel(b, cancel_table(), tabq_int(id + 1000), &err), TABQ_NOT_FOUND);
  CU_ASSERT_EQUAL(checksum(), before);
}

/* Cancelled while its handler runs: the handler learns it, and the retry it returns becomes a
 * drop (processed_at set, no retry counted). In the row lock form the row is locked
 * by its delivery's transaction: the broker that holds the delivery reaches it, another broker is
 * refused with TABQ_TRANSACTION_HELD and changes nothing. */
static void a_row_in_work_learns_and_is_dropped(void) {
  tabq_broker *worker = connect_broker(20), *other = connect_broker(20);
  make_table(worker);
  int64_t victim = publish_one(worker, "victim");
  reset_seen(victim);
  tabq_subscription *s = subscribe(worker);
  CU_ASSERT_FATAL(wait_for(&seen.in, 1));
  tabq_broker *canceller = other;
  if (kit.form == TABQ_FORM_ROWLOCK) {
    long long before = checksum();
    CU_ASSERT_EQUAL(tabq_cancel(other, cancel_table(), tabq_int(victim), &err),
                    TABQ_TRANSACTION_HELD);
    CU_ASSERT_EQUAL(checksum(), before);
    canceller = worker;
  }
  int rc = tabq_cancel(canceller, cancel_table(), tabq_int(victim), &err);
  if (rc)
    fprintf(stderr, "\ncancel in work: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT(wait_for(&seen.learnt, 1));
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE processed_at IS NULL", 0, 10000));
  tabq_stats st;
  stats_after(s, 1, &st);
  CU_ASSERT_EQUAL(st.cancelled, 1);
  CU_ASSERT_EQUAL(st.dropped, 1);
  CU_ASSERT_EQUAL(st.retried, 0);
  sleep_ms(200); /* no second delivery of the dropped row */
  CU_ASSERT_EQUAL(atomic_load(&seen.victim_calls), 1);
}

const kit_test cancel_tests[] = {
    {"a cancelled queued row is finished and never claimed",
     a_queued_row_is_finished_and_never_claimed, ALL_FORMS, needs_schema, NULL},
    {"a cancel of an unknown or finished id is TABQ_NOT_FOUND and changes nothing",
     an_unknown_or_finished_id_is_not_found, ALL_FORMS, needs_schema, NULL},
    {"a row cancelled in work: its handler learns it, the row is dropped",
     a_row_in_work_learns_and_is_dropped, ALL_FORMS, needs_schema, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
