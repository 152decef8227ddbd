/* tabq — tests of the SQLite driver against a real temporary database file (no server needed):
 * the connection, every statement preparing, schema errors, the lease and FIFO flows, the writer
 * lock and concurrent claims. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <tabq/sys/sql.h>

#include "cunit_main.h"
#include "sqlite_fixture.h"

/* ---- Against a real database file ---------------------------------------------------------- */

static char g_path[64];
static char g_url[PATH_MAX + 64];
static tabq_conn *g_conn;

static const char schema[] =
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, priority INTEGER NOT NULL "
    "DEFAULT 0, pkey TEXT, retry_after TEXT, attempt INTEGER NOT NULL DEFAULT 0, processed_at "
    "TEXT, locked_until TEXT, headers TEXT, payload BLOB NOT NULL, title TEXT, size INTEGER "
    "GENERATED ALWAYS AS (length(payload)) VIRTUAL);"
    "CREATE TABLE jobs_dead (id INTEGER PRIMARY KEY, queue TEXT, priority INTEGER, pkey TEXT, "
    "retry_after TEXT, attempt INTEGER, processed_at TEXT, headers TEXT, payload BLOB, title "
    "TEXT, size INTEGER);"
    "CREATE TABLE thumbs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 0, "
    "locked_until TEXT, payload BLOB NOT NULL);"
    "CREATE TABLE thumbs_dead (id INTEGER PRIMARY KEY, attempt INTEGER, payload BLOB);"
    "CREATE TABLE thin (id INTEGER PRIMARY KEY, locked_until TEXT);";

