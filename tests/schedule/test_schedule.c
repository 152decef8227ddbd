/* tabq_schedule on a real SQLite file (tabq_test_open's): every refusal, named, with nothing
 * scheduled; rows written ahead of their slot and due at it; the key in UTC whatever the zone;
 * the template copied; two brokers on one file writing one row per slot; shutdown stopping the
 * thread. Rows are read with SQLite's own library, never through tabq. The processes side by
 * side on the three databases are test_schedule_live.py's. */
#define _GNU_SOURCE /* strptime, timegm */
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>
#include <tabq/schedule.h>
#include <tabq/testing.h>
#include <time.h>
#include <unistd.h>

#include "cunit_main.h"

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {"id", .generated = true},
    .retry_after = {"retry_after"},
    .attempt = {"attempt", .generated = true},
    .processed_at = {"processed_at"},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .unique_key = {"slot_key"},
};
static const tabq_table grouped = {
    .size = sizeof(tabq_table),
    .name = "grouped",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .unique_key = {"slot_key"},
};
static const tabq_table keyless = {
    .size = sizeof(tabq_table),
    .name = "keyless",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};
static const tabq_table own_ids = {
    .size = sizeof(tabq_table),
    .name = "own_ids",
    .id = {"id"},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .unique_key = {"slot_key"},
};
/* Described, never created. */
static const tabq_table ghost = {
    .size = sizeof(tabq_table),
    .name = "ghost",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
    .unique_key = {"slot_key"},
};

static tabq_broker *open_broker(void) {
  const tabq_table *tables[] = {&jobs, &grouped, &keyless, &own_ids};
  tabq_broker *b = NULL;
  tabq_error err;
  int rc = tabq_test_open(tables, 4, NULL, &b, &err);
  if (rc)
    fprintf(stderr, "tabq_test_open: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return b;
}

static sqlite3 *db_of(tabq_broker *b) {
  char path[512];
  snprintf(path, sizeof path, "%s/queue.db", tabq_test_folder(b));
  sqlite3 *db = NULL;
  CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  return db;
}

static long long query_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  long long v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static void query_text(sqlite3 *db, const char *sql, char *out, size_t cap) {
  sqlite3_stmt *st = NULL;
  out[0] = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_text(st, 0))
    snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Waits up to `ms` for the query to give at least `want`; returns what it gave last. */
static long long wait_for(sqlite3 *db, const char *sql, long long want, int ms) {
  long long v = query_int(db, sql);
  for (int waited = 0; v < want && waited < ms; waited += 20) {
    usleep(20000);
    v = query_int(db, sql);
  }
  return v;
}

static tabq_schedule_options options(const char *name, const char *spec) {
  tabq_schedule_options o = TABQ_SCHEDULE_OPTIONS_INIT;
  o.name = name;
  o.spec = spec;
  return o;
}

static void refused(tabq_broker *b, const tabq_table *t, const tabq_schedule_options *o, int code,
                    const char *text, unsigned position) {
  tabq_error err;
  int rc = tabq_schedule(b, t, o, &err);
  CU_ASSERT_EQUAL(rc, code);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, text));
  CU_ASSERT_STRING_EQUAL(err.table, t->name);
  CU_ASSERT_EQUAL(err.position, position);
  if (rc != code || !strstr(err.message, text))
    fprintf(stderr, "\n  want %s '%s', got %s: %s\n", tabq_code_name(code), text,
            tabq_code_name(rc), err.message);
}

