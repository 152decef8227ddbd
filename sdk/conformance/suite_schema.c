/* The schema the dialect renders (ABI 1.7, docs/schema.md) and the statement check
 * (docs/check.md), on the live database: the server takes the rendered table, claim-order index,
 * dead letter table and settings; the claims then walk that index (the database's own plan says
 * so); and tabq_check reports what a table lacks — a column (with the database's message and,
 * where it gives one, the position), a type, the index (a warning whose SQL creates it) — and
 * nothing on a good table. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <tabq/sys/sql.h>

#include <tabq/app.h>

#include "kit.h"

static tabq_error err;

static const char *family(void) {
  return kit.ddl.name;
}

static bool is(const char *name) {
  return !strcmp(family(), name);
}

/* The test's tables from the dialect's schema of `t`: {jobs} with its claim-order index and
 * settings, {dead} its dead letter table. */
static void apply_schema(tabq_broker *b, const tabq_table *t) {
  tabq_schema_options o = TABQ_SCHEMA_OPTIONS_INIT;
  o.dead_letter_table = dead_name();
  int rc = tabq_schema_apply(b, t, &o, &err);
  if (rc)
    fprintf(stderr, "\nschema of %s: %s (%s)\n", t->name, err.message, err.statement);
  db_made(DB_JOBS | DB_DEAD);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

static tabq_outcome no_handler(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_ack();
}

static void print_report(const tabq_check_report *r) {
  for (size_t i = 0; i < tabq_check_report_count(r); i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    if (it->severity != TABQ_CHECK_OK)
      fprintf(stderr, "\n  %s %s: %s [%s] at %u",
              it->severity == TABQ_CHECK_ERROR ? "error" : "warn", it->purpose, it->message,
              it->sql, it->position);
  }
}

/* The first item of `r` at `severity` whose purpose holds `purpose` (NULL: any). */
static const tabq_check_item *find_item(const tabq_check_report *r, tabq_check_severity severity,
                                        const char *purpose) {
  for (size_t i = 0; i < tabq_check_report_count(r); i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    if (it->severity == severity && (!purpose || strstr(it->purpose, purpose)))
      return it;
  }
  return NULL;
}

static int check_sub(tabq_broker *b, const tabq_table *t, tabq_check_report *r) {
  tabq_subscription_options o = sub_options("q", no_handler, NULL);
  return tabq_check_subscription(b, t, &o, r, &err);
}

/* ---- The rendered schema, accepted ---------------------------------------------------------- */

static void rendered_schema_is_accepted(void) {
  const tabq_table *(*variants[])(void) = {jobs_table, marked_table};
  for (size_t v = 0; v < 2; v++) {
    fresh_names();
    tabq_broker *b = connect_broker(20);
    const tabq_table *t = variants[v]();
    apply_schema(b, t);
    /* Once more, IF NOT EXISTS: what exists stays. */
    tabq_schema_options again = TABQ_SCHEMA_OPTIONS_INIT;
    again.dead_letter_table = dead_name();
    again.if_not_exists = true;
    CU_ASSERT_EQUAL(tabq_schema_apply(b, t, &again, &err), TABQ_OK);
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {dead}"), 0);
    /* The table takes a publish, and the check finds every statement and the index. */
    tabq_message m = message("q", "one", 3);
    CU_ASSERT_EQUAL(tabq_publish(b, t, &m, &err), TABQ_OK);
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 1);
    tabq_check_report *r = tabq_check_report_new();
    CU_ASSERT_EQUAL(check_sub(b, t, r), TABQ_OK);
    CU_ASSERT_EQUAL(tabq_check_report_worst(r), TABQ_CHECK_OK);
    CU_ASSERT_PTR_NOT_NULL(find_item(r, TABQ_CHECK_OK, "claim-order index"));
    if (tabq_check_report_worst(r) != TABQ_CHECK_OK)
      print_report(r);
    tabq_check_report_free(r);
    if (is("postgres")) {
      char opts[512];
      db_text("SELECT array_to_string(reloptions, ',') FROM pg_catalog.pg_class WHERE oid = "
              "'{jobs}'::regclass",
              opts, sizeof opts);
      CU_ASSERT_PTR_NOT_NULL(strstr(opts, "autovacuum_vacuum_threshold=5000"));
      CU_ASSERT_PTR_NOT_NULL(strstr(opts, "autovacuum_vacuum_scale_factor=0"));
      if (kit.form == TABQ_FORM_LEASE)
        CU_ASSERT_PTR_NOT_NULL(strstr(opts, "fillfactor=80"));
    }
    end_test();
  }
}

