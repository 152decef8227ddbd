/* tabq_cancel (tabq/cancel.h, docs/cancel.md) on a real database, in each form it serves: a
 * queued row is finished and never handed to a handler; a row in work is marked, its handler sees
 * tabq_delivery_cancelled() turn true, and whatever it returns the row ends dropped (counted in
 * tabq_stats.cancelled, reported to the hooks as a drop); an unknown id and a finished row are
 * TABQ_NOT_FOUND with the table unchanged; every refusal changes nothing. Rows are read directly
 * with the database's client library, never through tabq. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/cancel.h>
#include <tabq/trace.h>

#include "cunit_main.h"
#include "support.h"

#define WAIT_MS 20000

static testdb db;
static tabq_error err;

/* The jobs table of the run's form, with processed_at when `finished_kept`, and the cancel mark
 * when `marked`. */
static tabq_table table_of(bool finished_kept, bool marked) {
  tabq_table t = *jobs_table();
  if (finished_kept)
    t.processed_at.name = "processed_at";
  if (marked)
    t.cancelled_at.name = "cancelled_at";
  return t;
}

static void setup(bool with_column) {
  testdb_create(&db);
  if (!with_column)
    return;
  const char *type = db.kind == TEST_SQLITE     ? "TEXT"
                     : db.kind == TEST_POSTGRES ? "TIMESTAMPTZ"
                                                : "DATETIME(6) NULL";
  char sql[128];
  snprintf(sql, sizeof sql, "ALTER TABLE jobs ADD COLUMN cancelled_at %s", type);
  testdb_exec(&db, sql);
}

static int64_t publish_one(tabq_broker *b, const tabq_table *t, const char *payload) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = payload;
  m.payload_len = strlen(payload);
  int rc = tabq_publish(b, t, &m, &err);
  if (rc)
    fprintf(stderr, "publish: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return testdb_int(&db, "SELECT MAX(id) FROM jobs"); /* the row just written */
}

/* Everything a cancel could change, folded into one number. */
static long long checksum(void) {
  return testdb_int(&db, "SELECT COUNT(*) * 1000003 + COALESCE(SUM(id), 0) * 1009 + "
                         "COALESCE(SUM(attempt), 0) * 31 + COUNT(processed_at) * 7 + "
                         "COUNT(locked_until) * 13 FROM jobs");
}

static long long count_where(const char *cond, int64_t id) {
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM jobs WHERE id = %lld%s%s", (long long)id,
           cond ? " AND " : "", cond ? cond : "");
  return testdb_int(&db, sql);
}

/* ---- What handlers saw ----------------------------------------------------------------- */

static atomic_int handled_victim, handled_other, started, saw_cancel, told;
static atomic_int ended, end_outcome;
static int64_t victim_id;
static bool checks; /* the handler asks tabq_delivery_cancelled */

static void reset_seen(void) {
  atomic_store(&handled_victim, 0);
  atomic_store(&handled_other, 0);
  atomic_store(&started, 0);
  atomic_store(&saw_cancel, 0);
  atomic_store(&told, 0);
  atomic_store(&ended, 0);
  atomic_store(&end_outcome, -1);
}

/* The victim's handler works until it sees the cancel (checks), or until the test says the
 * cancel is done (not checking), then returns a retry: only the cancel can make it a drop. */
static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  if (tabq_delivery_id(d) != victim_id) {
    atomic_fetch_add(&handled_other, 1);
    return tabq_ack();
  }
  atomic_fetch_add(&handled_victim, 1);
  atomic_store(&started, 1);
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    if (checks && tabq_delivery_cancelled(d)) {
      atomic_store(&saw_cancel, 1);
      break;
    }
    if (!checks && atomic_load(&told))
      break;
    sleep_ms(10);
  }
  return tabq_retry();
}

static void on_end(tabq_delivery *d, const tabq_delivery_end *e, void *token, void *user) {
  (void)token;
  (void)user;
  if (tabq_delivery_id(d) == victim_id) {
    atomic_store(&end_outcome, (int)e->outcome);
    atomic_fetch_add(&ended, 1);
  }
}

