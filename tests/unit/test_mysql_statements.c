/* tabq — unit tests of the MySQL/MariaDB dialect's statement builders: the exact SQL text and
 * parameter ids of every shared statement and every claim form, the advisory lock names, and
 * their refusals (no server). Settlements and check are in test_mysql_settlements.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cunit_main.h"
#include "mysql_fixture.h"

static const tabq_dialect_v1 *const dia = &tabq_my_dialect;
static const tabq_rowlock_v1 *const rowlock = &tabq_my_rowlock;
static const tabq_lease_v1 *const lease = &tabq_my_lease;
static const tabq_advisory_v1 *const adv = &tabq_my_advisory;

/* ---- The vtables --------------------------------------------------------------------------- */

static void test_vtables(void) {
  CU_ASSERT_EQUAL(dia->size, sizeof(tabq_dialect_v1));
  CU_ASSERT_EQUAL(dia->version, 1);
  /* No fetch by a list of ids, no notifications. */
  CU_ASSERT_PTR_NULL(dia->fetch);
  CU_ASSERT_PTR_NULL(dia->channel);
  CU_ASSERT_PTR_NULL(dia->notify);
  CU_ASSERT_PTR_NOT_NULL(dia->insert_rows);
  CU_ASSERT_PTR_NOT_NULL(dia->fifo_guard);
  CU_ASSERT_EQUAL(rowlock->size, sizeof(tabq_rowlock_v1));
  CU_ASSERT_EQUAL(rowlock->version, 1);
  CU_ASSERT_EQUAL(rowlock->flags, TABQ_PROJECTS_DUE);
  CU_ASSERT_PTR_NOT_NULL(rowlock->stamp);
  CU_ASSERT_PTR_NOT_NULL(rowlock->stamp_ids);
  CU_ASSERT_EQUAL(lease->size, sizeof(tabq_lease_v1));
  CU_ASSERT_EQUAL(lease->version, 1);
  CU_ASSERT_EQUAL(lease->flags, TABQ_CLAIM_SERIAL | TABQ_LEASE_WHOLE_SECONDS | TABQ_PROJECTS_DUE);
  CU_ASSERT_PTR_NOT_NULL(lease->stamp);
  CU_ASSERT_PTR_NOT_NULL(lease->stamp_ids);
  CU_ASSERT_EQUAL(adv->size, sizeof(tabq_advisory_v1));
  CU_ASSERT_EQUAL(adv->version, 1);
  CU_ASSERT_EQUAL(adv->flags, TABQ_PROJECTS_DUE);
  CU_ASSERT_PTR_NOT_NULL(adv->lock);
  CU_ASSERT_PTR_NOT_NULL(adv->unlock);
  CU_ASSERT_PTR_NOT_NULL(adv->stamp);
}

/* ---- Shared statements --------------------------------------------------------------------- */

static void test_quote(void) {
  static const char *const cases[][2] = {
      {"jobs", "`jobs`"},
      {"app.jobs", "`app`.`jobs`"},
      {"we`ird.jo`bs", "`we``ird`.`jo``bs`"},
      {"with \"quotes\"", "`with \"quotes\"`"},
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
               "INSERT INTO `jobs` (`queue`, `priority`, `pkey`, `retry_after`, `attempt`, "
               "`headers`, `payload`, `title`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               TABQ_P_GROUP, TABQ_P_PRIORITY, TABQ_P_PARTITION_KEY, TABQ_P_RETRY_AT, TABQ_P_ATTEMPT,
               TABQ_P_HEADERS, TABQ_P_PAYLOAD, TABQ_P_DATA + 0, 0);
  b = on(&thumbs);
  expect_built(dia->insert, &b, "INSERT INTO `app`.`thumbs` (`payload`) VALUES (?)", TABQ_P_PAYLOAD,
               0);
  b = on(&plain);
  expect_built(dia->insert, &b, "INSERT INTO `plain_jobs` (`id`, `payload`) VALUES (?, ?)",
               TABQ_P_ID, TABQ_P_PAYLOAD, 0);
  b = on(&weird);
  expect_built(dia->insert, &b,
               "INSERT INTO `a``pp`.`we``ird` (`i``d`, `att``empt`, `payload`) VALUES (?, ?, ?)",
               TABQ_P_ID, TABQ_P_ATTEMPT, TABQ_P_PAYLOAD, 0);
  /* Every column generated: a row of defaults, MySQL's way. */
  b = on(&all_generated);
  expect_built(dia->insert, &b, "INSERT INTO `ev` () VALUES ()", 0);
}

