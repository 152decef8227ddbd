/* Claims of one row and of many. With one worker every claim is of one row, which the core runs
 * with the dialect's claim_one (ABI 1.3) where it has one; a batch handler's claim is of many,
 * which runs claim. Both must take the first due rows in claim order, count each row's attempt
 * once and, in the lease form, lease exactly those rows. The handlers wait at a turnstile while
 * the test reads the database, so every check runs on the test's own thread. Where deliveries
 * hold connections, two subscriptions of one broker hold no more than the pool less one
 * between them. */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "kit.h"

#define MAX_CALLS 8
#define MAX_ROWS 8

/* Handlers arrive one call at a time and wait until the test lets that call through. */
typedef struct turnstile {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned arrived, released;
  bool open; /* every call passes: the test has ended */
  int64_t ids[MAX_CALLS][MAX_ROWS];
  long attempts[MAX_CALLS][MAX_ROWS];
  unsigned rows[MAX_CALLS];
} turnstile;

static turnstile ts;
static tabq_error err;

static void turnstile_init(void) {
  memset(&ts, 0, sizeof ts);
  pthread_mutex_init(&ts.mu, NULL);
  pthread_cond_init(&ts.cv, NULL);
}

static void arrive(tabq_delivery *const *ds, size_t n) {
  pthread_mutex_lock(&ts.mu);
  unsigned call = ts.arrived++;
  if (call < MAX_CALLS) {
    ts.rows[call] = (unsigned)n;
    for (size_t i = 0; i < n && i < MAX_ROWS; i++) {
      ts.ids[call][i] = tabq_delivery_id(ds[i]);
      ts.attempts[call][i] = tabq_delivery_attempt(ds[i]);
    }
  }
  pthread_cond_broadcast(&ts.cv);
  while (!ts.open && ts.released <= call)
    pthread_cond_wait(&ts.cv, &ts.mu);
  pthread_mutex_unlock(&ts.mu);
}

static tabq_outcome one_at_turnstile(tabq_delivery *d, void *user) {
  (void)user;
  arrive(&d, 1);
  return tabq_ack();
}

static void batch_at_turnstile(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)user;
  arrive(ds, n);
  for (size_t i = 0; i < n; i++)
    out[i] = tabq_ack();
}

/* Waits until `calls` calls have arrived (a liveness bound, never a speed check). */
static bool wait_arrived(unsigned calls) {
  for (int waited = 0; waited < 10000; waited += 10) {
    pthread_mutex_lock(&ts.mu);
    bool in = ts.arrived >= calls;
    pthread_mutex_unlock(&ts.mu);
    if (in)
      return true;
    sleep_ms(10);
  }
  return false;
}

static void let_through(bool all) {
  pthread_mutex_lock(&ts.mu);
  ts.released++;
  ts.open |= all;
  pthread_cond_broadcast(&ts.cv);
  pthread_mutex_unlock(&ts.mu);
}

/* Six rows of queue q whose claim order is not their id order, and one of another queue:
 * priorities 2, 1, 0, 1, 0, 2 for ids 1 to 6 give the claim order 3, 5, 2, 4, 1, 6. */
static const int64_t claim_order[] = {3, 5, 2, 4, 1, 6};

static tabq_broker *publish_rows(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  static const int priority[] = {2, 1, 0, 1, 0, 2};
  for (int i = 0; i < 6; i++) {
    tabq_message m = message("q", "x", 1);
    m.priority = priority[i];
    CU_ASSERT_EQUAL_FATAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_OK);
  }
  tabq_message other = message("other", "y", 1);
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, jobs_table(), &other, &err), TABQ_OK);
  return b;
}

/* While `claimed` rows of q's `left` are in work: exactly they are claimed. The lease form shows
 * their leases, the lease and advisory forms their counted attempts (committed by the claim);
 * the row lock form's claim holds the rows locked, so only the others can be locked. */
static void expect_claimed(long long claimed, long long left) {
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q'"), left);
  if (kit.form == TABQ_FORM_LEASE) {
    CU_ASSERT_EQUAL(
        db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q' AND locked_until IS NOT NULL"),
        claimed);
  }
  if (kit.form != TABQ_FORM_ROWLOCK) {
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE queue = 'q' AND attempt > 1"),
                    claimed);
  } else {
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM (SELECT id FROM {jobs} WHERE queue = 'q' FOR "
                           "UPDATE SKIP LOCKED) free_rows"),
                    left - claimed);
  }
  /* The other queue's row is no claim's: not counted, not leased, not locked. */
  CU_ASSERT_EQUAL(db_int("SELECT attempt FROM {jobs} WHERE queue = 'other'"), 1);
  if (kit.form == TABQ_FORM_LEASE)
    CU_ASSERT_EQUAL(
        db_int("SELECT count(*) FROM {jobs} WHERE queue = 'other' AND locked_until IS NULL"), 1);
  if (kit.form == TABQ_FORM_ROWLOCK)
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM (SELECT id FROM {jobs} WHERE queue = 'other' FOR "
                           "UPDATE SKIP LOCKED) free_rows"),
                    1);
}

