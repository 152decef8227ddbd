/* Routes and subscriptions by name (SPEC 9) on a real database: which route decides (exact,
 * prefix, longest prefix), the name written into the group column, publishes without a route
 * writing nothing, subscriptions by name reading only their name's rows, and every refusal.
 * Checks read the database directly (sqlite3, libpq, libmariadb), never through tabq. The
 * plugins without ByName, or whose ByName refuses, come from tests/fixtures. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <tabq/tabq.h>

#include "cunit_main.h"
#include "support.h"

static testdb db;
static tabq_broker *broker;
static recorder rec;
static tabq_error err;

/* Tables of their own for the routes to tell apart: the columns a publish writes, in the lease
 * form, which every database serves (only published to, never subscribed; a publish refuses a
 * table no subscription could claim, such as a row lock table on SQLite). */
#define ROUTED(table_name)                                                                         \
  {                                                                                                \
    .size = sizeof(tabq_table), .name = table_name, .id = {.name = "id", .generated = true},       \
    .group = {.name = "queue"}, .attempt = {.name = "attempt", .generated = true},                 \
    .locked_until = {.name = "locked_until"}, .payload = {.name = "payload"},                      \
  }
static const tabq_table routed_a = ROUTED("routed_a");
static const tabq_table routed_b = ROUTED("routed_b");
static const tabq_table routed_c = ROUTED("routed_c");

static void create_routed(const char *name) {
  char sql[320];
  if (db.kind == TEST_SQLITE)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, attempt INTEGER NOT "
             "NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL)",
             name);
  else if (db.kind == TEST_POSTGRES)
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, attempt INTEGER NOT "
             "NULL DEFAULT 1, locked_until TIMESTAMPTZ, payload BYTEA NOT NULL)",
             name);
  else
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT "
             "NULL, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME NULL, payload BLOB NOT "
             "NULL) ENGINE=InnoDB",
             name);
  testdb_exec(&db, sql);
}

static void begin(void) {
  testdb_create(&db);
  broker = connect_broker(&db, 50);
  recorder_init(&rec);
  create_routed("routed_a");
  create_routed("routed_b");
  create_routed("routed_c");
}

static void end(void) {
  tabq_close(broker);
  broker = NULL;
  recorder_free(&rec);
  testdb_remove(&db);
}

