/* Transactions of the service's own (the transactional outbox): a business row written with
 * tabq_tx_exec and a job published with tabq_publish_tx commit together or not at all; the job's
 * wake-up comes with the commit and never with a rollback; a transaction is used by its own
 * thread and not after its end. The business row goes into the test's {dead} table, which has
 * the queue table's columns and nothing reads during these tests. Transactional mode: the
 * handler's business row and job commit with an ack and never with another outcome, a lost
 * lease or a killed process; the handle is the handler's until its settlement. */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "kit.h"

static tabq_error err;

/* "INSERT INTO {dead} (id, queue, payload) VALUES (<id>, 'biz', <payload>)" with the dialect's
 * own placeholders, as a service writes them for its database. */
static void business_insert(char *sql, size_t cap) {
  tabq_stmt st;
  tabq_sql_init(&st, probe_host());
  const tabq_dialect_v1 *d = kit.plugin.desc->dialect;
  /* An ABI 1.1 member: its tests need it (needs_placeholder), and it is never read past a 1.0
   * plugin's table. */
  CU_ASSERT_FATAL(TABQ_HAS_MEMBER(d, tabq_dialect_v1, placeholder));
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

/* Publishing outlives a shutdown (tabq.h): a plain publish and a transaction of the service's
 * own both still write once the broker has shut down; subscribing is refused. */
static void publishing_after_shutdown(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  tabq_shutdown(b);
  tabq_message m = message("q", "job", 3);
  CU_ASSERT_EQUAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_OK);
  write_both(b, 1, true);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q'"), 2);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead} WHERE queue = 'biz'"), 1);
  tabq_subscription_options o = sub_options("q", recorder_handler, NULL);
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_CLOSED);
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

/* ---- Transactional mode: the handler's writes ride in its delivery's transaction ---------- */

/* Each row's payload names what its handler returns after writing a business row (id = row id
 * * 10 + attempt) and publishing a job to queue "next" in the delivery's transaction: "ack";
 * "retry" (then ack at the second attempt); "drop"; "later" (retry_after a minute). */
static tabq_outcome write_then(tabq_delivery *d, void *user) {
  (void)user;
  tabq_tx *tx = tabq_delivery_tx(d);
  long long id = tabq_delivery_id(d) * 10 + tabq_delivery_attempt(d);
  char sql[512];
  business_insert(sql, sizeof sql);
  tabq_value params[] = {tabq_int(id), tabq_bytes("order", 5)};
  tabq_error e;
  if (tabq_tx_exec(tx, sql, params, 2, NULL, &e))
    fprintf(stderr, "\ntabq_tx_exec in the handler: %s\n", e.message);
  tabq_message m = message("next", "job", 3);
  if (tabq_publish_tx(tx, jobs_table(), &m, &e))
    fprintf(stderr, "\ntabq_publish_tx in the handler: %s\n", e.message);
  size_t len;
  const char *what = tabq_delivery_payload(d, &len);
  if (len == 5 && !memcmp(what, "retry", 5) && tabq_delivery_attempt(d) == 1)
    return tabq_retry();
  if (len == 4 && !memcmp(what, "drop", 4))
    return tabq_drop();
  if (len == 5 && !memcmp(what, "later", 5))
    return tabq_retry_after(60000);
  return tabq_ack();
}

/* An ack commits the handler's row and job with the settlement; retry, drop and retry_after
 * leave neither, and the attempt still counts. */
static void transactional_outcomes(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  static const char *const what[] = {"ack", "retry", "drop", "later"};
  for (int i = 0; i < 4; i++) {
    tabq_message m = message("q", what[i], strlen(what[i]));
    CU_ASSERT_EQUAL_FATAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_OK);
  }
  tabq_subscription_options o = sub_options("q", write_then, NULL);
  o.transactional = true;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  /* Left in q: the "later" row alone, its attempt counted. */
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'q'", 1, 10000));
  tabq_stats st;
  stats_after(s, 5, &st);
  tabq_shutdown(b);
  CU_ASSERT_EQUAL(db_int("SELECT attempt FROM {jobs} WHERE queue = 'q'"), 2);
  /* The business rows of the ack (row 1, attempt 1) and of the retried row's second attempt
   * (row 2, attempt 2), and a job for each: nothing of the retry, the drop, the later. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 2);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead} WHERE id IN (11, 22)"), 2);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'next'"), 2);
  close_broker(b);
}

/* The lease form with a lease of one second: each transactional handler runs longer than half
 * a lease, so the extender moves its lease while its transaction is open (on SQLite, while
 * that transaction holds the file's one write lock). Every row is acked with its business row,
 * no lease is lost, and the drain keeps its pace: no extension may wait for a delivery whose
 * own transaction waits for it in turn. */
