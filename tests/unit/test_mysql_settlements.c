/* tabq — unit tests of the MySQL/MariaDB dialect's settlements (each form, dead letters into a
 * group and into a table) and of its check: server versions, levels and modes (no server). */
#include <stdio.h>
#include <string.h>

#include "mysql_fixture.h"

static const tabq_dialect_v1 *const dia = &tabq_my_dialect;

/* ---- Settlements --------------------------------------------------------------------------- */

static void test_settlements_rowlock(void) {
  tabq_build b = on(&jobs);
  expect_built(dia->ack, &b, "UPDATE `jobs` SET `processed_at` = ? WHERE `id` = ?", TABQ_P_NOW,
               TABQ_P_ID, 0);
  expect_built(dia->discard, &b, "UPDATE `jobs` SET `processed_at` = ? WHERE `id` = ?", TABQ_P_NOW,
               TABQ_P_ID, 0);
  expect_built(dia->retry_after, &b, "UPDATE `jobs` SET `retry_after` = ? WHERE `id` = ?",
               TABQ_P_RETRY_AT, TABQ_P_ID, 0);
  expect_built(dia->dead_letter_group, &b, "UPDATE `jobs` SET `queue` = ? WHERE `id` = ?",
               TABQ_P_DEST, TABQ_P_ID, 0);
  /* The claim's commit returns the row: no statement to run. */
  expect_refused(dia->retry, &b, TABQ_DIALECT);
  MSG_HAS("table jobs");
  MSG_HAS("commit");

  tabq_table t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  b = on(&t);
  expect_built(dia->ack, &b, "UPDATE `jobs` SET `processed_at` = UTC_TIMESTAMP(6) WHERE `id` = ?",
               TABQ_P_ID, 0);
  expect_built(dia->discard, &b,
               "UPDATE `jobs` SET `processed_at` = UTC_TIMESTAMP(6) WHERE `id` = ?", TABQ_P_ID, 0);

  b = on(&plain);
  expect_built(dia->ack, &b, "DELETE FROM `plain_jobs` WHERE `id` = ?", TABQ_P_ID, 0);
  expect_built(dia->discard, &b, "DELETE FROM `plain_jobs` WHERE `id` = ?", TABQ_P_ID, 0);
  expect_refused(dia->retry_after, &b, TABQ_DIALECT);
  MSG_HAS("plain_jobs");
  MSG_HAS("without a retry_after column");
  expect_refused(dia->dead_letter_group, &b, TABQ_DECLARATION);
  MSG_HAS("plain_jobs");
  MSG_HAS("group column");

  b = on(&weird);
  expect_built(dia->ack, &b, "DELETE FROM `a``pp`.`we``ird` WHERE `i``d` = ?", TABQ_P_ID, 0);
}