static void remove_db_files(void) {
  char side[96];
  unlink(g_path);
  snprintf(side, sizeof side, "%s-wal", g_path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", g_path);
  unlink(side);
}

/* The first test of the suite rather than its init: a failing init would skip the suite without
 * failing the run. Every later test needs the file. */
static void test_open(void) {
  tabq_sqlite_set_host(&test_host);
  snprintf(g_path, sizeof g_path, "/tmp/tabq_sqlite_XXXXXX");
  int fd = mkstemp(g_path);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  snprintf(g_url, sizeof g_url, "sqlite:%s?synchronous=normal", g_path);
  int rc = drv->connect(g_url, &g_conn);
  if (rc != TABQ_OK)
    fprintf(stderr, "connect: %s\n", g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  rc = drv->exec(g_conn, schema);
  if (rc != TABQ_OK)
    fprintf(stderr, "schema: %s\n", g_msg);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

#define NEED_DB() CU_ASSERT_PTR_NOT_NULL_FATAL(g_conn)

static int live_clean(void) {
  drv->close(g_conn);
  g_conn = NULL;
  if (g_path[0])
    remove_db_files();
  return 0;
}

/* A built statement and its prepared form. */
typedef struct prepared {
  tabq_stmt st;
  tabq_prepared *p;
} prepared;

static int prepare_built(tabq_conn *c, tabq_build_fn fn, const tabq_build *b, const char *name,
                         prepared *out) {
  tabq_sql_init(&out->st, &test_host);
  out->p = NULL;
  int rc = fn(b, &out->st);
  if (rc == TABQ_OK)
    rc = drv->prepare(c, out->st.sql, out->st.nparams, name, &out->p);
  return rc;
}

static void prepared_free(prepared *pr) {
  if (pr->p)
    drv->finalize(pr->p);
  tabq_sql_free(&pr->st);
}

typedef struct arg {
  int id;
  tabq_value v;
} arg;

/* Binds each placeholder the value of its parameter id, as the core does, and executes. */
static int run(prepared *pr, const arg *args, size_t nargs) {
  tabq_value vals[TABQ_STMT_MAX_PARAMS];
  for (unsigned i = 0; i < pr->st.nparams; i++) {
    size_t j = 0;
    while (j < nargs && args[j].id != pr->st.params[i])
      j++;
    if (j == nargs)
      return test_fail(TABQ_INVALID, NULL, 0, "no value for parameter %u", pr->st.params[i]);
    vals[i] = args[j].v;
  }
  return drv->execute(pr->p, vals, pr->st.nparams);
}

#define RUN(pr, ...)                                                                               \
  do {                                                                                             \
    const arg args_[] = {__VA_ARGS__};                                                             \
    int rc_ = run((pr), args_, sizeof args_ / sizeof args_[0]);                                    \
    if (rc_ != TABQ_OK)                                                                            \
      fprintf(stderr, "execute failed: %s\n", g_msg);                                              \
    CU_ASSERT_EQUAL_FATAL(rc_, TABQ_OK);                                                           \
  } while (0)

static tabq_value text(const char *s) {
  return tabq_text(s, strlen(s));
}

static tabq_value json(const char *s) {
  tabq_value v = text(s);
  v.type = TABQ_T_JSON;
  return v;
}

#define SEC INT64_C(1000000)
static const int64_t t0 = INT64_C(1700000000123456);

static void expect_int(prepared *pr, unsigned col, int64_t want) {
  tabq_value v;
  CU_ASSERT_EQUAL_FATAL(drv->cell(pr->p, col, &v), TABQ_OK);
  CU_ASSERT_EQUAL(v.type, TABQ_T_INT);
  CU_ASSERT_EQUAL(v.u.i, want);
}

static void expect_buf(prepared *pr, unsigned col, tabq_type type, const char *want, size_t n) {
  tabq_value v;
  CU_ASSERT_EQUAL_FATAL(drv->cell(pr->p, col, &v), TABQ_OK);
  CU_ASSERT_EQUAL(v.type, type);
  CU_ASSERT_EQUAL_FATAL(v.u.buf.len, n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v.u.buf.ptr);
  CU_ASSERT(memcmp(v.u.buf.ptr, want, n) == 0);
}

static void expect_null(prepared *pr, unsigned col) {
  tabq_value v;
  CU_ASSERT_EQUAL_FATAL(drv->cell(pr->p, col, &v), TABQ_OK);
  CU_ASSERT_EQUAL(v.type, TABQ_T_NULL);
}

static bool next_row(prepared *pr) {
  bool row = false;
  CU_ASSERT_EQUAL_FATAL(drv->next(pr->p, &row), TABQ_OK);
  return row;
}

/* One integer from a query run through the driver. */
static int64_t query_int(tabq_conn *c, const char *sql) {
  tabq_prepared *p = NULL;
  int64_t out = -1;
  CU_ASSERT_EQUAL_FATAL(drv->prepare(c, sql, 0, "query", &p), TABQ_OK);
  CU_ASSERT_EQUAL(drv->execute(p, NULL, 0), TABQ_OK);
  bool row = false;
  tabq_value v = tabq_null();
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  CU_ASSERT(row);
  if (row && drv->cell(p, 0, &v) == TABQ_OK && v.type == TABQ_T_INT)
    out = v.u.i;
  drv->finalize(p);
  return out;
}

static void test_connection(void) {
  NEED_DB();
  CU_ASSERT(drv->alive(g_conn));
  char text[32];
  uint32_t number = 0;
  CU_ASSERT_EQUAL(drv->server_version(g_conn, text, sizeof text, &number), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(text, sqlite3_libversion());
  CU_ASSERT_EQUAL(number, (uint32_t)sqlite3_libversion_number());
  CU_ASSERT_EQUAL(query_int(g_conn, "PRAGMA synchronous"), 1); /* NORMAL, from the URL */

  tabq_prepared *p = NULL;
  CU_ASSERT_EQUAL_FATAL(drv->prepare(g_conn, "PRAGMA journal_mode", 0, "query", &p), TABQ_OK);
  CU_ASSERT_EQUAL(drv->execute(p, NULL, 0), TABQ_OK);
  bool row = false;
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  tabq_value v;
  CU_ASSERT_EQUAL(drv->cell(p, 0, &v), TABQ_OK);
  CU_ASSERT_EQUAL(v.type, TABQ_T_TEXT);
  CU_ASSERT(v.u.buf.len == 3 && memcmp(v.u.buf.ptr, "wal", 3) == 0);
  CU_ASSERT_EQUAL(drv->cell(p, 1, &v), TABQ_INVALID);
  drv->finalize(p);

  /* A float reads as a real, and a real binds (ABI 1.5). */
  CU_ASSERT_EQUAL_FATAL(drv->prepare(g_conn, "SELECT 1.5, ?", 1, "query", &p), TABQ_OK);
  tabq_value quarter = tabq_real(0.25);
  CU_ASSERT_EQUAL(drv->execute(p, &quarter, 1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  CU_ASSERT_EQUAL(drv->cell(p, 0, &v), TABQ_OK);
  CU_ASSERT(v.type == TABQ_T_REAL && v.u.r == 1.5);
  CU_ASSERT_EQUAL(drv->cell(p, 1, &v), TABQ_OK);
  CU_ASSERT(v.type == TABQ_T_REAL && v.u.r == 0.25);
  drv->finalize(p);

  CU_ASSERT_EQUAL(drv->prepare(g_conn, "SELECT ?1", 0, "query", &p), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(p);
  CU_ASSERT_EQUAL(drv->prepare(g_conn, "SELECT 1; SELECT 2", 0, "query", &p), TABQ_INVALID);
  CU_ASSERT_EQUAL(drv->prepare(g_conn, "SELECT 1; -- done", 0, "query", &p), TABQ_OK);
  drv->finalize(p);

  CU_ASSERT_EQUAL_FATAL(drv->prepare(g_conn, "SELECT ?1", 1, "query", &p), TABQ_OK);
  /* A list binds as a JSON array (what stamp_ids reads with json_each), its buffer kept from one
   * execution to the next, grown for a longer list. */
  const int64_t ids[] = {1, -2, INT64_MAX};
  tabq_value list = {.type = TABQ_T_INT_LIST, .u.list = {ids, 2}};
  CU_ASSERT_EQUAL(drv->execute(p, &list, 1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  CU_ASSERT_EQUAL(drv->cell(p, 0, &v), TABQ_OK);
  CU_ASSERT(v.type == TABQ_T_TEXT && v.u.buf.len == 6 && memcmp(v.u.buf.ptr, "[1,-2]", 6) == 0);
  drv->reset(p);
  list.u.list.count = 3;
  CU_ASSERT_EQUAL(drv->execute(p, &list, 1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  CU_ASSERT_EQUAL(drv->cell(p, 0, &v), TABQ_OK);
  CU_ASSERT(v.type == TABQ_T_TEXT && v.u.buf.len == 26 &&
            memcmp(v.u.buf.ptr, "[1,-2,9223372036854775807]", 26) == 0);
  drv->reset(p);
  list.u.list.count = 0;
  CU_ASSERT_EQUAL(drv->execute(p, &list, 1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  CU_ASSERT_EQUAL(drv->cell(p, 0, &v), TABQ_OK);
  CU_ASSERT(v.type == TABQ_T_TEXT && v.u.buf.len == 2 && memcmp(v.u.buf.ptr, "[]", 2) == 0);
  drv->reset(p);
  tabq_value when = tabq_time(t0);
  CU_ASSERT_EQUAL(drv->execute(p, &when, 1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->next(p, &row), TABQ_OK);
  CU_ASSERT_EQUAL(drv->cell(p, 0, &v), TABQ_OK);
  CU_ASSERT_EQUAL(v.type, TABQ_T_TEXT);
  CU_ASSERT(v.u.buf.len == 26 && memcmp(v.u.buf.ptr, "2023-11-14 22:13:20.123456", 26) == 0);
  drv->finalize(p);
}

/* Every statement of the lease form prepares against a matching schema. */
static void test_prepare_all(void) {
  NEED_DB();
  tabq_table fifo = jobs;
  fifo.fifo = true;
  const tabq_table *tables[] = {&jobs, &fifo, &thumbs};
  const char *dead[] = {"jobs_dead", "jobs_dead", "main.thumbs_dead"};
  const struct {
    tabq_build_fn fn;
    const char *name;
  } fns[] = {
      {dia->insert, "insert"},           {dia->ack, "ack"},
      {dia->discard, "discard"},         {dia->retry, "retry"},
      {dia->retry_after, "retry_after"}, {lease->claim, "claim"},
      {lease->extend, "extend"},         {lease->release, "release"},
      {lease->stamp, "stamp"},           {lease->stamp_ids, "stamp_ids"},
  };
  for (size_t t = 0; t < 3; t++) {
    tabq_build b = lease_of(tables[t]);
    b.dead_letter_table = dead[t];
    CU_ASSERT_EQUAL(dia->check(&b), TABQ_OK);
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
      prepared pr;
      int rc = prepare_built(g_conn, fns[i].fn, &b, fns[i].name, &pr);
      CU_ASSERT_EQUAL(rc, TABQ_OK);
      if (rc != TABQ_OK)
        fprintf(stderr, "%s on %s: %s\n", fns[i].name, tables[t]->name, g_msg);
      prepared_free(&pr);
    }
    if (tables[t]->group.name) {
      prepared pr;
      CU_ASSERT_EQUAL(prepare_built(g_conn, dia->dead_letter_group, &b, "dead_letter", &pr),
                      TABQ_OK);
      prepared_free(&pr);
    }
    tabq_stmt copy, remove;
    tabq_sql_init(&copy, &test_host);
    tabq_sql_init(&remove, &test_host);
    CU_ASSERT_EQUAL_FATAL(dia->dead_letter_table(&b, &copy, &remove), TABQ_OK);
    tabq_prepared *p = NULL;
    CU_ASSERT_EQUAL(drv->prepare(g_conn, copy.sql, copy.nparams, "dead_letter", &p), TABQ_OK);
    drv->finalize(p);
    CU_ASSERT_EQUAL(drv->prepare(g_conn, remove.sql, remove.nparams, "dead_letter", &p), TABQ_OK);
    drv->finalize(p);
    tabq_sql_free(&copy);
    tabq_sql_free(&remove);
  }
}

static void test_prepare_schema_errors(void) {
  NEED_DB();
  static const tabq_table thin = {.size = sizeof(tabq_table),
                                  .name = "thin",
                                  .id = {"id"},
                                  .locked_until = {"locked_until"},
                                  .payload = {"payload"}};
  static const tabq_table absent = {
      .size = sizeof(tabq_table), .name = "absent", .id = {"id"}, .locked_until = {"locked_until"}};
  prepared pr;
  tabq_build b = lease_of(&thin);
  /* payload appears only in RETURNING: with SQLite's legacy double-quoted strings left on, it
   * would read as the text 'payload' and the prepare would pass. */
  CU_ASSERT_EQUAL(prepare_built(g_conn, lease->claim, &b, "claim", &pr), TABQ_SCHEMA);
  CU_ASSERT_PTR_NULL(pr.p);
  MSG_HAS("claim statement: ");
  MSG_HAS("no such column: payload");
  prepared_free(&pr);
  b = lease_of(&absent);
  CU_ASSERT_EQUAL(prepare_built(g_conn, dia->ack, &b, "ack", &pr), TABQ_SCHEMA);
  MSG_HAS("ack statement: no such table: absent");
  prepared_free(&pr);
}

#define MT_ROWS 120 /* rows of the concurrent claims test, and most rows one claim reads */

/* ---- The claim as the core runs it -------------------------------------------------------- */

/* The lease claim selects its rows in claim order and the stamp then leases each, both in one
 * BEGIN IMMEDIATE transaction: CLAIM begins and runs the select, claimed() reads the next row
 * (the test checks its cells), end_claim() reads the rest, stamps every row (more than one at
 * once, with stamp_ids, as the core does) and commits. */
typedef struct claiming {
  prepared claim, stamp, stamp_ids;
  tabq_value until;
  int64_t ids[MT_ROWS];
  int n;
} claiming;

static int claiming_open(tabq_conn *c, const tabq_build *b, claiming *cl) {
  memset(cl, 0, sizeof *cl);
  int rc = prepare_built(c, lease->claim, b, "claim", &cl->claim);
  if (rc == TABQ_OK)
    rc = prepare_built(c, lease->stamp, b, "stamp", &cl->stamp);
  return rc ? rc : prepare_built(c, lease->stamp_ids, b, "stamp_ids", &cl->stamp_ids);
}

static void claiming_free(claiming *cl) {
  prepared_free(&cl->claim);
  prepared_free(&cl->stamp);
  prepared_free(&cl->stamp_ids);
}

static int claim_run(tabq_conn *c, claiming *cl, const arg *args, size_t nargs) {
  cl->n = 0;
  for (size_t i = 0; i < nargs; i++)
    if (args[i].id == TABQ_P_LEASE_UNTIL)
      cl->until = args[i].v;
  int rc = drv->begin(c, "BEGIN IMMEDIATE");
  if (rc == TABQ_OK && (rc = run(&cl->claim, args, nargs)) != TABQ_OK)
    drv->rollback(c);
  return rc;
}

#define CLAIM(cl, ...)                                                                             \
  do {                                                                                             \
    const arg args_[] = {__VA_ARGS__};                                                             \
    int rc_ = claim_run(g_conn, (cl), args_, sizeof args_ / sizeof args_[0]);                      \
    if (rc_ != TABQ_OK)                                                                            \
      fprintf(stderr, "claim failed: %s\n", g_msg);                                                \
    CU_ASSERT_EQUAL_FATAL(rc_, TABQ_OK);                                                           \
  } while (0)

/* The next claimed row, its id kept for the stamp; false when there is none. */
static int claim_next(claiming *cl, bool *row) {
  int rc = drv->next(cl->claim.p, row);
  tabq_value id;
  if (rc == TABQ_OK && *row && (rc = drv->cell(cl->claim.p, 0, &id)) == TABQ_OK && cl->n < MT_ROWS)
    cl->ids[cl->n++] = id.u.i;
  return rc;
}

static bool claimed(claiming *cl) {
  bool row = false;
  CU_ASSERT_EQUAL_FATAL(claim_next(cl, &row), TABQ_OK);
  return row;
}

/* Reads the rows left, stamps every row claimed, commits; returns how many rows were left, or
 * -1 when the stamps did not change exactly the rows claimed. */
static int claim_end(tabq_conn *c, claiming *cl, int *left) {
  int rc;
  bool row = true;
  int before = cl->n;
  while ((rc = claim_next(cl, &row)) == TABQ_OK && row)
    ;
  drv->reset(cl->claim.p);
  *left = cl->n - before;
  if (rc == TABQ_OK && cl->n > 1) {
    tabq_value ids = {.type = TABQ_T_INT_LIST, .u.list = {cl->ids, (size_t)cl->n}};
    const arg args[] = {{TABQ_P_IDS, ids}, {TABQ_P_LEASE_UNTIL, cl->until}};
    if ((rc = run(&cl->stamp_ids, args, 2)) == TABQ_OK &&
        drv->affected(cl->stamp_ids.p) != (uint64_t)cl->n)
      *left = -1;
    drv->reset(cl->stamp_ids.p);
  }
  for (int i = 0; rc == TABQ_OK && cl->n == 1 && i < cl->n; i++) {
    const arg args[] = {{TABQ_P_ID, tabq_int(cl->ids[i])}, {TABQ_P_LEASE_UNTIL, cl->until}};
    if ((rc = run(&cl->stamp, args, 2)) == TABQ_OK && drv->affected(cl->stamp.p) != 1)
      *left = -1;
    drv->reset(cl->stamp.p);
  }
  if (rc == TABQ_OK)
    rc = drv->commit(c);
  if (rc != TABQ_OK)
    drv->rollback(c);
  return rc;
}

static int end_claim(claiming *cl) {
  int left = 0;
  CU_ASSERT_EQUAL_FATAL(claim_end(g_conn, cl, &left), TABQ_OK);
  return left;
}

/* insert -> claim -> extend -> ack, and the other settlements, through the driver. */
static void test_lease_flow(void) {
  NEED_DB();
  tabq_table t = jobs;
  t.mode = TABQ_SQLITE_IMMEDIATE;
  tabq_build b = lease_of(&t);
  b.dead_letter_table = "jobs_dead";
  claiming lc;
  prepared ins, extend, release, ack, later, dead, copy, remove;
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->insert, &b, "insert", &ins), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(claiming_open(g_conn, &b, &lc), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, lease->extend, &b, "extend", &extend), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, lease->release, &b, "release", &release), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->ack, &b, "ack", &ack), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->retry_after, &b, "retry_after", &later),
                        TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->dead_letter_group, &b, "dead_letter", &dead),
                        TABQ_OK);
  tabq_sql_init(&copy.st, &test_host);
  tabq_sql_init(&remove.st, &test_host);
  CU_ASSERT_EQUAL_FATAL(dia->dead_letter_table(&b, &copy.st, &remove.st), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(drv->prepare(g_conn, copy.st.sql, copy.st.nparams, "dead_letter", &copy.p),
                        TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(
      drv->prepare(g_conn, remove.st.sql, remove.st.nparams, "dead_letter", &remove.p), TABQ_OK);

  /* Two rows; the second with an empty payload, which a NOT NULL column must accept. */
  RUN(&ins, {TABQ_P_GROUP, text("q")}, {TABQ_P_PRIORITY, tabq_int(5)},
      {TABQ_P_PARTITION_KEY, text("k1")}, {TABQ_P_RETRY_AT, tabq_null()},
      {TABQ_P_ATTEMPT, tabq_int(0)}, {TABQ_P_HEADERS, json("{\"a\":\"b\"}")},
      {TABQ_P_PAYLOAD, tabq_bytes("hello", 5)}, {TABQ_P_DATA + 0, text("first")});
  CU_ASSERT_EQUAL(drv->affected(ins.p), 1);
  drv->reset(ins.p);
  RUN(&ins, {TABQ_P_GROUP, text("q")}, {TABQ_P_PRIORITY, tabq_int(9)},
      {TABQ_P_PARTITION_KEY, tabq_null()}, {TABQ_P_RETRY_AT, tabq_null()},
      {TABQ_P_ATTEMPT, tabq_int(0)}, {TABQ_P_HEADERS, tabq_null()},
      {TABQ_P_PAYLOAD, tabq_bytes(NULL, 0)}, {TABQ_P_DATA + 0, text("second")});
  CU_ASSERT_EQUAL(drv->affected(ins.p), 1);
  drv->reset(ins.p);

  /* The first claim takes the smaller priority and counts its attempt. */
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0)}, {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 30 * SEC)},
        {TABQ_P_GROUP, text("q")}, {TABQ_P_LIMIT, tabq_int(1)});
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 0, 1);
  expect_int(&lc.claim, 1, 1);
  expect_buf(&lc.claim, 2, TABQ_T_TEXT, "q", 1);
  expect_buf(&lc.claim, 3, TABQ_T_TEXT, "k1", 2);
  expect_buf(&lc.claim, 4, TABQ_T_TEXT, "{\"a\":\"b\"}", 9);
  expect_buf(&lc.claim, 5, TABQ_T_BYTES, "hello", 5);
  expect_buf(&lc.claim, 6, TABQ_T_TEXT, "first", 5);
  expect_int(&lc.claim, 7, 5);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);

  /* The next claim passes over the leased row. */
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + SEC)}, {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 31 * SEC)},
        {TABQ_P_GROUP, text("q")}, {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 0, 2);
  expect_null(&lc.claim, 3);
  expect_null(&lc.claim, 4);
  expect_buf(&lc.claim, 5, TABQ_T_BYTES, "", 0);
  expect_int(&lc.claim, 7, 0);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);

  /* While both leases hold, a claim returns nothing. */
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + 2 * SEC)}, {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 32 * SEC)},
        {TABQ_P_GROUP, text("q")}, {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_EQUAL(end_claim(&lc), 0);

  /* Extend moves the token; the old one no longer matches. */
  RUN(&extend, {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 60 * SEC)}, {TABQ_P_ID, tabq_int(1)},
      {TABQ_P_TOKEN, tabq_time(t0 + 30 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(extend.p), 1);
  drv->reset(extend.p);
  RUN(&extend, {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 90 * SEC)}, {TABQ_P_ID, tabq_int(1)},
      {TABQ_P_TOKEN, tabq_time(t0 + 30 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(extend.p), 0);
  drv->reset(extend.p);

  /* An ack with a stale token changes nothing; with the held one it finishes the row. */
  RUN(&ack, {TABQ_P_NOW, tabq_time(t0 + 3 * SEC)}, {TABQ_P_ID, tabq_int(1)},
      {TABQ_P_TOKEN, tabq_time(t0 + 30 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(ack.p), 0);
  drv->reset(ack.p);
  RUN(&ack, {TABQ_P_NOW, tabq_time(t0 + 3 * SEC)}, {TABQ_P_ID, tabq_int(1)},
      {TABQ_P_TOKEN, tabq_time(t0 + 60 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(ack.p), 1);
  drv->reset(ack.p);

  /* Release hands the second row back at once; its next claim counts attempt 2. */
  RUN(&release, {TABQ_P_ID, tabq_int(2)}, {TABQ_P_TOKEN, tabq_time(t0 + 31 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(release.p), 1);
  drv->reset(release.p);
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + 4 * SEC)}, {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 34 * SEC)},
        {TABQ_P_GROUP, text("q")}, {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 0, 2);
  expect_int(&lc.claim, 1, 2);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);

  /* A delayed retry is due exactly at its time, not a microsecond before. */
  RUN(&later, {TABQ_P_RETRY_AT, tabq_time(t0 + 100 * SEC)}, {TABQ_P_ID, tabq_int(2)},
      {TABQ_P_TOKEN, tabq_time(t0 + 34 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(later.p), 1);
  drv->reset(later.p);
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + 100 * SEC - 1)},
        {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 130 * SEC)}, {TABQ_P_GROUP, text("q")},
        {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_EQUAL(end_claim(&lc), 0);
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + 100 * SEC)},
        {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 130 * SEC)}, {TABQ_P_GROUP, text("q")},
        {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 1, 3);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);

  /* Dead letter into a group, then into a table in one transaction. */
  RUN(&dead, {TABQ_P_DEST, text("dead")}, {TABQ_P_ID, tabq_int(2)},
      {TABQ_P_TOKEN, tabq_time(t0 + 130 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(dead.p), 1);
  drv->reset(dead.p);
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + 101 * SEC)},
        {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 131 * SEC)}, {TABQ_P_GROUP, text("dead")},
        {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 1, 4);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);

  tabq_stmt begin;
  build(dia->begin, &b, &begin);
  CU_ASSERT_STRING_EQUAL(begin.sql, "BEGIN IMMEDIATE");
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_conn, begin.sql), TABQ_OK);
  CU_ASSERT_EQUAL(drv->begin(g_conn, begin.sql), TABQ_INVALID);
  RUN(&copy, {TABQ_P_ID, tabq_int(2)}, {TABQ_P_TOKEN, tabq_time(t0 + 131 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(copy.p), 1);
  drv->reset(copy.p);
  RUN(&remove, {TABQ_P_ID, tabq_int(2)}, {TABQ_P_TOKEN, tabq_time(t0 + 131 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(remove.p), 1);
  drv->reset(remove.p);
  CU_ASSERT_EQUAL(drv->commit(g_conn), TABQ_OK);
  tabq_sql_free(&begin);
  CU_ASSERT_EQUAL(query_int(g_conn, "SELECT count(*) FROM jobs_dead WHERE id = 2 AND attempt = 4 "
                                    "AND size = 0 AND payload = x''"),
                  1);
  CU_ASSERT_EQUAL(query_int(g_conn, "SELECT count(*) FROM jobs WHERE id = 2"), 0);

  /* The acked row stays finished, long after its lease. */
  CLAIM(&lc, {TABQ_P_NOW, tabq_time(t0 + 1000 * SEC)},
        {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 1030 * SEC)}, {TABQ_P_GROUP, text("q")},
        {TABQ_P_LIMIT, tabq_int(10)});
  CU_ASSERT_EQUAL(end_claim(&lc), 0);
  CU_ASSERT_EQUAL(query_int(g_conn, "SELECT count(*) FROM jobs WHERE id = 1 AND processed_at = "
                                    "'2023-11-14 22:13:23.123456' AND locked_until IS NULL"),
                  1);

  claiming_free(&lc);
  prepared *all[] = {&ins, &extend, &release, &ack, &later, &dead, &copy, &remove};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    prepared_free(all[i]);
}

/* A FIFO claim takes only the group's head, and nothing while the head is in work. */
static void test_fifo_flow(void) {
  NEED_DB();
  tabq_table t = jobs;
  t.fifo = true;
  tabq_build b = lease_of(&t);
  prepared ins, ack;
  claiming lc;
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->insert, &b, "insert", &ins), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(claiming_open(g_conn, &b, &lc), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->ack, &b, "ack", &ack), TABQ_OK);
  int64_t ids[2];
  for (int i = 0; i < 2; i++) {
    RUN(&ins, {TABQ_P_GROUP, text("f")}, {TABQ_P_PRIORITY, tabq_int(0)},
        {TABQ_P_PARTITION_KEY, tabq_null()}, {TABQ_P_RETRY_AT, tabq_null()},
        {TABQ_P_ATTEMPT, tabq_int(0)}, {TABQ_P_HEADERS, tabq_null()},
        {TABQ_P_PAYLOAD, tabq_bytes("x", 1)}, {TABQ_P_DATA + 0, text("fifo")});
    drv->reset(ins.p);
    ids[i] = query_int(g_conn, "SELECT max(id) FROM jobs");
  }
  const arg at_t0[] = {{TABQ_P_NOW, tabq_time(t0)},
                       {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 30 * SEC)},
                       {TABQ_P_GROUP, text("f")}};
  CU_ASSERT_EQUAL_FATAL(claim_run(g_conn, &lc, at_t0, 3), TABQ_OK);
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 0, ids[0]);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);
  CU_ASSERT_EQUAL_FATAL(claim_run(g_conn, &lc, at_t0, 3), TABQ_OK);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);
  RUN(&ack, {TABQ_P_NOW, tabq_time(t0)}, {TABQ_P_ID, tabq_int(ids[0])},
      {TABQ_P_TOKEN, tabq_time(t0 + 30 * SEC)});
  CU_ASSERT_EQUAL(drv->affected(ack.p), 1);
  drv->reset(ack.p);
  CU_ASSERT_EQUAL_FATAL(claim_run(g_conn, &lc, at_t0, 3), TABQ_OK);
  CU_ASSERT_FATAL(claimed(&lc));
  expect_int(&lc.claim, 0, ids[1]);
  CU_ASSERT_EQUAL(end_claim(&lc), 0);
  prepared_free(&ins);
  claiming_free(&lc);
  prepared_free(&ack);
}