static tabq_outcome write_and_linger(tabq_delivery *d, void *user) {
  (void)user;
  char sql[512];
  business_insert(sql, sizeof sql);
  tabq_value params[] = {tabq_int(tabq_delivery_id(d)), tabq_bytes("order", 5)};
  tabq_error e;
  if (tabq_tx_exec(tabq_delivery_tx(d), sql, params, 2, NULL, &e))
    fprintf(stderr, "\ntabq_tx_exec in the handler: %s\n", e.message);
  sleep_ms(1600); /* longer than the lease: extended at 0.5, 1.0 and 1.5 s */
  return tabq_ack();
}

static void transactional_extensions(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  publish_n(b, "q", 4);
  tabq_subscription_options o = sub_options("q", write_and_linger, NULL);
  o.transactional = true;
  o.lease_s = 1;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  /* 4 x 1.6 s of handlers; the bound is for liveness only (a stalled extension waited out the
   * busy timeout for every row). */
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 15000));
  tabq_stats st;
  stats_after(s, 4, &st);
  close_broker(b);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead} WHERE queue = 'biz'"), 4);
  CU_ASSERT_EQUAL(st.acked, 4);
  CU_ASSERT_EQUAL(st.lease_lost, 0);
  CU_ASSERT_EQUAL(st.failed, 0);
  /* SQLite has one writer: an extension waits for the handler's transaction (which holds the
   * write lock, so no claim can take the row meanwhile either) and then finds the row acked.
   * Elsewhere the leases move while the handlers run. */
  if (strcmp(kit.ddl.name, "sqlite"))
    CU_ASSERT(st.extensions >= 1);
}

/* The lease form: a handler whose lease is taken away before its ack commits nothing of its
 * own: the ack fails with LEASE_LOST and its business row rolls back. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool in, go;
  int settled, calls;
} lapse = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static tabq_outcome write_then_wait(tabq_delivery *d, void *user) {
  (void)user;
  pthread_mutex_lock(&lapse.mu);
  bool first = lapse.calls++ == 0;
  pthread_mutex_unlock(&lapse.mu);
  if (!first)
    return tabq_ack(); /* claimed again after its loss: nothing written */
  char sql[512];
  business_insert(sql, sizeof sql);
  tabq_value params[] = {tabq_int(5), tabq_bytes("order", 5)};
  tabq_error e;
  tabq_tx_exec(tabq_delivery_tx(d), sql, params, 2, NULL, &e);
  pthread_mutex_lock(&lapse.mu);
  lapse.in = true;
  pthread_cond_broadcast(&lapse.cv);
  for (int waited = 0; !lapse.go && waited < 10000; waited += 10) { /* never for ever */
    pthread_mutex_unlock(&lapse.mu);
    sleep_ms(10);
    pthread_mutex_lock(&lapse.mu);
  }
  pthread_mutex_unlock(&lapse.mu);
  int rc = tabq_delivery_settle(d, tabq_ack(), &e);
  pthread_mutex_lock(&lapse.mu);
  lapse.settled = rc;
  pthread_mutex_unlock(&lapse.mu);
  return tabq_no_outcome();
}

/* A database with one writer at a time (its lease claims serial, and no row lock form: SQLite):
 * while a handler's transaction is open nothing else writes, so no claim can take its row. */
static const char *needs_other_writers(void) {
  const char *why = needs_placeholder();
  if (why)
    return why;
  if ((kit.plugin.desc->lease->flags & TABQ_CLAIM_SERIAL) && !kit.plugin.desc->rowlock)
    return "one writer at a time: while the handler's transaction is open no other claim can "
           "take its row, so the lease cannot be lost under it";
  return NULL;
}

static void transactional_lease_lost(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  lapse.in = lapse.go = false;
  lapse.calls = 0;
  lapse.settled = -1;
  tabq_subscription_options o = sub_options("q", write_then_wait, NULL);
  o.transactional = true;
  o.lease_s = 30;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  pthread_mutex_lock(&lapse.mu);
  while (!lapse.in)
    pthread_cond_wait(&lapse.cv, &lapse.mu);
  pthread_mutex_unlock(&lapse.mu);
  db_exec("UPDATE {jobs} SET locked_until = NULL"); /* as a claim after a lapse would */
  pthread_mutex_lock(&lapse.mu);
  lapse.go = true;
  pthread_cond_broadcast(&lapse.cv);
  pthread_mutex_unlock(&lapse.mu);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000)); /* claimed again, acked */
  tabq_shutdown(b);
  CU_ASSERT_EQUAL(lapse.settled, TABQ_LEASE_LOST);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 0);
  close_broker(b);
}