static void route_ok(const char *name, const tabq_table *t) {
  int rc = tabq_route(broker, name, t, &err);
  if (rc)
    fprintf(stderr, "route %s: %s\n", name, err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

static int publish_to(const char *name) {
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = name;
  m.payload_len = strlen(name);
  return tabq_publish_to(broker, name, &m, &err);
}

static void publish_ok(const char *name, int n) {
  for (int i = 0; i < n; i++) {
    int rc = publish_to(name);
    if (rc)
      fprintf(stderr, "publish to %s: %s\n", name, err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
}

static long long count(const char *table, const char *group) {
  char sql[160];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE queue = '%s'", table, group);
  return testdb_int(&db, sql);
}

static long long rows(const char *table) {
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  return testdb_int(&db, sql);
}

static void mentions(const char *needle) {
  if (!strstr(err.message, needle))
    fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err.message, needle);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, needle));
}

/* ---- Which route decides ----------------------------------------------------------------- */

static void exact_wins_then_longest_prefix(void) {
  begin();
  /* The exact name first: precedence does not depend on the order routes are declared in. */
  route_ok("billing.eu.vat", &routed_c);
  route_ok("billing.*", &routed_a);
  route_ok("billing.eu.*", &routed_b);
  route_ok("*", jobs_table());        /* every name no other route takes */
  publish_ok("billing.eu.vat", 1);    /* exact */
  publish_ok("billing.eu.refund", 2); /* the longer prefix */
  publish_ok("billing.eu.", 1);       /* a prefix covers itself with nothing after it */
  publish_ok("billing.invoice", 3);   /* the shorter prefix */
  publish_ok("billing", 1);           /* "billing.*" needs the dot: the catch-all takes it */
  CU_ASSERT_EQUAL(rows("routed_c"), 1);
  CU_ASSERT_EQUAL(count("routed_c", "billing.eu.vat"), 1);
  CU_ASSERT_EQUAL(rows("routed_b"), 3);
  CU_ASSERT_EQUAL(count("routed_b", "billing.eu.refund"), 2);
  CU_ASSERT_EQUAL(count("routed_b", "billing.eu."), 1);
  CU_ASSERT_EQUAL(rows("routed_a"), 3);
  CU_ASSERT_EQUAL(count("routed_a", "billing.invoice"), 3);
  CU_ASSERT_EQUAL(rows("jobs"), 1);
  CU_ASSERT_EQUAL(count("jobs", "billing"), 1);
  end();
}

static void group_column_receives_the_name(void) {
  begin();
  route_ok("signups", jobs_table());
  route_ok("café.*", jobs_table());
  publish_ok("signups", 1);
  publish_ok("café.crème", 1);
  char group[64];
  testdb_text(&db, "SELECT queue FROM jobs ORDER BY id", group, sizeof group);
  CU_ASSERT_STRING_EQUAL(group, "signups");
  CU_ASSERT_EQUAL(count("jobs", "café.crème"), 1);
  end();
}

static void no_route_writes_nothing(void) {
  begin();
  route_ok("billing.*", jobs_table());
  CU_ASSERT_EQUAL(publish_to("signups"), TABQ_NO_ROUTE);
  CU_ASSERT_EQUAL(err.code, TABQ_NO_ROUTE);
  mentions("'signups'");
  CU_ASSERT_EQUAL(publish_to("billing"), TABQ_NO_ROUTE); /* not covered by "billing.*" */
  mentions("'billing'");
  CU_ASSERT_EQUAL(rows("jobs"), 0);
  CU_ASSERT_EQUAL(rows("routed_a"), 0);
  end();
}

/* ---- Subscriptions by name ---------------------------------------------------------------- */

static atomic_uint foreign; /* deliveries whose group was not the subscription's name */

static tabq_outcome ack_own_name(recorder *r, tabq_delivery *d, unsigned call) {
  (void)call;
  const char *group = tabq_delivery_group(d);
  if (!group || strcmp(group, r->extra))
    atomic_fetch_add(&foreign, 1);
  return tabq_ack();
}

static tabq_subscription *subscribe_to(const char *name, recorder *r) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = recorder_handler;
  o.user = r;
  r->script = ack_own_name;
  r->extra = (void *)name;
  tabq_subscription *s = NULL;
  int rc = tabq_subscribe_to(broker, name, &o, &s, &err);
  if (rc)
    fprintf(stderr, "subscribe to %s: %s\n", name, err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  return s;
}

static void subscription_reads_only_its_name(void) {
  begin();
  atomic_store(&foreign, 0);
  route_ok("signups", jobs_table());
  route_ok("billing.*", jobs_table());
  publish_ok("signups", 3);
  publish_ok("billing.invoice", 2);
  publish_ok("billing.refund", 1);
  /* An exact name the prefix covers is the queue. */
  tabq_subscription *s = subscribe_to("billing.invoice", &rec);
  CU_ASSERT(recorder_wait(&rec, 2, 10000));
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 4, 10000));
  sleep_ms(300); /* several poll intervals: nothing of another name is claimed */
  CU_ASSERT_EQUAL(rec.calls, 2);
  tabq_stats st;
  tabq_subscription_stats(s, &st, sizeof st);
  CU_ASSERT_EQUAL(st.acked, 2);
  recorder second;
  recorder_init(&second);
  subscribe_to("signups", &second);
  CU_ASSERT(recorder_wait(&second, 3, 10000));
  /* A publish after the subscription opened reaches it too. */
  publish_ok("signups", 1);
  CU_ASSERT(recorder_wait(&second, 4, 10000));
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 1, 10000));
  CU_ASSERT_EQUAL(count("jobs", "billing.refund"), 1);
  CU_ASSERT_EQUAL(atomic_load(&foreign), 0);
  tabq_shutdown(broker);
  CU_ASSERT_EQUAL(rec.calls, 2);
  recorder_free(&second);
  end();
}

static int subscribe_with(const char *name, tabq_subscription_options o) {
  o.handler = recorder_handler;
  o.user = &rec;
  return tabq_subscribe_to(broker, name, &o, NULL, &err);
}