/* The rows of a batch (its ids, n of them) are the ones claimed: the lease and advisory forms
 * show them counted (and leased), the row lock form holds each locked. With expect_claimed's
 * counts this fails a claim that stamps one row for another (stamp_ids, ABI 1.4, stamps a
 * batch's rows in one statement by their ids). */
static void expect_batch_stamped(const int64_t *ids, unsigned n) {
  char list[MAX_ROWS * 24] = "", sql[sizeof list + 256];
  for (unsigned i = 0; i < n && i < MAX_ROWS; i++) {
    size_t at = strlen(list);
    snprintf(list + at, sizeof list - at, "%s%lld", i ? ", " : "", (long long)ids[i]);
  }
  if (kit.form == TABQ_FORM_ROWLOCK)
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT id FROM {jobs} WHERE id IN (%s) FOR UPDATE SKIP "
             "LOCKED) free_rows",
             list);
  else
    snprintf(sql, sizeof sql, "SELECT count(*) FROM {jobs} WHERE id IN (%s) AND attempt = 2%s",
             list, kit.form == TABQ_FORM_LEASE ? " AND locked_until IS NOT NULL" : "");
  long long want = kit.form == TABQ_FORM_ROWLOCK ? 0 : (long long)n;
  long long got = db_int(sql);
  if (got != want)
    fprintf(stderr, "\nthe batch's rows (%s): %lld of %u %s\n", list, got, n,
            kit.form == TABQ_FORM_ROWLOCK ? "free to lock" : "stamped");
  CU_ASSERT_EQUAL(got, want);
}

/* One worker: each claim takes the next row in claim order, and that row alone. */
static void claims_of_one_row(void) {
  tabq_broker *b = publish_rows();
  turnstile_init();
  tabq_subscription_options o = sub_options("q", one_at_turnstile, NULL);
  /* No row ahead of the worker, so that each claim's rows are the handler's: the adaptive
   * look-ahead hands rows out in the same claim order (the prefetch group). */
  o.lookahead = TABQ_LOOKAHEAD_OFF;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  for (unsigned k = 0; k < 6; k++) {
    if (!wait_arrived(k + 1)) {
      CU_FAIL("a claim of one row did not reach the handler");
      break;
    }
    CU_ASSERT_EQUAL(ts.rows[k], 1);
    CU_ASSERT_EQUAL(ts.ids[k][0], claim_order[k]);
    CU_ASSERT_EQUAL(ts.attempts[k][0], 1);
    expect_claimed(1, 6 - k);
    let_through(false);
  }
  let_through(true);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'q'", 0, 10000));
  close_broker(b);
}

/* True when the first n ids of `got` are those of `want`, in that order: a batch handler gets
 * its rows in claim order. */
static bool same_rows(const int64_t *got, const int64_t *want, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (got[i] != want[i])
      return false;
  return true;
}

/* A batch handler: one claim takes the first due rows in claim order, as many as the batch
 * holds, and only those, and hands them over in that order; the next claim the rest. */
static void claims_of_many_rows(void) {
  tabq_broker *b = publish_rows();
  turnstile_init();
  tabq_subscription_options o = batch_options("q", batch_at_turnstile, NULL, 4);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  static const unsigned sizes[] = {4, 2};
  const int64_t *from = claim_order;
  long long left = 6;
  for (unsigned k = 0; k < 2; k++) {
    if (!wait_arrived(k + 1)) {
      CU_FAIL("a claim of many rows did not reach the batch handler");
      break;
    }
    CU_ASSERT_EQUAL(ts.rows[k], sizes[k]);
    bool same = ts.rows[k] == sizes[k] && same_rows(ts.ids[k], from, sizes[k]);
    if (!same)
      fprintf(stderr, "\nbatch %u holds ids %lld %lld %lld %lld (of %u)\n", k + 1,
              (long long)ts.ids[k][0], (long long)ts.ids[k][1], (long long)ts.ids[k][2],
              (long long)ts.ids[k][3], ts.rows[k]);
    CU_ASSERT(same);
    for (unsigned i = 0; i < sizes[k] && i < ts.rows[k]; i++)
      CU_ASSERT_EQUAL(ts.attempts[k][i], 1);
    expect_claimed(sizes[k], left);
    expect_batch_stamped(ts.ids[k], ts.rows[k]);
    from += sizes[k];
    left -= sizes[k];
    let_through(false);
  }
  let_through(true);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'q'", 0, 10000));
  close_broker(b);
}