/* The same file under another spelling shares the writer lock: a second connection's write
 * waits for the first one's transaction, up to its busy timeout; its reads do not wait. */
static void test_writer_lock(void) {
  NEED_DB();
  char cwd[PATH_MAX], rel[PATH_MAX + 64];
  CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
  size_t n = 0;
  for (const char *s = cwd; *s; s++)
    if (*s == '/' && s[1] && s[1] != '/')
      n += strlen("../");
  CU_ASSERT_FATAL(n + strlen(g_path) < sizeof rel - 64);
  rel[0] = '\0';
  for (size_t i = 0; i < n; i += 3)
    strcat(rel, "../");
  char url[sizeof rel + sizeof g_path + 64];
  snprintf(url, sizeof url, "sqlite://%s%s?busy_timeout=50&synchronous=off", rel, g_path + 1);
  tabq_conn *other = NULL;
  CU_ASSERT_EQUAL_FATAL(drv->connect(url, &other), TABQ_OK);
  CU_ASSERT_EQUAL(query_int(other, "PRAGMA synchronous"), 0);

  tabq_build b = lease_of(&thumbs);
  prepared ins;
  CU_ASSERT_EQUAL_FATAL(prepare_built(other, dia->insert, &b, "insert", &ins), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_conn, "BEGIN IMMEDIATE"), TABQ_OK);
  const arg payload[] = {{TABQ_P_PAYLOAD, tabq_bytes("p", 1)}};
  CU_ASSERT_EQUAL(run(&ins, payload, 1), TABQ_BACKEND);
  MSG_HAS("stayed locked by another connection of this process for the busy timeout (50 ms)");
  CU_ASSERT_EQUAL(query_int(other, "SELECT count(*) FROM thumbs"), 0);
  CU_ASSERT_EQUAL(drv->rollback(g_conn), TABQ_OK);
  CU_ASSERT_EQUAL(drv->rollback(g_conn), TABQ_OK); /* nothing open: nothing to do */
  CU_ASSERT_EQUAL(run(&ins, payload, 1), TABQ_OK);
  CU_ASSERT_EQUAL(drv->affected(ins.p), 1);
  drv->reset(ins.p);
  /* exec takes the lock too, and gives it back. */
  CU_ASSERT_EQUAL(drv->exec(g_conn, "UPDATE thumbs SET attempt = 7"), TABQ_OK);
  CU_ASSERT_EQUAL(query_int(other, "SELECT attempt FROM thumbs"), 7);
  CU_ASSERT_EQUAL(drv->exec(g_conn, "DELETE FROM thumbs"), TABQ_OK);
  prepared_free(&ins);

  /* A statement left unreset is finalized, and its lock given back, by close. */
  CU_ASSERT_EQUAL_FATAL(prepare_built(other, dia->insert, &b, "insert", &ins), TABQ_OK);
  CU_ASSERT_EQUAL(run(&ins, payload, 1), TABQ_OK);
  drv->close(other);
  tabq_sql_free(&ins.st);
  CU_ASSERT_EQUAL(drv->exec(g_conn, "DELETE FROM thumbs"), TABQ_OK);
}