static void test_settlements_lease(void) {
  tabq_table t = leased_jobs();
  tabq_build b = on(&t);
  /* The token last: every statement names the row and the expiry it holds. */
  expect_built(dia->ack, &b,
               "UPDATE `jobs` SET `processed_at` = ?, `locked_until` = NULL WHERE `id` = ? AND "
               "`locked_until` = ?",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->discard, &b,
               "UPDATE `jobs` SET `processed_at` = ?, `locked_until` = NULL WHERE `id` = ? AND "
               "`locked_until` = ?",
               TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->retry, &b,
               "UPDATE `jobs` SET `locked_until` = NULL WHERE `id` = ? AND `locked_until` = ?",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->retry_after, &b,
               "UPDATE `jobs` SET `locked_until` = NULL, `retry_after` = ? WHERE `id` = ? AND "
               "`locked_until` = ?",
               TABQ_P_RETRY_AT, TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_built(dia->dead_letter_group, &b,
               "UPDATE `jobs` SET `queue` = ?, `locked_until` = NULL WHERE `id` = ? AND "
               "`locked_until` = ?",
               TABQ_P_DEST, TABQ_P_ID, TABQ_P_TOKEN, 0);

  b = on(&thumbs);
  expect_built(dia->ack, &b, "DELETE FROM `app`.`thumbs` WHERE `id` = ? AND `locked_until` = ?",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  /* Without retry_after a delayed retry is a plain retry. */
  expect_built(dia->retry_after, &b,
               "UPDATE `app`.`thumbs` SET `locked_until` = NULL WHERE `id` = ? AND "
               "`locked_until` = ?",
               TABQ_P_ID, TABQ_P_TOKEN, 0);
  expect_refused(dia->dead_letter_group, &b, TABQ_DECLARATION);
  MSG_HAS("app.thumbs");
}

static void test_settlements_advisory(void) {
  tabq_build b = on(&advj);
  expect_built(dia->ack, &b, "UPDATE `adv_jobs` SET `processed_at` = ? WHERE `id` = ?", TABQ_P_NOW,
               TABQ_P_ID, 0);
  expect_built(dia->retry_after, &b, "UPDATE `adv_jobs` SET `retry_after` = ? WHERE `id` = ?",
               TABQ_P_RETRY_AT, TABQ_P_ID, 0);
  expect_built(dia->dead_letter_group, &b, "UPDATE `adv_jobs` SET `queue` = ? WHERE `id` = ?",
               TABQ_P_DEST, TABQ_P_ID, 0);
  expect_refused(dia->retry, &b, TABQ_DIALECT);
  MSG_HAS("table adv_jobs");
  MSG_HAS("releasing the key");
  b = on(&adv_min);
  expect_built(dia->discard, &b, "DELETE FROM `k` WHERE `id` = ?", TABQ_P_ID, 0);
  expect_refused(dia->retry_after, &b, TABQ_DIALECT);
  MSG_HAS("releasing the key");
}

static void test_dead_letter_table(void) {
  tabq_build b = on(&jobs);
  b.dead_letter_table = "jobs_dead";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO `jobs_dead` (`id`, `queue`, `priority`, `pkey`, `retry_after`, "
                     "`attempt`, `processed_at`, `headers`, `payload`, `title`, `size`) SELECT "
                     "`id`, `queue`, `priority`, `pkey`, `retry_after`, `attempt`, "
                     "`processed_at`, `headers`, `payload`, `title`, `size` FROM `jobs` WHERE "
                     "`id` = ?",
                     "DELETE FROM `jobs` WHERE `id` = ?", 0);

  /* The lease is not copied, and both statements hold the token. */
  tabq_table t = leased_jobs();
  b = on(&t);
  b.dead_letter_table = "app.jobs_dead";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO `app`.`jobs_dead` (`id`, `queue`, `priority`, `pkey`, "
                     "`retry_after`, `attempt`, `processed_at`, `headers`, `payload`, `title`, "
                     "`size`) SELECT `id`, `queue`, `priority`, `pkey`, `retry_after`, `attempt`, "
                     "`processed_at`, `headers`, `payload`, `title`, `size` FROM `jobs` WHERE "
                     "`id` = ? AND `locked_until` = ?",
                     "DELETE FROM `jobs` WHERE `id` = ? AND `locked_until` = ?", TABQ_P_TOKEN);

  b = on(&thumbs);
  b.dead_letter_table = "ar`chive.th`umbs";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO `ar``chive`.`th``umbs` (`id`, `attempt`, `payload`) SELECT "
                     "`id`, `attempt`, `payload` FROM `app`.`thumbs` WHERE `id` = ? AND "
                     "`locked_until` = ?",
                     "DELETE FROM `app`.`thumbs` WHERE `id` = ? AND `locked_until` = ?",
                     TABQ_P_TOKEN);

  b = on(&advj);
  b.dead_letter_table = "adv_dead";
  expect_dead_letter(dia->dead_letter_table, &b,
                     "INSERT INTO `adv_dead` (`id`, `queue`, `priority`, `retry_after`, "
                     "`attempt`, `processed_at`, `account`) SELECT `id`, `queue`, `priority`, "
                     "`retry_after`, `attempt`, `processed_at`, `account` FROM `adv_jobs` WHERE "
                     "`id` = ?",
                     "DELETE FROM `adv_jobs` WHERE `id` = ?", 0);

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
  static const struct {
    uint32_t number;
    const char *text;
    bool refused;
    const char *server, *floor;
  } cases[] = {
      {100509, "10.5.9-MariaDB", true, "MariaDB", "MariaDB 10.6 or later"},
      {100600, "10.6.0-MariaDB", false, NULL, NULL},
      {101119, "10.11.19-MariaDB-0+deb12u1", false, NULL, NULL},
      {100419, "5.5.5-10.4.19-mariadb-log", true, "MariaDB", "MariaDB 10.6 or later"},
      {50744, "5.7.44", true, "MySQL", "MySQL 8.0.1 or later"},
      {50744, "5.7.44-log", true, "MySQL", "MySQL 8.0.1 or later"},
      {80000, "8.0.0-dmr", true, "MySQL", "MySQL 8.0.1 or later"},
      {80001, "8.0.1-dmr", false, NULL, NULL},
      {80036, "8.0.36", false, NULL, NULL},
      {90100, "9.1.0", false, NULL, NULL},
      {0, NULL, false, NULL, NULL}, /* not read yet: nothing refused for it */
      {0, "10.5.9-MariaDB", false, NULL, NULL},
  };
  tabq_table rl_fifo = jobs, leased = leased_jobs();
  rl_fifo.fifo = true;
  /* Every form shares the floor. */
  const tabq_table *tables[] = {&jobs, &rl_fifo, &leased, &thumbs, &advj, &adv_min};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    test_host_reset();
    int rc = tabq_my_check_version("t1", cases[c].number, cases[c].text);
    CU_ASSERT_EQUAL(rc, cases[c].refused ? TABQ_SERVER_TOO_OLD : TABQ_OK);
    if (cases[c].refused) {
      MSG_HAS("table t1");
      MSG_HAS(cases[c].floor);
      MSG_HAS(cases[c].text);
      char server[96];
      snprintf(server, sizeof server, "the server is %s %s", cases[c].server, cases[c].text);
      MSG_HAS(server);
      MSG_HAS("SKIP LOCKED");
    }
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
      rc = check_at(tables[i], cases[c].number, cases[c].text);
      CU_ASSERT_EQUAL(rc, cases[c].refused ? TABQ_SERVER_TOO_OLD : TABQ_OK);
      if (cases[c].refused)
        MSG_HAS(tables[i]->name);
    }
  }

  /* Without the text: MySQL, the number written out. */
  CU_ASSERT_EQUAL(check_at(&jobs, 50744, NULL), TABQ_SERVER_TOO_OLD);
  MSG_HAS("the server is MySQL 5.7.44");
  CU_ASSERT_EQUAL(check_at(&jobs, 80000, ""), TABQ_SERVER_TOO_OLD);
  MSG_HAS("the server is MySQL 8.0.0");
  CU_ASSERT_EQUAL(check_at(&jobs, 100509, NULL), TABQ_OK);
}