/* ---- Connections shared by subscriptions ------------------------------------------------- */

/* Two subscriptions of three workers on a broker of four connections, in a form whose
 * deliveries hold a connection: together they hold at most three (the pool less one), so every
 * handler's publish finds a connection. */
static struct {
  pthread_mutex_t mu;
  tabq_broker *b;
  unsigned in, most, failed;
} sharing = {.mu = PTHREAD_MUTEX_INITIALIZER};

static tabq_outcome publish_then_ack(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  pthread_mutex_lock(&sharing.mu);
  if (++sharing.in > sharing.most)
    sharing.most = sharing.in;
  pthread_mutex_unlock(&sharing.mu);
  sleep_ms(100); /* long enough for the other workers to claim meanwhile */
  tabq_message m = message("done", "x", 1);
  tabq_error e;
  int rc = tabq_publish(sharing.b, jobs_table(), &m, &e);
  if (rc)
    fprintf(stderr, "\npublish from a handler: %s\n", e.message);
  pthread_mutex_lock(&sharing.mu);
  sharing.in--;
  sharing.failed += rc != TABQ_OK;
  pthread_mutex_unlock(&sharing.mu);
  return rc ? tabq_retry() : tabq_ack();
}

static void subscriptions_share_the_pool(void) {
  fresh_db();
  tabq_broker_options bo = broker_options(20, 4);
  bo.acquire_timeout_ms = 3000; /* a publish that finds no connection fails within the test */
  tabq_broker *b = connect_broker_with(&bo);
  sharing.b = b;
  sharing.in = sharing.most = sharing.failed = 0;
  db_fill("a", 6);
  db_fill("b", 6);
  static const char *const queues[] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    tabq_subscription_options o = sub_options(queues[i], publish_then_ack, NULL);
    o.workers = 3;
    CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  }
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'done'", 12, 20000));
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue IN ('a', 'b')", 0, 20000));
  tabq_shutdown(b);
  CU_ASSERT_EQUAL(sharing.failed, 0);
  if (sharing.most > 3)
    fprintf(stderr, "\n%u deliveries held connections at once, of a pool of 4\n", sharing.most);
  CU_ASSERT(sharing.most <= 3);
  CU_ASSERT(sharing.most >= 2); /* they did run side by side */
  close_broker(b);
}

/* ---- The member itself ------------------------------------------------------------------------
 */

static tabq_build_fn claim_of(const kit_plugin *p, tabq_form form, bool one) {
  if (form == TABQ_FORM_ROWLOCK)
    return one ? (TABQ_HAS_MEMBER(p->desc->rowlock, tabq_rowlock_v1, claim_one)
                      ? p->desc->rowlock->claim_one
                      : NULL)
               : p->desc->rowlock->claim;
  return one ? (TABQ_HAS_MEMBER(p->desc->lease, tabq_lease_v1, claim_one)
                    ? p->desc->lease->claim_one
                    : NULL)
             : p->desc->lease->claim;
}

static const char *needs_claim_one(void) {
  if (!claim_of(&kit.plugin, kit.form, true))
    return "the plugin has no claim_one in this form (ABI 1.3): claims of one row run claim with "
           "LIMIT 1, which the other tests hold";
  return NULL;
}

static bool binds(const tabq_stmt *st, uint16_t param) {
  for (unsigned i = 0; i < st->nparams; i++)
    if (st->params[i] == param)
      return true;
  return false;
}

/* Whether the form's claim_one stamps itself (TABQ_CLAIM_ONE_STAMPS, ABI 1.4). */
static bool one_stamps(void) {
  const kit_plugin *p = &kit.plugin;
  uint32_t flags = kit.form == TABQ_FORM_ROWLOCK ? p->desc->rowlock->flags : p->desc->lease->flags;
  return (flags & TABQ_CLAIM_ONE_STAMPS) != 0;
}

/* claim_one builds for the kit's tables (or declines one, writing no SQL), and binds nothing
 * claim does not (the core binds it with the values of a claim), but the new lease where it
 * writes the lease itself. */