/* Concurrent claimers on their own connections: every row goes to exactly one of them, and no
 * claim fails for a locked database. */
#define WORKERS 4

typedef struct worker {
  pthread_t thread;
  int code;
  char msg[sizeof g_msg];
  int count;
  int64_t ids[MT_ROWS];
} worker;

static void *claim_worker(void *arg) {
  worker *w = arg;
  tabq_conn *c = NULL;
  claiming cl;
  tabq_build b = lease_of(&jobs);
  memset(&cl, 0, sizeof cl);
  w->code = drv->connect(g_url, &c);
  if (w->code == TABQ_OK)
    w->code = claiming_open(c, &b, &cl);
  const struct arg args[] = {{TABQ_P_NOW, tabq_time(t0 + 5000 * SEC)},
                             {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 5030 * SEC)},
                             {TABQ_P_GROUP, text("mt")},
                             {TABQ_P_LIMIT, tabq_int(3)}};
  for (bool more = true; w->code == TABQ_OK && more;) {
    int left = 0;
    w->code = claim_run(c, &cl, args, 4);
    if (w->code == TABQ_OK)
      w->code = claim_end(c, &cl, &left);
    if (w->code == TABQ_OK && left < 0)
      w->code = test_fail(TABQ_BACKEND, NULL, 0, "a stamp did not change its one row");
    more = cl.n > 0;
    for (int i = 0; w->code == TABQ_OK && i < cl.n && w->count < MT_ROWS; i++)
      w->ids[w->count++] = cl.ids[i];
  }
  if (w->code != TABQ_OK)
    snprintf(w->msg, sizeof w->msg, "%s", g_msg);
  claiming_free(&cl);
  drv->close(c);
  return NULL;
}

