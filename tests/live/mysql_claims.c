/* tabq — the MySQL/MariaDB dialect's claims on a live server: every claim reads the queue
 * through the claim-order index, and claims of many rows keep claim order. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tabq/sys/dialect.h>
#include <tabq/sys/sql.h>

#include "cunit_main.h"
#include "driver_calls.h"
#include "mysql_claims.h"
#include "mysql_plugin.h"

static const tabq_driver_v1 *const drv = &tabq_my_driver;
static const int64_t t0 = INT64_C(1700000000123456); /* 2023-11-14 22:13:20.123456 UTC */

/* ---- Claims on the claim-order index -------------------------------------------------------- */

/* Ten rows, 0 to 9: four of them joined make 10,000. */
#define DIGITS                                                                                     \
  "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 "       \
  "UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT "  \
  "9)"

/* A queue table of 20,000 rows in 20 queues, indexed as docs/table-description.md says: the
 * claim order after the group, (queue, [priority, ]retry_after, id). */
static void claims_table_create(bool priority) {
  char sql[1024];
  exec_ok(g_c1, "DROP TABLE IF EXISTS claims");
  snprintf(sql, sizeof sql,
           "CREATE TABLE claims (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT "
           "NULL, priority INT NOT NULL DEFAULT 0, retry_after DATETIME(6) NULL, attempt INT NOT "
           "NULL DEFAULT 1, locked_until DATETIME NULL, payload BLOB NOT NULL, INDEX claims_order "
           "(queue, %sretry_after, id)) ENGINE=InnoDB",
           priority ? "priority, " : "");
  exec_ok(g_c1, sql);
  exec_ok(g_c1, "INSERT INTO claims (queue, payload) SELECT CONCAT('q', (a.i + 10 * b.i + 100 * "
                "c.i + 1000 * d.i + 10000 * e.i) % 20), 'x' FROM " DIGITS " a, " DIGITS
                " b, " DIGITS " c, " DIGITS " d, (SELECT 0 i UNION ALL SELECT 1) e");
  exec_ok(g_c1, "ANALYZE TABLE claims");
}

static tabq_table claims_table(tabq_form form, bool priority, bool fifo) {
  tabq_table t = {.size = sizeof(tabq_table),
                  .name = "claims",
                  .id = {"id", .generated = true},
                  .group = {"queue"},
                  .retry_after = {"retry_after"},
                  .attempt = {"attempt", .generated = true},
                  .payload = {"payload"},
                  .fifo = fifo};
  if (priority)
    t.priority.name = "priority";
  if (form == TABQ_FORM_LEASE)
    t.locked_until.name = "locked_until";
  if (form == TABQ_FORM_ADVISORY)
    t.advisory_lock = "claims-{id}";
  return t;
}

/* EXPLAIN FORMAT=JSON of `st`, prepared with its own placeholders and bound by parameter id. */
static void explain_claim(const tabq_stmt *st, char *plan, size_t cap) {
  static const int64_t ids[] = {7, 3, 19999};
  tabq_value v[TABQ_STMT_MAX_PARAMS];
  for (unsigned i = 0; i < st->nparams; i++) {
    tabq_param id = (tabq_param)st->params[i];
    v[i] = id == TABQ_P_GROUP   ? text("q1")
           : id == TABQ_P_LIMIT ? (tabq_value){.type = TABQ_T_INT, .u.i = 10}
           : id == TABQ_P_IDS   ? (tabq_value){.type = TABQ_T_INT_LIST, .u.list = {ids, 3}}
                                : (tabq_value){.type = TABQ_T_TIME, .u.time_us = t0};
  }
  char sql[4096];
  snprintf(sql, sizeof sql, "EXPLAIN FORMAT=JSON %s", st->sql);
  tabq_prepared *p = prep(g_c1, sql, st->nparams);
  run_ok(p, v, st->nparams);
  plan[0] = '\0';
  if (next_row(p)) {
    tabq_value c = cell(p, 0);
    snprintf(plan, cap, "%.*s", (int)c.u.buf.len, (const char *)c.u.buf.ptr);
  }
  drv->finalize(p);
}

/* True when the JSON plan reads table `name` whole: "table_name": "<name>" followed, in the same
 * table object, by "access_type": "ALL". */
static bool scans_whole(const char *plan, const char *name) {
  char want[64];
  snprintf(want, sizeof want, "\"table_name\": \"%s\"", name);
  for (const char *at = strstr(plan, want); at; at = strstr(at + 1, want)) {
    const char *access = strstr(at, "\"access_type\": \"");
    const char *next = strstr(at + 1, "\"table_name\"");
    if (access && (!next || access < next) && !strncmp(access + 16, "ALL\"", 4))
      return true;
  }
  return false;
}