static void subscription_refusals(void) {
  begin();
  route_ok("signups", jobs_table());
  route_ok("billing.*", jobs_table());
  publish_ok("signups", 1);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.max_attempts = 3;
  o.dead_letter_table = "jobs_dead";
  CU_ASSERT_EQUAL(subscribe_with("signups", o), TABQ_DECLARATION);
  mentions("'signups'");
  mentions("max_attempts");
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  o = (tabq_subscription_options)TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.dead_letter_group = "dead";
  CU_ASSERT_EQUAL(subscribe_with("signups", o), TABQ_DECLARATION);
  mentions("dead letter");
  o = (tabq_subscription_options)TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.lease_s = 60;
  CU_ASSERT_EQUAL(subscribe_with("signups", o), TABQ_DECLARATION);
  mentions("the broker's lease and poll interval");
  o = (tabq_subscription_options)TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.poll_interval_ms = 10;
  CU_ASSERT_EQUAL(subscribe_with("signups", o), TABQ_DECLARATION);
  mentions("poll interval");
  o = (tabq_subscription_options)TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "signups";
  CU_ASSERT_EQUAL(subscribe_with("signups", o), TABQ_DECLARATION);
  mentions("the name is the queue");
  o = (tabq_subscription_options)TABQ_SUBSCRIPTION_OPTIONS_INIT;
  CU_ASSERT_EQUAL(subscribe_with("billing.*", o), TABQ_INVALID); /* a queue is one name */
  mentions("pattern");
  CU_ASSERT_EQUAL(subscribe_with("orders", o), TABQ_NO_ROUTE);
  mentions("'orders'");
  CU_ASSERT_EQUAL(subscribe_with("caf\xc3", o), TABQ_INVALID);
  mentions("UTF-8");
  o.size = 0;
  CU_ASSERT_EQUAL(subscribe_with("signups", o), TABQ_INVALID);
  /* Nothing opened, so nothing was claimed. */
  sleep_ms(200);
  CU_ASSERT_EQUAL(rec.calls, 0);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT attempt FROM jobs"), 1);
  end();
}

/* A route declared later must not move a name an open subscription by name reads. */
static void late_route_cannot_move_a_subscribed_name(void) {
  begin();
  route_ok("billing.*", jobs_table());
  subscribe_to("billing.invoice", &rec);
  CU_ASSERT_EQUAL(tabq_route(broker, "billing.invoice", &routed_a, &err), TABQ_INVALID);
  mentions("'billing.invoice'");
  mentions("routed_a");
  CU_ASSERT_EQUAL(tabq_route(broker, "billing.inv*", &routed_a, &err), TABQ_INVALID);
  route_ok("billing.invoice", jobs_table()); /* the same table: nothing moves */
  route_ok("billing.refund", &routed_a);     /* no subscription reads it */
  publish_ok("billing.invoice", 1);
  CU_ASSERT(recorder_wait(&rec, 1, 10000));
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM jobs", 0, 10000));
  end();
}

/* ---- Refusals of routes and publishes ---------------------------------------------------- */