/* ---- An id is given once ------------------------------------------------------------------- */

static tabq_outcome to_dead_letter(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_dead_letter();
}

/* The rendered table never gives a gone row's id to a new one: its dead letter table keeps the
 * ids it was given as its key, so a later row of a reused id could not move there, and its dead
 * letter would fail at every claim (SQLite gives the largest rowid plus one, a deleted row's,
 * unless the key is AUTOINCREMENT). Found by the soak (docs/reliability.md): one row in each
 * round, dead-lettered at once, the table empty between the rounds. */
static void ids_are_never_given_twice(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *t = jobs_table();
  apply_schema(b, t);
  tabq_subscription_options o = sub_options("q", to_dead_letter, NULL);
  o.max_attempts = 1;
  o.dead_letter_table = dead_name();
  tabq_subscription *s = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, t, &o, &s, &err), TABQ_OK);
  for (long long round = 1; round <= 3; round++) {
    tabq_message m = message("q", "one", 3);
    CU_ASSERT_EQUAL(tabq_publish(b, t, &m, &err), TABQ_OK);
    CU_ASSERT(wait_count("SELECT count(*) FROM {dead}", round, 10000));
    CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  }
  CU_ASSERT_EQUAL(db_int("SELECT count(DISTINCT id) FROM {dead}"), 3);
  tabq_stats st;
  stats_of(s, &st);
  CU_ASSERT_EQUAL(st.dead_lettered, 3);
  CU_ASSERT_EQUAL(st.failed, 0);
  end_test();
}

/* ---- The claims walk the index ------------------------------------------------------------- */

static tabq_build_fn claim_of(tabq_form form, bool one) {
  const tabq_plugin *p = kit.plugin.desc;
  if (form == TABQ_FORM_ROWLOCK)
    return one ? (TABQ_HAS_MEMBER(p->rowlock, tabq_rowlock_v1, claim_one) ? p->rowlock->claim_one
                                                                          : NULL)
               : p->rowlock->claim;
  return one ? (TABQ_HAS_MEMBER(p->lease, tabq_lease_v1, claim_one) ? p->lease->claim_one : NULL)
             : p->lease->claim;
}

static const char *needs_plan(void) {
  const char *why = needs_schema();
  if (why)
    return why;
  if (!is("sqlite") && !is("postgres") && !is("mysql"))
    return "plans: the kit reads EXPLAIN of SQLite, PostgreSQL and MySQL/MariaDB only";
  return NULL;
}

/* A value of the kind the engine binds for each parameter of a claim. */
static tabq_value claim_value(uint16_t param, int64_t now_us) {
  switch (param) {
  case TABQ_P_GROUP:
    return tabq_text("q", 1);
  case TABQ_P_NOW:
    return tabq_time(now_us);
  case TABQ_P_LIMIT:
    return tabq_int(10);
  case TABQ_P_LEASE_UNTIL:
  case TABQ_P_TOKEN:
    return tabq_time(now_us + 30000000);
  default:
    return tabq_null();
  }
}

/* The plan of one claim statement, as the database would run it with a claim's values. */
static void plan_of(tabq_build_fn build, const tabq_table *t, char *plan, size_t cap) {
  tabq_build b = {.table = t, .form = kit.form, .server_version = db_server_version()};
  tabq_stmt st;
  tabq_sql_init(&st, probe_host());
  CU_ASSERT_EQUAL_FATAL(build(&b, &st), TABQ_OK);
  plan[0] = '\0';
  if (!st.sql) { /* declined: claim runs instead */
    tabq_sql_free(&st);
    return;
  }
  static char sql[8192];
  snprintf(sql, sizeof sql, "%s%s", is("sqlite") ? "EXPLAIN QUERY PLAN " : "EXPLAIN ", st.sql);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  tabq_value params[TABQ_STMT_MAX_PARAMS];
  for (unsigned i = 0; i < st.nparams; i++)
    params[i] = claim_value(st.params[i], now);
  db_rows_text(sql, params, st.nparams, plan, cap);
  tabq_sql_free(&st);
}

