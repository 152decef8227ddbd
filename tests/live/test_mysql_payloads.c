/* Payload sizes on MySQL/MariaDB: a payload longer than its column's type holds, or a statement
 * longer than the server's max_allowed_packet, fails with a message that names the limit and
 * what to change, and writes nothing, alone or in a batch; a MEDIUMBLOB column takes a payload
 * a BLOB cannot, and hands it back byte for byte. Rows are counted with the client library
 * directly, never through tabq. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"
#include "support.h"

#define BIG 70000 /* over a BLOB's 65,535 bytes */

static testdb db;
static tabq_error err;

/* The lease form's table on `name`: the columns of the suite's jobs schema it needs. */
static tabq_table table_named(const char *name) {
  return (tabq_table){.size = sizeof(tabq_table),
                      .name = name,
                      .id = {"id", .generated = true},
                      .group = {"queue"},
                      .attempt = {"attempt", .generated = true},
                      .locked_until = {"locked_until"},
                      .payload = {"payload"}};
}

static tabq_message message(const char *payload, size_t len) {
  return (tabq_message){
      .size = sizeof(tabq_message), .group = "q", .payload = payload, .payload_len = len};
}

static void message_has(const char *part) {
  if (!strstr(err.message, part))
    fprintf(stderr, "expected \"%s\" in: %s\n", part, err.message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, part));
}

static long long rows_in(const char *table) {
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  return testdb_int(&db, sql);
}

/* The suite's schema, and jobs_medium: the same columns with a MEDIUMBLOB payload. */
static void create(void) {
  testdb_create(&db);
  testdb_exec(&db, "CREATE TABLE jobs_medium LIKE jobs");
  testdb_exec(&db, "ALTER TABLE jobs_medium MODIFY payload MEDIUMBLOB NOT NULL");
}

/* 70 KB into the BLOB column of jobs: refused by the server (strict mode), the message names
 * the column, the table, the limit and the types that hold more; nothing written, alone or as
 * the last of a batch; the connection serves the next publish. */
static void blob_refuses_70k(void) {
  create();
  tabq_broker *b = connect_broker(&db, 50);
  const tabq_table t = table_named("jobs");
  char *big = test_bytes(BIG);
  tabq_message m = message(big, BIG);
  CU_ASSERT_EQUAL(tabq_publish(b, &t, &m, &err), TABQ_BACKEND);
  CU_ASSERT_EQUAL(err.native, 1406); /* ER_DATA_TOO_LONG */
  message_has("column payload of table jobs holds at most 65,535 bytes (BLOB): declare it "
              "MEDIUMBLOB (16 MiB) or LONGBLOB (4 GiB)");
  message_has("Nothing was written");
  message_has("Data too long for column 'payload'"); /* the server's own words follow */
  CU_ASSERT_EQUAL(rows_in("jobs"), 0);

  /* A batch whose last message is too long writes none of them. */
  tabq_message small[2] = {message("a", 1), message("b", 1)};
  const tabq_message *batch[] = {&small[0], &small[1], &m};
  CU_ASSERT_EQUAL(tabq_publish_many(b, &t, batch, 3, &err), TABQ_BACKEND);
  message_has("holds at most 65,535 bytes (BLOB)");
  CU_ASSERT_EQUAL(rows_in("jobs"), 0);

  /* Exactly a BLOB's worth still goes in. */
  m.payload_len = 65535;
  CU_ASSERT_EQUAL(tabq_publish(b, &t, &m, &err), TABQ_OK);
  CU_ASSERT_EQUAL(rows_in("jobs"), 1);
  tabq_close(b);
  free(big);
  testdb_remove(&db);
}

typedef struct received {
  const char *want;
  size_t len;
  atomic_int calls, same;
} received;

static tabq_outcome compare(tabq_delivery *d, void *user) {
  received *r = user;
  size_t len = 0;
  const char *p = tabq_delivery_payload(d, &len);
  if (len == r->len && p && !memcmp(p, r->want, len))
    atomic_fetch_add(&r->same, 1);
  atomic_fetch_add(&r->calls, 1);
  return tabq_ack();
}

/* 70 KB into a MEDIUMBLOB column: written whole, and handed back byte for byte. */
static void mediumblob_takes_70k(void) {
  create();
  tabq_broker *b = connect_broker(&db, 50);
  const tabq_table t = table_named("jobs_medium");
  char *big = test_bytes(BIG);
  tabq_message m = message(big, BIG);
  int rc = tabq_publish(b, &t, &m, &err);
  if (rc)
    fprintf(stderr, "publish: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT LENGTH(payload) FROM jobs_medium"), BIG);
  received r = {.want = big, .len = BIG};
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = compare;
  o.user = &r;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs_medium", 0, 20000));
  tabq_close(b);
  CU_ASSERT_EQUAL(atomic_load(&r.calls), 1);
  CU_ASSERT_EQUAL(atomic_load(&r.same), 1);
  free(big);
  testdb_remove(&db);
}

/* A payload over the server's max_allowed_packet (16 MiB on MariaDB 10.11, read from the
 * server): refused before it is sent, naming the statement's size, the limit and the setting;
 * nothing written, alone or in a batch; the broker's connection still serves. */
static void over_max_allowed_packet(void) {
  create();
  long long max = testdb_int(&db, "SELECT @@max_allowed_packet");
  CU_ASSERT_FATAL(max >= 1024);
  size_t n = (size_t)max + 1024;
  tabq_broker *b = connect_broker(&db, 50);
  const tabq_table t = table_named("jobs_medium");
  char *big = test_bytes(n);
  tabq_message m = message(big, n);
  CU_ASSERT_EQUAL(tabq_publish(b, &t, &m, &err), TABQ_BACKEND);
  CU_ASSERT_EQUAL(err.native, 1153); /* ER_NET_PACKET_TOO_LARGE */
  char limit[64];
  snprintf(limit, sizeof limit, "over the server's max_allowed_packet of ");
  message_has(limit);
  message_has("raise max_allowed_packet on the server");
  message_has("Nothing was sent");
  CU_ASSERT_EQUAL(rows_in("jobs_medium"), 0);

  tabq_message small = message("a", 1);
  const tabq_message *batch[] = {&small, &m};
  CU_ASSERT_EQUAL(tabq_publish_many(b, &t, batch, 2, &err), TABQ_BACKEND);
  message_has("max_allowed_packet");
  CU_ASSERT_EQUAL(rows_in("jobs_medium"), 0);

  CU_ASSERT_EQUAL(tabq_publish(b, &t, &small, &err), TABQ_OK);
  CU_ASSERT_EQUAL(rows_in("jobs_medium"), 1);
  tabq_close(b);
  free(big);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"70 KB into a BLOB payload fails, naming the type to declare; nothing written",
       blob_refuses_70k},
      {"70 KB into a MEDIUMBLOB payload arrives byte for byte", mediumblob_takes_70k},
      {"a payload over max_allowed_packet fails, naming the limit; nothing written",
       over_max_allowed_packet},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("payload sizes on mysql", NULL, NULL, tests);
  return 0;
}