static tabq_subscription *subscribe(tabq_broker *b, const tabq_table *t) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = handle;
  o.workers = 2;
  o.lease_s = 1; /* lease form: an extension every half second */
  tabq_subscription *s = NULL;
  int rc = tabq_subscribe(b, t, &o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  return s;
}

static bool wait_for(atomic_int *v, int want) {
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    if (atomic_load(v) >= want)
      return true;
    sleep_ms(10);
  }
  return false;
}

/* ---- Queued rows ----------------------------------------------------------------------- */

/* A queued row cancelled is finished (deleted, or processed_at and its mark) and no handler
 * ever gets it, while the row published after it is handled. */
static void queued_row(bool finished_kept) {
  bool advisory = test_form() == TABQ_FORM_ADVISORY;
  setup(true);
  reset_seen();
  tabq_table t = table_of(finished_kept, true);
  tabq_broker *b = connect_broker(&db, 50);
  victim_id = publish_one(b, &t, "victim");
  publish_one(b, &t, "other");
  int rc = tabq_cancel(b, &t, tabq_int(victim_id), &err);
  if (rc)
    fprintf(stderr, "cancel: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  if (finished_kept) {
    CU_ASSERT_EQUAL(count_where("processed_at IS NOT NULL AND cancelled_at IS NOT NULL", victim_id),
                    1);
  } else {
    CU_ASSERT_EQUAL(count_where(NULL, victim_id), 0);
  }
  tabq_subscription *s = subscribe(b, &t);
  CU_ASSERT_TRUE(wait_for(&handled_other, 1));
  sleep_ms(300); /* a few polls more: the victim must still not come */
  tabq_close(b);
  CU_ASSERT_EQUAL(atomic_load(&handled_victim), 0);
  (void)s;
  (void)advisory;
  testdb_remove(&db);
}

static void a_queued_row_is_deleted_and_never_claimed(void) {
  queued_row(false);
}

static void a_queued_row_is_finished_and_never_claimed(void) {
  queued_row(true);
}

/* Without the role, a queued row is still finished, except in the advisory form, which needs
 * it for every cancel (refused, nothing changed). */
static void a_queued_row_without_the_role(void) {
  setup(false);
  tabq_table t = table_of(true, false);
  tabq_broker *b = connect_broker(&db, 50);
  int64_t id = publish_one(b, &t, "victim");
  long long before = checksum();
  int rc = tabq_cancel(b, &t, tabq_int(id), &err);
  if (test_form() == TABQ_FORM_ADVISORY) {
    CU_ASSERT_EQUAL(rc, TABQ_DECLARATION);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "cancelled_at"));
    CU_ASSERT_STRING_EQUAL(err.table, "jobs");
    CU_ASSERT_EQUAL(checksum(), before);
  } else {
    CU_ASSERT_EQUAL(rc, TABQ_OK);
    CU_ASSERT_EQUAL(count_where("processed_at IS NOT NULL", id), 1);
  }
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- Rows in work ---------------------------------------------------------------------- */

/* The victim is in work when the cancel comes: from another broker (another process's view)
 * in the lease and advisory forms, from the broker that runs it in the row lock form. */