/* A child SIGKILLed while its handler's transaction holds a business row: the row never
 * commits, and the job returns to be claimed again. */
static void transactional_child_killed(void) {
  child c;
  tabq_broker *b = child_claims_one_row(&c, "tx-crash");
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 0); /* not committed */
  kill(c.pid, SIGKILL);
  child_wait(&c);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 15000)); /* after the lease, if any */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 0);
  close_broker(b);
  recorder_free(&r);
}

/* The handle outlives nothing: another thread is refused while the handler runs, and any call
 * after the settlement gets TRANSACTION_HELD; the handler cannot commit it itself. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tabq_tx *tx;
  int own_commit, elsewhere;
  bool done;
} kept = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static tabq_outcome keep_the_handle(tabq_delivery *d, void *user) {
  (void)user;
  tabq_tx *tx = tabq_delivery_tx(d);
  tabq_error e;
  int own = tabq_commit(tx, &e);
  other_thread o = {.tx = tx};
  pthread_t t;
  if (!pthread_create(&t, NULL, exec_elsewhere, &o))
    pthread_join(t, NULL);
  pthread_mutex_lock(&kept.mu);
  kept.tx = tx;
  kept.own_commit = own;
  kept.elsewhere = o.rc;
  kept.done = true;
  pthread_cond_broadcast(&kept.cv);
  pthread_mutex_unlock(&kept.mu);
  return tabq_ack();
}

static void transactional_handle_rules(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  kept.done = false;
  kept.tx = NULL;
  tabq_subscription_options o = sub_options("q", keep_the_handle, NULL);
  o.transactional = true;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  pthread_mutex_lock(&kept.mu);
  while (!kept.done)
    pthread_cond_wait(&kept.cv, &kept.mu);
  pthread_mutex_unlock(&kept.mu);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  tabq_stats st;
  stats_after(s, 1, &st);
  CU_ASSERT_PTR_NOT_NULL(kept.tx);
  CU_ASSERT_EQUAL(kept.own_commit, TABQ_INVALID);
  CU_ASSERT_EQUAL(kept.elsewhere, TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_tx_exec(kept.tx, "SELECT 1", NULL, 0, NULL, &err), TABQ_TRANSACTION_HELD);
  close_broker(b);
}

/* transactional misused is refused at subscribe, naming the table and the rule. */
static void transactional_refusals(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  tabq_subscription_options o = batch_options("q", ack_every_row, NULL, 4);
  o.transactional = true;
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "transactional serves a handler of one delivery"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_table()->name));
  if (kit.form == TABQ_FORM_LEASE) {
    o = sub_options("q", write_then, NULL);
    o.transactional = o.coalesce_acks = true;
    CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DECLARATION);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "exclude each other"));
  }
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 1);
  close_broker(b);
}

const kit_test transaction_tests[] = {
    {"transactional: an ack commits the handler's row and job, other outcomes leave none",
     transactional_outcomes, ALL_FORMS, needs_placeholder, "transactional mode"},
    {"transactional: a lease lost before the ack rolls the handler's writes back",
     transactional_lease_lost, TABQ_FORM_LEASE, needs_other_writers, "transactional mode"},
    {"transactional: leases extended while handlers' transactions are open, none lost",
     transactional_extensions, TABQ_FORM_LEASE, needs_placeholder, "transactional mode"},
    {"transactional: a child SIGKILLed mid-transaction leaves no business row",
     transactional_child_killed, ALL_FORMS, NULL, "transactional mode"},
    {"transactional: the handle is the handler's, until its settlement", transactional_handle_rules,
     ALL_FORMS, NULL, "transactional mode"},
    {"transactional misused is refused at subscribe", transactional_refusals, ALL_FORMS, NULL,
     "refusals at subscribe, nothing claimed"},
    {"publish in a transaction: commit keeps the business row and the job, rollback neither",
     commit_keeps_both_rollback_neither, ALL_FORMS, needs_placeholder, NULL},
    {"publish in a transaction: the wake-up comes with the commit, none with a rollback",
     wake_up_comes_with_the_commit, ALL_FORMS, NULL, NULL},
    {"a transaction: rows read back, refused from another thread and after its end",
     used_by_its_thread_until_its_end, ALL_FORMS, needs_placeholder, NULL},
    {"publishing outlives a shutdown: a publish and a transaction still write",
     publishing_after_shutdown, ALL_FORMS, needs_placeholder, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
