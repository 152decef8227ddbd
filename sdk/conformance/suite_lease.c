/* The lease form under time, crashes and concurrency: extensions keep a long handler's row, a
 * lapsed lease goes to another claim and the late ack fails with LEASE_LOST and changes nothing,
 * a SIGTERM lets work settle, a failed settlement keeps the row until its lease ends, four
 * workers handle each of 10,000 rows exactly once, and so they do with their acks coalesced,
 * where a lost lease still fails only its own row. */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "kit.h"

static tabq_error err;

static tabq_outcome slow_ack(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r, (void)d, (void)call;
  sleep_ms(3200); /* more than three leases of 1 s */
  return tabq_ack();
}

static void extensions_keep_the_row(void) {
  fresh_db();
  tabq_broker *a = connect_broker(50), *other = connect_broker(50);
  recorder slow, rival;
  recorder_init(&slow);
  recorder_init(&rival);
  slow.script = slow_ack;
  publish_n(a, "q", 1);
  tabq_subscription_options o = sub_options("q", recorder_handler, &slow);
  o.lease_s = 1;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(a, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT_FATAL(
      wait_count("SELECT count(*) FROM {jobs} WHERE locked_until IS NOT NULL", 1, 10000));
  /* a second broker claims the same queue all along */
  o.user = &rival;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(other, jobs_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 15000));
  tabq_stats st;
  stats_after(s, 1, &st);
  CU_ASSERT_EQUAL(st.acked, 1);
  CU_ASSERT(st.extensions >= 4);
  CU_ASSERT_EQUAL(st.lease_lost, 0);
  CU_ASSERT_EQUAL(recorder_calls(&rival), 0);
  close_broker(other);
  close_broker(a);
  recorder_free(&slow);
  recorder_free(&rival);
}

typedef struct holder {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool claimed, release;
  long attempt;
} holder;

static tabq_outcome hold_until_told(tabq_delivery *d, void *user) {
  holder *h = user;
  pthread_mutex_lock(&h->mu);
  h->claimed = true;
  h->attempt = tabq_delivery_attempt(d);
  pthread_cond_broadcast(&h->cv);
  while (!h->release)
    pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
  return tabq_ack();
}

/* A handler that waits until its delivery says the hold is gone (a lease taken away, seen at
 * the next extension), and reports whether it came to that. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long long id;
  bool told_gone;
  int calls;
} lost = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static tabq_outcome wait_for_the_loss(tabq_delivery *d, void *user) {
  (void)user;
  pthread_mutex_lock(&lost.mu);
  bool first = lost.calls++ == 0;
  lost.id = tabq_delivery_id(d);
  pthread_cond_broadcast(&lost.cv);
  pthread_mutex_unlock(&lost.mu);
  if (!first)
    return tabq_ack(); /* the row claimed again after its loss */
  bool gone = false;
  for (int waited = 0; waited < 5000 && !gone; waited += 20) {
    gone = !tabq_delivery_held(d);
    if (!gone)
      sleep_ms(20);
  }
  pthread_mutex_lock(&lost.mu);
  lost.told_gone = gone;
  pthread_mutex_unlock(&lost.mu);
  return tabq_ack(); /* fails LEASE_LOST: the row is someone else's */
}

/* A lease taken away (as another claim after a lapse takes it): the next extension finds the
 * token gone and the delivery says its hold ended, while the handler still runs. */
static void a_lost_lease_is_known_in_the_handler(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  lost.id = 0;
  lost.calls = 0;
  lost.told_gone = false;
  tabq_subscription_options o = sub_options("q", wait_for_the_loss, NULL);
  o.lease_s = 1; /* an extension every half second */
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  pthread_mutex_lock(&lost.mu);
  while (!lost.id)
    pthread_cond_wait(&lost.cv, &lost.mu);
  pthread_mutex_unlock(&lost.mu);
  db_exec("UPDATE {jobs} SET locked_until = NULL");
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 15000)); /* claimed again, acked */
  tabq_shutdown(b);
  CU_ASSERT_TRUE(lost.told_gone);
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT(st.lease_lost >= 1);
  close_broker(b);
}