/* Statistics read, so a plan weighs the rows as they are. */
static void analyze_jobs(void) {
  if (is("postgres")) {
    db_exec("ANALYZE {jobs}");
  } else if (is("sqlite")) {
    db_exec("ANALYZE");
  } else {
    char sql[128], out[1024];
    snprintf(sql, sizeof sql, "ANALYZE TABLE %s", jobs_name());
    db_rows_text(sql, NULL, 0, out, sizeof out);
  }
}

static void claims_walk_the_index(void) {
  const tabq_table *(*variants[])(void) = {jobs_table, marked_table};
  for (size_t v = 0; v < 2; v++) {
    fresh_names();
    tabq_broker *b = connect_broker(20);
    const tabq_table *t = variants[v]();
    apply_schema(b, t);
    /* A queue among many rows of another, statistics read: a sequential read would cost the
     * planner far more than the index. */
    db_fill("other", 4000);
    db_fill("q", 20);
    if (t->processed_at.name)
      db_exec("UPDATE {jobs} SET processed_at = retry_after WHERE queue = 'other'");
    analyze_jobs();
    char index[128];
    snprintf(index, sizeof index, "%s_claim", jobs_name());
    for (int one = 0; one < 2; one++) {
      tabq_build_fn build = claim_of(kit.form, one);
      if (!build)
        continue;
      static char plan[16384];
      plan_of(build, t, plan, sizeof plan);
      if (!plan[0])
        continue;
      bool walks = strstr(plan, index) != NULL;
      if (!walks)
        fprintf(stderr, "\nthe %s of table %s does not use index %s:\n%s\n",
                one ? "claim_one" : "claim", t->name, index, plan);
      CU_ASSERT(walks);
    }
    end_test();
  }
}

/* A queue's finished rows by age, as purge deletes them and stats counts them: an index holds
 * them (the finished index where the claim-order index is partial, else the claim-order index
 * led by processed_at), so neither reads the table. */
static void finished_rows_walk_an_index(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *t = marked_table();
  apply_schema(b, t);
  db_fill("other", 4000);
  db_fill("q", 40);
  db_exec("UPDATE {jobs} SET processed_at = retry_after WHERE queue = 'q'");
  analyze_jobs();
  static char sql[512], plan[16384];
  snprintf(sql, sizeof sql,
           "%sSELECT COUNT(*) FROM %s WHERE queue = 'q' AND processed_at IS NOT NULL AND "
           "processed_at < %s",
           is("sqlite") ? "EXPLAIN QUERY PLAN " : "EXPLAIN ", jobs_name(),
           is("sqlite") ? "'9999-12-31'" : "'9999-12-31 00:00:00'");
  db_rows_text(sql, NULL, 0, plan, sizeof plan);
  char finished[128], claim[128];
  snprintf(finished, sizeof finished, "%s_finished", jobs_name());
  snprintf(claim, sizeof claim, "%s_claim", jobs_name());
  bool walks = strstr(plan, finished) || strstr(plan, claim);
  if (!walks)
    fprintf(stderr, "\nthe finished rows of table %s are read by no index:\n%s\n", t->name, plan);
  CU_ASSERT(walks);
  end_test();
}

/* ---- The statement check ------------------------------------------------------------------- */

static void good_table_checks_ok(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *t = marked_table();
  apply_schema(b, t);
  tabq_check_report *r = tabq_check_report_new();
  int rc = check_sub(b, t, r);
  size_t subs = tabq_check_report_count(r);
  if (!rc)
    rc = tabq_check_publish(b, t, r, &err);
  size_t pubs = tabq_check_report_count(r) - subs;
  if (!rc)
    rc = tabq_check_route(b, "signups", t, r, &err);
  if (rc || tabq_check_report_worst(r) != TABQ_CHECK_OK)
    print_report(r);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(tabq_check_report_worst(r), TABQ_CHECK_OK);
  CU_ASSERT(subs >= 3); /* a claim, an ack, a retry at least */
  CU_ASSERT(pubs >= 1);
  CU_ASSERT_PTR_NOT_NULL(find_item(r, TABQ_CHECK_OK, "publish: insert"));
  CU_ASSERT_PTR_NOT_NULL(find_item(r, TABQ_CHECK_OK, "route signups: "));
  for (size_t i = 0; i < tabq_check_report_count(r); i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    CU_ASSERT_STRING_EQUAL(it->table, t->name);
    CU_ASSERT_STRING_EQUAL(it->message, "");
  }
  tabq_check_report_free(r);
  /* Nothing ran: no row was written or claimed. */
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
}

