/* tabq — unit tests of the PostgreSQL dialect's statement builders: the exact SQL text and
 * parameter ids of every statement in each form, and every refusal (no server). */
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_main.h"
#include "postgres_fixture.h"
#include <tabq/sys/sql_named.h>

static const tabq_rowlock_v1 *const rowlock = &tabq_pg_rowlock;
static const tabq_lease_v1 *const lease = &tabq_pg_lease;
static const tabq_advisory_v1 *const adv = &tabq_pg_advisory;

const tabq_table weird = {.size = sizeof(tabq_table),
                          .name = "app.we\"ird",
                          .id = {"i\"d"},
                          .attempt = {"attempt"},
                          .payload = {"payload"}};

tabq_build on(const tabq_table *t) {
  tabq_build b = {.table = t, .form = tabq_table_form(t)};
  return b;
}

/* ---- The vtables --------------------------------------------------------------------------- */

/* Every member is set: the tests below call each one. */
static void test_vtables(void) {
  CU_ASSERT_EQUAL(dia->size, sizeof(tabq_dialect_v1));
  CU_ASSERT_EQUAL(dia->version, 1);
  CU_ASSERT_PTR_NOT_NULL(dia->insert_rows);
  CU_ASSERT_EQUAL(rowlock->size, sizeof(tabq_rowlock_v1));
  CU_ASSERT_EQUAL(rowlock->version, 1);
  CU_ASSERT_EQUAL(rowlock->flags, TABQ_PROJECTS_DUE);
  CU_ASSERT_EQUAL(lease->size, sizeof(tabq_lease_v1));
  CU_ASSERT_EQUAL(lease->version, 1);
  CU_ASSERT_EQUAL(lease->flags, TABQ_PROJECTS_DUE);
  CU_ASSERT_PTR_NULL(lease->stamp);
  CU_ASSERT_EQUAL(adv->size, sizeof(tabq_advisory_v1));
  CU_ASSERT_EQUAL(adv->version, 1);
  CU_ASSERT_EQUAL(adv->flags, TABQ_PROJECTS_DUE);
}

/* ---- Shared statements --------------------------------------------------------------------- */

