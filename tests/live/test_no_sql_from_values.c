/* No SQL text is ever built from a value (issue "proven under faults", bad input): values that
 * look like SQL go through every path that carries a service's values to the server — a publish
 * (group, payload, headers, partition key, unique key), a batch, a publish in a transaction of
 * the service's own, a claim by queue, a retry, a dead letter into a group, a pause and a resume
 * of a queue, a cancel — and the server's own statement log shows them only as bound parameters,
 * never inside a statement's text.
 *
 * PostgreSQL: tabq's sessions log every statement (log_statement=all, set through the URL's
 * options for them alone); a value may appear in a "DETAIL:  parameters:" line only. MariaDB:
 * the general log, written to mysql.general_log for the test; a value may appear in an Execute
 * entry only (the server logs an execution with its parameters in place), never in a Query or
 * Prepare entry. SQLite has no server and no statement log: its dialect binds the same way
 * (tabq's statements are built before any value exists), checked by the kit. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tabq/cancel.h>
#include <tabq/controls.h>
#include <unistd.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_error err;
static char mark[48]; /* the prefix of every value: "tabqmark-<pid>" */

/* A value that looks like SQL, and carries the mark. */
static const char *value(const char *what) {
  static char buf[32][160];
  static int next;
  char *v = buf[next++ % 32];
  snprintf(v, 160, "%s-%s'); DROP TABLE jobs; -- \" ` \\", mark, what);
  return v;
}

static void add_columns(void) {
  if (db.kind == TEST_POSTGRES) {
    testdb_exec(&db, "ALTER TABLE jobs ADD COLUMN partition_key TEXT, ADD COLUMN ukey TEXT, ADD "
                     "COLUMN cancelled_at TIMESTAMPTZ");
    testdb_exec(&db, "CREATE UNIQUE INDEX jobs_unique ON jobs (ukey)");
    testdb_exec(&db, "CREATE TABLE controls (queue_table TEXT NOT NULL, queue TEXT NOT NULL, "
                     "paused INTEGER NOT NULL DEFAULT 0, paused_at TIMESTAMPTZ, PRIMARY KEY "
                     "(queue_table, queue))");
  } else {
    testdb_exec(&db, "ALTER TABLE jobs ADD COLUMN partition_key VARCHAR(191) NULL, ADD COLUMN ukey "
                     "VARCHAR(191) NULL, ADD COLUMN cancelled_at DATETIME(6) NULL, ADD UNIQUE "
                     "INDEX jobs_unique (ukey)");
    testdb_exec(&db, "CREATE TABLE controls (queue_table VARCHAR(191) NOT NULL, queue "
                     "VARCHAR(191) NOT NULL, paused INT NOT NULL DEFAULT 0, paused_at "
                     "DATETIME(6) NULL, PRIMARY KEY (queue_table, queue)) ENGINE=InnoDB");
  }
}

static const tabq_table *table(void) {
  static tabq_table t;
  t = *jobs_table();
  t.partition_key.name = "partition_key";
  t.unique_key.name = "ukey";
  t.cancelled_at.name = "cancelled_at";
  return &t;
}

/* ---- The server's statement log --------------------------------------------------------- */

static char pg_log[1024];
static long pg_log_start;

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) ? -1 : (long)st.st_size;
}

/* The log is where ./dev's server writes it: server.log beside the data directory. */
static void log_begin(void) {
  if (db.kind == TEST_POSTGRES) {
    char dir[900];
    testdb_text(&db, "SHOW data_directory", dir, sizeof dir);
    char *slash = strrchr(dir, '/');
    CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
    *slash = '\0';
    snprintf(pg_log, sizeof pg_log, "%s/server.log", dir);
    pg_log_start = file_size(pg_log);
    if (pg_log_start < 0)
      fprintf(stderr, "no server log at %s (the test reads the log ./dev's server writes)\n",
              pg_log);
    CU_ASSERT_FATAL(pg_log_start >= 0);
  } else {
    testdb_exec(&db, "SET GLOBAL log_output = 'TABLE'");
    testdb_exec(&db, "TRUNCATE TABLE mysql.general_log");
    testdb_exec(&db, "SET GLOBAL general_log = 1");
  }
}

/* Lines of the PostgreSQL log since log_begin that hold `needle`: those that are not a
 * parameters detail are counted (and printed when `tell`); *seen counts them all. */
static int pg_offenders(const char *needle, bool tell, int *seen) {
  FILE *f = fopen(pg_log, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fseek(f, pg_log_start, SEEK_SET);
  char line[8192];
  int bad = 0;
  *seen = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strstr(line, needle))
      continue;
    (*seen)++;
    if (!strstr(line, "DETAIL:  parameters:")) {
      if (tell)
        fprintf(stderr, "a value in a statement's text: %s", line);
      bad++;
    }
  }
  fclose(f);
  return bad;
}

/* Entries of MariaDB's general log that hold `needle`, written by tabq's sessions (the
 * checking connection's own queries name it too, and are left out). */