static void test_concurrent_claims(void) {
  NEED_DB();
  tabq_build b = lease_of(&jobs);
  prepared ins;
  CU_ASSERT_EQUAL_FATAL(prepare_built(g_conn, dia->insert, &b, "insert", &ins), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_conn, "BEGIN"), TABQ_OK);
  for (int i = 0; i < MT_ROWS; i++) {
    RUN(&ins, {TABQ_P_GROUP, text("mt")}, {TABQ_P_PRIORITY, tabq_int(i % 3)},
        {TABQ_P_PARTITION_KEY, tabq_null()}, {TABQ_P_RETRY_AT, tabq_null()},
        {TABQ_P_ATTEMPT, tabq_int(0)}, {TABQ_P_HEADERS, tabq_null()},
        {TABQ_P_PAYLOAD, tabq_bytes("m", 1)}, {TABQ_P_DATA + 0, tabq_null()});
    drv->reset(ins.p);
  }
  CU_ASSERT_EQUAL_FATAL(drv->commit(g_conn), TABQ_OK);
  prepared_free(&ins);

  static worker workers[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&workers[i].thread, NULL, claim_worker, &workers[i]), 0);
  }
  int total = 0;
  for (int i = 0; i < WORKERS; i++) {
    pthread_join(workers[i].thread, NULL);
    CU_ASSERT_EQUAL(workers[i].code, TABQ_OK);
    if (workers[i].code != TABQ_OK)
      fprintf(stderr, "worker %d: %s\n", i, workers[i].msg);
    total += workers[i].count;
  }
  CU_ASSERT_EQUAL(total, MT_ROWS);
  for (int i = 0; i < WORKERS; i++)
    for (int j = 0; j < workers[i].count; j++)
      for (int k = i; k < WORKERS; k++)
        for (int m = (k == i ? j + 1 : 0); m < workers[k].count; m++)
          if (workers[i].ids[j] == workers[k].ids[m])
            CU_FAIL("a row was claimed twice");
  CU_ASSERT_EQUAL(query_int(g_conn, "SELECT count(*) FROM jobs WHERE queue = 'mt' AND attempt = 1 "
                                    "AND locked_until = '2023-11-14 23:37:10.123456'"),
                  MT_ROWS);
}

