/* tabq — unit tests of the PostgreSQL dialect's settlements (every form), its dead letter into a
 * table, and its check's refusals of server versions and levels: exact SQL and parameter ids
 * (no server). */
#include <stdio.h>
#include <string.h>

#include "postgres_fixture.h"

/* ---- Settlements --------------------------------------------------------------------------- */

static void test_settlements_rowlock(void) {
  tabq_build b = on(&jobs);
  expect_built(dia->ack, &b, "UPDATE \"jobs\" SET \"processed_at\" = $1 WHERE \"id\" = $2",
               TABQ_P_NOW, TABQ_P_ID, 0);
  expect_built(dia->discard, &b, "UPDATE \"jobs\" SET \"processed_at\" = $1 WHERE \"id\" = $2",
               TABQ_P_NOW, TABQ_P_ID, 0);
  expect_built(dia->retry_after, &b, "UPDATE \"jobs\" SET \"retry_after\" = $1 WHERE \"id\" = $2",
               TABQ_P_RETRY_AT, TABQ_P_ID, 0);
  expect_built(dia->dead_letter_group, &b, "UPDATE \"jobs\" SET \"queue\" = $1 WHERE \"id\" = $2",
               TABQ_P_DEST, TABQ_P_ID, 0);
  /* The claim's commit returns the row: no statement to run. */
  expect_refused(dia->retry, &b, TABQ_DIALECT);
  MSG_HAS("table jobs");
  MSG_HAS("commit");

  tabq_table t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  b = on(&t);
  expect_built(dia->ack, &b,
               "UPDATE \"jobs\" SET \"processed_at\" = statement_timestamp() WHERE \"id\" = $1",
               TABQ_P_ID, 0);

  b = on(&plain);
  expect_built(dia->ack, &b, "DELETE FROM \"plain_jobs\" WHERE \"id\" = $1", TABQ_P_ID, 0);
  expect_built(dia->discard, &b, "DELETE FROM \"plain_jobs\" WHERE \"id\" = $1", TABQ_P_ID, 0);
  expect_refused(dia->retry_after, &b, TABQ_DIALECT);
  MSG_HAS("plain_jobs");
  MSG_HAS("without a retry_after column");
  expect_refused(dia->dead_letter_group, &b, TABQ_DECLARATION);
  MSG_HAS("plain_jobs");
  MSG_HAS("group column");

  b = on(&weird);
  expect_built(dia->ack, &b, "DELETE FROM \"app\".\"we\"\"ird\" WHERE \"i\"\"d\" = $1", TABQ_P_ID,
               0);
}