/* insert's columns once, then one tuple a row; the list is insert's, once, and the driver binds
 * it row after row. */
static void test_insert_rows(void) {
  tabq_build b = on(&plain);
  b.rows = 3;
  expect_built(dia->insert_rows, &b,
               "INSERT INTO `plain_jobs` (`id`, `payload`) VALUES (?, ?), (?, ?), (?, ?)",
               TABQ_P_ID, TABQ_P_PAYLOAD, 0);
  b = on(&jobs);
  b.rows = 2;
  expect_built(dia->insert_rows, &b,
               "INSERT INTO `jobs` (`queue`, `priority`, `pkey`, `retry_after`, `attempt`, "
               "`headers`, `payload`, `title`) VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, "
               "?, ?)",
               TABQ_P_GROUP, TABQ_P_PRIORITY, TABQ_P_PARTITION_KEY, TABQ_P_RETRY_AT, TABQ_P_ATTEMPT,
               TABQ_P_HEADERS, TABQ_P_PAYLOAD, TABQ_P_DATA + 0, 0);
  b.rows = TABQ_INSERT_ROWS_MAX;
  expect_built_end(dia->insert_rows, &b, "?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?)", 8);
  /* "() VALUES ()" writes one row: declined, each row is one insert. */
  b = on(&all_generated);
  b.rows = 2;
  expect_none(dia->insert_rows, &b);
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
  b = on(&advj);
  tabq_sql_init(&st, &starved_host);
  CU_ASSERT_EQUAL(adv->candidates(&b, &st), TABQ_NOMEM);
  MSG_HAS("candidates statement for table adv_jobs: out of memory");
  tabq_sql_free(&st);
}

static void test_begin(void) {
  static const char *const want[] = {
      [TABQ_ISOLATION_DEFAULT] = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START "
                                 "TRANSACTION",
      [TABQ_ISOLATION_READ_UNCOMMITTED] = "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED; "
                                          "START TRANSACTION",
      [TABQ_ISOLATION_READ_COMMITTED] = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START "
                                        "TRANSACTION",
      [TABQ_ISOLATION_REPEATABLE_READ] = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; START "
                                         "TRANSACTION",
      [TABQ_ISOLATION_SERIALIZABLE] = "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; START "
                                      "TRANSACTION",
  };
  for (int level = 0; level <= TABQ_ISOLATION_SERIALIZABLE; level++) {
    tabq_table t = jobs;
    t.isolation = (tabq_isolation)level;
    tabq_build b = on(&t);
    expect_built(dia->begin, &b, want[level], 0);
  }
  tabq_table t = jobs;
  t.isolation = (tabq_isolation)(TABQ_ISOLATION_SERIALIZABLE + 1);
  tabq_build b = on(&t);
  expect_refused(dia->begin, &b, TABQ_DIALECT);
  MSG_HAS("table jobs");
}

static void test_fifo_guard(void) {
  tabq_table t = jobs;
  t.fifo = true;
  tabq_build b = on(&t);
  /* true when every unfinished row of the group could be locked here, at once */
  expect_built(dia->fifo_guard, &b,
               "SELECT (SELECT COUNT(*) FROM (SELECT `id` FROM `jobs` WHERE `queue` = ? AND "
               "`processed_at` IS NULL) g) = (SELECT COUNT(*) FROM (SELECT `id` FROM `jobs` "
               "WHERE `queue` = ? AND `processed_at` IS NULL FOR UPDATE SKIP LOCKED) g)",
               TABQ_P_GROUP, TABQ_P_GROUP, 0);
  /* Without processed_at every row of the group is unfinished. */
  tabq_table g = {.size = sizeof(tabq_table),
                  .name = "app.q",
                  .id = {"i`d"},
                  .group = {"grp"},
                  .locked_until = {"lu"},
                  .fifo = true};
  b = on(&g);
  expect_built(dia->fifo_guard, &b,
               "SELECT (SELECT COUNT(*) FROM (SELECT `i``d` FROM `app`.`q` WHERE `grp` = ?) g) = "
               "(SELECT COUNT(*) FROM (SELECT `i``d` FROM `app`.`q` WHERE `grp` = ? FOR UPDATE "
               "SKIP LOCKED) g)",
               TABQ_P_GROUP, TABQ_P_GROUP, 0);
  b = on(&plain);
  expect_refused(dia->fifo_guard, &b, TABQ_DECLARATION);
  MSG_HAS("plain_jobs");
  MSG_HAS("group");
}

