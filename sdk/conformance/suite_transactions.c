/* Transactions of the service's own (the transactional outbox): a business row written with
 * tabq_tx_exec and a job published with tabq_publish_tx commit together or not at all; the job's
 * wake-up comes with the commit and never with a rollback; a transaction is used by its own
 * thread and not after its end. The business row goes into the test's {dead} table, which has
 * the queue table's columns and nothing reads during these tests. */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <tabq/sql.h>

#include "kit.h"

static tabq_error err;

/* "INSERT INTO {dead} (id, queue, payload) VALUES (<id>, 'biz', <payload>)" with the dialect's
 * own placeholders, as a service writes them for its database. */
static void business_insert(char *sql, size_t cap) {
  tabq_stmt st;
  tabq_sql_init(&st, probe_host());
  const tabq_dialect_v1 *d = kit.plugin.desc->dialect;
  d->placeholder(&st, TABQ_P_ID);
  tabq_sql_raw(&st, ", 'biz', ");
  d->placeholder(&st, TABQ_P_PAYLOAD);
  CU_ASSERT_FATAL(st.status == TABQ_OK && st.sql);
  snprintf(sql, cap, "INSERT INTO %s (id, queue, payload) VALUES (%s)", dead_name(), st.sql);
  tabq_sql_free(&st);
}

static const char *needs_placeholder(void) {
  return kit.plugin.placeholder ? NULL
                                : "the dialect has no placeholder member (ABI 1.1): the test "
                                  "cannot write the service's own SQL for it";
}

/* One business row and one job in a transaction, committed or rolled back. */
static void write_both(tabq_broker *b, long long id, bool commit) {
  char sql[512];
  business_insert(sql, sizeof sql);
  tabq_tx *tx = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  tabq_value params[] = {tabq_int(id), tabq_bytes("order", 5)};
  uint64_t changed = 0;
  int rc = tabq_tx_exec(tx, sql, params, 2, &changed, &err);
  if (rc)
    fprintf(stderr, "\ntabq_tx_exec: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(changed, 1);
  tabq_message m = message("q", "job", 3);
  rc = tabq_publish_tx(tx, jobs_table(), &m, &err);
  if (rc)
    fprintf(stderr, "\ntabq_publish_tx: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(commit ? tabq_commit(tx, &err) : tabq_rollback(tx, &err), TABQ_OK);
}

/* Commit keeps both rows; rollback leaves neither. */
static void commit_keeps_both_rollback_neither(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  write_both(b, 1, true);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead} WHERE queue = 'biz'"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q'"), 1);
  write_both(b, 2, false);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead} WHERE queue = 'biz'"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q'"), 1);
  close_broker(b);
}

/* A subscription that polls once a minute hears of a job only by its wake-up: none while the
 * transaction is open, none after a rollback, one with the commit. */
static void wake_up_comes_with_the_commit(void) {
  fresh_db();
  tabq_broker *b = connect_broker(60000);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  sleep_ms(300); /* its first claim found nothing: it waits out the minute */
  tabq_message m = message("q", "job", 3);
  tabq_tx *tx = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_publish_tx(tx, jobs_table(), &m, &err), TABQ_OK);
  CU_ASSERT_FALSE(recorder_wait(&r, 1, 500)); /* uncommitted: nothing to claim, no wake-up */
  CU_ASSERT_EQUAL(tabq_rollback(tx, &err), TABQ_OK);
  CU_ASSERT_FALSE(recorder_wait(&r, 1, 700));
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_publish_tx(tx, jobs_table(), &m, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_commit(tx, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 1, 10000));
  CU_ASSERT_EQUAL(recorder_calls(&r), 1);
  close_broker(b);
  recorder_free(&r);
}

typedef struct other_thread {
  tabq_tx *tx;
  int rc;
  char message[sizeof err.message];
} other_thread;

static void *exec_elsewhere(void *arg) {
  other_thread *o = arg;
  tabq_error e;
  o->rc = tabq_tx_exec(o->tx, "SELECT 1", NULL, 0, NULL, &e);
  snprintf(o->message, sizeof o->message, "%s", e.message);
  return NULL;
}

static long long g_sum;

static int sum_ids(void *user, const tabq_value *cells, unsigned n) {
  (void)user;
  if (n == 2 && cells[0].type == TABQ_T_INT)
    g_sum += cells[0].u.i;
  return 0;
}

/* Rows read back inside the transaction; another thread and a call after the end are refused
 * with a clear error, and the transaction's rows stay as its end left them. */
static void used_by_its_thread_until_its_end(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  char sql[512];
  business_insert(sql, sizeof sql);
  tabq_tx *tx = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  for (long long id = 1; id <= 3; id++) {
    tabq_value params[] = {tabq_int(id), tabq_bytes("x", 1)};
    CU_ASSERT_EQUAL(tabq_tx_exec(tx, sql, params, 2, NULL, &err), TABQ_OK);
  }
  char query[256];
  snprintf(query, sizeof query, "SELECT id, queue FROM %s ORDER BY id", dead_name());
  g_sum = 0;
  CU_ASSERT_EQUAL(tabq_tx_query(tx, query, NULL, 0, 2, sum_ids, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL(g_sum, 6); /* its own uncommitted rows */
  other_thread o = {.tx = tx};
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, exec_elsewhere, &o), 0);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(o.rc, TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "belongs to another thread"));
  CU_ASSERT_EQUAL(tabq_commit(tx, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_tx_exec(tx, "SELECT 1", NULL, 0, NULL, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "has ended"));
  CU_ASSERT_EQUAL(tabq_commit(tx, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_rollback(tx, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 3);
  close_broker(b);
}

const kit_test transaction_tests[] = {
    {"publish in a transaction: commit keeps the business row and the job, rollback neither",
     commit_keeps_both_rollback_neither, ALL_FORMS, needs_placeholder, NULL},
    {"publish in a transaction: the wake-up comes with the commit, none with a rollback",
     wake_up_comes_with_the_commit, ALL_FORMS, NULL, NULL},
    {"a transaction: rows read back, refused from another thread and after its end",
     used_by_its_thread_until_its_end, ALL_FORMS, needs_placeholder, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