static void missing_column_is_an_error(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  apply_schema(b, jobs_table());
  tabq_table t = *jobs_table();
  t.priority.name = "prio_gone";
  tabq_check_report *r = tabq_check_report_new();
  int rc = check_sub(b, &t, r);
  CU_ASSERT_EQUAL(rc, TABQ_SCHEMA);
  /* The claim reads the column in every form (the advisory form's is its "candidates"). */
  const tabq_check_item *it = find_item(r, TABQ_CHECK_ERROR, NULL);
  if (!it)
    print_report(r);
  CU_ASSERT_PTR_NOT_NULL_FATAL(it);
  CU_ASSERT_EQUAL(it->code, TABQ_SCHEMA);
  /* The database's message names the column; PostgreSQL and SQLite point at it. */
  CU_ASSERT_PTR_NOT_NULL(strstr(it->message, "prio_gone"));
  CU_ASSERT(strstr(it->sql, "prio_gone") != NULL);
  if (is("postgres") || is("sqlite")) {
    CU_ASSERT(it->position > 0);
    if (it->position > 0 && it->position <= strlen(it->sql))
      CU_ASSERT_EQUAL(strncmp(it->sql + it->position - 1, "prio_gone", 9) == 0 ||
                          strstr(it->sql + it->position - 1, "prio_gone") != NULL,
                      true);
  }
  /* The statements that do not read the column are still checked, and pass. */
  CU_ASSERT_PTR_NOT_NULL(find_item(r, TABQ_CHECK_OK, NULL));
  tabq_check_report_free(r);
  /* The publish fails on it too. */
  r = tabq_check_report_new();
  CU_ASSERT_EQUAL(tabq_check_publish(b, &t, r, &err), TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "prio_gone"));
  tabq_check_report_free(r);
}

static const char *needs_typed_placeholders(void) {
  const char *why = needs_schema();
  if (why)
    return why;
  return is("postgres") ? NULL
                        : "wrong types: the database types no placeholder when it prepares, so a "
                          "column of another type is only found when a statement runs";
}

static void wrong_type_is_an_error(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *t = jobs_table();
  apply_schema(b, t);
  /* retry_after holds text: the claim's ":now" is a time, which a text placeholder refuses. */
  db_exec("ALTER TABLE {jobs} ALTER COLUMN retry_after DROP DEFAULT");
  db_exec("ALTER TABLE {jobs} ALTER COLUMN retry_after TYPE text");
  tabq_check_report *r = tabq_check_report_new();
  int rc = check_sub(b, t, r);
  CU_ASSERT_NOT_EQUAL(rc, TABQ_OK);
  const tabq_check_item *it = find_item(r, TABQ_CHECK_ERROR, ": claim");
  CU_ASSERT_PTR_NOT_NULL(it);
  if (it)
    CU_ASSERT_NOT_EQUAL(it->message[0], '\0');
  tabq_check_report_free(r);
}

static void missing_index_is_a_warning(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *t = marked_table();
  apply_schema(b, t);
  char drop[256];
  snprintf(drop, sizeof drop, "DROP INDEX %s_claim%s", jobs_name(),
           is("mysql") ? " ON {jobs}" : "");
  db_exec(drop);
  tabq_check_report *r = tabq_check_report_new();
  CU_ASSERT_EQUAL(check_sub(b, t, r), TABQ_OK); /* a warning fails nothing */
  CU_ASSERT_EQUAL(tabq_check_report_worst(r), TABQ_CHECK_WARNING);
  const tabq_check_item *it = find_item(r, TABQ_CHECK_WARNING, "claim-order index");
  CU_ASSERT_PTR_NOT_NULL_FATAL(it);
  CU_ASSERT_PTR_NOT_NULL(strstr(it->sql, "CREATE INDEX"));
  CU_ASSERT_PTR_NOT_NULL(strstr(it->message, "create the claim-order index"));
  /* Its SQL is what the table lacked: run, the check is clean. */
  db_exec(it->sql);
  tabq_check_report_free(r);
  r = tabq_check_report_new();
  CU_ASSERT_EQUAL(check_sub(b, t, r), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_check_report_worst(r), TABQ_CHECK_OK);
  tabq_check_report_free(r);
}