static int my_offenders(const char *needle, bool tell, int *seen) {
  char sql[600];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM mysql.general_log WHERE thread_id <> CONNECTION_ID() AND "
           "CONVERT(argument USING utf8mb4) LIKE '%%%s%%'",
           needle);
  *seen = (int)testdb_int(&db, sql);
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM mysql.general_log WHERE thread_id <> CONNECTION_ID() AND "
           "command_type <> 'Execute' AND CONVERT(argument USING utf8mb4) LIKE '%%%s%%'",
           needle);
  int bad = (int)testdb_int(&db, sql);
  if (bad && tell) {
    char first[512];
    snprintf(sql, sizeof sql,
             "SELECT CONCAT(command_type, ': ', CONVERT(argument USING utf8mb4)) FROM "
             "mysql.general_log WHERE thread_id <> CONNECTION_ID() AND command_type <> 'Execute' "
             "AND CONVERT(argument USING utf8mb4) LIKE '%%%s%%' LIMIT 1",
             needle);
    testdb_text(&db, sql, first, sizeof first);
    fprintf(stderr, "a value in a statement's text: %s\n", first);
  }
  return bad;
}

static int log_offenders(const char *needle, bool tell, int *seen) {
  return db.kind == TEST_POSTGRES ? pg_offenders(needle, tell, seen)
                                  : my_offenders(needle, tell, seen);
}

/* ---- The values' paths ------------------------------------------------------------------- */

static int calls;

/* The first delivery is retried at once, the second dead lettered into the marked group. */
static tabq_outcome retry_then_dead(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST) == 1 ? tabq_retry_after(10)
                                                              : tabq_dead_letter();
}

static tabq_message message_to(const char *group, const char *payload) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = group;
  m.payload = payload;
  m.payload_len = strlen(payload);
  return m;
}

static void values_stay_parameters(void) {
  snprintf(mark, sizeof mark, "tabqmark-%ld", (long)getpid());
  testdb_create(&db);
  add_columns();
  /* tabq's sessions, and only they, log every statement. */
  testdb tabq_db = db;
  if (db.kind == TEST_POSTGRES)
    strncat(tabq_db.url, "%20-clog_statement%3Dall", sizeof tabq_db.url - strlen(tabq_db.url) - 1);
  log_begin();
  tabq_broker *b = connect_broker(&tabq_db, 20);

  const char *group = value("group");
  tabq_header h = {.name = value("header-name"), .value = value("header-value")};
  tabq_message m = message_to(group, value("payload"));
  m.headers = &h;
  m.nheaders = 1;
  m.partition_key = value("partition");
  m.unique_key = value("unique");
  CU_ASSERT_EQUAL_FATAL(tabq_publish(b, table(), &m, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_publish(b, table(), &m, &err), TABQ_DUPLICATE); /* the key held */

  tabq_message many[3] = {message_to(group, value("many-1")), message_to(group, value("many-2")),
                          message_to("other", value("many-3"))};
  const tabq_message *p[3] = {&many[0], &many[1], &many[2]};
  CU_ASSERT_EQUAL_FATAL(tabq_publish_many(b, table(), p, 3, &err), TABQ_OK);

  tabq_tx *tx;
  CU_ASSERT_EQUAL_FATAL(tabq_begin(b, &tx, &err), TABQ_OK);
  tabq_message in_tx = message_to(group, value("tx"));
  CU_ASSERT_EQUAL(tabq_publish_tx(tx, table(), &in_tx, &err), TABQ_OK);
  /* The control: a statement of the service's own with a value in its text, which the log
   * check must find, so that a check that finds nothing has looked. */
  char control[96], control_sql[128];
  snprintf(control, sizeof control, "tabqcontrol-%ld", (long)getpid());
  snprintf(control_sql, sizeof control_sql, "SELECT '%s'", control);
  CU_ASSERT_EQUAL(tabq_tx_exec(tx, control_sql, NULL, 0, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_commit(tx, &err), TABQ_OK);

  /* A cancel of the row in the other queue, by its id. */
  long long other = testdb_int(&db, "SELECT id FROM jobs WHERE queue = 'other'");
  CU_ASSERT_EQUAL(tabq_cancel(b, table(), tabq_int(other), &err), TABQ_OK);

  /* A pause and a resume of the marked queue. */
  tabq_controls c = TABQ_CONTROLS_INIT;
  c.name = "controls";
  c.table_column = "queue_table";
  c.queue_column = "queue";
  c.paused_column = "paused";
  c.paused_at_column = "paused_at";
  CU_ASSERT_EQUAL_FATAL(tabq_set_controls(b, &c, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_pause(b, table(), group, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_resume(b, table(), group, &err), TABQ_OK);

  /* Claims by the marked queue: one retry, then every row dead lettered into a marked group. */
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = group;
  o.handler = retry_then_dead;
  o.dead_letter_group = value("dead");
  o.max_attempts = 2;
  tabq_subscription *s;
  int rc = tabq_subscribe(b, table(), &o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  char sql[300];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE queue LIKE '%s-dead%%'", mark);
  CU_ASSERT(wait_count(&db, sql, 4, 20000));
  tabq_close(b);

  int control_seen = 0, control_found = log_offenders(control, false, &control_seen);
  CU_ASSERT(control_found >= 1);
  int seen = 0, bad = log_offenders(mark, true, &seen);
  if (db.kind == TEST_MYSQL)
    testdb_exec(&db, "SET GLOBAL general_log = 0");
  CU_ASSERT_EQUAL(bad, 0);
  /* The log was read at all: the values are there, as parameters. */
  if (seen < 5)
    fprintf(stderr, "only %d log entries hold a value: is the statement log on?\n", seen);
  CU_ASSERT(seen >= 5);
  printf("\n  %d log entries hold a value, %d of them in a statement's text; the control found "
         "%d time(s)\n",
         seen, bad, control_found);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"values that look like SQL reach the server as parameters only", values_stay_parameters},
      CU_TEST_INFO_NULL,
  };
  static char suite[64];
  snprintf(suite, sizeof suite, "no SQL from values on %s", test_db_name());
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
