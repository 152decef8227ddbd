/* Partition keys: a delivery carries its row's key; workers_by_key(n) runs the rows of one key
 * in claim order on one worker, never two at once, and spreads the keys over the n workers;
 * misused, it is refused at subscribe with nothing claimed. */
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

static tabq_error err;

static void publish_keyed(tabq_broker *b, const char *key, const char *payload) {
  tabq_message m = message("q", payload, strlen(payload));
  m.partition_key = key;
  int rc = tabq_publish(b, keyed_table(), &m, &err);
  if (rc)
    fprintf(stderr, "\npublish: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

/* ---- The delivery carries the key ------------------------------------------------------------ */

#define CARRIED 3
static const char *const carried_keys[CARRIED] = {"alpha", "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87-2",
                                                  NULL};

typedef struct key_seen {
  pthread_mutex_t mu;
  unsigned calls;
  bool seen[CARRIED], wrong[CARRIED];
} key_seen;

/* The payload is the row's index in carried_keys. */
static tabq_outcome record_key(tabq_delivery *d, void *user) {
  key_seen *k = user;
  size_t len;
  const char *p = tabq_delivery_payload(d, &len);
  const char *key = tabq_delivery_partition_key(d);
  pthread_mutex_lock(&k->mu);
  k->calls++;
  if (p && len == 1 && p[0] >= '0' && p[0] < '0' + CARRIED) {
    int i = p[0] - '0';
    const char *want = carried_keys[i];
    k->seen[i] = true;
    k->wrong[i] = want ? !key || strcmp(key, want) : key != NULL;
  }
  pthread_mutex_unlock(&k->mu);
  return tabq_ack();
}

static void delivery_carries_the_key(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  for (int i = 0; i < CARRIED; i++)
    publish_keyed(b, carried_keys[i], (char[]){(char)('0' + i), 0});
  /* The publish wrote the key into its column, and nothing into the row without one. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE partition_key = 'alpha'"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE partition_key IS NULL"), 1);
  static key_seen k;
  memset(&k, 0, sizeof k);
  pthread_mutex_init(&k.mu, NULL);
  tabq_subscription_options o = sub_options("q", record_key, &k);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, keyed_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  close_broker(b);
  CU_ASSERT_EQUAL(k.calls, CARRIED);
  for (int i = 0; i < CARRIED; i++) {
    CU_ASSERT(k.seen[i]);
    CU_ASSERT(!k.wrong[i]);
  }
}

/* ---- workers_by_key: one key's rows in claim order on one worker ----------------------------- */

#define KEYS 8
#define PER_KEY 6
#define UNKEYED 4
#define BY_KEY_WORKERS 4

typedef struct order_seen {
  pthread_mutex_t mu;
  atomic_int in_flight[KEYS];
  atomic_bool overlapped; /* two rows of one key in handlers at once */
  bool out_of_order;      /* a key's row finished before an earlier one */
  bool moved;             /* a key's row on another thread than its first */
  bool wrong_key;         /* the delivery's key is not its payload's */
  int next[KEYS];
  unsigned handled[KEYS][PER_KEY], unkeyed[UNKEYED], strays;
  pthread_t thread[KEYS];
  bool has_thread[KEYS];
  pthread_t threads[BY_KEY_WORKERS + 1];
  unsigned nthreads;
} order_seen;

/* Payloads "<key>/<sequence>" for keyed rows, "-/<i>" for the rows without a key. */
static tabq_outcome in_key_order(tabq_delivery *d, void *user) {
  order_seen *f = user;
  size_t len;
  const char *p = tabq_delivery_payload(d, &len);
  char text[16] = "";
  if (p && len < sizeof text)
    memcpy(text, p, len), text[len] = '\0';
  const char *key = tabq_delivery_partition_key(d);
  int k = -1, seq = -1;
  if (text[0] == '-') {
    int i = -1;
    sscanf(text, "-/%d", &i);
    pthread_mutex_lock(&f->mu);
    if (i >= 0 && i < UNKEYED && !key)
      f->unkeyed[i]++;
    else
      f->strays++;
    pthread_mutex_unlock(&f->mu);
    return tabq_ack();
  }
  if (sscanf(text, "%d/%d", &k, &seq) != 2 || k < 0 || k >= KEYS || seq < 0 || seq >= PER_KEY) {
    pthread_mutex_lock(&f->mu);
    f->strays++;
    pthread_mutex_unlock(&f->mu);
    return tabq_ack();
  }
  char want[16];
  snprintf(want, sizeof want, "key-%d", k);
  if (atomic_fetch_add(&f->in_flight[k], 1) != 0)
    atomic_store(&f->overlapped, true);
  /* A later row of the key on another thread would finish before this one. */
  if (seq == 0)
    sleep_ms(20);
  pthread_t self = pthread_self();
  pthread_mutex_lock(&f->mu);
  f->wrong_key |= !key || strcmp(key, want);
  f->out_of_order |= seq != f->next[k];
  f->next[k] = seq + 1;
  f->handled[k][seq]++;
  if (!f->has_thread[k]) {
    f->thread[k] = self;
    f->has_thread[k] = true;
  } else if (!pthread_equal(f->thread[k], self))
    f->moved = true;
  bool known = false;
  for (unsigned i = 0; i < f->nthreads && !known; i++)
    known = pthread_equal(f->threads[i], self);
  if (!known && f->nthreads < BY_KEY_WORKERS + 1)
    f->threads[f->nthreads++] = self;
  pthread_mutex_unlock(&f->mu);
  atomic_fetch_sub(&f->in_flight[k], 1);
  return tabq_ack();
}

static void by_key_in_order_spread(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  /* Each round publishes the next two rows of every key, side by side in claim order (handed to
   * any worker, the second would run beside the first), and rows without a key. */
  for (int round = 0; round < PER_KEY / 2; round++) {
    for (int k = 0; k < KEYS; k++)
      for (int seq = 2 * round; seq < 2 * round + 2; seq++) {
        char key[16], payload[16];
        snprintf(key, sizeof key, "key-%d", k);
        snprintf(payload, sizeof payload, "%d/%d", k, seq);
        publish_keyed(b, key, payload);
      }
    for (int i = round; i < UNKEYED; i += PER_KEY / 2) {
      char payload[16];
      snprintf(payload, sizeof payload, "-/%d", i);
      publish_keyed(b, NULL, payload);
    }
  }
  static order_seen f;
  memset(&f, 0, sizeof f);
  pthread_mutex_init(&f.mu, NULL);
  tabq_subscription_options o = sub_options("q", in_key_order, &f);
  o.workers_by_key = BY_KEY_WORKERS;
  int rc = tabq_subscribe(b, keyed_table(), &o, NULL, &err);
  if (rc)
    fprintf(stderr, "\nsubscribe: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 30000));
  close_broker(b); /* every handler has returned */
  CU_ASSERT(!atomic_load(&f.overlapped));
  CU_ASSERT(!f.out_of_order);
  CU_ASSERT(!f.moved);
  CU_ASSERT(!f.wrong_key);
  CU_ASSERT_EQUAL(f.strays, 0);
  bool once = true;
  for (int k = 0; k < KEYS; k++)
    for (int seq = 0; seq < PER_KEY; seq++)
      once &= f.handled[k][seq] == 1;
  for (int i = 0; i < UNKEYED; i++)
    once &= f.unkeyed[i] == 1;
  CU_ASSERT(once);
  CU_ASSERT(f.nthreads > 1);
  CU_ASSERT(f.nthreads <= BY_KEY_WORKERS);
}

/* ---- Shutdown: rows waiting for a worker go back unsettled ----------------------------------- */

static void by_key_shutdown_releases_waiting(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  for (int i = 0; i < 3; i++)
    publish_keyed(b, "a", (char[]){(char)('1' + i), 0});
  static held_first h;
  memset(&h, 0, sizeof h);
  gate_init(&h.g);
  tabq_subscription_options o = sub_options("q", hold_first, &h);
  o.workers_by_key = 2;
  tabq_subscription *sub = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, keyed_table(), &o, &sub, &err), TABQ_OK);
  gate_wait_in(&h.g);
  /* The other two are claimed, waiting behind the first on its worker. */
  held_until_claimed(&h, sub, 3);
  /* Shut down while the first is in its handler. */
  shutdown_while_held(b, &h);
  CU_ASSERT_EQUAL(atomic_load(&h.calls), 1);
  /* The advisory form releases the lock of a row in its handler too (its ack fails CLOSED). */
  int first = kit.form == TABQ_FORM_ADVISORY ? 1 : 2, left = 4 - first;
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), left);
  close_broker(b);
  /* Released, not left to a lease (30 s) or a lock: another broker takes both at once. */
  tabq_broker *next = connect_broker(20);
  recorder r;
  recorder_init(&r);
  o = sub_options("q", recorder_handler, &r);
  o.workers_by_key = 2;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(next, keyed_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  close_broker(next);
  CU_ASSERT_EQUAL(recorder_calls(&r), (unsigned)left);
  for (int i = 0; i < left && i < 3; i++)
    CU_ASSERT_EQUAL(atoi(r.payloads[i]), first + i);
  recorder_free(&r);
}

/* The lease of a row waiting behind its key's row is extended as the running one's is. */
static void by_key_waiting_lease_extended(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  publish_keyed(b, "a", "1");
  publish_keyed(b, "a", "2");
  static held_first h;
  tabq_subscription_options o = sub_options("q", hold_first, &h);
  o.workers_by_key = 2;
  waiting_row_keeps_its_lease(b, keyed_table(), &o, &h);
}

/* ---- Refusals -------------------------------------------------------------------------------- */

static void by_key_refusals(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  db_fill("q", 1);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  o.workers_by_key = 2;
  expect_refused(b, jobs_table(), &o, "workers_by_key needs a partition_key column");
  o.workers = 3;
  expect_refused(b, keyed_table(), &o, "workers_by_key sets the worker count");
  tabq_subscription_options batch = batch_options("q", ack_every_row, NULL, 4);
  batch.workers_by_key = 2;
  expect_refused(b, keyed_table(), &batch, "a batch handler is not served");
  /* The advisory form takes no FIFO table at all (R-DESC-1). */
  if (kit.form != TABQ_FORM_ADVISORY) {
    tabq_table fifo = *keyed_table();
    fifo.fifo = true;
    o = sub_options("q", recorder_handler, &r);
    o.workers_by_key = 2;
    expect_refused(b, &fifo, &o, "one worker serves a FIFO subscription; workers_by_key must be 1");
  }
  /* A key published into a description without the role is refused, not dropped. */
  tabq_message m = message("q", "k", 1);
  m.partition_key = "k1";
  CU_ASSERT_EQUAL(tabq_publish(b, jobs_table(), &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no partition_key column"));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 1);
  /* Nothing was claimed by any of them. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE attempt = 1"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE locked_until IS NULL"), 1);
  CU_ASSERT_EQUAL(recorder_calls(&r), 0);
  /* workers equal to workers_by_key is taken. */
  o = sub_options("q", recorder_handler, &r);
  o.workers = o.workers_by_key = 2;
  CU_ASSERT_EQUAL(tabq_subscribe(b, keyed_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 1, 10000));
  close_broker(b);
  recorder_free(&r);
}

const kit_test partition_tests[] = {
    {"partition keys: the delivery carries the key", delivery_carries_the_key, ALL_FORMS,
     needs_key_column, NULL},
    {"workers_by_key: each key's rows in claim order on one worker, keys spread",
     by_key_in_order_spread, ALL_FORMS, needs_key_column, NULL},
    {"workers_by_key: rows waiting for a worker are released at shutdown",
     by_key_shutdown_releases_waiting, ALL_FORMS, needs_key_column, NULL},
    {"workers_by_key: a row waiting for its worker keeps its lease", by_key_waiting_lease_extended,
     TABQ_FORM_LEASE, needs_key_column, NULL},
    {"workers_by_key misused is refused at subscribe", by_key_refusals, ALL_FORMS, needs_key_column,
     "refusals at subscribe, nothing claimed"},
    {NULL, NULL, 0, NULL, NULL},
};