/* The handler holds its row until told, then acks it itself and keeps the result; every call
 * is counted. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls, settled;
  bool go;
} twice = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static tabq_outcome hold_then_ack(tabq_delivery *d, void *user) {
  (void)user;
  pthread_mutex_lock(&twice.mu);
  bool first = twice.calls++ == 0;
  pthread_cond_broadcast(&twice.cv);
  for (int waited = 0; first && !twice.go && waited < 10000; waited += 10) {
    pthread_mutex_unlock(&twice.mu);
    sleep_ms(10);
    pthread_mutex_lock(&twice.mu);
  }
  pthread_mutex_unlock(&twice.mu);
  tabq_error e;
  int rc = tabq_delivery_settle(d, tabq_ack(), &e);
  if (first) {
    pthread_mutex_lock(&twice.mu);
    twice.settled = rc;
    pthread_mutex_unlock(&twice.mu);
  }
  return tabq_no_outcome();
}

/* A lease that ends under a running handler (here taken away, as a frozen process's lapses)
 * makes the row claimable again; this subscription's other worker claims it, but it is not
 * handed out twice: the running delivery takes the new lease, and its ack holds. */
static void a_row_in_work_is_not_handed_out_twice(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  db_fill("q", 1);
  twice.calls = 0;
  twice.go = false;
  twice.settled = -1;
  tabq_subscription_options o = sub_options("q", hold_then_ack, NULL);
  o.workers = 2;
  o.lease_s = 30;
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  pthread_mutex_lock(&twice.mu);
  while (!twice.calls)
    pthread_cond_wait(&twice.cv, &twice.mu);
  pthread_mutex_unlock(&twice.mu);
  db_exec("UPDATE {jobs} SET locked_until = NULL");
  /* The other worker's claims take the row again (and lease it anew) within a few polls. */
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE locked_until IS NOT NULL", 1, 5000));
  sleep_ms(300);
  pthread_mutex_lock(&twice.mu);
  int calls = twice.calls;
  twice.go = true;
  pthread_mutex_unlock(&twice.mu);
  CU_ASSERT_EQUAL(calls, 1);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  tabq_shutdown(b);
  CU_ASSERT_EQUAL(twice.settled, TABQ_OK);
  CU_ASSERT_EQUAL(twice.calls, 1);
  close_broker(b);
}

