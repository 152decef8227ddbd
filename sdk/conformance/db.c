/* The database of one test, read and written through the plugin's own driver (never through
 * tabq's engine): fresh tables under names of the test's own, and the checks. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

static struct {
  char jobs[48], dead[56], rows[56], controls[56], slots[56];
  tabq_conn *conn;
  unsigned made; /* DB_JOBS, DB_DEAD, DB_ROWS, DB_CONTROLS: the tables end_test drops */
} db;

const char *jobs_name(void) {
  return db.jobs;
}
const char *dead_name(void) {
  return db.dead;
}
const char *rows_name(void) {
  return db.rows;
}
const char *controls_name(void) {
  return db.controls;
}
const char *slots_name(void) {
  return db.slots;
}

/* The names a child process works on, given by its parent. */
void db_set_names(const char *jobs) {
  snprintf(db.jobs, sizeof db.jobs, "%s", jobs);
  snprintf(db.dead, sizeof db.dead, "%s_dead", jobs);
  snprintf(db.rows, sizeof db.rows, "%s_rows", jobs);
  snprintf(db.controls, sizeof db.controls, "%s_ctl", jobs);
  snprintf(db.slots, sizeof db.slots, "%s_slots", jobs);
}

static const char *driver_failure(int rc) {
  static char why[640];
  const char *detail = probe_last_failure();
  snprintf(why, sizeof why, "%s%s%s", tabq_code_name((tabq_code)rc), detail[0] ? ": " : "", detail);
  return why;
}

static void failed(const char *what, const char *sql, int rc) {
  static char msg[1024];
  snprintf(msg, sizeof msg, "%s failed (%s) in: %.300s", what, driver_failure(rc), sql);
  fprintf(stderr, "conformance: %s\n", msg);
  CU_assertImplementation(CU_FALSE, __LINE__, msg, __FILE__, "", CU_TRUE);
}

/* Replaces {jobs}, {dead} and {table} (with `table`) in `in`. */
static void expand(const char *in, const char *table, char *out, size_t cap) {
  size_t n = 0;
  while (*in && n + 1 < cap) {
    const char *with = NULL;
    size_t skip = 0;
    if (!strncmp(in, "{jobs}", 6))
      with = db.jobs, skip = 6;
    else if (!strncmp(in, "{dead}", 6))
      with = db.dead, skip = 6;
    else if (!strncmp(in, "{rows}", 6))
      with = db.rows, skip = 6;
    else if (!strncmp(in, "{controls}", 10))
      with = db.controls, skip = 10;
    else if (!strncmp(in, "{slots}", 7))
      with = db.slots, skip = 7;
    else if (table && !strncmp(in, "{table}", 7))
      with = table, skip = 7;
    if (with) {
      n += (size_t)snprintf(out + n, cap - n, "%s", with);
      if (n >= cap)
        n = cap - 1;
      in += skip;
    } else
      out[n++] = *in++;
  }
  out[n] = '\0';
}

static void exec_expanded(const char *sql, const char *table) {
  char text[16384];
  expand(sql, table, text, sizeof text);
  probe_clear_failure();
  int rc = kit.plugin.driver->exec(db.conn, text);
  if (rc)
    failed("exec", text, rc);
}

static void run_section(const ddl_section *s, const char *table) {
  for (unsigned i = 0; i < s->n; i++)
    exec_expanded(s->stmts[i], table);
}

/* New names for the test's tables and the checking connection; no table yet. */
void fresh_names(void) {
  static unsigned serial;
  snprintf(db.jobs, sizeof db.jobs, "cf%d_%u", (int)getpid(), ++serial);
  snprintf(db.dead, sizeof db.dead, "%s_dead", db.jobs);
  snprintf(db.rows, sizeof db.rows, "%s_rows", db.jobs);
  snprintf(db.controls, sizeof db.controls, "%s_ctl", db.jobs);
  snprintf(db.slots, sizeof db.slots, "%s_slots", db.jobs);
  probe_clear_failure();
  int rc = kit.plugin.driver->connect(kit.driver_url, &db.conn);
  if (rc) {
    db.conn = NULL;
    failed("connect", kit.url, rc);
  }
}

void db_made(unsigned tables) {
  db.made |= tables;
}

void fresh_db(void) {
  fresh_names();
  run_section(&kit.ddl.jobs, db.jobs);
  db.made |= DB_JOBS;
  run_section(&kit.ddl.dead, db.dead);
  db.made |= DB_DEAD;
}