/* ---- Claims on the claim-order index -------------------------------------------------------- */

/* A queue table of 20,000 rows in 20 queues, indexed as docs/table-description.md says: the
 * claim order after the group, (queue, [priority, ]retry_after, id). */
static void claims_table_create(bool priority) {
  char sql[1024];
  snprintf(sql, sizeof sql,
           "DROP TABLE IF EXISTS claims; CREATE TABLE claims (id INTEGER PRIMARY KEY, queue TEXT "
           "NOT NULL, priority INTEGER NOT NULL DEFAULT 0, retry_after TEXT, attempt INTEGER NOT "
           "NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL);"
           "CREATE INDEX claims_order ON claims (queue, %sretry_after, id);"
           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
           "INSERT INTO claims (queue, payload) SELECT 'q' || (i %% 20), 'x' FROM n; ANALYZE",
           priority ? "priority, " : "");
  CU_ASSERT_EQUAL_FATAL(drv->exec(g_conn, sql), TABQ_OK);
}

static tabq_table claims_table(bool priority, bool fifo) {
  tabq_table t = {.size = sizeof(tabq_table),
                  .name = "claims",
                  .id = {"id", .generated = true},
                  .group = {"queue"},
                  .retry_after = {"retry_after"},
                  .attempt = {"attempt", .generated = true},
                  .locked_until = {"locked_until"},
                  .payload = {"payload"},
                  .fifo = fifo};
  if (priority)
    t.priority.name = "priority";
  return t;
}