static const char *needs_schema_and_events(void) {
  const char *why = needs_schema();
  return why ? why : needs_custom_events();
}

static void custom_events_are_checked(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *good = jobs_table();
  apply_schema(b, good);
  char ok[256], bad[256];
  snprintf(ok, sizeof ok, "UPDATE %s SET queue = 'done' WHERE id = :id", jobs_name());
  snprintf(bad, sizeof bad, "UPDATE %s SET no_such_col = 'done' WHERE id = :id", jobs_name());
  tabq_table t = *good;
  t.events.ack = ok;
  tabq_check_report *r = tabq_check_report_new();
  CU_ASSERT_EQUAL(check_sub(b, &t, r), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(find_item(r, TABQ_CHECK_OK, "(events.ack)"));
  tabq_check_report_free(r);
  t.events.ack = bad;
  r = tabq_check_report_new();
  CU_ASSERT_EQUAL(check_sub(b, &t, r), TABQ_SCHEMA);
  const tabq_check_item *it = find_item(r, TABQ_CHECK_ERROR, "(events.ack)");
  CU_ASSERT_PTR_NOT_NULL(it);
  if (it)
    CU_ASSERT_PTR_NOT_NULL(strstr(it->message, "no_such_col"));
  tabq_check_report_free(r);
}

static void route_check_refuses_what_route_refuses(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  const tabq_table *good = jobs_table();
  apply_schema(b, good);
  tabq_table t = *good;
  t.group.name = NULL; /* a routed table needs its group column */
  tabq_check_report *r = tabq_check_report_new();
  CU_ASSERT_EQUAL(tabq_check_route(b, "signups", &t, r, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "group column"));
  CU_ASSERT_EQUAL(tabq_check_report_worst(r), TABQ_CHECK_ERROR);
  tabq_check_report_free(r);
  r = tabq_check_report_new();
  CU_ASSERT_EQUAL(tabq_check_route(b, "bad*name*", good, r, &err), TABQ_INVALID);
  tabq_check_report_free(r);
}

/* ---- The check of an app ------------------------------------------------------------------- */

/* A description file of two tables in the kit's form: {jobs} read by queue "q" with a dead letter
 * table, {rows} read by a batch subscription and by name through route "signups.*". */
static tabq_app *two_table_app(void) {
  char form[160] = "";
  if (kit.form == TABQ_FORM_LEASE)
    snprintf(form, sizeof form, ", \"locked_until\": \"locked_until\"");
  static char text[4096];
  const char *roles =
      "\"id\": {\"column\": \"id\", \"generated\": true}, \"group\": \"queue\", \"priority\": "
      "\"priority\", \"retry_after\": \"retry_after\", \"attempt\": {\"column\": \"attempt\", "
      "\"generated\": true}, \"processed_at\": \"processed_at\", \"headers\": \"headers\", "
      "\"payload\": \"payload\"";
  char lock_a[160] = "", lock_b[160] = "";
  if (kit.form == TABQ_FORM_ADVISORY) {
    snprintf(lock_a, sizeof lock_a, ", \"advisory_lock\": \"%s-{id}\"", jobs_name());
    snprintf(lock_b, sizeof lock_b, ", \"advisory_lock\": \"%s-{id}\"", rows_name());
  }
  snprintf(text, sizeof text,
           "{\n  \"name\": \"check-app\",\n  \"tables\": [\n"
           "    {\"name\": \"%s\", %s%s%s},\n"
           "    {\"name\": \"%s\", %s%s%s}\n  ],\n"
           "  \"routes\": [{\"name\": \"signups.*\", \"table\": \"%s\"}],\n"
           "  \"subscriptions\": [\n"
           "    {\"table\": \"%s\", \"queue\": \"q\", \"max_attempts\": 3, "
           "\"dead_letter_table\": \"%s\"},\n"
           "    {\"table\": \"%s\", \"queue\": \"r\", \"batch\": 8},\n"
           "    {\"route\": \"signups.confirmed\", \"handler\": \"welcome\"}\n  ]\n}\n",
           jobs_name(), roles, form, lock_a, rows_name(), roles, form, lock_b, rows_name(),
           jobs_name(), dead_name(), rows_name());
  tabq_app *app = NULL;
  int rc = tabq_app_parse(text, strlen(text), "check-app.tabq.json", &app, &err);
  if (rc)
    fprintf(stderr, "\n%s\n%s\n", err.message, text);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return app;
}

/* Whether an item of `severity` on `table` has a purpose holding `purpose`. */
static bool has_item(const tabq_check_report *r, tabq_check_severity severity, const char *table,
                     const char *purpose) {
  for (size_t i = 0; i < tabq_check_report_count(r); i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    if (it->severity == severity && !strcmp(it->table, table) && strstr(it->purpose, purpose))
      return true;
  }
  return false;
}

static void app_check_covers_every_table(void) {
  fresh_names();
  tabq_broker *b = connect_broker(20);
  tabq_app *app = two_table_app();
  CU_ASSERT_EQUAL_FATAL(tabq_app_table_count(app), 2);
  apply_schema(b, tabq_app_table(app, 0));
  CU_ASSERT_EQUAL_FATAL(tabq_schema_apply(b, tabq_app_table(app, 1), NULL, &err), TABQ_OK);
  db_made(DB_ROWS);
  tabq_check_report *r = tabq_check_report_new();
  int rc = tabq_check_app(b, app, r, &err);
  if (rc || tabq_check_report_worst(r) != TABQ_CHECK_OK)
    print_report(r);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL(tabq_check_report_worst(r), TABQ_CHECK_OK);
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, jobs_name(), "subscription q: "));
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, rows_name(), "subscription r: "));
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, rows_name(), "route signups.confirmed: "));
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, rows_name(), "route signups.*: "));
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, jobs_name(), "publish: insert"));
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, rows_name(), "publish: insert"));
  tabq_check_report_free(r);
  /* The second table loses a column: its statements fail, the first table's are still checked
   * and pass, and the first failure is returned. */
  char drop[160];
  snprintf(drop, sizeof drop, "ALTER TABLE %s DROP COLUMN headers", rows_name());
  db_exec(drop);
  r = tabq_check_report_new();
  rc = tabq_check_app(b, app, r, &err);
  CU_ASSERT_EQUAL(rc, TABQ_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "headers"));
  CU_ASSERT(has_item(r, TABQ_CHECK_ERROR, rows_name(), "subscription r: "));
  CU_ASSERT(has_item(r, TABQ_CHECK_ERROR, rows_name(), "publish: insert"));
  CU_ASSERT(has_item(r, TABQ_CHECK_OK, jobs_name(), "publish: insert"));
  CU_ASSERT(!has_item(r, TABQ_CHECK_ERROR, jobs_name(), ""));
  tabq_check_report_free(r);
  tabq_app_free(app);
}