static void let_go(holder *h) {
  pthread_mutex_lock(&h->mu);
  h->release = true;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

static void lapsed_lease_ack_fails_and_changes_nothing(void) {
  child c;
  tabq_broker *b = child_claims_one_row(&c, "lapse");
  char line[64];
  /* The child freezes in its handler (as a stopped VM or a long GC pause would): no extension
   * runs, and its 1 s lease ends. */
  kill(c.pid, SIGSTOP);
  static holder h;
  memset(&h, 0, sizeof h);
  pthread_mutex_init(&h.mu, NULL);
  pthread_cond_init(&h.cv, NULL);
  tabq_subscription_options o = sub_options("q", hold_until_told, &h);
  o.lease_s = 30;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  pthread_mutex_lock(&h.mu);
  while (!h.claimed)
    pthread_cond_wait(&h.cv, &h.mu);
  pthread_mutex_unlock(&h.mu);
  CU_ASSERT_EQUAL(h.attempt, 2);
  char lease_before[40];
  db_lease_text(lease_before, sizeof lease_before);
  /* The child wakes and acks late. */
  kill(c.pid, SIGCONT);
  child_say(&c, "go");
  bool answered = child_line(&c, line, sizeof line, 10000);
  CU_ASSERT(answered);
  CU_ASSERT_STRING_EQUAL(answered ? line : "", "LEASE_LOST");
  int status = child_wait(&c);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* ... and changed nothing: the row is there, under this process's lease. */
  char lease_after[40];
  db_lease_text(lease_after, sizeof lease_after);
  CU_ASSERT_STRING_EQUAL(lease_before, lease_after);
  CU_ASSERT_EQUAL(db_int("SELECT attempt FROM {jobs}"), 3);
  let_go(&h);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  close_broker(b);
}

static void sigterm_lets_work_settle(void) {
  child c;
  tabq_broker *b = child_claims_one_row(&c, "run");
  close_broker(b);
  char line[64];
  kill(c.pid, SIGTERM); /* in the middle of the handler's 300 ms */
  CU_ASSERT_FATAL(child_line(&c, line, sizeof line, 10000));
  CU_ASSERT_STRING_EQUAL(line, "stopped 1");
  int status = child_wait(&c);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
}

static tabq_outcome always_retry(recorder *r, tabq_delivery *d, unsigned call) {
  (void)r, (void)d, (void)call;
  return tabq_retry();
}

static void failed_settlement_keeps_row_until_lease_ends(void) {
  fresh_db();
  tabq_broker *b = connect_broker(50);
  publish_n(b, "q", 1);
  /* The dead letter table already holds id 1, so moving row 1 there fails on its key. */
  db_exec("INSERT INTO {dead} (id, queue, payload) VALUES (1, 'x', 'x')");
  recorder r;
  recorder_init(&r);
  r.script = always_retry;
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.lease_s = 1;
  o.max_attempts = 1;
  o.dead_letter_table = dead_name();
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 1, 10000));
  tabq_stats st = {0};
  for (int i = 0; i < 2000 && !st.failed; i++) {
    stats_of(s, &st);
    sleep_ms(5);
  }
  CU_ASSERT_FATAL(st.failed > 0);
  /* The transaction rolled back whole: the row is still here, still leased, attempt spent. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE locked_until IS NOT NULL"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 1);
  CU_ASSERT_EQUAL(recorder_calls(&r), 1);
  /* After the lease it is claimed again. */
  CU_ASSERT(recorder_wait(&r, 2, 10000));
  CU_ASSERT_EQUAL(r.attempts[1], 2);
  close_broker(b);
  recorder_free(&r);
}

#define MANY 10000

/* Four workers drain MANY rows, each handled and acked exactly once; `coalesce` gathers their
 * acks (coalesce_acks, a 2 ms window). Returns the subscription's counters. */
static tabq_stats drain_each_row_once(bool coalesce) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", MANY);
  once_reset(MANY);
  tabq_subscription_options o = sub_options("q", once_handler, NULL);
  o.workers = 4;
  o.coalesce_acks = coalesce;
  o.coalesce_window_us = coalesce ? 2000 : 0;
  tabq_subscription *s;
  tabq_stats st = {0};
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 120000));
  tabq_shutdown(b);
  once_check();
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.acked, MANY);
  CU_ASSERT_EQUAL(st.lease_lost + st.failed, 0);
  close_broker(b);
  return st;
}

static void four_workers_each_row_once(void) {
  drain_each_row_once(false);
}

/* The first batch waits in its handler while the test takes the third row's lease away (as
 * another claim after a lapse would): the kit's connection is the test thread's alone. */
typedef struct batch_gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long long third_id; /* set by the handler: the row to take away */
  bool taken;         /* set by the test once it did */
} batch_gate;

static batch_gate lease_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false};

static void lose_one_lease(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user) {
  (void)user;
  pthread_mutex_lock(&lease_gate.mu);
  if (!lease_gate.third_id && n >= 3) {
    lease_gate.third_id = tabq_delivery_id(ds[2]);
    pthread_cond_broadcast(&lease_gate.cv);
    while (!lease_gate.taken)
      pthread_cond_wait(&lease_gate.cv, &lease_gate.mu);
  }
  pthread_mutex_unlock(&lease_gate.mu);
  for (size_t i = 0; i < n; i++)
    out[i] = tabq_ack();
}

