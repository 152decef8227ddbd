/* tabq — unit tests of the SQLite dialect: its descriptor, the statement text it builds, its
 * refusals, its time text and its URL refusals (no database file). */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <tabq/sys/sql.h>

#include "cunit_main.h"
#include "sqlite_fixture.h"

/* ---- The descriptor ------------------------------------------------------------------------ */

static void test_entry(void) {
  CU_ASSERT_PTR_NULL(tabq_plugin_entry(&test_host, (TABQ_ABI_MAJOR + 1u) << 16));
  const tabq_plugin *pl = tabq_plugin_entry(&test_host, TABQ_ABI_VERSION);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pl);
  CU_ASSERT_PTR_EQUAL(tabq_sqlite_host(), &test_host);
  CU_ASSERT_EQUAL(pl->size, sizeof(tabq_plugin));
  CU_ASSERT_EQUAL(pl->abi, TABQ_ABI_VERSION);
  CU_ASSERT_STRING_EQUAL(pl->name, "sqlite");
  CU_ASSERT_STRING_EQUAL(pl->schemes[0], "sqlite");
  CU_ASSERT_PTR_NULL(pl->schemes[1]);
  CU_ASSERT_PTR_NULL(pl->driver_from);
  CU_ASSERT_PTR_EQUAL(pl->driver, drv);
  CU_ASSERT_PTR_EQUAL(pl->dialect, dia);
  CU_ASSERT_PTR_EQUAL(pl->lease, lease);
  CU_ASSERT_PTR_NULL(pl->rowlock);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pl->advisory);
  /* No session locks: the core keeps the keys, so there is no lock or unlock to build. */
  CU_ASSERT_EQUAL(pl->advisory->flags, TABQ_ADVISORY_PROCESS_KEYS | TABQ_PROJECTS_DUE);
  CU_ASSERT_PTR_NULL(pl->advisory->lock);
  CU_ASSERT_PTR_NULL(pl->advisory->unlock);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pl->byname);
  CU_ASSERT_EQUAL(pl->byname->size, sizeof(tabq_byname_v1));
  CU_ASSERT_EQUAL(pl->byname->version, 1);
  tabq_build routed = lease_of(&jobs);
  CU_ASSERT_EQUAL(pl->byname->check(&routed), TABQ_OK); /* nothing refused by name */
  CU_ASSERT_EQUAL(drv->size, sizeof(tabq_driver_v1));
  CU_ASSERT_EQUAL(drv->version, 1);
  CU_ASSERT_PTR_NULL(drv->listen);
  CU_ASSERT_PTR_NULL(drv->wait_notify);
  CU_ASSERT_EQUAL(dia->size, sizeof(tabq_dialect_v1));
  CU_ASSERT_EQUAL(dia->version, 1);
  CU_ASSERT_PTR_NULL(dia->fetch);
  CU_ASSERT_PTR_NULL(dia->fifo_guard);
  CU_ASSERT_PTR_NOT_NULL(dia->insert_rows);
  CU_ASSERT_EQUAL(lease->size, sizeof(tabq_lease_v1));
  CU_ASSERT_EQUAL(lease->version, 1);
  CU_ASSERT_EQUAL(lease->flags, TABQ_CLAIM_SERIAL | TABQ_CLAIM_ONE_STAMPS | TABQ_PROJECTS_DUE);
  CU_ASSERT_PTR_NOT_NULL(lease->stamp);
  CU_ASSERT_PTR_NOT_NULL(lease->stamp_ids);
}

/* ---- Statement text ------------------------------------------------------------------------ */