static void row_in_work(bool handler_checks) {
  tabq_form form = test_form();
  setup(true);
  reset_seen();
  checks = handler_checks;
  tabq_table t = table_of(true, true);
  tabq_broker *b = connect_broker(&db, 50);
  tabq_broker *other = form == TABQ_FORM_ROWLOCK ? b : connect_broker(&db, 50);
  victim_id = publish_one(b, &t, "victim");
  tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
  hooks.on_delivery_end = on_end;
  CU_ASSERT_EQUAL_FATAL(tabq_set_delivery_hooks(b, &hooks, &err), TABQ_OK);
  tabq_subscription *s = subscribe(b, &t);
  CU_ASSERT_FATAL(wait_for(&started, 1));
  int rc = tabq_cancel(other, &t, tabq_int(victim_id), &err);
  if (rc)
    fprintf(stderr, "cancel: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  atomic_store(&told, 1);
  if (handler_checks)
    CU_ASSERT_TRUE(wait_for(&saw_cancel, 1));
  CU_ASSERT_TRUE(wait_for(&ended, 1));
  sleep_ms(300); /* a retried row would be claimed again meanwhile */
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(b);
  if (other != b)
    tabq_close(other);
  CU_ASSERT_EQUAL(atomic_load(&handled_victim), 1);
  CU_ASSERT_EQUAL(atomic_load(&end_outcome), TABQ_OUTCOME_DROP);
  CU_ASSERT_EQUAL(st.cancelled, 1);
  CU_ASSERT_EQUAL(st.dropped, 1);
  CU_ASSERT_EQUAL(st.retried, 0);
  CU_ASSERT_EQUAL(count_where("processed_at IS NOT NULL", victim_id), 1);
  if (form != TABQ_FORM_ROWLOCK) /* the row lock form marks the delivery, not the row */
    CU_ASSERT_EQUAL(count_where("cancelled_at IS NOT NULL", victim_id), 1);
  testdb_remove(&db);
}

static void a_row_in_work_is_seen_by_its_handler_and_dropped(void) {
  row_in_work(true);
}

static void a_row_in_work_whose_handler_never_asks_is_dropped(void) {
  row_in_work(false);
}

/* The row lock form: a row in work under another broker's delivery is refused, nothing
 * changed, and the delivery settles as its handler says. The lease form without the role
 * refuses a row in work the same way (TABQ_DECLARATION). */
static void a_row_in_work_out_of_reach_is_refused(void) {
  tabq_form form = test_form();
  if (form == TABQ_FORM_ADVISORY)
    return; /* every advisory cancel reaches the row: a_row_in_work_... cover it */
  bool marked = form == TABQ_FORM_ROWLOCK;
  setup(marked);
  reset_seen();
  checks = false;
  tabq_table t = table_of(true, marked);
  tabq_broker *b = connect_broker(&db, 50);
  tabq_broker *other = connect_broker(&db, 50);
  victim_id = publish_one(b, &t, "victim");
  tabq_subscription *s = subscribe(b, &t);
  CU_ASSERT_FATAL(wait_for(&started, 1));
  long long before = checksum();
  int rc = tabq_cancel(other, &t, tabq_int(victim_id), &err);
  CU_ASSERT_EQUAL(rc, form == TABQ_FORM_ROWLOCK ? TABQ_TRANSACTION_HELD : TABQ_DECLARATION);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "in work"));
  CU_ASSERT_EQUAL(checksum(), before);
  atomic_store(&told, 1);
  CU_ASSERT_TRUE(wait_for(&handled_victim, 2)); /* its retry stands: handled again */
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  tabq_close(b);
  tabq_close(other);
  CU_ASSERT_EQUAL(st.cancelled, 0);
  testdb_remove(&db);
}

/* ---- Rows that are not there ----------------------------------------------------------- */

static void an_unknown_id_is_not_found_and_changes_nothing(void) {
  setup(true);
  tabq_table t = table_of(true, true);
  tabq_broker *b = connect_broker(&db, 50);
  int64_t id = publish_one(b, &t, "kept");
  long long before = checksum();
  int rc = tabq_cancel(b, &t, tabq_int(id + 1000), &err);
  CU_ASSERT_EQUAL(rc, TABQ_NOT_FOUND);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  CU_ASSERT_STRING_EQUAL(tabq_code_name(TABQ_NOT_FOUND), "NOT_FOUND");
  CU_ASSERT_EQUAL(checksum(), before);
  CU_ASSERT_EQUAL(count_where("processed_at IS NULL AND cancelled_at IS NULL", id), 1);
  tabq_close(b);
  testdb_remove(&db);
}