static void every_misuse_is_refused_by_name(void) {
  tabq_broker *b = open_broker();
  tabq_schedule_options o = options("tick", "every 1s");
  refused(b, &keyless, &o, TABQ_DECLARATION, "table keyless has no unique_key column", 0);
  refused(b, &own_ids, &o, TABQ_DECLARATION, "table own_ids's id is not generated", 0);
  o.name = NULL;
  refused(b, &jobs, &o, TABQ_INVALID, "a schedule needs a name", 0);
  o.name = "";
  refused(b, &jobs, &o, TABQ_INVALID, "a schedule needs a name", 0);
  o.name = "a:b";
  refused(b, &jobs, &o, TABQ_INVALID, "schedule name 'a:b' holds a ':'", 0);
  o.name = "tick";
  o.spec = "0 25 * * *";
  refused(b, &jobs, &o, TABQ_INVALID, "field 2 (hour), position 3: 25 is out of 0-23", 3);
  o.spec = "*/5 * * * mon-fry";
  refused(b, &jobs, &o, TABQ_INVALID, "field 5 (day of week), position 15: 'fry'", 15);
  o.spec = "every 0s";
  refused(b, &jobs, &o, TABQ_INVALID, "an interval of 0 never advances", 0);
  o.spec = NULL;
  refused(b, &jobs, &o, TABQ_INVALID, "no spec", 0);
  o.spec = "0 9 * * *";
  o.zone = "Europe/Atlantis";
  refused(b, &jobs, &o, TABQ_INVALID, "zone 'Europe/Atlantis' is not a zone", 0);
  o.spec = "every 5m";
  o.zone = "Europe/Berlin";
  refused(b, &jobs, &o, TABQ_INVALID, "applies to cron expressions only", 0);
  o.zone = NULL;
  o.missed = (tabq_missed_policy)7;
  refused(b, &jobs, &o, TABQ_INVALID, "missed policy 7 is neither skip nor catch-up", 0);
  o.missed = TABQ_MISSED_CATCH_UP;
  refused(b, &grouped, &o, TABQ_DECLARATION,
          "catch-up needs table grouped to keep finished rows (processed_at)", 0);
  o.missed = TABQ_MISSED_SKIP;
  o.lead_ms = 3600001;
  refused(b, &jobs, &o, TABQ_INVALID, "lead_ms 3600001 is more than an hour", 0);
  o.lead_ms = 0;
  tabq_message m = TABQ_MESSAGE_INIT;
  m.unique_key = "mine";
  o.message = &m;
  refused(b, &jobs, &o, TABQ_INVALID, "the template sets unique_key 'mine'", 0);
  m.unique_key = NULL;
  m.delay_ms = 10;
  refused(b, &jobs, &o, TABQ_INVALID, "the template sets delay_ms", 0);
  m.delay_ms = 0;
  refused(b, &grouped, &o, TABQ_INVALID, "table grouped has a group column; the message needs", 0);
  o.message = NULL;
  refused(b, &ghost, &o, TABQ_SCHEMA, "ghost", 0);

  /* None of those scheduled anything: the name is free, and no row was written. */
  tabq_error err;
  CU_ASSERT_EQUAL(tabq_schedule(b, &jobs, &o, &err), TABQ_OK);
  refused(b, &jobs, &o, TABQ_INVALID, "schedule tick is already registered on this broker", 0);
  tabq_shutdown(b);
  o.name = "late";
  refused(b, &jobs, &o, TABQ_CLOSED, "the broker is shut down", 0);
  sqlite3 *db = db_of(b);
  CU_ASSERT_EQUAL(query_int(db, "SELECT COUNT(*) FROM keyless"), 0);
  CU_ASSERT_EQUAL(query_int(db, "SELECT COUNT(*) FROM grouped"), 0);
  sqlite3_close(db);
  tabq_test_close(b);
}

static int beats;
static tabq_outcome count_beat(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  beats++;
  return tabq_ack();
}

/* A slot's row is written ahead and is not due before its slot; the key names the slot; the
 * template was copied (its buffer overwritten after the call). */
static void rows_are_written_ahead_and_due_at_their_slot(void) {
  tabq_broker *b = open_broker();
  sqlite3 *db = db_of(b);
  char payload[] = "beat";
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = payload;
  m.payload_len = 4;
  tabq_schedule_options o = options("beat", "every 3s");
  o.lead_ms = 2000;
  o.message = &m;
  tabq_error err;
  CU_ASSERT_EQUAL_FATAL(tabq_schedule(b, &jobs, &o, &err), TABQ_OK);
  memset(payload, 'x', 4);
  CU_ASSERT(wait_for(db, "SELECT COUNT(*) FROM jobs", 1, 5000) >= 1);
  int64_t seen = now_us();
  char key[128], body[16];
  query_text(db, "SELECT slot_key FROM jobs ORDER BY id LIMIT 1", key, sizeof key);
  query_text(db, "SELECT CAST(payload AS TEXT) FROM jobs ORDER BY id LIMIT 1", body, sizeof body);
  CU_ASSERT_STRING_EQUAL(body, "beat");
  /* The key is the slot in UTC to the second (a 3 s interval is not whole minutes). */
  struct tm tm = {0};
  CU_ASSERT_PTR_NOT_NULL_FATAL(strptime(key, "beat:%Y-%m-%dT%H:%M:%SZ", &tm));
  int64_t slot = (int64_t)timegm(&tm) * 1000000;
  CU_ASSERT_EQUAL(slot % 3000000, 0);
  CU_ASSERT(slot > seen - 1000000); /* written before its slot, never long after */
  char again[128];
  CU_ASSERT_EQUAL(tabq_schedule_key("beat", "every 3s", slot, again, sizeof again),
                  (int)strlen(key));
  CU_ASSERT_STRING_EQUAL(again, key);

  tabq_subscription_options so = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  so.queue = "beats";
  so.handler = count_beat;
  /* Not due before its slot: a drain that ends before the slot claimed nothing. */
  beats = 0;
  int64_t before = now_us();
  CU_ASSERT_EQUAL(tabq_test_drain(b, &jobs, &so, NULL, 0, &err), TABQ_OK);
  if (before < slot && now_us() < slot)
    CU_ASSERT_EQUAL(beats, 0);
  while (now_us() < slot + 200000)
    usleep(20000);
  beats = 0;
  CU_ASSERT_EQUAL(tabq_test_drain(b, &jobs, &so, NULL, 0, &err), TABQ_OK);
  CU_ASSERT(beats >= 1);
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT COUNT(*) FROM jobs WHERE slot_key = '%s' AND processed_at "
           "IS NOT NULL",
           key);
  CU_ASSERT_EQUAL(query_int(db, sql), 1);

  /* Shutdown stops the scheduler: no row comes after it. */
  tabq_shutdown(b);
  long long rows = query_int(db, "SELECT COUNT(*) FROM jobs");
  sleep(4);
  CU_ASSERT_EQUAL(query_int(db, "SELECT COUNT(*) FROM jobs"), rows);
  CU_ASSERT_EQUAL(query_int(db, "SELECT COUNT(*) FROM jobs"),
                  query_int(db, "SELECT COUNT(DISTINCT slot_key) FROM jobs"));
  sqlite3_close(db);
  tabq_test_close(b);
}