static void claim_one_binds_what_claim_binds(void) {
  fresh_db();
  for (int fifo = 0; fifo < 2; fifo++) {
    tabq_table t = *jobs_table();
    t.fifo = fifo;
    tabq_build b = {.table = &t, .form = kit.form};
    if (fifo && kit.plugin.desc->dialect->check(&b) == TABQ_DIALECT)
      continue; /* FIFO tables declined by the dialect's check */
    tabq_stmt claim, one;
    tabq_sql_init(&claim, probe_host());
    tabq_sql_init(&one, probe_host());
    int rc = claim_of(&kit.plugin, kit.form, false)(&b, &claim);
    int rc_one = claim_of(&kit.plugin, kit.form, true)(&b, &one);
    if (rc_one)
      fprintf(stderr, "\nclaim_one refused %s table %s: %s\n", fifo ? "the FIFO" : "the", t.name,
              probe_last_failure());
    CU_ASSERT_EQUAL(rc, TABQ_OK);
    CU_ASSERT_EQUAL(rc_one, TABQ_OK);
    CU_ASSERT_EQUAL(one.status, TABQ_OK);
    for (unsigned i = 0; one.sql && i < one.nparams; i++) {
      bool bound = binds(&claim, one.params[i]) || (one.params[i] == TABQ_P_LEASE_UNTIL &&
                                                    kit.form == TABQ_FORM_LEASE && one_stamps());
      if (!bound)
        fprintf(stderr, "\nclaim_one binds parameter id %u, which claim does not bind\n",
                one.params[i]);
      CU_ASSERT(bound);
    }
    tabq_sql_free(&claim);
    tabq_sql_free(&one);
  }
}

/* A claim passes over rows it knows were settled here since its read began (advisory: their
 * keys would be tried for nothing), never over a row written again under a settled row's id. */
static void id_written_again_is_claimed(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 1);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT_FATAL(recorder_wait(&r, 1, 10000));
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  char sql[160];
  snprintf(sql, sizeof sql, "INSERT INTO {jobs} (id, queue, payload) VALUES (%lld, 'q', 'again')",
           (long long)r.ids[0]);
  db_exec(sql);
  CU_ASSERT(recorder_wait(&r, 2, 10000));
  close_broker(b);
  CU_ASSERT_EQUAL(r.ids[1], r.ids[0]);
  CU_ASSERT_STRING_EQUAL(r.payloads[1], "again");
  recorder_free(&r);
}

/* ABI 1.8: where the plugin's form declares TABQ_PROJECTS_DUE. */
static const char *needs_due_time(void) {
  static char why[160];
  const tabq_plugin *p = kit.plugin.desc;
  unsigned minor = TABQ_ABI_MINOR_OF(p->abi);
  if (minor < 8) {
    snprintf(why, sizeof why, "queue latency: plugin ABI %u.%u has no TABQ_PROJECTS_DUE (ABI 1.8)",
             TABQ_ABI_MAJOR_OF(p->abi), minor);
    return why;
  }
  uint32_t flags = kit.form == TABQ_FORM_ROWLOCK ? p->rowlock->flags
                   : kit.form == TABQ_FORM_LEASE ? p->lease->flags
                                                 : p->advisory->flags;
  if (flags & TABQ_PROJECTS_DUE)
    return NULL;
  snprintf(why, sizeof why,
           "queue latency: the plugin's %s table does not declare TABQ_PROJECTS_DUE, so its "
           "claims bring no due time",
           form_name(kit.form));
  return why;
}

/* A claim brings the row's due time, its retry_after, after the projection (ABI 1.8), which the
 * core reads as a time: a row published due at once and claimed at once waited well under a
 * second. A time the core misread would count from 1970, one it could not read no sample. */
static void claim_brings_the_due_time(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  tabq_message m = message("q", "x", 1);
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_OK);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT_FATAL(recorder_wait(&r, 1, 10000));
  tabq_histogram h; /* its sample is taken before the handler's call */
  tabq_subscription_queue_latencies(s, &h, sizeof h);
  close_broker(b);
  recorder_free(&r);
  CU_ASSERT_EQUAL(h.count, 1);
  CU_ASSERT(h.sum_seconds >= 0 && h.sum_seconds < 1.0);
  if (h.count != 1 || h.sum_seconds >= 1.0)
    fprintf(stderr, "\nqueue latency: %llu samples, %.3f s in all\n", (unsigned long long)h.count,
            h.sum_seconds);
}

const kit_test claim_tests[] = {
    {"two subscriptions share the pool: together they hold at most its size less one",
     subscriptions_share_the_pool, TABQ_FORM_ROWLOCK | TABQ_FORM_ADVISORY, NULL, NULL},
    {"claims of one row: one worker takes each row alone, in claim order", claims_of_one_row,
     ALL_FORMS | KIT_SMOKE, NULL, NULL},
    {"claims of many rows: a batch takes the first rows in claim order, only those, in that order",
     claims_of_many_rows, ALL_FORMS | KIT_SMOKE, NULL, "batch handlers"},
    {"claim_one builds for the tables and binds what claim binds", claim_one_binds_what_claim_binds,
     TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, needs_claim_one, NULL},
    {"a row written again under a settled row's id is claimed again", id_written_again_is_claimed,
     ALL_FORMS, NULL, NULL},
    {"a claim brings the row's due time: the queue latency of a row due now is under a second",
     claim_brings_the_due_time, ALL_FORMS | KIT_SMOKE, needs_due_time, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