/* EXPLAIN QUERY PLAN of a built statement, its placeholders bound by parameter id; the plan's
 * lines into `plan`. */
static void explain_claim(const tabq_stmt *st, char *plan, size_t cap) {
  char sql[4096];
  snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", st->sql);
  prepared pr = {.st = *st};
  CU_ASSERT_EQUAL_FATAL(drv->prepare(g_conn, sql, st->nparams, "explain", &pr.p), TABQ_OK);
  static const int64_t ids[] = {7, 3, 19999};
  tabq_value list = {.type = TABQ_T_INT_LIST, .u.list = {ids, 3}};
  RUN(&pr, {TABQ_P_GROUP, text("q1")}, {TABQ_P_LIMIT, tabq_int(10)}, {TABQ_P_NOW, tabq_time(t0)},
      {TABQ_P_LEASE_UNTIL, tabq_time(t0 + 30 * SEC)}, {TABQ_P_IDS, list});
  plan[0] = '\0';
  while (next_row(&pr)) {
    tabq_value v;
    CU_ASSERT_EQUAL_FATAL(drv->cell(pr.p, 3, &v), TABQ_OK);
    size_t len = strlen(plan);
    snprintf(plan + len, cap - len, "%.*s\n", (int)v.u.buf.len, (const char *)v.u.buf.ptr);
  }
  drv->finalize(pr.p);
}