/* A row finished already (acked here, or cancelled before) is not found: nothing changes. */
static void a_finished_row_is_not_found(void) {
  setup(true);
  tabq_table t = table_of(true, true);
  tabq_broker *b = connect_broker(&db, 50);
  int64_t id = publish_one(b, &t, "done");
  testdb_exec(&db, "UPDATE jobs SET processed_at = CURRENT_TIMESTAMP");
  long long before = checksum();
  CU_ASSERT_EQUAL(tabq_cancel(b, &t, tabq_int(id), &err), TABQ_NOT_FOUND);
  CU_ASSERT_EQUAL(count_where("cancelled_at IS NULL", id), 1);
  CU_ASSERT_EQUAL(checksum(), before);
  int64_t again = publish_one(b, &t, "twice");
  CU_ASSERT_EQUAL(tabq_cancel(b, &t, tabq_int(again), &err), TABQ_OK);
  before = checksum();
  CU_ASSERT_EQUAL(tabq_cancel(b, &t, tabq_int(again), &err), TABQ_NOT_FOUND);
  CU_ASSERT_EQUAL(checksum(), before);
  tabq_close(b);
  testdb_remove(&db);
}

/* ---- Bad input ------------------------------------------------------------------------- */

static void bad_input_is_refused(void) {
  setup(false);
  tabq_table t = table_of(true, false);
  tabq_broker *b = connect_broker(&db, 50);
  int64_t id = publish_one(b, &t, "kept");
  long long before = checksum();
  CU_ASSERT_EQUAL(tabq_cancel(NULL, &t, tabq_int(id), &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_cancel(b, NULL, tabq_int(id), &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_cancel(b, &t, tabq_null(), &err), TABQ_INVALID);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  tabq_table unsized = t;
  unsized.size = 0;
  CU_ASSERT_EQUAL(tabq_cancel(b, &unsized, tabq_int(id), &err), TABQ_DECLARATION);
  /* The role named, but the table lacks the column: the database says so, nothing changes;
   * a subscription that would read the mark is refused when it opens (R-DESC-2). */
  tabq_table marked = table_of(true, true);
  int rc = tabq_cancel(b, &marked, tabq_int(id), &err);
  CU_ASSERT_NOT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(checksum(), before);
  if (test_form() != TABQ_FORM_ROWLOCK) {
    tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
    o.queue = "q";
    o.handler = handle;
    tabq_subscription *s = NULL;
    CU_ASSERT_EQUAL(tabq_subscribe(b, &marked, &o, &s, &err), TABQ_SCHEMA);
    CU_ASSERT_STRING_EQUAL(err.statement, "cancel_read");
  }
  /* A role that names a column of another role. */
  tabq_table twice = table_of(true, false);
  twice.cancelled_at.name = "processed_at";
  CU_ASSERT_EQUAL(tabq_cancel(b, &twice, tabq_int(id), &err), TABQ_DECLARATION);
  CU_ASSERT_EQUAL(checksum(), before);
  tabq_close(b);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"a queued row is deleted and never claimed", a_queued_row_is_deleted_and_never_claimed},
      {"a queued row is finished and never claimed", a_queued_row_is_finished_and_never_claimed},
      {"a queued row without the role", a_queued_row_without_the_role},
      {"a row in work is seen by its handler and dropped",
       a_row_in_work_is_seen_by_its_handler_and_dropped},
      {"a row in work whose handler never asks is dropped",
       a_row_in_work_whose_handler_never_asks_is_dropped},
      {"a row in work out of reach is refused", a_row_in_work_out_of_reach_is_refused},
      {"an unknown id is not found and changes nothing",
       an_unknown_id_is_not_found_and_changes_nothing},
      {"a finished row is not found", a_finished_row_is_not_found},
      {"bad input is refused", bad_input_is_refused},
      CU_TEST_INFO_NULL,
  };
  static char suite[64];
  snprintf(suite, sizeof suite, "cancel on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
