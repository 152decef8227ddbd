/* Concurrency limits across brokers (docs/concurrency.md): the slots table of the DDL's [slots]
 * section, written by every broker's subscriptions through the statements tabq builds with the
 * dialect's quoting, placeholders and insert. Several brokers racing on one table never run more
 * than N handlers of a key at once; a slot whose holder stopped keeping it frees itself once it
 * expires, and one whose holder keeps it does not; a row whose key has every slot held steps
 * aside with its attempt as it was, due again a poll interval on; misuses are refused. */
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/concurrency.h>

#include "kit.h"

#define POLL_MS 50
#define KEYS 3
#define PER_KEY 8
#define LIMIT 2

static tabq_error err;

static tabq_concurrency_slots slots(unsigned ttl_ms) {
  tabq_concurrency_slots c = TABQ_CONCURRENCY_SLOTS_INIT;
  c.name = slots_name();
  c.key_column = "slot";
  c.holder_column = "holder";
  c.expires_column = "expires";
  c.ttl_ms = ttl_ms;
  return c;
}

/* A broker with the slots table; pool room for four workers holding a connection each, the
 * slots' statements and the settlements. */
static tabq_broker *limited_broker(unsigned ttl_ms) {
  tabq_broker_options o = broker_options(POLL_MS, 8);
  tabq_broker *b = connect_broker_with(&o);
  tabq_concurrency_slots c = slots(ttl_ms);
  int rc = tabq_set_concurrency_slots(b, &c, &err);
  if (rc)
    fprintf(stderr, "\nset_concurrency_slots: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

static const char *needs_slots_and_key(void) {
  const char *why = needs_slots();
  return why ? why : needs_key_column();
}

static void publish_keyed(tabq_broker *b, const char *key, int n) {
  for (int i = 0; i < n; i++) {
    tabq_message m = message("q", "job", 3);
    m.partition_key = key;
    CU_ASSERT_EQUAL_FATAL(tabq_publish(b, keyed_table(), &m, &err), TABQ_OK);
  }
}

/* ---- N at once, never more ------------------------------------------------------------------- */

static struct { atomic_int in_work[KEYS], most[KEYS], handled[KEYS]; } race;

static tabq_outcome overlap_handler(tabq_delivery *d, void *user) {
  (void)user;
  const char *key = tabq_delivery_partition_key(d);
  int k = key && key[0] == 'k' ? key[1] - '0' : 0;
  if (k < 0 || k >= KEYS)
    k = 0;
  int now = atomic_fetch_add(&race.in_work[k], 1) + 1;
  for (int most = atomic_load(&race.most[k]); now > most;)
    if (atomic_compare_exchange_weak(&race.most[k], &most, now))
      break;
  sleep_ms(40);
  atomic_fetch_sub(&race.in_work[k], 1);
  atomic_fetch_add(&race.handled[k], 1);
  return tabq_ack();
}

static void never_more_than_n_of_a_key(void) {
  fresh_db();
  db_make_slots();
  memset(&race, 0, sizeof race);
  enum { BROKERS = 3 };
  tabq_broker *b[BROKERS];
  for (int i = 0; i < BROKERS; i++)
    b[i] = limited_broker(0);
  char key[8];
  for (int k = 0; k < KEYS; k++) {
    snprintf(key, sizeof key, "k%d", k);
    publish_keyed(b[0], key, PER_KEY);
  }
  tabq_subscription *s[BROKERS];
  for (int i = 0; i < BROKERS; i++) {
    tabq_subscription_options o = sub_options("q", overlap_handler, NULL);
    o.workers = 4;
    o.concurrency_key = "partition_key";
    o.concurrency_limit = LIMIT;
    int rc = tabq_subscribe(b[i], keyed_table(), &o, &s[i], &err);
    if (rc)
      fprintf(stderr, "\nsubscribe: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 60000));
  for (int k = 0; k < KEYS; k++) {
    CU_ASSERT(atomic_load(&race.most[k]) <= LIMIT);
    CU_ASSERT_EQUAL(atomic_load(&race.handled[k]), PER_KEY);
  }
  /* Twelve workers on three keys of eight: the limit was reached, not only respected. */
  CU_ASSERT(atomic_load(&race.most[0]) == LIMIT || atomic_load(&race.most[1]) == LIMIT ||
            atomic_load(&race.most[2]) == LIMIT);
  uint64_t deferred = 0;
  for (int i = 0; i < BROKERS; i++) {
    tabq_stats st;
    stats_of(s[i], &st);
    deferred += st.deferred;
  }
  CU_ASSERT(deferred > 0);
  for (int i = 0; i < BROKERS; i++)
    close_broker(b[i]); /* every slot given back */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {slots}"), 0);
}

/* ---- Expiry and the keeper ------------------------------------------------------------------- */

static tabq_subscription *limited_sub(tabq_broker *b, tabq_handler h, void *user, unsigned poll_ms,
                                      unsigned workers) {
  tabq_subscription_options o = sub_options("q", h, user);
  o.workers = workers;
  o.poll_interval_ms = poll_ms;
  o.concurrency_key = "partition_key";
  o.concurrency_limit = 1;
  tabq_subscription *s;
  int rc = tabq_subscribe(b, keyed_table(), &o, &s, &err);
  if (rc)
    fprintf(stderr, "\nsubscribe: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return s;
}

/* A slot kept by its holder's keeper outlives many ttls; one its holder no longer keeps (its
 * holder column changed, as a dead process stops keeping it) is free once it expires. */
static void a_slot_frees_itself_once_expired(void) {
  fresh_db();
  db_make_slots();
  tabq_broker *a = limited_broker(300), *bb = limited_broker(300);
  gate g;
  gate_init(&g);
  publish_keyed(a, "k", 1);
  limited_sub(a, wait_at_gate, &g, POLL_MS, 1);
  gate_wait_in(&g); /* a holds k's one slot */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {slots}"), 1);
  recorder r;
  recorder_init(&r);
  publish_keyed(bb, "k", 1);
  tabq_subscription *sb = limited_sub(bb, recorder_handler, &r, POLL_MS, 1);
  sleep_ms(1200); /* four ttls: the keeper keeps the slot, so b steps aside */
  CU_ASSERT_EQUAL(recorder_calls(&r), 0);
  tabq_stats st;
  stats_of(sb, &st);
  CU_ASSERT(st.deferred > 0);
  db_exec("UPDATE {slots} SET holder = 'a process gone'");
  CU_ASSERT(recorder_wait(&r, 1, 10000)); /* past the expiry, b clears the slot and takes it */
  gate_open(&g);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  recorder_free(&r);
}

/* ---- Step aside ------------------------------------------------------------------------------ */

static void a_row_steps_aside_with_its_attempt(void) {
  fresh_db();
  db_make_slots();
  tabq_broker *a = limited_broker(0), *bb = limited_broker(0);
  gate g;
  gate_init(&g);
  publish_keyed(a, "k", 1);
  limited_sub(a, wait_at_gate, &g, POLL_MS, 1);
  gate_wait_in(&g);
  publish_keyed(bb, "k", 1);
  long long attempt = db_int("SELECT attempt FROM {jobs} ORDER BY id DESC LIMIT 1");
  recorder r;
  recorder_init(&r);
  tabq_subscription *sb = limited_sub(bb, recorder_handler, &r, 3000, 1);
  tabq_stats st;
  for (int i = 0; i < 200; i++) {
    stats_of(sb, &st);
    if (st.deferred)
      break;
    sleep_ms(10);
  }
  CU_ASSERT_EQUAL_FATAL(st.deferred, 1);
  CU_ASSERT_EQUAL(recorder_calls(&r), 0);
  CU_ASSERT_EQUAL(st.retried, 0);
  CU_ASSERT_EQUAL(st.released, 0);
  CU_ASSERT_EQUAL(db_int("SELECT attempt FROM {jobs} ORDER BY id DESC LIMIT 1"), attempt);
  CU_ASSERT_EQUAL(db_due_after(1500), 1); /* due a poll interval on: the other row is in work */
  /* The slot given back and the row due again, it is handled (by either broker: the first's
   * worker is free again too). */
  gate_open(&g);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 15000));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {slots}"), 0);
  recorder_free(&r);
}

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

/* ---- Refusals -------------------------------------------------------------------------------- */

static void refused(tabq_broker *b, const tabq_subscription_options *o, const char *rule) {
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL(tabq_subscribe(b, keyed_table(), o, &s, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, jobs_name()));
  if (!strstr(err.message, rule)) {
    fprintf(stderr, "\nrefusal without '%s': %s\n", rule, err.message);
    CU_FAIL("the refusal does not name its rule");
  }
}

static void concurrency_refusals(void) {
  fresh_db();
  db_make_slots();
  tabq_broker *b = connect_broker(POLL_MS);
  tabq_subscription_options o = sub_options("q", ack_it, NULL);
  o.concurrency_limit = 2;
  refused(b, &o, "slots table");
  tabq_concurrency_slots c = slots(0);
  c.expires_column = "lease_ends"; /* no such column */
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, slots_name()));
  c = slots(0);
  c.holder_column = NULL;
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "holder_column"));
  c = slots(0);
  CU_ASSERT_EQUAL_FATAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(b, &c, &err), TABQ_INVALID);
  o = sub_options("q", ack_it, NULL);
  o.concurrency_key = "partition_key";
  refused(b, &o, "a key needs a limit");
  o.concurrency_limit = 2;
  o.concurrency_key = "nope";
  refused(b, &o, "nope");
  o.concurrency_key = "partition_key";
  o.concurrency_limit = 33;
  refused(b, &o, "at most 32");
  tabq_subscription_options bo = batch_options("q", ack_every_row, NULL, 4);
  bo.concurrency_limit = 2;
  refused(b, &bo, "a handler of one delivery");
  /* Once a subscription is open, the slots table comes too late. */
  tabq_broker *late = connect_broker(POLL_MS);
  o = sub_options("q", ack_it, NULL);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(late, keyed_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_set_concurrency_slots(late, &c, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {slots}"), 0);
}

const kit_test concurrency_tests[] = {
    {"concurrency: never more than N handlers of a key at once, three brokers racing, every row "
     "handled",
     never_more_than_n_of_a_key, ALL_FORMS, needs_slots_and_key, NULL},
    {"concurrency: a kept slot stays held past its ttl; an unkept one frees itself once expired",
     a_slot_frees_itself_once_expired, ALL_FORMS, needs_slots_and_key, NULL},
    {"concurrency: a row whose key's slots are held steps aside, its attempt as it was, due a poll "
     "on",
     a_row_steps_aside_with_its_attempt, ALL_FORMS, needs_slots_and_key, NULL},
    {"concurrency: refusals", concurrency_refusals, ALL_FORMS, needs_slots_and_key, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