/* The lease claim and its one-row claim, with and without priority and FIFO groups, search the
 * queue table through the claim-order index in claim order: a SCAN of it (of the table or of a
 * whole index), or a sort of the rows found, fails. */
static void test_claims_use_the_index(void) {
  NEED_DB();
  for (int priority = 0; priority < 2; priority++) {
    claims_table_create(priority);
    for (int fifo = 0; fifo < 2; fifo++) {
      tabq_table t = claims_table(priority, fifo);
      tabq_build b = lease_of(&t);
      struct {
        const char *name;
        tabq_build_fn fn;
      } claims[] = {{"claim", lease->claim}, {"claim_one", lease->claim_one}};
      for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        tabq_stmt st;
        tabq_sql_init(&st, &test_host);
        CU_ASSERT_EQUAL_FATAL(claims[i].fn(&b, &st), TABQ_OK);
        if (st.sql) { /* claim_one declines FIFO tables: claim serves them */
          char plan[4096];
          explain_claim(&st, plan, sizeof plan);
          bool scan = strstr(plan, "SCAN claims") != NULL;
          bool sort = strstr(plan, "TEMP B-TREE") != NULL;
          bool walks = strstr(plan, "INDEX claims_order (queue=?)") != NULL; /* a SEARCH */
          if (scan || sort || !walks)
            fprintf(stderr, "\n%s (%s priority, %s FIFO):\n%s\n%s", claims[i].name,
                    priority ? "with" : "without", fifo ? "with" : "without", st.sql, plan);
          CU_ASSERT_FALSE(scan);
          CU_ASSERT_FALSE(sort);
          CU_ASSERT_TRUE(walks);
        }
        tabq_sql_free(&st);
      }
    }
  }
  CU_ASSERT_EQUAL(drv->exec(g_conn, "DROP TABLE claims"), TABQ_OK);
}

/* The stamp of many rows finds each listed row by its primary key (a SEARCH on the rowid); a
 * SCAN of the queue table fails. */
static void test_stamp_ids_by_key(void) {
  NEED_DB();
  claims_table_create(false);
  tabq_table t = claims_table(false, false);
  tabq_build b = lease_of(&t);
  tabq_stmt st;
  tabq_sql_init(&st, &test_host);
  CU_ASSERT_EQUAL_FATAL(lease->stamp_ids(&b, &st), TABQ_OK);
  char plan[4096];
  explain_claim(&st, plan, sizeof plan);
  bool scan = strstr(plan, "SCAN claims") != NULL;
  bool by_key = strstr(plan, "SEARCH claims USING INTEGER PRIMARY KEY (rowid=?)") != NULL;
  if (scan || !by_key)
    fprintf(stderr, "\nstamp_ids:\n%s\n%s", st.sql, plan);
  CU_ASSERT_FALSE(scan);
  CU_ASSERT_TRUE(by_key);
  tabq_sql_free(&st);
  CU_ASSERT_EQUAL(drv->exec(g_conn, "DROP TABLE claims"), TABQ_OK);
}

/* ---- Registration ------------------------------------------------------------------------ */

static CU_TestInfo live_tests[] = {
    {"open a temporary database file", test_open},
    {"connection", test_connection},
    {"every statement prepares", test_prepare_all},
    {"schema errors", test_prepare_schema_errors},
    {"lease flow", test_lease_flow},
    {"fifo flow", test_fifo_flow},
    {"writer lock", test_writer_lock},
    {"concurrent claims", test_concurrent_claims},
    {"claims search the claim-order index", test_claims_use_the_index},
    {"the stamp of many rows finds each row by its key", test_stamp_ids_by_key},
    CU_TEST_INFO_NULL,
};

int register_tests(void) {
  tabq_sqlite_set_host(&test_host);
  ADD_SUITE("sqlite driver on a temporary file", NULL, live_clean, live_tests);
  return 0;
}
