/* Unique jobs (ABI 1.9, docs/unique-jobs.md): a table whose unique_key column is held unique by
 * the index the dialect's schema renders. A publish of a key a row holds writes nothing and
 * reports TABQ_DUPLICATE with the holder's id, alone, in a batch (each message's fate) and in a
 * transaction of the service's own (which stays usable); publishers racing on one key from
 * several connections write exactly one row; a table whose key has no unique index is refused
 * before the first row. */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

static tabq_error err;

static const char *needs_unique(void) {
  return TABQ_HAS_MEMBER(kit.plugin.desc->dialect, tabq_dialect_v1, find_unique)
             ? NULL
             : "the plugin has no Dialect.find_unique (ABI 1.9): it writes no unique keys";
}

/* The test's tables from the dialect's schema, the unique index with them; *partial tells
 * whether that index holds the unfinished rows alone (a finished job's key is free again). */
static void make_table(tabq_broker *b, bool *partial) {
  fresh_names();
  char *sql = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_schema_sql(b, unique_table(), NULL, &sql, &err), TABQ_OK);
  const char *unique = strstr(sql, "UNIQUE INDEX");
  *partial = unique && strstr(unique, "WHERE");
  tabq_schema_free(sql);
  int rc = tabq_schema_apply(b, unique_table(), NULL, &err);
  if (rc)
    fprintf(stderr, "\nschema: %s\n", err.message);
  db_made(DB_JOBS);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static tabq_message keyed(const char *key, const char *payload) {
  tabq_message m = message("q", payload, strlen(payload));
  m.unique_key = key;
  return m;
}

static void a_held_key_writes_nothing(void) {
  tabq_broker *b = connect_broker(20);
  bool partial;
  make_table(b, &partial);
  tabq_message first = keyed("report:42", "one"), again = keyed("report:42", "two");
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, unique_table(), &first, &err), TABQ_OK);
  long long holder = db_int("SELECT id FROM {jobs} WHERE ukey = 'report:42'");
  CU_ASSERT_EQUAL(tabq_publish(b, unique_table(), &again, &err), TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(err.code, TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(err.duplicate_id, holder);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "report:42"));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE payload = 'two'"), 0);
  /* No key: no uniqueness, every message its row. */
  tabq_message plain = message("q", "free", 4);
  CU_ASSERT_EQUAL(tabq_publish(b, unique_table(), &plain, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_publish(b, unique_table(), &plain, &err), TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 3);

  /* The holder handled: a partial index frees the key, an index of every row keeps it until
   * the finished row is purged. */
  tabq_subscription_options o = sub_options("q", ack_it, NULL);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, unique_table(), &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE processed_at IS NULL", 0, 10000));
  int rc = tabq_publish(b, unique_table(), &again, &err);
  CU_ASSERT_EQUAL(rc, partial ? TABQ_OK : TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE ukey = 'report:42'"), partial ? 2 : 1);
}

static void a_batch_tells_each_fate(void) {
  tabq_broker *b = connect_broker(20);
  bool partial;
  make_table(b, &partial);
  tabq_message held = keyed("k1", "held");
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, unique_table(), &held, &err), TABQ_OK);
  long long holder = db_int("SELECT id FROM {jobs} WHERE ukey = 'k1'");
  /* k1 held before; k2 twice in the batch: its second is a duplicate of its first. */
  tabq_message m[5] = {keyed("k0", "a"), keyed("k1", "b"), keyed("k2", "c"), keyed("k2", "d"),
                       keyed(NULL, "e")};
  const tabq_message *p[5] = {&m[0], &m[1], &m[2], &m[3], &m[4]};
  int codes[5];
  int64_t ids[5];
  int rc = tabq_publish_many_results(b, unique_table(), p, 5, codes, ids, &err);
  CU_ASSERT_EQUAL(rc, TABQ_DUPLICATE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "2 of 5"));
  CU_ASSERT_EQUAL(codes[0], TABQ_OK);
  CU_ASSERT_EQUAL(codes[1], TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(ids[1], holder);
  CU_ASSERT_EQUAL(codes[2], TABQ_OK);
  CU_ASSERT_EQUAL(codes[3], TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(ids[3], db_int("SELECT id FROM {jobs} WHERE ukey = 'k2'"));
  CU_ASSERT_EQUAL(codes[4], TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 4);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE payload IN ('b', 'd')"), 0);
  /* tabq_publish_many says the same without the details. */
  CU_ASSERT_EQUAL(tabq_publish_many(b, unique_table(), p, 2, &err), TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 4);
}

static void a_transaction_goes_on_after_a_duplicate(void) {
  tabq_broker *b = connect_broker(20);
  bool partial;
  make_table(b, &partial);
  tabq_message held = keyed("t1", "held"), dup = keyed("t1", "dup"), next = keyed("t2", "next");
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, unique_table(), &held, &err), TABQ_OK);
  tabq_tx *tx;
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_publish_tx(tx, unique_table(), &dup, &err), TABQ_DUPLICATE);
  CU_ASSERT_EQUAL(err.duplicate_id, db_int("SELECT id FROM {jobs} WHERE ukey = 't1'"));
  CU_ASSERT_EQUAL(tabq_publish_tx(tx, unique_table(), &next, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_commit(tx, &err), TABQ_OK);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 2);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE ukey = 't2'"), 1);
}