/* ---- Row lock claims ----------------------------------------------------------------------- */

static void test_rowlock_claim(void) {
  tabq_build b = on(&jobs);
  CU_ASSERT_EQUAL(b.form, TABQ_FORM_ROWLOCK);
  expect_built(rowlock->claim, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE (`retry_after` IS NULL OR `retry_after` <= "
               "?) AND `processed_at` IS NULL AND `queue` = ? ORDER BY `priority`, `retry_after`, "
               "`id` LIMIT ? FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);

  /* The database's clock: no NOW parameter. */
  tabq_table t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  b = on(&t);
  expect_built(rowlock->claim, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE (`retry_after` IS NULL OR `retry_after` <= "
               "UTC_TIMESTAMP(6)) AND `processed_at` IS NULL AND `queue` = ? ORDER BY "
               "`priority`, `retry_after`, `id` LIMIT ? FOR UPDATE SKIP LOCKED",
               TABQ_P_GROUP, TABQ_P_LIMIT, 0);

  /* No attempt column, no priority: the plain projection, ordered by retry time and id. */
  t = jobs;
  t.attempt = (tabq_col){0};
  t.priority = (tabq_col){0};
  b = on(&t);
  expect_built(rowlock->claim, &b,
               "SELECT `id`, `queue`, `pkey`, `headers`, `payload`, `title`, `size` FROM `jobs` "
               "WHERE (`retry_after` IS NULL OR `retry_after` <= ?) AND `processed_at` IS NULL "
               "AND `queue` = ? ORDER BY `retry_after`, `id` LIMIT ? FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  /* Nothing to check: every row is due. */
  b = on(&plain);
  expect_built(rowlock->claim, &b,
               "SELECT `id`, `payload` FROM `plain_jobs` ORDER BY `id` LIMIT ? FOR UPDATE SKIP "
               "LOCKED",
               TABQ_P_LIMIT, 0);
  b = on(&weird);
  expect_built(rowlock->claim, &b,
               "SELECT `i``d`, `att``empt` + 1, `payload` FROM `a``pp`.`we``ird` ORDER BY `i``d` "
               "LIMIT ? FOR UPDATE SKIP LOCKED",
               TABQ_P_LIMIT, 0);
}

static void test_rowlock_claim_fifo(void) {
  tabq_table t = jobs;
  t.fifo = true;
  tabq_build b = on(&t);
  /* The head in a derived table; the group bound twice, once per placeholder. */
  expect_built(rowlock->claim, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE `id` = (SELECT `id` FROM (SELECT `id` FROM "
               "`jobs` WHERE `queue` = ? AND `processed_at` IS NULL ORDER BY `priority`, "
               "`retry_after`, `id` LIMIT 1) h) AND (`retry_after` IS NULL OR `retry_after` <= ?) "
               "AND `processed_at` IS NULL AND `queue` = ? FOR UPDATE",
               TABQ_P_GROUP, TABQ_P_NOW, TABQ_P_GROUP, 0);

  /* Without attempt and processed_at, on the database clock. */
  t.attempt = (tabq_col){0};
  t.processed_at = (tabq_col){0};
  t.clock = TABQ_CLOCK_DATABASE;
  expect_built(rowlock->claim, &b,
               "SELECT `id`, `queue`, `pkey`, `headers`, `payload`, `title`, `size` FROM `jobs` "
               "WHERE `id` = (SELECT `id` FROM (SELECT `id` FROM `jobs` WHERE `queue` = ? ORDER "
               "BY `priority`, `retry_after`, `id` LIMIT 1) h) AND (`retry_after` IS NULL OR "
               "`retry_after` <= UTC_TIMESTAMP(6)) AND `queue` = ? FOR UPDATE",
               TABQ_P_GROUP, TABQ_P_GROUP, 0);

  /* fifo without a group (R-DESC-1 refuses it) claims as a plain table. */
  tabq_table p = plain;
  p.fifo = true;
  b = on(&p);
  expect_built(rowlock->claim, &b,
               "SELECT `id`, `payload` FROM `plain_jobs` ORDER BY `id` LIMIT ? FOR UPDATE SKIP "
               "LOCKED",
               TABQ_P_LIMIT, 0);
}

/* One row: LIMIT 1 written, the stamp after it as after claim; a FIFO table declines. */
static void test_rowlock_claim_one(void) {
  tabq_build b = on(&jobs);
  expect_built(rowlock->claim_one, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE (`retry_after` IS NULL OR `retry_after` <= "
               "?) AND `processed_at` IS NULL AND `queue` = ? ORDER BY `priority`, `retry_after`, "
               "`id` LIMIT 1 FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_GROUP, 0);
  b = on(&weird);
  expect_built(rowlock->claim_one, &b,
               "SELECT `i``d`, `att``empt` + 1, `payload` FROM `a``pp`.`we``ird` ORDER BY `i``d` "
               "LIMIT 1 FOR UPDATE SKIP LOCKED",
               0);
  tabq_table t = jobs;
  t.fifo = true;
  b = on(&t);
  expect_none(rowlock->claim_one, &b);
}

static void test_rowlock_stamp(void) {
  tabq_build b = on(&jobs);
  expect_built(rowlock->stamp, &b, "UPDATE `jobs` SET `attempt` = `attempt` + 1 WHERE `id` = ?",
               TABQ_P_ID, 0);
  b = on(&weird);
  expect_built(rowlock->stamp, &b,
               "UPDATE `a``pp`.`we``ird` SET `att``empt` = `att``empt` + 1 WHERE `i``d` = ?",
               TABQ_P_ID, 0);
  /* No attempt column: nothing to count, no statement. */
  b = on(&plain);
  expect_none(rowlock->stamp, &b);
}

/* The ids' list read with JSON_TABLE, joined to the table by its primary key. */
#define LISTED "UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids STRAIGHT_JOIN "

/* Every claimed row counted in one statement; no attempt column, no statement, as stamp. */
static void test_rowlock_stamp_ids(void) {
  tabq_build b = on(&jobs);
  expect_built(rowlock->stamp_ids, &b,
               LISTED "`jobs` AS t FORCE INDEX (PRIMARY) ON t.`id` = ids.id SET t.`attempt` = "
                      "t.`attempt` + 1",
               TABQ_P_IDS, 0);
  b = on(&weird);
  expect_built(rowlock->stamp_ids, &b,
               LISTED "`a``pp`.`we``ird` AS t FORCE INDEX (PRIMARY) ON t.`i``d` = ids.id SET "
                      "t.`att``empt` = t.`att``empt` + 1",
               TABQ_P_IDS, 0);
  b = on(&plain);
  expect_none(rowlock->stamp_ids, &b);
}

/* ---- Lease ---------------------------------------------------------------------------------- */

static void test_lease_claim(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  CU_ASSERT_EQUAL(b.form, TABQ_FORM_LEASE);
  /* A select only: NOW once per condition, no LEASE_UNTIL (the stamp writes it). */
  expect_built(lease->claim, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE (`locked_until` IS NULL OR `locked_until` "
               "<= ?) AND (`retry_after` IS NULL OR `retry_after` <= ?) AND `processed_at` IS "
               "NULL AND `queue` = ? ORDER BY `priority`, `retry_after`, `id` LIMIT ? FOR UPDATE "
               "SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  b = on(&thumbs);
  expect_built(lease->claim, &b,
               "SELECT `id`, `attempt` + 1, `payload` FROM `app`.`thumbs` WHERE (`locked_until` "
               "IS NULL OR `locked_until` <= ?) ORDER BY `id` LIMIT ? FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_LIMIT, 0);
  /* No attempt column: nothing counted, nothing returned for it. */
  b = on(&bare);
  expect_built(lease->claim, &b,
               "SELECT `id` FROM `bare` WHERE (`lu` IS NULL OR `lu` <= ?) ORDER BY `id` LIMIT ? "
               "FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_LIMIT, 0);
}

static void test_lease_claim_fifo(void) {
  tabq_table t = leased_jobs();
  t.fifo = true;
  tabq_build b = on(&t);
  expect_built(lease->claim, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE `id` = (SELECT `id` FROM (SELECT `id` FROM "
               "`jobs` WHERE `queue` = ? AND `processed_at` IS NULL ORDER BY `priority`, "
               "`retry_after`, `id` LIMIT 1) h) AND (`locked_until` IS NULL OR `locked_until` <= "
               "?) AND (`retry_after` IS NULL OR `retry_after` <= ?) AND `processed_at` IS NULL "
               "AND `queue` = ? FOR UPDATE",
               TABQ_P_GROUP, TABQ_P_NOW, TABQ_P_NOW, TABQ_P_GROUP, 0);
  /* Only the lease and the group: the head while its lease has ended. */
  tabq_table g = {.size = sizeof(tabq_table),
                  .name = "app.q",
                  .id = {"id"},
                  .group = {"grp"},
                  .locked_until = {"lu"},
                  .fifo = true};
  b = on(&g);
  expect_built(lease->claim, &b,
               "SELECT `id`, `grp` FROM `app`.`q` WHERE `id` = (SELECT `id` FROM (SELECT `id` "
               "FROM `app`.`q` WHERE `grp` = ? ORDER BY `id` LIMIT 1) h) AND (`lu` IS NULL OR "
               "`lu` <= ?) AND `grp` = ? FOR UPDATE",
               TABQ_P_GROUP, TABQ_P_NOW, TABQ_P_GROUP, 0);
}

static void test_lease_claim_one(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  expect_built(lease->claim_one, &b,
               "SELECT " JOBS_COLS " FROM `jobs` WHERE (`locked_until` IS NULL OR `locked_until` "
               "<= ?) AND (`retry_after` IS NULL OR `retry_after` <= ?) AND `processed_at` IS "
               "NULL AND `queue` = ? ORDER BY `priority`, `retry_after`, `id` LIMIT 1 FOR UPDATE "
               "SKIP LOCKED",
               TABQ_P_NOW, TABQ_P_NOW, TABQ_P_GROUP, 0);
  b = on(&bare);
  expect_built(lease->claim_one, &b,
               "SELECT `id` FROM `bare` WHERE (`lu` IS NULL OR `lu` <= ?) ORDER BY `id` LIMIT 1 "
               "FOR UPDATE SKIP LOCKED",
               TABQ_P_NOW, 0);
  t.fifo = true;
  b = on(&t);
  expect_none(lease->claim_one, &b);
  b = on(&jobs);
  b.form = TABQ_FORM_LEASE;
  expect_refused(lease->claim_one, &b, TABQ_DIALECT);
  MSG_HAS("needs locked_until");
}

static void test_lease_stamp_extend_release(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  expect_built(lease->stamp, &b,
               "UPDATE `jobs` SET `locked_until` = ?, `attempt` = `attempt` + 1 WHERE `id` = ?",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, 0);
  expect_built(lease->extend, &b,
               "UPDATE `jobs` SET `locked_until` = ? WHERE `id` = ? AND `locked_until` = ?",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(lease->release, &b,
               "UPDATE `jobs` SET `locked_until` = NULL WHERE `id` = ? AND `locked_until` = ?",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  b = on(&thumbs);
  expect_built(lease->stamp, &b,
               "UPDATE `app`.`thumbs` SET `locked_until` = ?, `attempt` = `attempt` + 1 WHERE "
               "`id` = ?",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, 0);
  expect_built(lease->extend, &b,
               "UPDATE `app`.`thumbs` SET `locked_until` = ? WHERE `id` = ? AND `locked_until` = ?",
               TABQ_P_LEASE_UNTIL, TABQ_P_ID, TABQ_P_TOKEN, 0);
  /* No attempt column: the stamp writes the lease alone. */
  b = on(&bare);
  expect_built(lease->stamp, &b, "UPDATE `bare` SET `lu` = ? WHERE `id` = ?", TABQ_P_LEASE_UNTIL,
               TABQ_P_ID, 0);
  expect_built(lease->release, &b, "UPDATE `bare` SET `lu` = NULL WHERE `id` = ? AND `lu` = ?",
               TABQ_P_ID, TABQ_P_TOKEN, 0);

  /* A table without locked_until has no lease to claim, write, move or end. */
  b = on(&jobs);
  tabq_build_fn fns[] = {lease->claim, lease->stamp, lease->stamp_ids, lease->extend,
                         lease->release};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    expect_refused(fns[i], &b, TABQ_DIALECT);
    MSG_HAS("table jobs");
    MSG_HAS("locked_until");
  }
}

/* Every claimed row's lease written and attempt counted in one statement, IDS bound first. */
static void test_lease_stamp_ids(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  expect_built(lease->stamp_ids, &b,
               LISTED "`jobs` AS t FORCE INDEX (PRIMARY) ON t.`id` = ids.id SET t.`locked_until` "
                      "= ?, t.`attempt` = t.`attempt` + 1",
               TABQ_P_IDS, TABQ_P_LEASE_UNTIL, 0);
  /* No attempt column: the lease alone. */
  b = on(&bare);
  expect_built(lease->stamp_ids, &b,
               LISTED "`bare` AS t FORCE INDEX (PRIMARY) ON t.`id` = ids.id SET t.`lu` = ?",
               TABQ_P_IDS, TABQ_P_LEASE_UNTIL, 0);
}

/* ---- Advisory ------------------------------------------------------------------------------ */

/* Formats into `buf` and checks that everything fit. */
static void format(char *buf, size_t cap, const char *fmt, ...) TABQ_PRINTF_(3, 4);
static void format(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  CU_ASSERT_FATAL(n >= 0 && (size_t)n < cap);
}

/* The lock name of `parts` (the key's CONCAT arguments) under database literal `db`. */
static const char *name_of(const char *db, const char *parts) {
  static char buf[2048];
  format(buf, sizeof buf,
         "IF(CHAR_LENGTH(CONCAT('%s.', %s)) > 64, SHA2(CONCAT('%s.', %s), 256), "
         "CONCAT('%s.', %s))",
         db, parts, db, parts, db, parts);
  return buf;
}

static void test_advisory(void) {
  tabq_build b = on(&advj);
  CU_ASSERT_EQUAL(b.form, TABQ_FORM_ADVISORY);
  /* Spelled out once in full; name_of writes the same shape below. */
  expect_built(adv->candidates, &b,
               "SELECT `id`, IF(CHAR_LENGTH(CONCAT('tabq_test.', 'acct-', "
               "COALESCE(CAST(`account` AS CHAR), ''))) > 64, SHA2(CONCAT('tabq_test.', 'acct-', "
               "COALESCE(CAST(`account` AS CHAR), '')), 256), CONCAT('tabq_test.', 'acct-', "
               "COALESCE(CAST(`account` AS CHAR), ''))) FROM `adv_jobs` WHERE (`retry_after` IS "
               "NULL OR `retry_after` <= ?) AND `processed_at` IS NULL AND `queue` = ? ORDER BY "
               "`priority`, `retry_after`, `id` LIMIT ?",
               TABQ_P_NOW, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  expect_built(adv->lock, &b, "SELECT GET_LOCK(?, 0)", TABQ_P_KEY, 0);
  expect_built(adv->unlock, &b, "SELECT RELEASE_LOCK(?)", TABQ_P_KEY, 0);
  /* The take only reads (the attempt plus one); the stamp counts it after. */
  expect_built(adv->take, &b,
               "SELECT `id`, `attempt` + 1, `queue`, `account` FROM `adv_jobs` WHERE `id` = ? AND "
               "(`retry_after` IS NULL OR `retry_after` <= ?) AND `processed_at` IS NULL AND "
               "`queue` = ?",
               TABQ_P_ID, TABQ_P_NOW, TABQ_P_GROUP, 0);
  expect_built(adv->stamp, &b, "UPDATE `adv_jobs` SET `attempt` = `attempt` + 1 WHERE `id` = ?",
               TABQ_P_ID, 0);

  tabq_table t = advj;
  t.clock = TABQ_CLOCK_DATABASE;
  b = on(&t);
  char sql[2048];
  format(sql, sizeof sql,
         "SELECT `id`, %s FROM `adv_jobs` WHERE (`retry_after` IS NULL OR `retry_after` <= "
         "UTC_TIMESTAMP(6)) AND `processed_at` IS NULL AND `queue` = ? ORDER BY `priority`, "
         "`retry_after`, `id` LIMIT ?",
         name_of("tabq_test", "'acct-', COALESCE(CAST(`account` AS CHAR), '')"));
  expect_built(adv->candidates, &b, sql, TABQ_P_GROUP, TABQ_P_LIMIT, 0);
  expect_built(adv->take, &b,
               "SELECT `id`, `attempt` + 1, `queue`, `account` FROM `adv_jobs` WHERE `id` = ? AND "
               "(`retry_after` IS NULL OR `retry_after` <= UTC_TIMESTAMP(6)) AND `processed_at` "
               "IS NULL AND `queue` = ?",
               TABQ_P_ID, TABQ_P_GROUP, 0);

  /* No attempt, no conditions: the take reads the row by its id, and there is nothing to
   * stamp. */
  b = on(&adv_min);
  format(sql, sizeof sql, "SELECT `id`, %s FROM `k` ORDER BY `id` LIMIT ?",
         name_of("tabq_test", "'k-', COALESCE(CAST(`id` AS CHAR), '')"));
  expect_built(adv->candidates, &b, sql, TABQ_P_LIMIT, 0);
  expect_built(adv->take, &b, "SELECT `id`, `payload` FROM `k` WHERE `id` = ?", TABQ_P_ID, 0);
  expect_none(adv->stamp, &b);
}

/* The lock name of a template and a database, as candidates renders it. */
static void expect_name(const char *tmpl, const char *table_name, const char *database,
                        const char *name) {
  tabq_table t = adv_min;
  t.name = table_name;
  t.advisory_lock = tmpl;
  tabq_build b = on(&t);
  b.database = database;
  tabq_stmt quoted;
  tabq_sql_init(&quoted, &test_host);
  dia->quote(&quoted, table_name);
  char sql[2048];
  format(sql, sizeof sql, "SELECT `id`, %s FROM %s ORDER BY `id` LIMIT ?", name, quoted.sql);
  tabq_sql_free(&quoted);
  expect_built(adv->candidates, &b, sql, TABQ_P_LIMIT, 0);
}

static void expect_key(const char *tmpl, const char *parts) {
  expect_name(tmpl, "k", "tabq_test", name_of("tabq_test", parts));
}

static void expect_bad_key(const char *tmpl) {
  tabq_table t = adv_min;
  t.advisory_lock = tmpl;
  tabq_build b = on(&t);
  expect_refused(adv->candidates, &b, TABQ_DECLARATION);
  MSG_HAS("table k");
}

static void test_advisory_keys(void) {
  expect_key("{id}", "COALESCE(CAST(`id` AS CHAR), '')");
  /* Several placeholders with literal text between them, a quote in the literal. */
  expect_key("it's {account}/{id}:{queue}",
             "'it''s ', COALESCE(CAST(`account` AS CHAR), ''), '/', COALESCE(CAST(`id` AS "
             "CHAR), ''), ':', COALESCE(CAST(`queue` AS CHAR), '')");
  expect_key("{a}{b}", "COALESCE(CAST(`a` AS CHAR), ''), COALESCE(CAST(`b` AS CHAR), '')");
  expect_key("{id}-end'", "COALESCE(CAST(`id` AS CHAR), ''), '-end'''");
  /* A backslash escaped, as MySQL reads string literals. */
  expect_key("c:\\{id}", "'c:\\\\', COALESCE(CAST(`id` AS CHAR), '')");
  expect_key("{we`ird}", "COALESCE(CAST(`we``ird` AS CHAR), '')");
  expect_key("}{id}", "'}', COALESCE(CAST(`id` AS CHAR), '')");
  expect_bad_key("k-{id");
  MSG_HAS("'k-{id'");
  expect_bad_key("k-{}");
  expect_bad_key("");
}

static void test_advisory_database(void) {
  const char *parts = "'k-', COALESCE(CAST(`id` AS CHAR), '')";
  /* The database in lower case, folded as Unicode (ß stays ß, it is lower case already). */
  expect_name("k-{id}", "k", "Straße_DB", name_of("straße_db", parts));
  expect_name("k-{id}", "k", "ÀÉÎ_ΣΑΣ", name_of("àéî_σας", parts));
  /* A "db.table" name's database wins over the connection's. */
  expect_name("k-{id}", "Shop.k", "tabq_test", name_of("shop", parts));
  expect_name("k-{id}", "Shop.k", NULL, name_of("shop", parts));
  /* A quote and a backslash in the database name, escaped in the literal. */
  expect_name("k-{id}", "k", "O'Brien\\DB", name_of("o''brien\\\\db", parts));

  /* Neither the table nor the connection names a database. */
  tabq_build b = on(&adv_min);
  b.database = NULL;
  expect_refused(adv->candidates, &b, TABQ_DIALECT);
  MSG_HAS("table k");
  MSG_HAS("database");
  b.database = "";
  expect_refused(adv->candidates, &b, TABQ_DIALECT);
  MSG_HAS("table k");
  /* ".k" names no database either. */
  tabq_table t = adv_min;
  t.name = ".k";
  b = on(&t);
  b.database = NULL;
  expect_refused(adv->candidates, &b, TABQ_DIALECT);
  MSG_HAS("table .k");

  /* A database name that is not UTF-8. */
  b = on(&adv_min);
  b.database = "bad\xff";
  expect_refused(adv->candidates, &b, TABQ_DECLARATION);
  MSG_HAS("UTF-8");

  /* A long database name folds through libunistring's own buffer. */
  char upper[400], lower[400];
  memset(upper, 'D', sizeof upper - 1);
  memset(lower, 'd', sizeof lower - 1);
  upper[sizeof upper - 1] = lower[sizeof lower - 1] = '\0';
  expect_name("k-{id}", "k", upper, name_of(lower, parts));
}

/* ---- Registration ------------------------------------------------------------------------ */

static CU_TestInfo shared_tests[] = {
    {"vtables", test_vtables},
    {"quote", test_quote},
    {"insert", test_insert},
    {"insert_rows", test_insert_rows},
    {"build failures", test_build_failures},
    {"begin", test_begin},
    {"fifo guard", test_fifo_guard},
    CU_TEST_INFO_NULL,
};

/* ABI 1.8: asked for the due time, every projection ends with retry_after, after the attempt plus
 * one the stamp will store. */
static void test_project_due(void) {
  tabq_build b = on(&jobs);
  expect_due_appended(rowlock->claim, &b, "`size`", "`retry_after`");
  expect_due_appended(rowlock->claim_one, &b, "`size`", "`retry_after`");
  tabq_table t = leased_jobs();
  b = on(&t);
  expect_due_appended(lease->claim, &b, "`size`", "`retry_after`");
  expect_due_appended(lease->claim_one, &b, "`size`", "`retry_after`");
  b = on(&advj);
  expect_due_appended(adv->take, &b, "`account`", "`retry_after`");
}

static CU_TestInfo form_tests[] = {
    {"row lock claim", test_rowlock_claim},
    {"row lock claim, fifo", test_rowlock_claim_fifo},
    {"row lock claim of one row", test_rowlock_claim_one},
    {"row lock stamp", test_rowlock_stamp},
    {"row lock stamp of many rows", test_rowlock_stamp_ids},
    {"lease claim", test_lease_claim},
    {"lease claim, fifo", test_lease_claim_fifo},
    {"lease claim of one row", test_lease_claim_one},
    {"lease stamp, extend and release", test_lease_stamp_extend_release},
    {"lease stamp of many rows", test_lease_stamp_ids},
    {"advisory statements", test_advisory},
    {"advisory keys", test_advisory_keys},
    {"advisory lock names' database", test_advisory_database},
    {"the due time after the projection", test_project_due},
    CU_TEST_INFO_NULL,
};

int register_tests(void) {
  tabq_my_set_host(&test_host);
  ADD_SUITE("mysql statements", NULL, NULL, shared_tests);
  ADD_SUITE("mysql claims", NULL, NULL, form_tests);
  ADD_SUITE("mysql settlements and check", NULL, NULL, tabq_my_settlement_tests);
  ADD_SUITE("mysql result codec", NULL, NULL, tabq_my_bind_tests);
  return 0;
}