void support_end_test(void); /* support.c: brokers and children */

void end_test(void) {
  support_end_test();
  if (db.conn) {
    /* Drop failures are reported, but do not fail the test that ran. */
    const char *names[] = {db.jobs, db.dead, db.rows, db.controls, db.slots};
    for (int t = 0; t < 5; t++)
      for (unsigned i = 0; (db.made & (1u << t)) && i < kit.ddl.drop.n; i++) {
        char text[1024];
        expand(kit.ddl.drop.stmts[i], names[t], text, sizeof text);
        if (kit.plugin.driver->exec(db.conn, text))
          fprintf(stderr, "conformance: cannot drop %s: %s\n", names[t], driver_failure(1));
      }
  }
  if (db.conn)
    kit.plugin.driver->close(db.conn);
  db.conn = NULL;
  db.made = 0;
}

void db_make_rows(void) {
  run_section(&kit.ddl.rows, db.rows);
  db.made |= DB_ROWS;
}

const char *needs_rows(void) {
  return kit.ddl.rows.n ? NULL : "row mode: the DDL has no [rows] section";
}

void db_make_controls(void) {
  run_section(&kit.ddl.controls, db.controls);
  db.made |= DB_CONTROLS;
}

const char *needs_controls(void) {
  return kit.ddl.controls.n ? NULL : "pause: the DDL has no [controls] section";
}

void db_make_slots(void) {
  run_section(&kit.ddl.slots, db.slots);
  db.made |= DB_SLOTS;
}

const char *needs_slots(void) {
  return kit.ddl.slots.n ? NULL : "concurrency limits: the DDL has no [slots] section";
}

void db_exec(const char *sql) {
  exec_expanded(sql, NULL);
}

/* Runs a query and leaves it on its first row (*row false with none). */
static tabq_prepared *query(const char *sql, bool *row) {
  char text[4096];
  expand(sql, NULL, text, sizeof text);
  tabq_prepared *p = NULL;
  probe_clear_failure();
  const tabq_driver_v1 *d = kit.plugin.driver;
  int rc = d->prepare(db.conn, text, 0, "check", &p);
  if (rc)
    failed("prepare", text, rc);
  if ((rc = d->execute(p, NULL, 0)) || (rc = d->next(p, row))) {
    d->finalize(p);
    failed("query", text, rc);
  }
  return p;
}

static long long cell_int(const tabq_value *v) {
  switch (v->type) {
  case TABQ_T_INT:
    return v->u.i;
  case TABQ_T_TEXT: {
    char num[32];
    snprintf(num, sizeof num, "%.*s", (int)v->u.buf.len, (const char *)v->u.buf.ptr);
    return atoll(num);
  }
  default:
    return -1;
  }
}

long long db_int(const char *sql) {
  bool row = false;
  tabq_prepared *p = query(sql, &row);
  long long v = -1;
  tabq_value cell;
  if (row && kit.plugin.driver->cell(p, 0, &cell) == TABQ_OK)
    v = cell_int(&cell);
  kit.plugin.driver->finalize(p);
  return v;
}

static void cell_text(const tabq_value *v, char *buf, size_t cap) {
  switch (v->type) {
  case TABQ_T_INT:
    snprintf(buf, cap, "%lld", (long long)v->u.i);
    break;
  case TABQ_T_TIME:
    snprintf(buf, cap, "%lld us", (long long)v->u.time_us);
    break;
  case TABQ_T_REAL:
    snprintf(buf, cap, "%.17g", v->u.r);
    break;
  case TABQ_T_TEXT:
  case TABQ_T_BYTES:
  case TABQ_T_JSON:
    snprintf(buf, cap, "%.*s", (int)v->u.buf.len, (const char *)v->u.buf.ptr);
    break;
  default:
    snprintf(buf, cap, "%s", "");
  }
}

void db_text(const char *sql, char *buf, size_t cap) {
  bool row = false;
  tabq_prepared *p = query(sql, &row);
  tabq_value cell;
  buf[0] = '\0';
  if (row && kit.plugin.driver->cell(p, 0, &cell) == TABQ_OK)
    cell_text(&cell, buf, cap);
  kit.plugin.driver->finalize(p);
}