static void test_check_levels(void) {
  /* MySQL/MariaDB open all four levels, in every form, FIFO or not. */
  tabq_table rl_fifo = jobs, lease_fifo = leased_jobs();
  rl_fifo.fifo = lease_fifo.fifo = true;
  const tabq_table *tables[] = {&jobs, &rl_fifo, &thumbs, &lease_fifo, &advj};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    for (int level = 0; level <= TABQ_ISOLATION_SERIALIZABLE; level++) {
      tabq_table t = *tables[i];
      t.isolation = (tabq_isolation)level;
      int rc = check_at(&t, 101119, "10.11.19-MariaDB");
      bool refused = tables[i] == &rl_fifo && level == TABQ_ISOLATION_SERIALIZABLE;
      CU_ASSERT_EQUAL(rc, refused ? TABQ_DIALECT : TABQ_OK);
    }

  /* A row lock table with FIFO groups at serializable, before the version is known too. */
  tabq_table t = rl_fifo;
  t.isolation = TABQ_ISOLATION_SERIALIZABLE;
  CU_ASSERT_EQUAL(check_at(&t, 0, NULL), TABQ_DIALECT);
  MSG_HAS("table jobs");
  MSG_HAS("serializable");
  MSG_HAS("InnoDB locks every row a read touches");
  MSG_HAS("a claim would wait for the group's row in work");
  /* The dialect refusal comes before the version's. */
  CU_ASSERT_EQUAL(check_at(&t, 50744, "5.7.44"), TABQ_DIALECT);

  for (int mode = TABQ_SQLITE_DEFERRED; mode <= TABQ_SQLITE_EXCLUSIVE; mode++) {
    t = jobs;
    t.mode = (tabq_sqlite_mode)mode;
    CU_ASSERT_EQUAL(check_at(&t, 0, NULL), TABQ_DIALECT);
    MSG_HAS("table jobs declares a SQLite mode");
    MSG_HAS("MySQL/MariaDB open read uncommitted, read committed, repeatable read and "
            "serializable");
    MSG_HAS("SQLite opens the modes deferred, immediate and exclusive");
    t = thumbs;
    t.mode = (tabq_sqlite_mode)mode;
    CU_ASSERT_EQUAL(check_at(&t, 101119, "10.11.19-MariaDB"), TABQ_DIALECT);
    MSG_HAS("table app.thumbs declares a SQLite mode");
  }

  t = jobs;
  t.isolation = (tabq_isolation)(TABQ_ISOLATION_SERIALIZABLE + 1);
  CU_ASSERT_EQUAL(check_at(&t, 0, NULL), TABQ_DIALECT);
  MSG_HAS("table jobs: unknown isolation level");
  tabq_build b = on(&jobs);
  b.form = (tabq_form)3;
  test_host_reset();
  CU_ASSERT_EQUAL(dia->check(&b), TABQ_DIALECT);
  MSG_HAS("unknown form");

  /* The database clock on a current server. */
  t = jobs;
  t.clock = TABQ_CLOCK_DATABASE;
  CU_ASSERT_EQUAL(check_at(&t, 80036, "8.0.36"), TABQ_OK);
  CU_ASSERT_EQUAL(check_at(&bare, 80036, "8.0.36"), TABQ_OK);
}

CU_TestInfo tabq_my_settlement_tests[] = {
    {"row lock settlements", test_settlements_rowlock},
    {"lease settlements", test_settlements_lease},
    {"advisory settlements", test_settlements_advisory},
    {"dead letter into a table", test_dead_letter_table},
    {"check: server versions", test_check_versions},
    {"check: levels and modes", test_check_levels},
    CU_TEST_INFO_NULL,
};