/* A cron expression in a zone half an hour off UTC: the key still names the UTC minute. */
static void the_key_is_the_slot_in_utc_whatever_the_zone(void) {
  tabq_broker *b = open_broker();
  sqlite3 *db = db_of(b);
  tabq_schedule_options o = options("kolkata", "* * * * *");
  o.zone = "Asia/Kolkata";
  o.lead_ms = 61000; /* the next minute's row at once */
  tabq_error err;
  int64_t t0 = now_us();
  CU_ASSERT_EQUAL_FATAL(tabq_schedule(b, &jobs, &o, &err), TABQ_OK);
  int64_t t1 = now_us();
  CU_ASSERT(wait_for(db, "SELECT COUNT(*) FROM jobs", 1, 5000) >= 1);
  char key[128], want0[128], want1[128];
  query_text(db, "SELECT slot_key FROM jobs ORDER BY id LIMIT 1", key, sizeof key);
  /* The first slot after the call, in UTC minutes: the call took t0 to t1. */
  int64_t s0 = (t0 / 60000000 + 1) * 60000000, s1 = (t1 / 60000000 + 1) * 60000000;
  tabq_schedule_key("kolkata", "* * * * *", s0, want0, sizeof want0);
  tabq_schedule_key("kolkata", "* * * * *", s1, want1, sizeof want1);
  CU_ASSERT(!strcmp(key, want0) || !strcmp(key, want1));
  time_t secs = (time_t)(s0 / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char utc[64];
  strftime(utc, sizeof utc, "kolkata:%Y-%m-%dT%H:%MZ", &tm);
  CU_ASSERT_STRING_EQUAL(want0, utc);
  tabq_shutdown(b);
  sqlite3_close(db);
  tabq_test_close(b);
}

/* tabq_app_main schedules an app's schedules: a service process (forked) runs until TERM. */
static void tabq_app_main_runs_the_apps_schedules(void) {
  tabq_broker *b = open_broker();
  sqlite3 *db = db_of(b);
  char url[600];
  snprintf(url, sizeof url, "sqlite:%s/queue.db", tabq_test_folder(b));
  fflush(NULL);
  pid_t child = fork();
  CU_ASSERT_FATAL(child >= 0);
  if (child == 0) {
    tabq_app *app = NULL;
    tabq_error e;
    tabq_schedule_options o = options("app-tick", "every 1s");
    o.lead_ms = 300;
    if (tabq_app_new("scheduler", NULL, &app, &e) || tabq_app_add_table(app, &jobs, &e) ||
        tabq_app_add_schedule(app, "jobs", &o, &e))
      _exit(3);
    char *argv[] = {"scheduler", "--url", url, NULL};
    _exit(tabq_app_main(app, 3, argv));
  }
  long long rows =
      wait_for(db, "SELECT COUNT(*) FROM jobs WHERE slot_key LIKE 'app-tick:%'", 2, 10000);
  kill(child, SIGTERM);
  int status = -1;
  waitpid(child, &status, 0);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT(rows >= 2);
  CU_ASSERT_EQUAL(query_int(db, "SELECT COUNT(*) FROM jobs"),
                  query_int(db, "SELECT COUNT(DISTINCT slot_key) FROM jobs"));
  sqlite3_close(db);
  tabq_test_close(b);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"every misuse is refused by name", every_misuse_is_refused_by_name},
      {"rows are written ahead and due at their slot",
       rows_are_written_ahead_and_due_at_their_slot},
      {"the key is the slot in UTC whatever the zone",
       the_key_is_the_slot_in_utc_whatever_the_zone},
      {"tabq_app_main runs the app's schedules", tabq_app_main_runs_the_apps_schedules},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("tabq_schedule", NULL, NULL, tests);
  return 0;
}