static void test_settlements_lease(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  expect_built(dia->ack, &b,
               "UPDATE \"jobs\" SET \"processed_at\" = $1, \"locked_until\" = NULL WHERE \"id\" "
               "= $2 AND \"locked_until\" = $3",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->discard, &b,
               "UPDATE \"jobs\" SET \"processed_at\" = $1, \"locked_until\" = NULL WHERE \"id\" "
               "= $2 AND \"locked_until\" = $3",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->retry, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = NULL WHERE \"id\" = $1 AND "
               "\"locked_until\" = $2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->retry_after, &b,
               "UPDATE \"jobs\" SET \"locked_until\" = NULL, \"retry_after\" = $1 WHERE \"id\" = "
               "$2 AND \"locked_until\" = $3",
               TABQ_P_RETRY_AT, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->dead_letter_group, &b,
               "UPDATE \"jobs\" SET \"queue\" = $1, \"locked_until\" = NULL WHERE \"id\" = $2 "
               "AND \"locked_until\" = $3",
               TABQ_P_DEST, TABQ_P_ID, TABQ_P_TOKEN, 0);

  b = on(&thumbs);
  expect_built(dia->ack, &b,
               "DELETE FROM \"app\".\"thumbs\" WHERE \"id\" = $1 AND \"locked_until\" = $2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  /* Without retry_after a delayed retry is a plain retry. */
  expect_built(dia->retry_after, &b,
               "UPDATE \"app\".\"thumbs\" SET \"locked_until\" = NULL WHERE \"id\" = $1 AND "
               "\"locked_until\" = $2",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_refused(dia->dead_letter_group, &b, TABQ_DECLARATION);
  MSG_HAS("app.thumbs");
}

static void test_settlements_advisory(void) {
  tabq_build b = on(&advj);
  expect_built(dia->ack, &b, "UPDATE \"adv_jobs\" SET \"processed_at\" = $1 WHERE \"id\" = $2",
               TABQ_P_NOW, TABQ_P_ID, 0);
  expect_built(dia->retry_after, &b,
               "UPDATE \"adv_jobs\" SET \"retry_after\" = $1 WHERE \"id\" = $2", TABQ_P_RETRY_AT,
               TABQ_P_ID, 0);
  expect_built(dia->dead_letter_group, &b,
               "UPDATE \"adv_jobs\" SET \"queue\" = $1 WHERE \"id\" = $2", TABQ_P_DEST, TABQ_P_ID,
               0);
  expect_refused(dia->retry, &b, TABQ_DIALECT);
  MSG_HAS("table adv_jobs");
  MSG_HAS("releasing the key");
  b = on(&adv_min);
  expect_built(dia->discard, &b, "DELETE FROM \"k\" WHERE \"id\" = $1", TABQ_P_ID, 0);
}

static void test_dead_letter_table(void) {
  tabq_build b = on(&jobs);
  b.dead_letter_table = "jobs_dead";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO \"jobs_dead\" (\"id\", \"queue\", \"priority\", \"pkey\", "
                     "\"retry_after\", \"attempt\", \"processed_at\", \"headers\", \"payload\", "
                     "\"title\", \"size\") SELECT \"id\", \"queue\", \"priority\", \"pkey\", "
                     "\"retry_after\", \"attempt\", \"processed_at\", \"headers\", \"payload\", "
                     "\"title\", \"size\" FROM \"jobs\" WHERE \"id\" = $1",
                     "DELETE FROM \"jobs\" WHERE \"id\" = $1", 0);

  /* The lease is not copied, and both statements hold the token. */
  tabq_table t = leased_jobs();
  b = on(&t);
  b.dead_letter_table = "app.jobs_dead";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO \"app\".\"jobs_dead\" (\"id\", \"queue\", \"priority\", "
                     "\"pkey\", \"retry_after\", \"attempt\", \"processed_at\", \"headers\", "
                     "\"payload\", \"title\", \"size\") SELECT \"id\", \"queue\", \"priority\", "
                     "\"pkey\", \"retry_after\", \"attempt\", \"processed_at\", \"headers\", "
                     "\"payload\", \"title\", \"size\" FROM \"jobs\" WHERE \"id\" = $1 AND "
                     "\"locked_until\" = $2",
                     "DELETE FROM \"jobs\" WHERE \"id\" = $1 AND \"locked_until\" = $2",
                     TABQ_P_TOKEN);

  b = on(&advj);
  b.dead_letter_table = "adv_dead";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO \"adv_dead\" (\"id\", \"queue\", \"priority\", \"retry_after\", "
                     "\"attempt\", \"processed_at\", \"account\") SELECT \"id\", \"queue\", "
                     "\"priority\", \"retry_after\", \"attempt\", \"processed_at\", \"account\" "
                     "FROM \"adv_jobs\" WHERE \"id\" = $1",
                     "DELETE FROM \"adv_jobs\" WHERE \"id\" = $1", 0);

  b = on(&jobs);
  expect_dead_letter_refused(dia->dead_letter_table, &b, TABQ_INVALID);
  MSG_HAS("jobs");
}

/* ---- check --------------------------------------------------------------------------------- */

/* check on `t` in its own form at `version` ("text", or NULL for none). */
static int check_at(const tabq_table *t, uint32_t version, const char *text) {
  tabq_build b = on(t);
  b.server_version = version;
  b.server_version_text = text;
  test_host_reset();
  return dia->check(&b);
}