/* A batch's settlements commit together, each still checking its own token: the row whose
 * lease was taken fails alone with LEASE_LOST, the others are acked, and the lost row comes back
 * to be claimed again. */
static void batch_settles_together_and_loses_one(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 6);
  lease_gate.third_id = 0;
  lease_gate.taken = false;
  tabq_subscription_options o = batch_options("q", lose_one_lease, NULL, 6);
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  pthread_mutex_lock(&lease_gate.mu);
  while (!lease_gate.third_id)
    pthread_cond_wait(&lease_gate.cv, &lease_gate.mu);
  char sql[160];
  snprintf(sql, sizeof sql, "UPDATE {jobs} SET %s = NULL WHERE id = %lld",
           jobs_table()->locked_until.name, lease_gate.third_id);
  db_exec(sql);
  lease_gate.taken = true;
  pthread_cond_broadcast(&lease_gate.cv);
  pthread_mutex_unlock(&lease_gate.mu);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  tabq_shutdown(b);
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.lease_lost, 1);
  CU_ASSERT_EQUAL(st.acked, 6);
  CU_ASSERT_EQUAL(st.failed, 0);
  CU_ASSERT_EQUAL(st.claimed, 7);
  close_broker(b);
}

/* Coalesced acks (coalesce_acks): four workers' acks settle in shared transactions, and each
 * row is still handled and acked exactly once. */
static void coalesced_acks_each_row_once(void) {
  tabq_stats st = drain_each_row_once(true);
  CU_ASSERT(st.coalesced > 0);
}

/* Three handlers wait until all three hold a row, the test takes the second one's lease away,
 * then each acks through tabq_delivery_settle and keeps the result of its first call. */
#define GATHERED 3
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned arrived;
  long long ids[GATHERED];
  int rcs[GATHERED];
  bool taken;
} ack_gate = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static tabq_outcome ack_at_gate(tabq_delivery *d, void *user) {
  (void)user;
  pthread_mutex_lock(&ack_gate.mu);
  unsigned me = ack_gate.arrived < GATHERED ? ack_gate.arrived++ : GATHERED;
  if (me < GATHERED)
    ack_gate.ids[me] = tabq_delivery_id(d);
  pthread_cond_broadcast(&ack_gate.cv);
  while (me < GATHERED && !ack_gate.taken)
    pthread_cond_wait(&ack_gate.cv, &ack_gate.mu);
  pthread_mutex_unlock(&ack_gate.mu);
  tabq_error e;
  int rc = tabq_delivery_settle(d, tabq_ack(), &e);
  if (me < GATHERED) {
    pthread_mutex_lock(&ack_gate.mu);
    ack_gate.rcs[me] = rc;
    pthread_mutex_unlock(&ack_gate.mu);
  }
  return tabq_ack(); /* settled already: not tried again */
}

/* Acks gathered into one transaction still check each row's token: the row whose lease was
 * taken fails alone with LEASE_LOST, the other two are acked with it in one commit. */
static void coalesced_acks_lose_one(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", GATHERED);
  memset(ack_gate.ids, 0, sizeof ack_gate.ids);
  ack_gate.arrived = 0;
  ack_gate.taken = false;
  tabq_subscription_options o = sub_options("q", ack_at_gate, NULL);
  o.workers = GATHERED;
  o.coalesce_acks = true;
  o.coalesce_window_us = 1000000; /* all three join: the flush starts once every ack is in */
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  pthread_mutex_lock(&ack_gate.mu);
  while (ack_gate.arrived < GATHERED)
    pthread_cond_wait(&ack_gate.cv, &ack_gate.mu);
  char sql[160];
  snprintf(sql, sizeof sql, "UPDATE {jobs} SET %s = NULL WHERE id = %lld",
           jobs_table()->locked_until.name, ack_gate.ids[1]);
  db_exec(sql);
  ack_gate.taken = true;
  pthread_cond_broadcast(&ack_gate.cv);
  pthread_mutex_unlock(&ack_gate.mu);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  tabq_shutdown(b);
  CU_ASSERT_EQUAL(ack_gate.rcs[0], TABQ_OK);
  CU_ASSERT_EQUAL(ack_gate.rcs[1], TABQ_LEASE_LOST);
  CU_ASSERT_EQUAL(ack_gate.rcs[2], TABQ_OK);
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.lease_lost, 1);
  CU_ASSERT_EQUAL(st.acked, GATHERED); /* the lost row, claimed again, acked on its own */
  CU_ASSERT_EQUAL(st.failed, 0);
  CU_ASSERT(st.coalesced >= GATHERED);
  close_broker(b);
}