/* Every claim's SELECT (claim, claim_one, the FIFO guard, the advisory candidates), with and
 * without priority and FIFO groups, reads the queue table through the claim-order index: a
 * whole-table read (access type ALL) fails. */
void test_claims_use_the_index(void) {
  NEED_DB();
  for (int priority = 0; priority < 2; priority++) {
    claims_table_create(priority);
    for (int fifo = 0; fifo < 2; fifo++) {
      tabq_table rowlock = claims_table(TABQ_FORM_ROWLOCK, priority, fifo);
      tabq_table lease = claims_table(TABQ_FORM_LEASE, priority, fifo);
      tabq_table advisory = claims_table(TABQ_FORM_ADVISORY, priority, fifo);
      struct {
        const char *name;
        tabq_build_fn fn;
        const tabq_table *t;
      } claims[] = {{"row lock claim", tabq_my_rowlock.claim, &rowlock},
                    {"row lock claim_one", tabq_my_rowlock.claim_one, &rowlock},
                    {"lease claim", tabq_my_lease.claim, &lease},
                    {"lease claim_one", tabq_my_lease.claim_one, &lease},
                    {"advisory candidates", tabq_my_advisory.candidates, &advisory},
                    {"fifo guard", fifo ? tabq_my_dialect.fifo_guard : NULL, &rowlock}};
      for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        if (!claims[i].fn)
          continue;
        tabq_build b = {.table = claims[i].t,
                        .form = tabq_table_form(claims[i].t),
                        .server_version = 100600,
                        .database = g_db};
        tabq_stmt st;
        tabq_sql_init(&st, &test_host);
        CU_ASSERT_EQUAL_FATAL(claims[i].fn(&b, &st), TABQ_OK);
        if (st.sql) { /* claim_one declines FIFO tables: claim serves them */
          char plan[16384];
          explain_claim(&st, plan, sizeof plan);
          bool whole = scans_whole(plan, "claims");
          bool walks = strstr(plan, "\"key\": \"claims_order\"") != NULL;
          if (whole || !walks)
            fprintf(stderr, "\n%s (%s priority, %s FIFO):\n%s\n%s\n", claims[i].name,
                    priority ? "with" : "without", fifo ? "with" : "without", st.sql, plan);
          CU_ASSERT_FALSE(whole);
          CU_ASSERT_TRUE(walks);
        }
        tabq_sql_free(&st);
      }
    }
  }
  exec_ok(g_c1, "DROP TABLE claims");
}

/* True when the JSON plan reads table `name` by its primary key, one row a key: "table_name":
 * "<name>" followed, in the same table object, by "access_type": "eq_ref" and "key":
 * "PRIMARY". */
static bool by_primary_key(const char *plan, const char *name) {
  char want[64];
  snprintf(want, sizeof want, "\"table_name\": \"%s\"", name);
  const char *at = strstr(plan, want);
  if (!at)
    return false;
  const char *next = strstr(at + 1, "\"table_name\"");
  const char *access = strstr(at, "\"access_type\": \"eq_ref\"");
  const char *key = strstr(at, "\"key\": \"PRIMARY\"");
  return access && key && (!next || (access < next && key < next));
}

/* The statements that bind a list of ids (stamp_ids after a claim of many rows, ack_ids for a
 * batch's acks) find each listed row by the primary key: a read of the whole queue table, which
 * would wait on every row other claims hold, fails. */
void test_listed_rows_by_key(void) {
  NEED_DB();
  claims_table_create(false);
  tabq_table rowlock = claims_table(TABQ_FORM_ROWLOCK, false, false);
  tabq_table lease = claims_table(TABQ_FORM_LEASE, false, false);
  tabq_table marked = lease;
  marked.processed_at.name = "processed_at";
  exec_ok(g_c1, "ALTER TABLE claims ADD COLUMN processed_at DATETIME(6) NULL");
  struct {
    const char *name;
    tabq_build_fn fn;
    const tabq_table *t;
  } stmts[] = {{"row lock stamp_ids", tabq_my_rowlock.stamp_ids, &rowlock},
               {"lease stamp_ids", tabq_my_lease.stamp_ids, &lease},
               {"row lock ack_ids (delete)", tabq_my_dialect.ack_ids, &rowlock},
               {"lease ack_ids (processed_at)", tabq_my_dialect.ack_ids, &marked}};
  for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
    tabq_build b = {.table = stmts[i].t,
                    .form = tabq_table_form(stmts[i].t),
                    .server_version = 100600,
                    .database = g_db};
    tabq_stmt st;
    tabq_sql_init(&st, &test_host);
    CU_ASSERT_EQUAL_FATAL(stmts[i].fn(&b, &st), TABQ_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st.sql);
    char plan[16384];
    explain_claim(&st, plan, sizeof plan);
    bool whole = scans_whole(plan, "t"), keyed = by_primary_key(plan, "t"); /* t: the alias */
    if (whole || !keyed)
      fprintf(stderr, "\n%s:\n%s\n%s\n", stmts[i].name, st.sql, plan);
    CU_ASSERT_FALSE(whole);
    CU_ASSERT_TRUE(keyed);
    tabq_sql_free(&st);
  }
  exec_ok(g_c1, "DROP TABLE claims");
}