#define RACERS 4
#define KEYS 40

typedef struct racer {
  tabq_broker *b;
  int order; /* each racer walks the keys from another start */
  int won[KEYS];
  atomic_int *failures;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  for (int n = 0; n < KEYS; n++) {
    int k = (n + r->order * 7) % KEYS;
    char key[16];
    snprintf(key, sizeof key, "race-%d", k);
    tabq_message m = keyed(key, key);
    tabq_error e;
    int rc = tabq_publish(r->b, unique_table(), &m, &e);
    if (rc == TABQ_OK)
      r->won[k]++;
    else if (rc != TABQ_DUPLICATE) {
      fprintf(stderr, "\nracer %d, %s: %s\n", r->order, key, e.message);
      atomic_fetch_add(r->failures, 1);
    }
  }
  return NULL;
}

static void racing_publishers_write_one_row_a_key(void) {
  tabq_broker *first = connect_broker(20);
  bool partial;
  make_table(first, &partial);
  racer r[RACERS];
  pthread_t th[RACERS];
  atomic_int failures = 0;
  for (int i = 0; i < RACERS; i++) {
    r[i] = (racer){.b = i ? connect_broker(20) : first, .order = i, .failures = &failures};
    /* Each publisher's statements prepared before the race, so the race is the inserts'. */
    tabq_message warm = keyed("warm", "warm");
    tabq_publish(r[i].b, unique_table(), &warm, &err);
  }
  for (int i = 0; i < RACERS; i++)
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, race, &r[i]), 0);
  for (int i = 0; i < RACERS; i++)
    pthread_join(th[i], NULL);
  CU_ASSERT_EQUAL(atomic_load(&failures), 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), KEYS + 1);
  CU_ASSERT_EQUAL(db_int("SELECT count(DISTINCT ukey) FROM {jobs}"), KEYS + 1);
  for (int k = 0; k < KEYS; k++) {
    int won = 0;
    for (int i = 0; i < RACERS; i++)
      won += r[i].won[k];
    CU_ASSERT_EQUAL(won, 1);
  }
}

static void a_key_without_its_index_is_refused(void) {
  tabq_broker *b = connect_broker(20);
  fresh_names();
  CU_ASSERT_EQUAL_FATAL(tabq_schema_apply(b, marked_table(), NULL, &err), TABQ_OK);
  db_made(DB_JOBS);
  db_exec("ALTER TABLE {jobs} ADD COLUMN ukey VARCHAR(200)");
  tabq_message m = keyed("k", "x");
  int rc = tabq_publish(b, unique_table(), &m, &err);
  if (rc != TABQ_SCHEMA)
    fprintf(stderr, "\npublish: %s: %s\n", tabq_code_name((tabq_code)rc), err.message);
  CU_ASSERT_EQUAL(rc, TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "ukey"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "unique index"));
  CU_ASSERT_STRING_EQUAL(err.table, jobs_name());
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
  /* The statement check says the same, with the statement that creates the index. */
  tabq_check_report *r = tabq_check_report_new();
  CU_ASSERT_EQUAL(tabq_check_publish(b, unique_table(), r, &err), TABQ_SCHEMA);
  bool told = false;
  for (size_t i = 0; i < tabq_check_report_count(r); i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    told |= it->severity == TABQ_CHECK_ERROR && strstr(it->purpose, "unique key's index") &&
            strstr(it->sql, "UNIQUE") && strstr(it->sql, "ukey");
  }
  CU_ASSERT(told);
  tabq_check_report_free(r);
  /* A key on a table without the role is no key at all: refused, nothing written. */
  CU_ASSERT_EQUAL(tabq_publish(b, marked_table(), &m, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no unique_key column"));
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
}

const kit_test unique_tests[] = {
    {"a held unique key writes nothing: TABQ_DUPLICATE with the holder's id",
     a_held_key_writes_nothing, ALL_FORMS, needs_unique, NULL},
    {"publish_many_results tells each message's fate, the free keys written",
     a_batch_tells_each_fate, ALL_FORMS, needs_unique, NULL},
    {"a duplicate in a transaction of the service's own leaves it usable",
     a_transaction_goes_on_after_a_duplicate, ALL_FORMS, needs_unique, NULL},
    {"publishers racing on a key from four connections write one row a key",
     racing_publishers_write_one_row_a_key, ALL_FORMS, needs_unique, NULL},
    {"a unique key without its unique index is refused at the first publish",
     a_key_without_its_index_is_refused, ALL_FORMS, needs_unique, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