static void test_quote(void) {
  static const char *const cases[][2] = {
      {"jobs", "\"jobs\""},
      {"app.jobs", "\"app\".\"jobs\""},
      {"we\"ird.jo\"bs", "\"we\"\"ird\".\"jo\"\"bs\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tabq_stmt st;
    tabq_sql_init(&st, &test_host);
    CU_ASSERT_EQUAL(dia->quote(&st, cases[i][0]), TABQ_OK);
    expect_stmt(&st, cases[i][1], 0);
    tabq_sql_free(&st);
  }
}

static void test_insert(void) {
  tabq_build b = on(&jobs);
  expect_built(dia->insert, &b,
               "INSERT INTO \"jobs\" (\"queue\", \"priority\", \"pkey\", \"retry_after\", "
               "\"attempt\", \"headers\", \"payload\", \"title\") VALUES ($1, $2, $3, $4, $5, $6, "
               "$7, $8)",
               TABQ_P_GROUP, TABQ_P_PRIORITY, TABQ_P_PARTITION_KEY, TABQ_P_RETRY_AT, TABQ_P_ATTEMPT,
               TABQ_P_HEADERS, TABQ_P_PAYLOAD, TABQ_P_DATA + 0, 0);
  b = on(&thumbs);
  expect_built(dia->insert, &b, "INSERT INTO \"app\".\"thumbs\" (\"payload\") VALUES ($1)",
               TABQ_P_PAYLOAD, 0);
  b = on(&plain);
  expect_built(dia->insert, &b, "INSERT INTO \"plain_jobs\" (\"id\", \"payload\") VALUES ($1, $2)",
               TABQ_P_ID, TABQ_P_PAYLOAD, 0);
  b = on(&weird);
  expect_built(dia->insert, &b,
               "INSERT INTO \"app\".\"we\"\"ird\" (\"i\"\"d\", \"attempt\", \"payload\") VALUES "
               "($1, $2, $3)",
               TABQ_P_ID, TABQ_P_ATTEMPT, TABQ_P_PAYLOAD, 0);
  b = on(&all_generated);
  expect_built(dia->insert, &b, "INSERT INTO \"ev\" DEFAULT VALUES", 0);
}

/* insert's columns once, then one tuple a row: each row's placeholders are the next copy of
 * insert's list, numbered on from the row before, and the list is insert's, once. */
static void test_insert_rows(void) {
  tabq_build b = on(&plain);
  b.rows = 3;
  expect_built(dia->insert_rows, &b,
               "INSERT INTO \"plain_jobs\" (\"id\", \"payload\") VALUES ($1, $2), ($3, $4), ($5, "
               "$6)",
               TABQ_P_ID, TABQ_P_PAYLOAD, 0);
  b = on(&jobs);
  b.rows = 2;
  expect_built(dia->insert_rows, &b,
               "INSERT INTO \"jobs\" (\"queue\", \"priority\", \"pkey\", \"retry_after\", "
               "\"attempt\", \"headers\", \"payload\", \"title\") VALUES ($1, $2, $3, $4, $5, $6, "
               "$7, $8), ($9, $10, $11, $12, $13, $14, $15, $16)",
               TABQ_P_GROUP, TABQ_P_PRIORITY, TABQ_P_PARTITION_KEY, TABQ_P_RETRY_AT, TABQ_P_ATTEMPT,
               TABQ_P_HEADERS, TABQ_P_PAYLOAD, TABQ_P_DATA + 0, 0);
  /* The most rows the core asks for: 1,024 placeholders, a list of 8. */
  b.rows = TABQ_INSERT_ROWS_MAX;
  expect_built_end(dia->insert_rows, &b,
                   "), ($1017, $1018, $1019, $1020, $1021, $1022, $1023, $1024)", 8);
  /* DEFAULT VALUES writes one row: declined, each row is one insert. */
  b = on(&all_generated);
  b.rows = 2;
  expect_none(dia->insert_rows, &b);
  b = on(&plain);
  b.rows = 0;
  expect_refused(dia->insert_rows, &b, TABQ_INVALID);
  MSG_HAS("plain_jobs");
}

/* More placeholders than a statement holds, and an allocator that fails: the builder names the
 * statement and the table. */
static void test_build_failures(void) {
  static tabq_col many[TABQ_STMT_MAX_PARAMS + 1];
  static char names[TABQ_STMT_MAX_PARAMS + 1][8];
  for (size_t i = 0; i < sizeof many / sizeof many[0]; i++) {
    snprintf(names[i], sizeof names[i], "c%zu", i);
    many[i].name = names[i];
  }
  tabq_table wide = {.size = sizeof(tabq_table),
                     .name = "wide",
                     .id = {"id"},
                     .data = many,
                     .ndata = TABQ_STMT_MAX_PARAMS};
  tabq_build b = on(&wide);
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL(dia->insert(&b, &st), TABQ_INVALID);
  MSG_HAS("insert statement for table wide");
  MSG_HAS("more parameters");
  tabq_sql_free(&st);
  wide.ndata = TABQ_STMT_MAX_PARAMS - 1; /* with the id: exactly full */
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL(dia->insert(&b, &st), TABQ_OK);
  CU_ASSERT_EQUAL(st.nparams, TABQ_STMT_MAX_PARAMS);
  tabq_sql_free(&st);

  /* A host whose allocator always fails. */
  b = on(&jobs);
  tabq_sql_init(&st, &starved_host);
  CU_ASSERT_EQUAL(rowlock->claim(&b, &st), TABQ_NOMEM);
  MSG_HAS("claim statement for table jobs: out of memory");
  tabq_sql_free(&st);
}

static void test_fetch(void) {
  tabq_build b = on(&jobs);
  expect_built(dia->fetch, &b,
               "SELECT \"id\", \"attempt\", \"queue\", \"pkey\", \"headers\", \"payload\", "
               "\"title\", \"size\" FROM \"jobs\" WHERE \"id\" = ANY($1) ORDER BY "
               "\"processed_at\", \"priority\", \"retry_after\", \"id\"",
               TABQ_P_IDS, 0);
  b = on(&plain);
  expect_built(dia->fetch, &b,
               "SELECT \"id\", \"payload\" FROM \"plain_jobs\" WHERE \"id\" = ANY($1) ORDER BY "
               "\"id\"",
               TABQ_P_IDS, 0);
  b = on(&thumbs);
  expect_built(dia->fetch, &b,
               "SELECT \"id\", \"attempt\", \"payload\" FROM \"app\".\"thumbs\" WHERE \"id\" = "
               "ANY($1) ORDER BY \"id\"",
               TABQ_P_IDS, 0);
}

static void test_begin(void) {
  static const char *const want[] = {
      [TABQ_ISOLATION_DEFAULT] = "BEGIN",
      [TABQ_ISOLATION_READ_COMMITTED] = "BEGIN ISOLATION LEVEL READ COMMITTED",
      [TABQ_ISOLATION_REPEATABLE_READ] = "BEGIN ISOLATION LEVEL REPEATABLE READ",
      [TABQ_ISOLATION_SERIALIZABLE] = "BEGIN ISOLATION LEVEL SERIALIZABLE",
  };
  for (int level = 0; level <= TABQ_ISOLATION_SERIALIZABLE; level++) {
    tabq_table t = jobs;
    t.isolation = (tabq_isolation)level;
    tabq_build b = on(&t);
    if (level == TABQ_ISOLATION_READ_UNCOMMITTED) {
      expect_refused(dia->begin, &b, TABQ_DIALECT);
      MSG_HAS("jobs");
    } else {
      expect_built(dia->begin, &b, want[level], 0);
    }
  }
}

static void test_fifo_guard(void) {
  tabq_table t = jobs;
  t.fifo = true;
  tabq_build b = on(&t);
  expect_built(dia->fifo_guard, &b,
               "SELECT pg_try_advisory_xact_lock(hashtextextended('tabq-fifo:jobs:' || $1, 0))",
               TABQ_P_GROUP, 0);
  t.name = "app.jobs";
  expect_built(dia->fifo_guard, &b,
               "SELECT pg_try_advisory_xact_lock(hashtextextended('tabq-fifo:app.jobs:' || $1, "
               "0))",
               TABQ_P_GROUP, 0);
  /* The name as a string literal: a quote doubled, a backslash in an E'' literal. */
  t.name = "o'brien.we\"ird";
  expect_built(dia->fifo_guard, &b,
               "SELECT pg_try_advisory_xact_lock(hashtextextended('tabq-fifo:o''brien.we\"ird:' "
               "|| $1, 0))",
               TABQ_P_GROUP, 0);
  t.name = "back\\slash";
  expect_built(dia->fifo_guard, &b,
               "SELECT pg_try_advisory_xact_lock(hashtextextended(E'tabq-fifo:back\\\\slash:' "
               "|| $1, 0))",
               TABQ_P_GROUP, 0);
  b = on(&plain);
  expect_refused(dia->fifo_guard, &b, TABQ_DECLARATION);
  MSG_HAS("plain_jobs");
  MSG_HAS("group");
}

static void test_channel_notify(void) {
  tabq_build b = on(&jobs);
  expect_built(dia->channel, &b, "jobs", 0);
  b = on(&thumbs);
  expect_built(dia->channel, &b, "app.thumbs", 0);

  char name[80];
  memset(name, 'a', sizeof name);
  memcpy(name, "app.", 4);
  name[63] = '\0';
  tabq_table t = jobs;
  t.name = name;
  b = on(&t);
  expect_built(dia->channel, &b, name, 0);
  name[63] = 'a';
  name[64] = '\0';
  expect_refused(dia->channel, &b, TABQ_DECLARATION);
  MSG_HAS(name);
  MSG_HAS("64 bytes");
  MSG_HAS("63 bytes");

  b = on(&jobs);
  expect_built(dia->notify, &b, "SELECT pg_notify($1, $2)", TABQ_P_CHANNEL, TABQ_P_GROUP, 0);
}

/* ---- Row lock claims ----------------------------------------------------------------------- */

static void test_rowlock_claim(void) {
  tabq_build b = on(&jobs);
  CU_ASSERT_EQUAL(b.form, TABQ_FORM_ROWLOCK);
  expect_built(rowlock->claim, &b,
               "WITH claimed AS (UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" "
               "= ANY (ARRAY(SELECT \"id\" FROM \"jobs\" WHERE (\"retry_after\" IS NULL OR "
               "\"retry_after\" <= $1) AND \"processed_at\" IS NULL AND \"queue\" = $2 ORDER BY "
               "\"processed_at\", \"priority\", \"retry_after\", \"id\" LIMIT $3 FOR UPDATE SKIP "
               "LOCKED)) RETURNING *) SELECT \"id\", \"attempt\", \"queue\", \"pkey\", "
               "\"headers\", \"payload\", \"title\", \"size\" FROM claimed ORDER BY "
               "\"processed_at\", \"priority\", \"retry_after\", \"id\"",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);

  /* The database's clock: no NOW parameter. */
  tabq_table t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  b = on(&t);
  expect_built(rowlock->claim, &b,
               "WITH claimed AS (UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" "
               "= ANY (ARRAY(SELECT \"id\" FROM \"jobs\" WHERE (\"retry_after\" IS NULL OR "
               "\"retry_after\" <= statement_timestamp()) AND \"processed_at\" IS NULL AND "
               "\"queue\" = $1 ORDER BY \"processed_at\", \"priority\", \"retry_after\", \"id\" "
               "LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING *) SELECT \"id\", \"attempt\", "
               "\"queue\", \"pkey\", \"headers\", \"payload\", \"title\", \"size\" FROM claimed "
               "ORDER BY \"processed_at\", \"priority\", \"retry_after\", \"id\"",
               TABQ_P_GROUP, TABQ_P_LIMIT, 0);

  /* No attempt column: the claim selects and locks, nothing is counted. */
  t = jobs;
  t.attempt = (tabq_col){0};
  t.priority = (tabq_col){0};
  b = on(&t);
  expect_built(rowlock->claim, &b,
               "SELECT \"id\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", "
               "\"size\" FROM \"jobs\" WHERE (\"retry_after\" IS NULL OR \"retry_after\" <= $1) "
               "AND \"processed_at\" IS NULL AND \"queue\" = $2 ORDER BY \"processed_at\", "
               "\"retry_after\", \"id\" LIMIT $3 FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  /* Nothing to check: every row is due. */
  b = on(&plain);
  expect_built(rowlock->claim, &b,
               "SELECT \"id\", \"payload\" FROM \"plain_jobs\" ORDER BY \"id\" LIMIT $1 FOR "
               "UPDATE SKIP LOCKED",
               TABQ_P_LIMIT, 0);
  b = on(&weird);
  expect_built(
      rowlock->claim, &b,
      "WITH claimed AS (UPDATE \"app\".\"we\"\"ird\" SET \"attempt\" = \"attempt\" + 1 "
      "WHERE \"i\"\"d\" = ANY (ARRAY(SELECT \"i\"\"d\" FROM \"app\".\"we\"\"ird\" ORDER BY "
      "\"i\"\"d\" LIMIT $1 FOR UPDATE SKIP LOCKED)) RETURNING *) SELECT \"i\"\"d\", "
      "\"attempt\", \"payload\" FROM claimed ORDER BY \"i\"\"d\"",
      TABQ_P_LIMIT, 0);
}

static void test_rowlock_claim_fifo(void) {
  tabq_table t = jobs;
  t.fifo = true;
  tabq_build b = on(&t);
  expect_built(rowlock->claim, &b,
               "WITH claimed AS (UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" "
               "= (SELECT \"id\" FROM \"jobs\" WHERE \"queue\" = $1 AND \"processed_at\" IS NULL "
               "ORDER BY \"processed_at\", \"priority\", \"retry_after\", \"id\" LIMIT 1) AND "
               "(\"retry_after\" IS NULL OR \"retry_after\" <= $2) AND \"processed_at\" IS NULL "
               "AND \"queue\" = $1 RETURNING *) SELECT \"id\", \"attempt\", \"queue\", \"pkey\", "
               "\"headers\", \"payload\", \"title\", \"size\" FROM claimed ORDER BY "
               "\"processed_at\", \"priority\", \"retry_after\", \"id\"",
               TABQ_P_GROUP, TABQ_P_NOW, 0);

  /* Without attempt the head is selected and locked, never skipped. */
  t.attempt = (tabq_col){0};
  t.processed_at = (tabq_col){0};
  t.clock = TABQ_CLOCK_DATABASE;
  expect_built(rowlock->claim, &b,
               "SELECT \"id\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", \"size\" "
               "FROM \"jobs\" WHERE \"id\" = (SELECT \"id\" FROM \"jobs\" WHERE \"queue\" = $1 "
               "ORDER BY \"priority\", \"retry_after\", \"id\" LIMIT 1) AND (\"retry_after\" IS "
               "NULL OR \"retry_after\" <= statement_timestamp()) AND \"queue\" = $1 FOR UPDATE",
               TABQ_P_GROUP, 0);

  /* fifo without a group (R-DESC-1 refuses it) claims as a plain table. */
  tabq_table p = plain;
  p.fifo = true;
  b = on(&p);
  expect_built(rowlock->claim, &b,
               "SELECT \"id\", \"payload\" FROM \"plain_jobs\" ORDER BY \"id\" LIMIT $1 FOR "
               "UPDATE SKIP LOCKED",
               TABQ_P_LIMIT, 0);
}

/* One row: no CTE, no re-sort, LIMIT 1 written and one id compared. */
static void test_rowlock_claim_one(void) {
  tabq_build b = on(&jobs);
  expect_built(rowlock->claim_one, &b,
               "UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" = (SELECT \"id\" "
               "FROM \"jobs\" WHERE (\"retry_after\" IS NULL OR \"retry_after\" <= $1) AND "
               "\"processed_at\" IS NULL AND \"queue\" = $2 ORDER BY \"processed_at\", "
               "\"priority\", \"retry_after\", \"id\" LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING "
               "\"id\", \"attempt\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", "
               "\"size\"",
               TABQ_P_NOW, TABQ_P_GROUP, 0);
  /* No attempt column: the one row selected and locked. */
  tabq_table t = jobs;
  t.attempt = (tabq_col){0};
  t.priority = (tabq_col){0};
  b = on(&t);
  expect_built(rowlock->claim_one, &b,
               "SELECT \"id\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", "
               "\"size\" FROM \"jobs\" WHERE (\"retry_after\" IS NULL OR \"retry_after\" <= $1) "
               "AND \"processed_at\" IS NULL AND \"queue\" = $2 ORDER BY \"processed_at\", "
               "\"retry_after\", \"id\" LIMIT 1 FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_GROUP, 0);
  b = on(&weird);
  expect_built(rowlock->claim_one, &b,
               "UPDATE \"app\".\"we\"\"ird\" SET \"attempt\" = \"attempt\" + 1 WHERE \"i\"\"d\" = "
               "(SELECT \"i\"\"d\" FROM \"app\".\"we\"\"ird\" ORDER BY \"i\"\"d\" LIMIT 1 FOR "
               "UPDATE SKIP LOCKED) RETURNING \"i\"\"d\", \"attempt\", \"payload\"",
               0);
}

/* FIFO: the head's UPDATE without the CTE; without an attempt column the claim is one row
 * already, so claim_one declines. */
static void test_rowlock_claim_one_fifo(void) {
  tabq_table t = jobs;
  t.fifo = true;
  tabq_build b = on(&t);
  expect_built(rowlock->claim_one, &b,
               "UPDATE \"jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" = (SELECT \"id\" "
               "FROM \"jobs\" WHERE \"queue\" = $1 AND \"processed_at\" IS NULL ORDER BY "
               "\"processed_at\", \"priority\", \"retry_after\", \"id\" LIMIT 1) AND "
               "(\"retry_after\" IS NULL OR \"retry_after\" <= $2) AND \"processed_at\" IS NULL "
               "AND \"queue\" = $1 RETURNING \"id\", \"attempt\", \"queue\", \"pkey\", "
               "\"headers\", \"payload\", \"title\", \"size\"",
               TABQ_P_GROUP, TABQ_P_NOW, 0);
  t.attempt = (tabq_col){0};
  expect_none(rowlock->claim_one, &b);
}

/* ---- Lease ---------------------------------------------------------------------------------- */

static void test_lease_claim(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  CU_ASSERT_EQUAL(b.form, TABQ_FORM_LEASE);
  expect_built(lease->claim, &b,
               "WITH claimed AS (UPDATE \"jobs\" SET \"locked_until\" = $1, \"attempt\" = "
               "\"attempt\" + 1 WHERE \"id\" = ANY (ARRAY(SELECT \"id\" FROM \"jobs\" WHERE "
               "(\"locked_until\" IS NULL OR \"locked_until\" <= $2) AND (\"retry_after\" IS "
               "NULL OR \"retry_after\" <= $2) AND \"processed_at\" IS NULL AND \"queue\" = $3 "
               "ORDER BY \"processed_at\", \"priority\", \"retry_after\", \"id\" LIMIT $4 FOR "
               "UPDATE SKIP LOCKED)) RETURNING *) SELECT \"id\", \"attempt\", \"queue\", "
               "\"pkey\", \"headers\", \"payload\", \"title\", \"size\" FROM claimed ORDER BY "
               "\"processed_at\", \"priority\", \"retry_after\", \"id\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  b = on(&thumbs);
  expect_built(lease->claim, &b,
               "WITH claimed AS (UPDATE \"app\".\"thumbs\" SET \"locked_until\" = $1, "
               "\"attempt\" = \"attempt\" + 1 WHERE \"id\" = ANY (ARRAY(SELECT \"id\" FROM "
               "\"app\".\"thumbs\" WHERE (\"locked_until\" IS NULL OR \"locked_until\" <= $2) "
               "ORDER BY \"id\" LIMIT $3 FOR UPDATE SKIP LOCKED)) RETURNING *) SELECT \"id\", "
               "\"attempt\", \"payload\" FROM claimed ORDER BY \"id\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, TABQ_P_LIMIT, 0);
  /* No attempt column: nothing counted, nothing returned for it. */
  b = on(&bare);
  expect_built(
      lease->claim, &b,
      "WITH claimed AS (UPDATE \"bare\" SET \"lu\" = $1 WHERE \"id\" = ANY (ARRAY(SELECT \"id\" "
      "FROM \"bare\" WHERE (\"lu\" IS NULL OR \"lu\" <= $2) ORDER BY \"id\" LIMIT $3 "
      "FOR UPDATE SKIP LOCKED)) RETURNING *) SELECT \"id\" FROM claimed ORDER BY \"id\"",
      TABQ_P_LEASE_UNTIL, TABQ_P_NOW, TABQ_P_LIMIT, 0);
}

static void test_lease_claim_fifo(void) {
  tabq_table t = leased_jobs();
  t.fifo = true;
  tabq_build b = on(&t);
  expect_built(lease->claim, &b,
               "WITH claimed AS (UPDATE \"jobs\" SET \"locked_until\" = $1, \"attempt\" = "
               "\"attempt\" + 1 WHERE \"id\" = (SELECT \"id\" FROM \"jobs\" WHERE \"queue\" = $2 "
               "AND \"processed_at\" IS NULL ORDER BY \"processed_at\", \"priority\", "
               "\"retry_after\", \"id\" LIMIT 1) AND (\"locked_until\" IS NULL OR "
               "\"locked_until\" <= $3) AND (\"retry_after\" IS NULL OR \"retry_after\" <= $3) "
               "AND \"processed_at\" IS NULL AND \"queue\" = $2 RETURNING *) SELECT \"id\", "
               "\"attempt\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", \"size\" "
               "FROM claimed ORDER BY \"processed_at\", \"priority\", \"retry_after\", \"id\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_GROUP, TABQ_P_NOW, 0);
  /* Only the lease and the group: the head while its lease has ended. */
  tabq_table g = {.size = sizeof(tabq_table),
                  .name = "app.q",
                  .id = {"id"},
                  .group = {"grp"},
                  .locked_until = {"lu"},
                  .fifo = true};
  b = on(&g);
  expect_built(lease->claim, &b,
               "WITH claimed AS (UPDATE \"app\".\"q\" SET \"lu\" = $1 WHERE \"id\" = (SELECT "
               "\"id\" FROM \"app\".\"q\" WHERE \"grp\" = $2 ORDER BY \"id\" LIMIT 1) AND "
               "(\"lu\" IS NULL OR \"lu\" <= $3) AND \"grp\" = $2 RETURNING *) SELECT \"id\", "
               "\"grp\" FROM claimed ORDER BY \"id\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_GROUP, TABQ_P_NOW, 0);
}

static void test_lease_claim_one(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  expect_built(lease->claim_one, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = $1, \"attempt\" = \"attempt\" + 1 WHERE "
               "\"id\" = (SELECT \"id\" FROM \"jobs\" WHERE (\"locked_until\" IS NULL OR "
               "\"locked_until\" <= $2) AND (\"retry_after\" IS NULL OR \"retry_after\" <= $2) "
               "AND \"processed_at\" IS NULL AND \"queue\" = $3 ORDER BY \"processed_at\", "
               "\"priority\", \"retry_after\", \"id\" LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING "
               "\"id\", \"attempt\", \"queue\", \"pkey\", \"headers\", \"payload\", \"title\", "
               "\"size\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, TABQ_P_GROUP, 0);
  b = on(&bare);
  expect_built(lease->claim_one, &b,
               "UPDATE \"bare\" SET \"lu\" = $1 WHERE \"id\" = (SELECT \"id\" FROM \"bare\" "
               "WHERE (\"lu\" IS NULL OR \"lu\" <= $2) ORDER BY \"id\" LIMIT 1 FOR UPDATE SKIP "
               "LOCKED) RETURNING \"id\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, 0);
  tabq_table g = {.size = sizeof(tabq_table),
                  .name = "app.q",
                  .id = {"id"},
                  .group = {"grp"},
                  .locked_until = {"lu"},
                  .fifo = true};
  b = on(&g);
  expect_built(lease->claim_one, &b,
               "UPDATE \"app\".\"q\" SET \"lu\" = $1 WHERE \"id\" = (SELECT \"id\" FROM "
               "\"app\".\"q\" WHERE \"grp\" = $2 ORDER BY \"id\" LIMIT 1) AND (\"lu\" IS NULL OR "
               "\"lu\" <= $3) AND \"grp\" = $2 RETURNING \"id\", \"grp\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_GROUP, TABQ_P_NOW, 0);
  /* A row lock table has no lease to claim. */
  b = on(&jobs);
  b.form = TABQ_FORM_LEASE;
  expect_refused(lease->claim_one, &b, TABQ_DIALECT);
  MSG_HAS("needs locked_until");
}

static void test_extend_release(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  expect_built(lease->extend, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = $1 WHERE \"id\" = $2 AND \"locked_until\" "
               "= $3",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(lease->release, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = NULL WHERE \"id\" = $1 AND "
               "\"locked_until\" = $2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  b = on(&thumbs);
  expect_built(lease->extend, &b,
               "UPDATE \"app\".\"thumbs\" SET \"locked_until\" = $1 WHERE \"id\" = $2 AND "
               "\"locked_until\" = $3",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, TABQ_P_TOKEN, 0);

  /* A table without locked_until has no lease to claim, move or end. */
  b = on(&jobs);
  expect_refused(lease->claim, &b, TABQ_DIALECT);
  MSG_HAS("table jobs");
  MSG_HAS("locked_until");
  expect_refused(lease->extend, &b, TABQ_DIALECT);
  MSG_HAS("table jobs");
  expect_refused(lease->release, &b, TABQ_DIALECT);
  MSG_HAS("table jobs");
}

/* ---- Advisory ------------------------------------------------------------------------------ */

static void test_advisory(void) {
  tabq_build b = on(&advj);
  CU_ASSERT_EQUAL(b.form, TABQ_FORM_ADVISORY);
  expect_built(adv->candidates, &b,
               "SELECT \"id\", 'acct-' || coalesce(\"account\"::text, '') FROM \"adv_jobs\" "
               "WHERE (\"retry_after\" IS NULL OR \"retry_after\" <= $1) AND \"processed_at\" IS "
               "NULL AND \"queue\" = $2 ORDER BY \"processed_at\", \"priority\", "
               "\"retry_after\", \"id\" LIMIT $3",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  expect_built(adv->lock, &b, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", TABQ_P_KEY,
               0);
  expect_built(adv->unlock, &b, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", TABQ_P_KEY,
               0);
  expect_built(adv->take, &b,
               "UPDATE \"adv_jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" = $1 AND "
               "(\"retry_after\" IS NULL OR \"retry_after\" <= $2) AND \"processed_at\" IS NULL "
               "AND \"queue\" = $3 RETURNING \"id\", \"attempt\", \"queue\", \"account\"",
               TABQ_P_ID, TABQ_P_NOW, TABQ_P_GROUP, 0);
  /* ABI 1.5: the lock with the take, the ack with the release, one round trip each. */
  expect_built(adv->lock_take, &b,
               "WITH tabq_lock AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM \"adv_jobs\" WHERE "
               "\"id\" = $1 AND (\"retry_after\" IS NULL OR \"retry_after\" <= $2) AND "
               "\"processed_at\" IS NULL AND \"queue\" = $3) THEN "
               "pg_try_advisory_lock(hashtextextended($4, 0)) ELSE false END AS held), "
               "tabq_taken AS (UPDATE \"adv_jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE "
               "\"id\" = $1 AND (\"retry_after\" IS NULL OR \"retry_after\" <= $2) AND "
               "\"processed_at\" IS NULL AND \"queue\" = $3 AND (SELECT held FROM tabq_lock) "
               "RETURNING \"id\", \"attempt\", \"queue\", \"account\") SELECT tabq_taken.*, "
               "tabq_lock.held::int FROM tabq_lock LEFT JOIN tabq_taken ON true",
               TABQ_P_ID, TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_KEY, 0);
  expect_built(adv->ack_unlock, &b,
               "WITH tabq_settled AS (UPDATE \"adv_jobs\" SET \"processed_at\" = $1 WHERE "
               "\"id\" = $2 RETURNING 1) SELECT tabq_done.n, "
               "pg_advisory_unlock(hashtextextended($3, 0))::int FROM (SELECT count(*) AS n FROM "
               "tabq_settled) AS tabq_done",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_KEY, 0);

  tabq_table t = advj;
  t.clock = TABQ_CLOCK_DATABASE;
  b = on(&t);
  expect_built(adv->candidates, &b,
               "SELECT \"id\", 'acct-' || coalesce(\"account\"::text, '') FROM \"adv_jobs\" "
               "WHERE (\"retry_after\" IS NULL OR \"retry_after\" <= statement_timestamp()) AND "
               "\"processed_at\" IS NULL AND \"queue\" = $1 ORDER BY \"processed_at\", "
               "\"priority\", \"retry_after\", \"id\" LIMIT $2",
               TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  expect_built(adv->take, &b,
               "UPDATE \"adv_jobs\" SET \"attempt\" = \"attempt\" + 1 WHERE \"id\" = $1 AND "
               "(\"retry_after\" IS NULL OR \"retry_after\" <= statement_timestamp()) AND "
               "\"processed_at\" IS NULL AND \"queue\" = $2 RETURNING \"id\", \"attempt\", "
               "\"queue\", \"account\"",
               TABQ_P_ID, TABQ_P_GROUP, 0);

  /* No attempt, no conditions: the take reads the row by its id. */
  b = on(&adv_min);
  expect_built(adv->candidates, &b,
               "SELECT \"id\", 'k-' || coalesce(\"id\"::text, '') FROM \"k\" ORDER BY \"id\" "
               "LIMIT $1",
               TABQ_P_LIMIT, 0);
  expect_built(adv->take, &b, "SELECT \"id\", \"payload\" FROM \"k\" WHERE \"id\" = $1", TABQ_P_ID,
               0);
  /* Without an attempt the take only reads: lock_take declines the table (writes no SQL). */
  tabq_stmt st = {0};
  CU_ASSERT_EQUAL(adv->lock_take(&b, &st), TABQ_OK);
  CU_ASSERT_PTR_NULL(st.sql);
  tabq_sql_free(&st);
  expect_built(adv->ack_unlock, &b,
               "WITH tabq_settled AS (DELETE FROM \"k\" WHERE \"id\" = $1 RETURNING 1) SELECT "
               "tabq_done.n, pg_advisory_unlock(hashtextextended($2, 0))::int FROM (SELECT "
               "count(*) AS n FROM tabq_settled) AS tabq_done",
               TABQ_P_ID, TABQ_P_KEY, 0);
}

/* The key expression of a template, as candidates renders it. */
static void expect_key(const char *tmpl, const char *expr) {
  tabq_table t = adv_min;
  t.advisory_lock = tmpl;
  tabq_build b = on(&t);
  char sql[512];
  snprintf(sql, sizeof sql, "SELECT \"id\", %s FROM \"k\" ORDER BY \"id\" LIMIT $1", expr);
  expect_built(adv->candidates, &b, sql, TABQ_P_LIMIT, 0);
}

static void expect_bad_key(const char *tmpl) {
  tabq_table t = adv_min;
  t.advisory_lock = tmpl;
  tabq_build b = on(&t);
  expect_refused(adv->candidates, &b, TABQ_DECLARATION);
  MSG_HAS("table k");
}

static void test_advisory_keys(void) {
  expect_key("{id}", "coalesce(\"id\"::text, '')");
  /* Several placeholders with literal text between them, a quote in the literal. */
  expect_key("it's {account}/{id}:{queue}",
             "'it''s ' || coalesce(\"account\"::text, '') || '/' || coalesce(\"id\"::text, '') "
             "|| ':' || coalesce(\"queue\"::text, '')");
  expect_key("{a}{b}", "coalesce(\"a\"::text, '') || coalesce(\"b\"::text, '')");
  expect_key("{id}-end'", "coalesce(\"id\"::text, '') || '-end'''");
  /* A backslash: an E'' literal, the same under either standard_conforming_strings. */
  expect_key("c:\\{id}", "E'c:\\\\' || coalesce(\"id\"::text, '')");
  expect_key("{we\"ird}", "coalesce(\"we\"\"ird\"::text, '')");
  expect_bad_key("k-{id");
  MSG_HAS("'k-{id'");
  expect_bad_key("k-{}");
  expect_bad_key("");
}

static int render(const char *sql, uint32_t allowed, tabq_stmt *st, char *why, size_t cap) {
  uint32_t used = 0;
  tabq_sql_init(st, &test_host);
  return tabq_sql_render_named(st, sql, dia->placeholder, allowed, &used, why, cap);
}

static void test_named(void) {
  tabq_stmt st;
  char why[256];
  uint32_t all = TABQ_N_ID | TABQ_N_HELD | TABQ_N_QUEUE;
  /* a repeated name reuses its number; casts, text, identifiers and comments stay as they are */
  CU_ASSERT_EQUAL(render("UPDATE jobs SET note = ':id', \"x:id\" = :held::timestamptz -- :id\n"
                         "WHERE id = :id /* :queue */ AND queue = :queue AND id = :id",
                         all, &st, why, sizeof why),
                  TABQ_OK);
  CU_ASSERT_STRING_EQUAL(st.sql, "UPDATE jobs SET note = ':id', \"x:id\" = $1::timestamptz -- "
                                 ":id\nWHERE id = $2 /* :queue */ AND queue = $3 AND id = $2");
  CU_ASSERT_EQUAL(st.nparams, 3);
  CU_ASSERT_EQUAL(st.params[0], TABQ_P_TOKEN);
  CU_ASSERT_EQUAL(st.params[1], TABQ_P_ID);
  CU_ASSERT_EQUAL(st.params[2], TABQ_P_GROUP);
  tabq_sql_free(&st);
  /* a name not known, a name not this statement's, a database placeholder */
  CU_ASSERT_EQUAL(render("DELETE FROM jobs WHERE id = :row", all, &st, why, sizeof why),
                  TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "':row' is no parameter tabq knows"));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, ":id, :queue, :held"));
  tabq_sql_free(&st);
  CU_ASSERT_EQUAL(render("SELECT :limit", all, &st, why, sizeof why), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a parameter of this statement"));
  tabq_sql_free(&st);
  CU_ASSERT_EQUAL(render("DELETE FROM jobs WHERE id = $1", all, &st, why, sizeof why),
                  TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "database placeholder"));
  tabq_sql_free(&st);
}

/* ABI 1.8: asked for the due time, every projection ends with retry_after (lock_take's answer
 * after it); a table without retry_after has none to give. */
static void test_project_due(void) {
  tabq_build b = on(&jobs);
  expect_due_appended(dia->fetch, &b, "\"size\"", "\"retry_after\"");
  expect_due_appended(rowlock->claim, &b, "\"size\"", "\"retry_after\"");
  expect_due_appended(rowlock->claim_one, &b, "\"size\"", "\"retry_after\"");
  tabq_table t = jobs;
  t.attempt = (tabq_col){0}; /* the claims that only select */
  b = on(&t);
  expect_due_appended(rowlock->claim, &b, "\"size\"", "\"retry_after\"");
  expect_due_appended(rowlock->claim_one, &b, "\"size\"", "\"retry_after\"");
  t = leased_jobs();
  b = on(&t);
  expect_due_appended(lease->claim, &b, "\"size\"", "\"retry_after\"");
  expect_due_appended(lease->claim_one, &b, "\"size\"", "\"retry_after\"");
  b = on(&advj);
  expect_due_appended(adv->take, &b, "\"account\"", "\"retry_after\"");
  expect_due_appended(adv->lock_take, &b, "\"account\"", "\"retry_after\"");
  b = on(&thumbs);
  b.project_due = true;
  expect_built(lease->claim_one, &b,
               "UPDATE \"app\".\"thumbs\" SET \"locked_until\" = $1, \"attempt\" = \"attempt\" + 1 "
               "WHERE \"id\" = (SELECT \"id\" FROM \"app\".\"thumbs\" WHERE (\"locked_until\" IS "
               "NULL OR \"locked_until\" <= $2) ORDER BY \"id\" LIMIT 1 FOR UPDATE SKIP LOCKED) "
               "RETURNING \"id\", \"attempt\", \"payload\"",
               TABQ_P_LEASE_UNTIL, TABQ_P_NOW, 0);
}

/* ---- Registration ------------------------------------------------------------------------ */

/* URLs as messages show them: every password libpq would read is replaced, read as libpq reads
 * it (what the fuzz target url_postgres found: tests/fuzz/regressions/url_postgres). */
static void test_shown_url(void) {
  static const char *const cases[][2] = {
      {"postgres://svc:pw-A1@db/app", "postgres://svc:***@db/app"},
      {"postgres:postgres://svc:pw-A2@db/app", "postgres:postgres://svc:***@db/app"},
      {"postgres://a:b?pc@d/db", "postgres://a:***@d/db"},
      {"postgres://svc:pw@[2001:db8:?:1]:?password=pw-A3",
       "postgres://svc:***@[2001:db8:?:1]:?password=***"},
      {"postgres:password=se\\ cret host=h", "postgres:password=*** host=h"},
      {"postgres://h/db?pass%77ord=secret&x=1", "postgres://h/db?pass%77ord=***&x=1"},
      {"postgres:host=h password='a b\\'c' dbname=d", "postgres:host=h password=*** dbname=d"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char shown[TABQ_PG_URL_SHOWN];
    tabq_pg_shown_url(cases[i][0], shown);
    CU_ASSERT_STRING_EQUAL(shown, cases[i][1]);
    if (strcmp(shown, cases[i][1]))
      fprintf(stderr, "\nshown \"%s\", want \"%s\"\n", shown, cases[i][1]);
  }
}

static CU_TestInfo shared_tests[] = {
    {"vtables", test_vtables},
    {"quote", test_quote},
    {"insert", test_insert},
    {"insert_rows", test_insert_rows},
    {"build failures", test_build_failures},
    {"fetch", test_fetch},
    {"begin", test_begin},
    {"fifo guard", test_fifo_guard},
    {"channel and notify", test_channel_notify},
    {"named parameters", test_named},
    {"URLs as messages show them", test_shown_url},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo form_tests[] = {
    {"row lock claim", test_rowlock_claim},
    {"row lock claim, fifo", test_rowlock_claim_fifo},
    {"row lock claim of one row", test_rowlock_claim_one},
    {"row lock claim of one row, fifo", test_rowlock_claim_one_fifo},
    {"lease claim", test_lease_claim},
    {"lease claim, fifo", test_lease_claim_fifo},
    {"lease claim of one row", test_lease_claim_one},
    {"extend and release", test_extend_release},
    {"advisory statements", test_advisory},
    {"advisory keys", test_advisory_keys},
    {"the due time after the projection", test_project_due},
    CU_TEST_INFO_NULL,
};

int register_tests(void) {
  tabq_pg_set_host(&test_host);
  ADD_SUITE("postgres statements", NULL, NULL, shared_tests);
  ADD_SUITE("postgres claims", NULL, NULL, form_tests);
  ADD_SUITE("postgres settlements and check", NULL, NULL, tabq_pg_settlement_tests);
  return 0;
}