const kit_test schema_tests[] = {
    {"the rendered schema (table, claim-order index, dead letter table, settings) is accepted",
     rendered_schema_is_accepted, ALL_FORMS | KIT_SMOKE, needs_schema, NULL},
    {"the rendered table never gives a gone row's id again (its dead letter keeps it)",
     ids_are_never_given_twice, ALL_FORMS, needs_schema, NULL},
    {"the claims walk the rendered claim-order index (EXPLAIN)", claims_walk_the_index,
     TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, needs_plan, NULL},
    {"a queue's finished rows by age walk an index, as purge and stats read them (EXPLAIN)",
     finished_rows_walk_an_index, TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, needs_plan, NULL},
    {"check: every statement of a good table prepares, nothing runs", good_table_checks_ok,
     ALL_FORMS, needs_schema, NULL},
    {"check: a missing column is an error with the database's message and position",
     missing_column_is_an_error, ALL_FORMS | KIT_SMOKE, needs_schema, NULL},
    {"check: a column of the wrong type is an error", wrong_type_is_an_error, TABQ_FORM_ROWLOCK,
     needs_typed_placeholders, NULL},
    {"check: a missing claim-order index is a warning whose SQL creates it",
     missing_index_is_a_warning, TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, needs_schema, NULL},
    {"check: the service's own statements are prepared too", custom_events_are_checked,
     TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE, needs_schema_and_events, NULL},
    {"check: a route is refused as tabq_route refuses it", route_check_refuses_what_route_refuses,
     ALL_FORMS, needs_schema, NULL},
    {"check: an app of two tables, every subscription, route and publish",
     app_check_covers_every_table, ALL_FORMS, needs_schema, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