/* coalesce_acks serves handlers of one delivery in the lease form; anything else is refused at
 * subscribe, naming the table and the rule, and claims nothing (the attempt stays 1). */
static void coalesced_acks_refusals(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 1);
  tabq_subscription_options o = sub_options("q", ack_at_gate, NULL);
  if (kit.form != TABQ_FORM_LEASE) {
    o.coalesce_acks = true;
    CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DECLARATION);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "coalesce_acks serves the lease form"));
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 1);
    close_broker(b);
    return;
  }
  o = batch_options("q", lose_one_lease, NULL, 4);
  o.coalesce_acks = true;
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "coalesce_acks serves a handler of one delivery"));
  o = sub_options("q", ack_at_gate, NULL);
  o.coalesce_window_us = 10;
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "coalesce_window_us needs coalesce_acks"));
  o.coalesce_acks = true;
  o.coalesce_window_us = 1000001;
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_table()->name));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 1);
  close_broker(b);
}

const kit_test lease_tests[] = {
    {"a row whose lease ended under its handler is not handed out twice by its subscription",
     a_row_in_work_is_not_handed_out_twice, TABQ_FORM_LEASE, NULL, "a delivery knows its hold"},
    {"a lease taken away: the handler learns it at the next extension",
     a_lost_lease_is_known_in_the_handler, TABQ_FORM_LEASE, NULL, "a delivery knows its hold"},
    {"coalesced acks: workers(4) handle each of 10,000 rows exactly once, acks shared",
     coalesced_acks_each_row_once, TABQ_FORM_LEASE, NULL, "coalesced acks"},
    {"coalesced acks: a row whose lease was taken fails alone", coalesced_acks_lose_one,
     TABQ_FORM_LEASE, NULL, "coalesced acks"},
    {"coalesce_acks misused is refused at subscribe", coalesced_acks_refusals, TABQ_FORM_LEASE,
     NULL, "coalesced acks"},
    {"coalesce_acks outside the lease form is refused at subscribe", coalesced_acks_refusals,
     TABQ_FORM_ROWLOCK | TABQ_FORM_ADVISORY, NULL, "refusals at subscribe, nothing claimed"},
    {"a batch settles together; a row whose lease was taken fails alone",
     batch_settles_together_and_loses_one, TABQ_FORM_LEASE, NULL, "batch handlers"},
    {"extensions keep a handler three leases long", extensions_keep_the_row,
     TABQ_FORM_LEASE | KIT_SMOKE, NULL, NULL},
    {"a lapsed lease: the late ack fails with LEASE_LOST and changes nothing",
     lapsed_lease_ack_fails_and_changes_nothing, TABQ_FORM_LEASE, NULL, NULL},
    {"SIGTERM lets the delivery in work settle", sigterm_lets_work_settle, TABQ_FORM_LEASE, NULL,
     NULL},
    {"a failed settlement keeps the row until its lease ends",
     failed_settlement_keeps_row_until_lease_ends, TABQ_FORM_LEASE, NULL, NULL},
    {"workers(4) handle each of 10,000 rows exactly once", four_workers_each_row_once,
     TABQ_FORM_LEASE, NULL, "workers and processes: each row once"},
    {NULL, NULL, 0, NULL, NULL},
};