static void test_check_versions(void) {
  static const uint32_t versions[] = {0, 90400, 90500, 100000, 110000, 150000};
  static const char *const texts[] = {NULL, "9.4.26", "9.5.25", "10.23", "11.22", "15.4"};
  tabq_table rl_fifo = jobs, lease_fifo = leased_jobs(), leased = leased_jobs();
  rl_fifo.fifo = lease_fifo.fifo = true;
  const struct {
    const tabq_table *t;
    uint32_t floor;
    const char *floor_text, *feature;
  } cases[] = {
      {&jobs, 90500, "9.5", "SKIP LOCKED"},         {&leased, 90500, "9.5", "SKIP LOCKED"},
      {&thumbs, 90500, "9.5", "SKIP LOCKED"},       {&advj, 110000, "11", "hashtextextended"},
      {&rl_fifo, 110000, "11", "hashtextextended"}, {&lease_fifo, 110000, "11", "hashtextextended"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
      int rc = check_at(cases[c].t, versions[v], texts[v]);
      /* 0: the version is not read yet, so nothing is refused for it. */
      if (versions[v] == 0 || versions[v] >= cases[c].floor) {
        CU_ASSERT_EQUAL(rc, TABQ_OK);
        continue;
      }
      CU_ASSERT_EQUAL(rc, TABQ_SERVER_TOO_OLD);
      MSG_HAS(cases[c].t->name);
      MSG_HAS(texts[v]);
      MSG_HAS(cases[c].feature);
      char floor[32];
      snprintf(floor, sizeof floor, "PostgreSQL %s or later", cases[c].floor_text);
      MSG_HAS(floor);
    }

  /* Without the text, the number as PostgreSQL writes it. */
  CU_ASSERT_EQUAL(check_at(&jobs, 90400, NULL), TABQ_SERVER_TOO_OLD);
  MSG_HAS("server is PostgreSQL 9.4.0");
  CU_ASSERT_EQUAL(check_at(&advj, 100000, NULL), TABQ_SERVER_TOO_OLD);
  MSG_HAS("server is PostgreSQL 10.0");
  CU_ASSERT_EQUAL(check_at(&advj, 90621, ""), TABQ_SERVER_TOO_OLD);
  MSG_HAS("server is PostgreSQL 9.6.21");
  MSG_HAS("advisory lock form");
  CU_ASSERT_EQUAL(check_at(&rl_fifo, 100000, "10.5"), TABQ_SERVER_TOO_OLD);
  MSG_HAS("FIFO");
  CU_ASSERT_EQUAL(check_at(&leased, 90400, "9.4.26"), TABQ_SERVER_TOO_OLD);
  MSG_HAS("lease form");
  CU_ASSERT_EQUAL(check_at(&jobs, 90400, "9.4.26"), TABQ_SERVER_TOO_OLD);
  MSG_HAS("row lock form");
}

static void test_check_levels(void) {
  for (int level = 0; level <= TABQ_ISOLATION_SERIALIZABLE; level++) {
    tabq_table t = jobs;
    t.isolation = (tabq_isolation)level;
    int rc = check_at(&t, 150000, "15.4");
    if (level != TABQ_ISOLATION_READ_UNCOMMITTED) {
      CU_ASSERT_EQUAL(rc, TABQ_OK);
      continue;
    }
    CU_ASSERT_EQUAL(rc, TABQ_DIALECT);
    MSG_HAS("table jobs declares read uncommitted");
    MSG_HAS("PostgreSQL opens read committed, repeatable read and serializable");
    MSG_HAS("MySQL/MariaDB open read uncommitted, read committed, repeatable read and "
            "serializable");
    MSG_HAS("SQLite opens the modes deferred, immediate and exclusive");
  }
  /* Refused before the version is known, too. */
  tabq_table t = thumbs;
  t.isolation = TABQ_ISOLATION_READ_UNCOMMITTED;
  CU_ASSERT_EQUAL(check_at(&t, 0, NULL), TABQ_DIALECT);
  MSG_HAS("app.thumbs");

  for (int mode = TABQ_SQLITE_DEFERRED; mode <= TABQ_SQLITE_EXCLUSIVE; mode++) {
    t = jobs;
    t.mode = (tabq_sqlite_mode)mode;
    CU_ASSERT_EQUAL(check_at(&t, 0, NULL), TABQ_DIALECT);
    MSG_HAS("table jobs declares a SQLite mode");
    MSG_HAS("PostgreSQL opens read committed, repeatable read and serializable");
  }

  t = jobs;
  t.isolation = (tabq_isolation)(TABQ_ISOLATION_SERIALIZABLE + 1);
  CU_ASSERT_EQUAL(check_at(&t, 0, NULL), TABQ_DIALECT);
  MSG_HAS("jobs");
  tabq_build b = on(&jobs);
  b.form = (tabq_form)3;
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_DIALECT);
  MSG_HAS("unknown form");

  /* Every form on a current server, and the database clock. */
  t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  CU_ASSERT_EQUAL(check_at(&t, 150000, "15.4"), TABQ_OK);
  CU_ASSERT_EQUAL(check_at(&adv_min, 150000, "15.4"), TABQ_OK);
  CU_ASSERT_EQUAL(check_at(&bare, 150000, "15.4"), TABQ_OK);
}

/* ---- Named parameters of a service's own statements --------------------------------------- */

CU_TestInfo tabq_pg_settlement_tests[] = {
    {"row lock settlements", test_settlements_rowlock},
    {"lease settlements", test_settlements_lease},
    {"advisory settlements", test_settlements_advisory},
    {"dead letter into a table", test_dead_letter_table},
    {"check: server versions", test_check_versions},
    {"check: levels and modes", test_check_levels},
    CU_TEST_INFO_NULL,
};