static void route_refusals(void) {
  begin();
  static const tabq_table no_group = {
      .size = sizeof(tabq_table),
      .name = "jobs",
      .id = {.name = "id", .generated = true},
      .payload = {.name = "payload"},
  };
  CU_ASSERT_EQUAL(tabq_route(broker, "signups", &no_group, &err), TABQ_DECLARATION);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  mentions("table jobs");
  mentions("needs a group column");
  static const tabq_table no_id = {
      .size = sizeof(tabq_table), .name = "jobs", .group = {.name = "queue"}};
  CU_ASSERT_EQUAL(tabq_route(broker, "signups", &no_id, &err), TABQ_DECLARATION);
  mentions("R-DESC-1");
  tabq_table unsized = *jobs_table();
  unsized.size = 0;
  CU_ASSERT_EQUAL(tabq_route(broker, "signups", &unsized, &err), TABQ_DECLARATION);
  mentions(".size is 0");
  CU_ASSERT_EQUAL(tabq_route(broker, "caf\xc3", jobs_table(), &err), TABQ_INVALID);
  mentions("UTF-8");
  CU_ASSERT_EQUAL(tabq_route(broker, "", jobs_table(), &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_route(broker, NULL, jobs_table(), &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_route(broker, "bill*ing", jobs_table(), &err), TABQ_INVALID);
  mentions("'*' may only end a name");
  /* The same name again: to the same table it stays, to another it is refused. */
  route_ok("signups", jobs_table());
  route_ok("signups", jobs_table());
  CU_ASSERT_EQUAL(tabq_route(broker, "signups", &routed_a, &err), TABQ_INVALID);
  mentions("'signups'");
  mentions("table jobs");
  mentions("table routed_a");
  route_ok("billing.*", &routed_a);
  CU_ASSERT_EQUAL(tabq_route(broker, "billing.*", &routed_b, &err), TABQ_INVALID);
  mentions("routed_b");
  /* The refused routes changed nothing. */
  publish_ok("signups", 1);
  publish_ok("billing.x", 1);
  CU_ASSERT_EQUAL(count("jobs", "signups"), 1);
  CU_ASSERT_EQUAL(count("routed_a", "billing.x"), 1);
  CU_ASSERT_EQUAL(rows("routed_b"), 0);
  end();
}

static void publish_refusals(void) {
  begin();
  route_ok("signups", jobs_table());
  route_ok("billing.*", jobs_table());
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = "x";
  m.payload_len = 1;
  m.group = "signups";
  CU_ASSERT_EQUAL(tabq_publish_to(broker, "signups", &m, &err), TABQ_INVALID);
  mentions("message.group");
  m.group = NULL;
  CU_ASSERT_EQUAL(tabq_publish_to(broker, "billing.*", &m, &err), TABQ_INVALID);
  mentions("pattern");
  CU_ASSERT_EQUAL(tabq_publish_to(broker, "billing.\xff", &m, &err), TABQ_INVALID);
  mentions("UTF-8");
  CU_ASSERT_EQUAL(tabq_publish_to(broker, "", &m, &err), TABQ_INVALID);
  m.size = 0;
  CU_ASSERT_EQUAL(tabq_publish_to(broker, "signups", &m, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(rows("jobs"), 0);
  end();
}

/* ---- The dialect's ByName interface (fixture plugins) ------------------------------------ */

static const tabq_table leased = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static tabq_broker *fixture_broker(const char *url) {
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, NULL, &b, &err);
  if (rc)
    fprintf(stderr, "connect %s: %s\n", url, err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_route(b, "signups", &leased, &err), TABQ_OK);
  return b;
}

static void plugin_without_byname_is_refused(void) {
  tabq_broker *b = fixture_broker("nobyname:nothing");
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = recorder_handler;
  o.user = &rec;
  tabq_subscription *s = (tabq_subscription *)&o; /* must come back NULL */
  CU_ASSERT_EQUAL(tabq_subscribe_to(b, "signups", &o, &s, &err), TABQ_DIALECT);
  CU_ASSERT_PTR_NULL(s);
  mentions("nobyname");
  mentions("ByName");
  mentions("'signups'");
  tabq_close(b);
}

static void byname_check_refusal_stops_the_subscription(void) {
  tabq_broker *b = fixture_broker("bynamerefuses:nothing");
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.handler = recorder_handler;
  o.user = &rec;
  CU_ASSERT_EQUAL(tabq_subscribe_to(b, "signups", &o, NULL, &err), TABQ_DIALECT);
  CU_ASSERT_STRING_EQUAL(err.statement, "byname");
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
  mentions("serves nothing by name");
  tabq_close(b);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"an exact name wins, then the longest prefix", exact_wins_then_longest_prefix},
      {"the group column receives the name", group_column_receives_the_name},
      {"a name without a route writes nothing", no_route_writes_nothing},
      {"a subscription by name reads only its name", subscription_reads_only_its_name},
      {"subscriptions by name: refusals", subscription_refusals},
      {"a later route cannot move a subscribed name", late_route_cannot_move_a_subscribed_name},
      {"routes: refusals", route_refusals},
      {"publishes by name: refusals", publish_refusals},
      {"a plugin without ByName is refused", plugin_without_byname_is_refused},
      {"a ByName check's refusal stops the subscription",
       byname_check_refusal_stops_the_subscription},
      CU_TEST_INFO_NULL,
  };
  char suite[64];
  tabq_form f = test_form();
  snprintf(suite, sizeof suite, "routes on %s, %s", test_db_name(),
           f == TABQ_FORM_ROWLOCK    ? "row lock"
           : f == TABQ_FORM_ADVISORY ? "advisory"
                                     : "lease");
  ADD_SUITE(suite, NULL, NULL, tests);
  return 0;
}