/* Runs a claim built by `fn` on `t` in a transaction it rolls back, and reads the ids it returns
 * into `ids` (the id is the projection's first cell). Returns how many there were. */
static unsigned claim_ids(tabq_build_fn fn, const tabq_table *t, unsigned limit, int64_t *ids,
                          unsigned cap) {
  tabq_build b = {.table = t, .form = tabq_table_form(t), .server_version = 100600};
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL_FATAL(fn(&b, &st), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st.sql);
  tabq_value v[TABQ_STMT_MAX_PARAMS];
  for (unsigned i = 0; i < st.nparams; i++)
    v[i] = st.params[i] == TABQ_P_GROUP   ? text("q")
           : st.params[i] == TABQ_P_LIMIT ? (tabq_value){.type = TABQ_T_INT, .u.i = limit}
                                          : (tabq_value){.type = TABQ_T_TIME, .u.time_us = t0};
  tabq_prepared *p = prep(g_c1, st.sql, st.nparams);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, read_committed), TABQ_OK);
  run_ok(p, v, st.nparams);
  unsigned n = 0;
  while (next_row(p))
    if (n < cap)
      ids[n++] = cell(p, 0).u.i;
  drv->finalize(p);
  CU_ASSERT_EQUAL(drv->rollback(g_c1), TABQ_OK);
  tabq_sql_free(&st);
  return n;
}

/* A claim of many rows returns them in claim order (a batch handler sees them so), a claim of
 * one row the first. Priorities run against the ids, so id order would differ. */
void test_claims_in_claim_order(void) {
  NEED_DB();
  exec_ok(g_c1, "CREATE TABLE ordered (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(20) "
                "NOT NULL, priority INT NOT NULL, retry_after DATETIME(6) NULL, attempt INT NOT "
                "NULL DEFAULT 1, locked_until DATETIME NULL, payload BLOB NOT NULL, INDEX "
                "ordered_claim (queue, priority, retry_after, id)) ENGINE=InnoDB");
  for (int i = 1; i <= 20; i++) {
    char sql[128];
    snprintf(sql, sizeof sql,
             "INSERT INTO ordered (queue, priority, payload) VALUES ('q', %d, 'x')", 20 - i);
    exec_ok(g_c1, sql);
  }
  tabq_table rowlock = {.size = sizeof(tabq_table),
                        .name = "ordered",
                        .id = {"id", .generated = true},
                        .group = {"queue"},
                        .priority = {"priority"},
                        .retry_after = {"retry_after"},
                        .attempt = {"attempt", .generated = true},
                        .payload = {"payload"}};
  tabq_table lease = rowlock;
  lease.locked_until.name = "locked_until";
  /* priority 20 - id: claim order 20, 19, 18, 17, 16, ... */
  static const int64_t want[] = {20, 19, 18, 17, 16};
  const tabq_table *tables[] = {&rowlock, &lease};
  tabq_build_fn many[] = {tabq_my_rowlock.claim, tabq_my_lease.claim};
  tabq_build_fn one[] = {tabq_my_rowlock.claim_one, tabq_my_lease.claim_one};
  for (int f = 0; f < 2; f++) {
    int64_t ids[8] = {0};
    CU_ASSERT_EQUAL(claim_ids(many[f], tables[f], 5, ids, 8), 5);
    for (int i = 0; i < 5; i++)
      CU_ASSERT_EQUAL(ids[i], want[i]);
    CU_ASSERT_EQUAL(claim_ids(one[f], tables[f], 1, ids, 8), 1);
    CU_ASSERT_EQUAL(ids[0], want[0]);
  }
  exec_ok(g_c1, "DROP TABLE ordered");
}