void db_fill(const char *queue, int n) {
  /* Plain multi-row VALUES, which every SQL database takes, in chunks. */
  static char sql[65536];
  for (int from = 1; from <= n; from += 500) {
    size_t len = (size_t)snprintf(sql, sizeof sql, "INSERT INTO {jobs} (queue, payload) VALUES ");
    for (int i = from; i <= n && i < from + 500; i++)
      len += (size_t)snprintf(sql + len, sizeof sql - len, "%s('%s', 'job-%d')",
                              i == from ? "" : ", ", queue, i);
    db_exec(sql);
  }
}

/* A time cell: TABQ_T_TIME, or text "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC (SQLite). */
static bool cell_time_us(const tabq_value *v, int64_t *us) {
  if (v->type == TABQ_T_TIME) {
    *us = v->u.time_us;
    return true;
  }
  if (v->type != TABQ_T_TEXT)
    return false;
  char text[40];
  snprintf(text, sizeof text, "%.*s", (int)v->u.buf.len, (const char *)v->u.buf.ptr);
  struct tm tm = {0};
  int used = 0;
  if (sscanf(text, "%d-%d-%d %d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
             &tm.tm_min, &tm.tm_sec, &used) != 6)
    return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const char *rest = text + used;
  int64_t frac = 0;
  if (*rest == '.') {
    int digits = 0;
    for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++)
      if (digits < 6)
        frac = frac * 10 + (*rest - '0');
    for (; digits < 6; digits++)
      frac *= 10;
  }
  *us = (int64_t)timegm(&tm) * 1000000 + frac;
  return true;
}

static int64_t client_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long db_ms_from_now(const char *sql) {
  bool row = false;
  tabq_prepared *p = query(sql, &row);
  long long ms = LLONG_MIN;
  tabq_value cell;
  int64_t at;
  if (row && kit.plugin.driver->cell(p, 0, &cell) == TABQ_OK && cell_time_us(&cell, &at))
    ms = (long long)((at - client_now_us()) / 1000);
  kit.plugin.driver->finalize(p);
  return ms;
}

long long db_due_after(int ms) {
  bool row = false;
  tabq_prepared *p = query("SELECT retry_after FROM {jobs}", &row);
  int64_t after = client_now_us() + (int64_t)ms * 1000;
  long long n = 0;
  for (; row; kit.plugin.driver->next(p, &row)) {
    tabq_value cell;
    int64_t at;
    if (kit.plugin.driver->cell(p, 0, &cell) == TABQ_OK && cell_time_us(&cell, &at) && at > after)
      n++;
  }
  kit.plugin.driver->finalize(p);
  return n;
}

void db_lease_text(char *buf, size_t cap) {
  db_text("SELECT locked_until FROM {jobs}", buf, cap);
}

bool wait_count(const char *sql, long long want, int timeout_ms) {
  for (int waited = 0;; waited += 20) {
    if (db_int(sql) == want)
      return true;
    if (waited >= timeout_ms)
      return false;
    sleep_ms(20);
  }
}

/* Every cell of every row as text, separated by " | ", rows by "\n": a plan, which spreads its
 * lines over rows (PostgreSQL), over cells (MySQL's key column) or both (SQLite's detail).
 * `sql` is run as given, with `n` parameters. */
void db_rows_text(const char *sql, const tabq_value *params, unsigned n, char *buf, size_t cap) {
  const tabq_driver_v1 *d = kit.plugin.driver;
  tabq_prepared *p = NULL;
  size_t len = 0;
  buf[0] = '\0';
  probe_clear_failure();
  int rc = d->prepare(db.conn, sql, n, "plan", &p);
  if (rc)
    failed("prepare", sql, rc);
  bool row = false;
  if ((rc = d->execute(p, params, n)) || (rc = d->next(p, &row))) {
    d->finalize(p);
    failed("query", sql, rc);
  }
  while (row && len + 1 < cap) {
    tabq_value cell;
    /* Columns until the driver says there is none; that failure is no test's. */
    for (unsigned c = 0; c < 32 && d->cell(p, c, &cell) == TABQ_OK && len + 1 < cap; c++) {
      char text[1024];
      cell_text(&cell, text, sizeof text);
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", c ? " | " : "", text);
    }
    if (len + 1 < cap)
      len += (size_t)snprintf(buf + len, cap - len, "\n");
    if (d->next(p, &row))
      break;
  }
  probe_clear_failure();
  d->finalize(p);
}

/* The server's version as the driver reads it (0 when it cannot). */
uint32_t db_server_version(void) {
  char text[64];
  uint32_t number = 0;
  if (kit.plugin.driver->server_version(db.conn, text, sizeof text, &number))
    return 0;
  return number;
}