static void test_quote(void) {
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL(dia->quote(&st, "main.we\"ird"), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(st.sql, "\"main\".\"we\"\"ird\"");
  tabq_sql_free(&st);
}

static void test_insert(void) {
  tabq_build b = lease_of(&jobs);
  expect_built(dia->insert, &b,
               "INSERT INTO \"jobs\" (\"queue\", \"priority\", \"pkey\", \"retry_after\", "
               "\"attempt\", \"headers\", \"payload\", \"title\") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
               "?7, ?8)",
               TABQ_P_GROUP, TABQ_P_PRIORITY, TABQ_P_PARTITION_KEY, TABQ_P_RETRY_AT, TABQ_P_ATTEMPT,
               TABQ_P_HEADERS, TABQ_P_PAYLOAD, TABQ_P_DATA + 0, 0);
  b = lease_of(&thumbs);
  expect_built(dia->insert, &b, "INSERT INTO \"main\".\"thumbs\" (\"payload\") VALUES (?1)",
               TABQ_P_PAYLOAD, 0);
  b = lease_of(&bare);
  expect_built(dia->insert, &b, "INSERT INTO \"bare\" (\"id\") VALUES (?1)", TABQ_P_ID, 0);
  b = lease_of(&all_generated);
  expect_built(dia->insert, &b, "INSERT INTO \"ev\" DEFAULT VALUES", 0);
}

/* insert's columns once, then one tuple a row: each row's ?N numbered on from the row before
 * (a repeated ?N would bind row 0's value again), and the list is insert's, once. */
static void test_insert_rows(void) {
  tabq_build b = lease_of(&bare);
  b.rows = 3;
  expect_built(dia->insert_rows, &b, "INSERT INTO \"bare\" (\"id\") VALUES (?1), (?2), (?3)",
               TABQ_P_ID, 0);
  b = lease_of(&jobs);
  b.rows = 2;
  expect_built(dia->insert_rows, &b,
               "INSERT INTO \"jobs\" (\"queue\", \"priority\", \"pkey\", \"retry_after\", "
               "\"attempt\", \"headers\", \"payload\", \"title\") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
               "?7, ?8), (?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
               TABQ_P_GROUP, TABQ_P_PRIORITY, TABQ_P_PARTITION_KEY, TABQ_P_RETRY_AT, TABQ_P_ATTEMPT,
               TABQ_P_HEADERS, TABQ_P_PAYLOAD, TABQ_P_DATA + 0, 0);
  b.rows = TABQ_INSERT_ROWS_MAX;
  expect_built_end(dia->insert_rows, &b,
                   "), (?1017, ?1018, ?1019, ?1020, ?1021, ?1022, ?1023, ?1024)", 8);
  b = lease_of(&all_generated);
  b.rows = 2;
  expect_none(dia->insert_rows, &b);
}

/* The claim of many rows selects them in claim order, the attempt as the stamp will store it;
 * the stamp leases each row and counts its attempt. */
static void test_claim(void) {
  tabq_build b = lease_of(&jobs);
  expect_built(lease->claim, &b,
               "SELECT \"id\", \"attempt\" + 1, \"queue\", \"pkey\", \"headers\", \"payload\", "
               "\"title\", \"size\" FROM \"jobs\" WHERE (\"locked_until\" IS NULL OR "
               "\"locked_until\" <= ?1) AND (\"retry_after\" IS NULL OR \"retry_after\" <= ?1) "
               "AND \"processed_at\" IS NULL AND \"queue\" = ?2 ORDER BY \"priority\", "
               "\"retry_after\", \"id\" LIMIT ?3",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  expect_built(lease->stamp, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = ?1, \"attempt\" = \"attempt\" + 1 WHERE "
               "\"id\" = ?2",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, 0);
  b = lease_of(&thumbs);
  expect_built(lease->claim, &b,
               "SELECT \"id\", \"attempt\" + 1, \"payload\" FROM \"main\".\"thumbs\" WHERE "
               "(\"locked_until\" IS NULL OR \"locked_until\" <= ?1) ORDER BY \"id\" LIMIT ?2",
               TABQ_P_NOW, TABQ_P_LIMIT, 0);
  /* No attempt column: nothing counted, nothing returned for it. */
  b = lease_of(&bare);
  expect_built(lease->claim, &b,
               "SELECT \"id\" FROM \"bare\" WHERE (\"lu\" IS NULL OR \"lu\" <= ?1) ORDER BY "
               "\"id\" LIMIT ?2",
               TABQ_P_NOW, TABQ_P_LIMIT, 0);
  expect_built(lease->stamp, &b, "UPDATE \"bare\" SET \"lu\" = ?1 WHERE \"id\" = ?2",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, 0);
}

static void test_claim_fifo(void) {
  tabq_table fifo = jobs;
  fifo.fifo = true;
  tabq_build b = lease_of(&fifo);
  expect_built(lease->claim, &b,
               "SELECT \"id\", \"attempt\" + 1, \"queue\", \"pkey\", \"headers\", \"payload\", "
               "\"title\", \"size\" FROM \"jobs\" WHERE \"id\" = (SELECT \"id\" FROM \"jobs\" "
               "WHERE \"queue\" = ?1 AND \"processed_at\" IS NULL ORDER BY \"priority\", "
               "\"retry_after\", \"id\" LIMIT 1) AND (\"locked_until\" IS NULL OR "
               "\"locked_until\" <= ?2) AND (\"retry_after\" IS NULL OR \"retry_after\" <= ?2)",
               TABQ_P_GROUP, TABQ_P_NOW, 0);
}

/* One row by its id, without the IN list; a FIFO table declines (its claim is one row). */
static void test_claim_one(void) {
  tabq_build b = lease_of(&jobs);
  expect_built(lease->claim_one, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = ?1, \"attempt\" = \"attempt\" + 1 WHERE "
               "\"id\" = (SELECT \"id\" FROM \"jobs\" WHERE (\"locked_until\" IS NULL OR "
               "\"locked_until\" <= ?2) AND (\"retry_after\" IS NULL OR \"retry_after\" <= ?2) "
               "AND \"processed_at\" IS NULL AND \"queue\" = ?3 ORDER BY \"priority\", "
               "\"retry_after\", \"id\" LIMIT 1) RETURNING \"id\", \"attempt\", \"queue\", "
               "\"pkey\", \"headers\", \"payload\", \"title\", \"size\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, TABQ_P_GROUP, 0);
  b = lease_of(&bare);
  expect_built(lease->claim_one, &b,
               "UPDATE \"bare\" SET \"lu\" = ?1 WHERE \"id\" = (SELECT \"id\" FROM \"bare\" "
               "WHERE (\"lu\" IS NULL OR \"lu\" <= ?2) ORDER BY \"id\" LIMIT 1) RETURNING \"id\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, 0);
  tabq_table fifo = jobs;
  fifo.fifo = true;
  b = lease_of(&fifo);
  expect_none(lease->claim_one, &b);
}

/* Every claimed row's lease and attempt in one statement: the ids' JSON array read with
 * json_each; a table without locked_until is refused, as by stamp. */
static void test_stamp_ids(void) {
  tabq_build b = lease_of(&jobs);
  expect_built(lease->stamp_ids, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = ?1, \"attempt\" = \"attempt\" + 1 WHERE "
               "\"id\" IN (SELECT value FROM json_each(?2))",
               TABQ_P_LEASE_UNTIL, TABQ_P_IDS, 0);
  b = lease_of(&bare);
  expect_built(lease->stamp_ids, &b,
               "UPDATE \"bare\" SET \"lu\" = ?1 WHERE \"id\" IN (SELECT value FROM "
               "json_each(?2))",
               TABQ_P_LEASE_UNTIL, TABQ_P_IDS, 0);
  tabq_table unleased = jobs;
  unleased.locked_until.name = NULL;
  b = lease_of(&unleased);
  expect_refused(lease->stamp_ids, &b, TABQ_DIALECT);
}

static void test_extend_release(void) {
  tabq_build b = lease_of(&jobs);
  expect_built(lease->extend, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = ?1 WHERE \"id\" = ?2 AND "
               "\"locked_until\" = ?3",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(lease->release, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = NULL WHERE \"id\" = ?1 AND "
               "\"locked_until\" = ?2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
}

static void test_settlements(void) {
  tabq_build b = lease_of(&jobs);
  expect_built(dia->ack, &b,
               "UPDATE \"jobs\" SET \"processed_at\" = ?1, \"locked_until\" = NULL WHERE \"id\" "
               "= ?2 AND \"locked_until\" = ?3",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->discard, &b,
               "UPDATE \"jobs\" SET \"processed_at\" = ?1, \"locked_until\" = NULL WHERE \"id\" "
               "= ?2 AND \"locked_until\" = ?3",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->retry, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = NULL WHERE \"id\" = ?1 AND "
               "\"locked_until\" = ?2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->retry_after, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = NULL, \"retry_after\" = ?1 WHERE \"id\" = "
               "?2 AND \"locked_until\" = ?3",
               TABQ_P_RETRY_AT, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->dead_letter_group, &b,
               "UPDATE \"jobs\" SET \"queue\" = ?1, \"locked_until\" = NULL WHERE \"id\" = ?2 "
               "AND \"locked_until\" = ?3",
               TABQ_P_DEST, TABQ_P_ID, TABQ_P_TOKEN, 0);

  b = lease_of(&thumbs);
  expect_built(dia->ack, &b,
               "DELETE FROM \"main\".\"thumbs\" WHERE \"id\" = ?1 AND \"locked_until\" = ?2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  /* Without retry_after a delayed retry is a plain retry. */
  expect_built(dia->retry_after, &b,
               "UPDATE \"main\".\"thumbs\" SET \"locked_until\" = NULL WHERE \"id\" = ?1 AND "
               "\"locked_until\" = ?2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL(dia->dead_letter_group(&b, &st), TABQ_DECLARATION);
  MSG_HAS("main.thumbs");
  tabq_sql_free(&st);

  /* Outside the lease form a settlement names the row alone. */
  tabq_build ab = {.table = &adv, .form = TABQ_FORM_ADVISORY};
  expect_built(dia->ack, &ab, "DELETE FROM \"adv_jobs\" WHERE \"id\" = ?1", TABQ_P_ID, 0);
}

static void test_dead_letter_table(void) {
  tabq_build b = lease_of(&jobs);
  b.dead_letter_table = "jobs_dead";
  expect_dead_letter(
      dia->dead_letter_table, &b,
      "INSERT INTO \"jobs_dead\" (\"id\", \"queue\", \"priority\", \"pkey\", "
      "\"retry_after\", \"attempt\", \"processed_at\", \"headers\", \"payload\", "
      "\"title\", \"size\") SELECT \"id\", \"queue\", \"priority\", \"pkey\", "
      "\"retry_after\", \"attempt\", \"processed_at\", \"headers\", \"payload\", "
      "\"title\", \"size\" FROM \"jobs\" WHERE \"id\" = ?1 AND \"locked_until\" = ?2",
      "DELETE FROM \"jobs\" WHERE \"id\" = ?1 AND \"locked_until\" = ?2", TABQ_P_TOKEN);

  b = lease_of(&thumbs);
  b.dead_letter_table = "main.thumbs_dead";
  tabq_stmt copy, remove;
  tabq_sql_init(&copy, &test_host);
  tabq_sql_init(&remove, &test_host);
  CU_ASSERT_EQUAL_FATAL(dia->dead_letter_table(&b, &copy, &remove), TABQ_OK);
  expect_stmt(&copy,
              "INSERT INTO \"main\".\"thumbs_dead\" (\"id\", \"attempt\", \"payload\") SELECT "
              "\"id\", \"attempt\", \"payload\" FROM \"main\".\"thumbs\" WHERE \"id\" = ?1 AND "
              "\"locked_until\" = ?2",
              TABQ_P_ID, TABQ_P_TOKEN, 0);
  tabq_sql_free(&copy);
  tabq_sql_free(&remove);
}

/* The advisory form: candidates with their rendered keys, and the take that counts the attempt
 * while the row is still due; on the database clock "now" is SQLite's, at full width. */
static void test_advisory(void) {
  const tabq_advisory_v1 *a = tabq_plugin_entry(&test_host, TABQ_ABI_VERSION)->advisory;
  tabq_table t = jobs;
  t.locked_until.name = NULL;
  t.advisory_lock = "job-{queue}-{id}";
  tabq_build b = {.table = &t, .form = TABQ_FORM_ADVISORY};
  expect_built(a->candidates, &b,
               "SELECT \"id\", 'job-' || coalesce(CAST(\"queue\" AS TEXT), '') || '-' || "
               "coalesce(CAST(\"id\" AS TEXT), '') FROM \"jobs\" WHERE (\"retry_after\" IS NULL OR "
               "\"retry_after\" <= ?1) AND \"processed_at\" IS NULL AND \"queue\" = ?2 ORDER BY "
               "\"priority\", \"retry_after\", \"id\" LIMIT ?3",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  expect_built(a->take, &b,
               "UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" = ?1 AND "
               "(\"retry_after\" IS NULL OR \"retry_after\" <= ?2) AND \"processed_at\" IS NULL "
               "AND \"queue\" = ?3 RETURNING \"id\", \"attempt\", \"queue\", \"pkey\", "
               "\"headers\", \"payload\", \"title\", \"size\"",
               TABQ_P_ID, TABQ_P_NOW, TABQ_P_GROUP, 0);
  t.clock = TABQ_CLOCK_DATABASE;
  expect_built(a->take, &b,
               "UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" = ?1 AND "
               "(\"retry_after\" IS NULL OR \"retry_after\" <= (strftime('%Y-%m-%d %H:%M:%f', "
               "'now') || '000')) AND \"processed_at\" IS NULL AND \"queue\" = ?2 RETURNING "
               "\"id\", \"attempt\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", "
               "\"size\"",
               TABQ_P_ID, TABQ_P_GROUP, 0);
  /* Without an attempt column the take only reads. */
  expect_built(a->take, &(tabq_build){.table = &adv, .form = TABQ_FORM_ADVISORY},
               "SELECT \"id\" FROM \"adv_jobs\" WHERE \"id\" = ?1", TABQ_P_ID, 0);
}

/* ABI 1.8: asked for the due time, every projection ends with retry_after, the text the core
 * reads as a time. */
static void test_project_due(void) {
  tabq_build b = lease_of(&jobs);
  expect_due_appended(lease->claim, &b, "\"size\"", "\"retry_after\"");
  expect_due_appended(lease->claim_one, &b, "\"size\"", "\"retry_after\"");
  const tabq_advisory_v1 *a = tabq_plugin_entry(&test_host, TABQ_ABI_VERSION)->advisory;
  tabq_table t = jobs;
  t.locked_until.name = NULL;
  t.advisory_lock = "job-{id}";
  b = (tabq_build){.table = &t, .form = TABQ_FORM_ADVISORY};
  expect_due_appended(a->take, &b, "\"size\"", "\"retry_after\"");
  t.attempt.name = NULL; /* the take that only reads */
  expect_due_appended(a->take, &b, "\"size\"", "\"retry_after\"");
}

static void test_begin(void) {
  static const char *const want[] = {"BEGIN IMMEDIATE", "BEGIN DEFERRED", "BEGIN IMMEDIATE",
                                     "BEGIN EXCLUSIVE"};
  for (int mode = 0; mode < 4; mode++) {
    tabq_table t = jobs;
    t.mode = (tabq_sqlite_mode)mode;
    tabq_build b = lease_of(&t);
    expect_built(dia->begin, &b, want[mode], 0);
  }
}

static void test_check(void) {
  tabq_build b = lease_of(&jobs);
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_OK);

  b = (tabq_build){.table = &plain, .form = TABQ_FORM_ROWLOCK};
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_DIALECT);
  MSG_HAS("plain_jobs");
  MSG_HAS("serves the lease and advisory lock forms");
  MSG_HAS("locked_until");
  MSG_HAS("advisory_lock");

  b = (tabq_build){.table = &adv, .form = TABQ_FORM_ADVISORY};
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_OK);
  tabq_table on_db = adv;
  on_db.clock = TABQ_CLOCK_DATABASE; /* the database clock serves the advisory form */
  b.table = &on_db;
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_OK);

  tabq_table t = jobs;
  t.isolation = TABQ_ISOLATION_SERIALIZABLE;
  b = lease_of(&t);
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_DIALECT);
  MSG_HAS("jobs");
  MSG_HAS("deferred, immediate and exclusive");
  MSG_HAS("PostgreSQL opens read committed, repeatable read and serializable");
  MSG_HAS("MySQL/MariaDB open read uncommitted, read committed, repeatable read and "
          "serializable");

  t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  b = lease_of(&t);
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_DIALECT);
  MSG_HAS("jobs");
  MSG_HAS("advisory form only");

  t = jobs;
  t.mode = TABQ_SQLITE_IMMEDIATE;
  b = lease_of(&t);
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_OK);
}

/* ---- Time text ----------------------------------------------------------------------------- */

static void expect_time(int64_t us, const char *text) {
  char buf[TABQ_SQLITE_TIME_LEN + 1];
  CU_ASSERT_FATAL(tabq_sqlite_time_format(us, buf));
  CU_ASSERT_STRING_EQUAL(buf, text);
  int64_t back = 0;
  CU_ASSERT(tabq_sqlite_time_parse(buf, strlen(buf), &back));
  CU_ASSERT_EQUAL(back, us);
}

static void test_time_text(void) {
  expect_time(0, "1970-01-01 00:00:00.000000");
  expect_time(-1, "1969-12-31 23:59:59.999999");
  expect_time(INT64_C(951782400000001), "2000-02-29 00:00:00.000001");
  expect_time(INT64_C(1700000000123456), "2023-11-14 22:13:20.123456");
  expect_time(INT64_C(253402300799999999), "9999-12-31 23:59:59.999999");
  expect_time(INT64_C(-62167219200000000), "0000-01-01 00:00:00.000000");

  char buf[TABQ_SQLITE_TIME_LEN + 1];
  CU_ASSERT_FALSE(tabq_sqlite_time_format(INT64_C(253402300800000000), buf));
  CU_ASSERT_FALSE(tabq_sqlite_time_format(INT64_C(-62167219200000001), buf));
  CU_ASSERT_FALSE(tabq_sqlite_time_format(INT64_MAX, buf));
  CU_ASSERT_FALSE(tabq_sqlite_time_format(INT64_MIN, buf));

  /* Text order is time order, one microsecond apart, across every carry. */
  const int64_t edges[] = {0,
                           -1,
                           INT64_C(999999),
                           INT64_C(86399999999),
                           INT64_C(951868799999999), /* end of 2000-02-29 */
                           INT64_C(946684799999999), /* end of 1999 */
                           INT64_C(1700000000123456),
                           INT64_C(253402300799999998)};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    char a[TABQ_SQLITE_TIME_LEN + 1], b[TABQ_SQLITE_TIME_LEN + 1];
    CU_ASSERT_FATAL(tabq_sqlite_time_format(edges[i], a));
    CU_ASSERT_FATAL(tabq_sqlite_time_format(edges[i] + 1, b));
    CU_ASSERT(strcmp(a, b) < 0);
    CU_ASSERT_EQUAL(strlen(a), TABQ_SQLITE_TIME_LEN);
  }
  for (int64_t us = INT64_C(1699999990000000); us < INT64_C(1700000010000000);
       us += INT64_C(12345)) {
    char a[TABQ_SQLITE_TIME_LEN + 1], b[TABQ_SQLITE_TIME_LEN + 1];
    tabq_sqlite_time_format(us, a);
    tabq_sqlite_time_format(us + 1, b);
    if (strcmp(a, b) >= 0)
      CU_FAIL("time text out of order");
  }

  int64_t us = 0;
  CU_ASSERT(tabq_sqlite_time_parse("2023-11-14 22:13:20", 19, &us));
  CU_ASSERT_EQUAL(us, INT64_C(1700000000000000));
  CU_ASSERT(tabq_sqlite_time_parse("2023-11-14T22:13:20.5", 21, &us));
  CU_ASSERT_EQUAL(us, INT64_C(1700000000500000));
  CU_ASSERT_FALSE(tabq_sqlite_time_parse("2023-02-29 00:00:00", 19, &us));
  CU_ASSERT_FALSE(tabq_sqlite_time_parse("2023-13-01 00:00:00", 19, &us));
  CU_ASSERT_FALSE(tabq_sqlite_time_parse("2023-01-01 24:00:00", 19, &us));
  CU_ASSERT_FALSE(tabq_sqlite_time_parse("2023-01-01 00:00:00.", 20, &us));
  CU_ASSERT_FALSE(tabq_sqlite_time_parse("2023-01-01 00:00:00.1234567", 27, &us));
  CU_ASSERT_FALSE(tabq_sqlite_time_parse("2023-1-01 00:00:00", 18, &us));
}

/* ---- URLs ---------------------------------------------------------------------------------- */

static void expect_url_refused(const char *url, const char *named) {
  static int dummy;
  tabq_conn *c = (tabq_conn *)&dummy; /* connect must clear it */
  CU_ASSERT_EQUAL(drv->connect(url, &c), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(c);
  MSG_HAS(named);
}

static void test_url_refusals(void) {
  expect_url_refused("sqlite:/tmp/tabq-never.db?cache=shared", "\"cache\"");
  expect_url_refused("sqlite::memory:", ":memory:");
  expect_url_refused("sqlite://:memory:?synchronous=off", ":memory:");
  expect_url_refused("sqlite:", "sqlite:");
  expect_url_refused("sqlite:///tmp/tabq-never.db?synchronous=fast", "fast");
  expect_url_refused("sqlite:/tmp/tabq-never.db?busy_timeout=-1", "-1");
  expect_url_refused("sqlite:/tmp/tabq-never.db?busy_timeout", "busy_timeout");
  expect_url_refused("postgres://localhost/x", "postgres://localhost/x");
  CU_ASSERT_EQUAL(access("/tmp/tabq-never.db", F_OK), -1);
}

/* ---- Registration ------------------------------------------------------------------------ */

static CU_TestInfo text_tests[] = {
    {"entry and descriptor", test_entry},
    {"quote", test_quote},
    {"insert", test_insert},
    {"insert_rows", test_insert_rows},
    {"lease claim", test_claim},
    {"lease claim, fifo", test_claim_fifo},
    {"lease claim of one row", test_claim_one},
    {"lease stamp of many rows", test_stamp_ids},
    {"extend and release", test_extend_release},
    {"settlements", test_settlements},
    {"dead letter into a table", test_dead_letter_table},
    {"the due time after the projection", test_project_due},
    {"advisory candidates and take", test_advisory},
    {"begin", test_begin},
    {"check refusals", test_check},
    {"time text", test_time_text},
    {"URL refusals", test_url_refusals},
    CU_TEST_INFO_NULL,
};

int register_tests(void) {
  tabq_sqlite_set_host(&test_host);
  ADD_SUITE("sqlite statements", NULL, NULL, text_tests);
  return 0;
}
