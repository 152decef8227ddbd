/* Description files (docs/description-files.md) without a database: apps and tables read, the
 * reverse written and read back the same, apps built in C, and every kind of malformed file
 * refused with the file, the line and column, the member and the rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/app.h>
#include <tabq/concurrency.h>
#include <tabq/controls.h>
#include <tabq/retention.h>
#include <tabq/schedule.h>
#include <unistd.h>

#include "cunit_main.h"

static tabq_error err;

static const char app_text[] =
    "{\n"
    "  \"name\": \"billing\",\n"
    "  \"version\": \"2.1.0\",\n"
    "  \"tables\": [\n"
    "    {\n"
    "      \"name\": \"jobs\",\n"
    "      \"id\": {\"column\": \"id\", \"generated\": true},\n"
    "      \"group\": \"queue\",\n"
    "      \"attempt\": {\"column\": \"attempt\", \"generated\": true},\n"
    "      \"locked_until\": \"locked_until\",\n"
    "      \"payload\": {\"column\": \"payload\", \"type\": \"json\"},\n"
    "      \"payload_schema\": {\"type\": \"object\"}\n"
    "    },\n"
    "    {\"name\": \"jobs_dead\", \"id\": \"id\", \"payload\": \"payload\"},\n"
    "    {\"name\": \"mails\", \"id\": \"id\", \"group\": \"topic\",\n"
    "     \"advisory_lock\": \"mail-{id}\", \"data\": [\"to\", {\"column\": "
    "\"sent\", \"type\": \"time\"}]}\n"
    "  ],\n"
    "  \"routes\": [{\"name\": \"mail.*\", \"table\": \"mails\"}],\n"
    "  \"subscriptions\": [\n"
    "    {\"table\": \"jobs\", \"queue\": \"invoices\", \"workers\": 4,\n"
    "     \"max_attempts\": 5, \"dead_letter_table\": \"jobs_dead\",\n"
    "     \"codec\": \"json\", \"on_decode_failure\": \"dead_letter\"},\n"
    "    {\"table\": \"jobs\", \"queue\": \"receipts\", \"batch\": 20, "
    "\"handler\": \"receipts_batch\"},\n"
    "    {\"route\": \"mail.welcome\", \"payload_schema\": {\"type\": "
    "\"string\"}}\n"
    "  ]\n"
    "}\n";

static tabq_app *parse(const char *text) {
  tabq_app *app = NULL;
  if (tabq_app_parse(text, strlen(text), "test.json", &app, &err))
    fprintf(stderr, "\n  refused: %s\n", err.message);
  return app;
}

static void reads_an_app(void) {
  tabq_app *app = parse(app_text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  CU_ASSERT_STRING_EQUAL(tabq_app_name(app), "billing");
  CU_ASSERT_STRING_EQUAL(tabq_app_version(app), "2.1.0");
  CU_ASSERT_EQUAL(tabq_app_table_count(app), 3);
  const tabq_table *jobs = tabq_app_table_named(app, "jobs");
  CU_ASSERT_PTR_NOT_NULL_FATAL(jobs);
  CU_ASSERT_EQUAL(jobs->size, sizeof(tabq_table));
  CU_ASSERT_STRING_EQUAL(jobs->id.name, "id");
  CU_ASSERT_TRUE(jobs->id.generated);
  CU_ASSERT_EQUAL(jobs->payload.type, TABQ_T_JSON);
  CU_ASSERT_EQUAL(tabq_table_form(jobs), TABQ_FORM_LEASE);
  const tabq_table *mails = tabq_app_table_named(app, "mails");
  CU_ASSERT_EQUAL(tabq_table_form(mails), TABQ_FORM_ADVISORY);
  CU_ASSERT_EQUAL(mails->ndata, 2);
  CU_ASSERT_EQUAL(mails->data[1].type, TABQ_T_TIME);
  CU_ASSERT_EQUAL(tabq_table_check(mails, &err), TABQ_OK);

  CU_ASSERT_EQUAL(tabq_app_subscription_count(app), 3);
  const tabq_subscription_options *o = tabq_app_subscription_options(app, 0);
  CU_ASSERT_EQUAL(o->size, sizeof *o);
  CU_ASSERT_STRING_EQUAL(o->queue, "invoices");
  CU_ASSERT_EQUAL(o->workers, 4);
  CU_ASSERT_EQUAL(o->max_attempts, 5);
  CU_ASSERT_PTR_EQUAL(o->codec, tabq_json_codec());
  CU_ASSERT_EQUAL(o->on_decode_failure, TABQ_DECODE_DEAD_LETTER);
  CU_ASSERT_STRING_EQUAL(tabq_app_subscription_handler(app, 0), "invoices");
  CU_ASSERT_STRING_EQUAL(tabq_app_subscription_handler(app, 1), "receipts_batch");
  CU_ASSERT_STRING_EQUAL(tabq_app_subscription_route(app, 2), "mail.welcome");
  CU_ASSERT_PTR_EQUAL(tabq_app_subscription_table(app, 2), mails);
  CU_ASSERT_EQUAL(tabq_app_route_count(app), 1);
  CU_ASSERT_PTR_EQUAL(tabq_app_route_table(app, 0), mails);

  CU_ASSERT_STRING_EQUAL(tabq_app_payload_schema(app, "jobs", "invoices"), "{\"type\":\"object\"}");
  CU_ASSERT_STRING_EQUAL(tabq_app_payload_schema(app, "mails", "mail.welcome"),
                         "{\"type\":\"string\"}");
  CU_ASSERT_PTR_NULL(tabq_app_payload_schema(app, "mails", "mail.other"));
  tabq_app_free(app);
}

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_ack();
}
static void handle_batch(tabq_delivery *const *d, size_t n, tabq_outcome *o, void *user) {
  (void)d;
  (void)n;
  (void)o;
  (void)user;
}

static void binds_handlers_by_name(void) {
  tabq_app *app = parse(app_text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  CU_ASSERT_EQUAL(tabq_app_bind(app, "invoices", handle, &err, &err), TABQ_OK);
  CU_ASSERT_PTR_EQUAL(tabq_app_subscription_options(app, 0)->handler, handle);
  CU_ASSERT_PTR_EQUAL(tabq_app_subscription_options(app, 0)->user, &err);
  CU_ASSERT_EQUAL(tabq_app_bind(app, "receipts_batch", handle, NULL, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "batch"));
  CU_ASSERT_EQUAL(tabq_app_bind_batch(app, "receipts_batch", handle_batch, NULL, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_bind(app, "nobody", handle, NULL, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "nobody"));
  tabq_app_free(app);
}

/* Written, read back, written again: the same text. */
static void writes_what_it_reads(void) {
  tabq_app *app = parse(app_text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  char *first = NULL, *second = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &first, &err), TABQ_OK);
  tabq_app *again = parse(first);
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(tabq_app_to_json(again, &second, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(first, second);
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"dead_letter_table\": \"jobs_dead\""));
  CU_ASSERT_EQUAL(first[strlen(first) - 1], '\n');
  free(first);
  free(second);
  tabq_app_free(again);
  tabq_app_free(app);
}

static const tabq_col contact_columns[] = {{.name = "email", .type = TABQ_T_TEXT}, {.name = "age"}};
static const tabq_table compiled_in = {
    .size = sizeof(tabq_table),
    .name = "crm.contacts",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .retry_after = {.name = "retry_after"},
    .processed_at = {.name = "done_at"},
    .fifo = true,
    .clock = TABQ_CLOCK_DATABASE,
    .isolation = TABQ_ISOLATION_REPEATABLE_READ,
    .data = contact_columns,
    .ndata = 2,
    .events = {.ack = "UPDATE crm.contacts SET done_at = now() WHERE id = :id"},
    .cancelled_at = {.name = "cancelled_at"},
};

static bool same_table(const tabq_table *a, const tabq_table *b) {
  char *ja = NULL, *jb = NULL;
  bool same =
      !tabq_table_to_json(a, &ja, &err) && !tabq_table_to_json(b, &jb, &err) && !strcmp(ja, jb);
  free(ja);
  free(jb);
  return same;
}

static void prints_a_compiled_in_table(void) {
  char *text = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_table_to_json(&compiled_in, &text, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"isolation\": \"repeatable_read\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"clock\": \"database\""));
  tabq_table *back = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_table_parse(text, strlen(text), "printed", &back, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(back->name, "crm.contacts");
  CU_ASSERT_TRUE(back->fifo);
  CU_ASSERT_EQUAL(back->data[0].type, TABQ_T_TEXT);
  CU_ASSERT_STRING_EQUAL(back->events.ack, compiled_in.events.ack);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"cancelled_at\": \"cancelled_at\""));
  CU_ASSERT_PTR_NOT_NULL_FATAL(back->cancelled_at.name); /* read back (docs/cancel.md) */
  CU_ASSERT_STRING_EQUAL(back->cancelled_at.name, "cancelled_at");
  CU_ASSERT_TRUE(same_table(back, &compiled_in));
  tabq_table_free(back);
  free(text);
}

/* An app built in C says, in its file, what it was built with. */
static void builds_an_app_in_c(void) {
  tabq_app *app = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_new("crm", "1.0", &app, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_add_table(app, &compiled_in, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_add_table(app, &compiled_in, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "twice"));
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "signups";
  o.handler = handle;
  CU_ASSERT_EQUAL(tabq_app_add_subscription(app, "crm.contacts", &o, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_add_subscription(app, "crm.contacts", &o, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "two subscriptions"));
  o.queue = "other";
  o.workers = 2; /* a FIFO table takes one worker */
  CU_ASSERT_EQUAL(tabq_app_add_subscription(app, "crm.contacts", &o, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "FIFO"));
  CU_ASSERT_EQUAL(tabq_app_add_subscription(app, "nope", &o, &err), TABQ_DECLARATION);
  CU_ASSERT_EQUAL(tabq_app_add_route(app, "crm.*", "crm.contacts", &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_add_route(app, "a*b", "crm.contacts", &err), TABQ_INVALID);
  tabq_subscription_options by_name = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  by_name.handler = handle;
  CU_ASSERT_EQUAL(tabq_app_add_subscription_to(app, "crm.lead", &by_name, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_add_subscription_to(app, "sales.lead", &by_name, &err), TABQ_NO_ROUTE);
  by_name.max_attempts = 3;
  CU_ASSERT_EQUAL(tabq_app_add_subscription_to(app, "crm.x", &by_name, &err), TABQ_DECLARATION);
  CU_ASSERT_EQUAL(
      tabq_app_set_payload_schema(app, "crm.contacts", "signups", "{\"type\":\"object\"}", &err),
      TABQ_OK);
  char *text = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &text, &err), TABQ_OK);
  tabq_app *back = parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(back);
  CU_ASSERT_EQUAL(tabq_app_subscription_count(back), 2);
  CU_ASSERT_STRING_EQUAL(tabq_app_subscription_route(back, 1), "crm.lead");
  CU_ASSERT_TRUE(same_table(tabq_app_table(back, 0), &compiled_in));
  CU_ASSERT_STRING_EQUAL(tabq_app_payload_schema(back, "crm.contacts", "signups"),
                         "{\"type\":\"object\"}");
  free(text);
  tabq_app_free(back);
  tabq_app_free(app);
}

static void reads_files(void) {
  tabq_app *app = NULL;
  CU_ASSERT_EQUAL(tabq_app_load("/nonexistent/dir/app.json", &app, &err), TABQ_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "/nonexistent/dir/app.json"));
  CU_ASSERT_PTR_NULL(app);
  char path[] = "/tmp/tabq-app-XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(app_text, f);
  fclose(f);
  CU_ASSERT_EQUAL(tabq_app_load(path, &app, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_table_count(app), 3);
  tabq_app_free(app);
  unlink(path);
}

/* One malformed file: refused with TABQ_DECLARATION, "test.json:LINE:COL: MEMBER: ...RULE...". */
typedef struct bad_case {
  const char *why, *text, *where, *member, *rule;
} bad_case;

#define T(name, rest) "{\"name\": \"app\", \"tables\": [{\"name\": \"" name "\", " rest "}]}"
#define SCHED_APP(sched)                                                                           \
  "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": {\"column\": \"id\", \"generated\": "  \
  "true},\n \"processed_at\": \"p\", \"headers\": \"hd\", \"unique_key\": \"k\"}, {\"name\": "     \
  "\"n\", \"id\": "                                                                                \
  "{\"column\": \"id\", \"generated\": true}}],\n \"schedules\": [" sched "]}"

static const bad_case bad_cases[] = {
    {"bad JSON", "{\"name\": \"app\",\n \"tables\": [}", "test.json:2:13", NULL,
     "not a JSON document"},
    {"not an object", "[1, 2]", "test.json:1:1", "(the document)", "one JSON object"},
    {"empty file", "", "test.json:1:1", NULL, "not a JSON document"},
    {"duplicate member", "{\"name\": \"a\", \"name\": \"b\"}", "test.json:1:", NULL, "duplicate"},
    {"non-UTF-8", "{\"name\": \"caf\xe9\"}", "test.json:1:", NULL, "not a JSON document"},
    {"unknown role", T("jobs", "\"id\": \"id\", \"lokced_until\": \"x\""), "test.json:1:73",
     "tables[0].lokced_until", "did you mean \"locked_until\""},
    {"unknown member of an app", "{\"name\": \"a\", \"tabels\": []}", "test.json:1:25", "tabels",
     "did you mean \"tables\""},
    {"wrong type of a flag", T("jobs", "\"id\": \"id\", \"group\": \"q\", \"fifo\": \"yes\""),
     "test.json:1:", "tables[0].fifo", "true or false"},
    {"wrong type of a role", T("jobs", "\"id\": 7"), "test.json:1:", "tables[0].id",
     "column name, or an object"},
    {"empty column name", T("jobs", "\"id\": \"\""), "test.json:1:", "tables[0].id", "empty"},
    {"unknown column type", T("jobs", "\"id\": {\"column\": \"id\", \"type\": \"integer\"}"),
     "test.json:1:", "tables[0].id.type", "\"int\""},
    {"no id", T("jobs", "\"payload\": \"p\""), "test.json:1:", "tables[0]", "id required"},
    {"no table name", "{\"name\": \"a\", \"tables\": [{\"id\": \"id\"}]}",
     "test.json:1:", "tables[0].name", "required"},
    {"contradictory forms",
     T("jobs", "\"id\": \"id\", \"locked_until\": \"lu\", \"advisory_lock\": \"k-{id}\""),
     "test.json:1:", "tables[0].advisory_lock", "one form"},
    {"unbalanced braces", T("jobs", "\"id\": \"id\", \"advisory_lock\": \"k-{id\""),
     "test.json:1:", "tables[0].advisory_lock", "advisory key"},
    {"key on a missing column", T("jobs", "\"id\": \"id\", \"advisory_lock\": \"k-{user}\""),
     "test.json:1:", "tables[0].advisory_lock", "advisory key"},
    {"fifo without group", T("jobs", "\"id\": \"id\", \"fifo\": true"),
     "test.json:1:", "tables[0].fifo", "fifo needs group"},
    {"a column named twice", T("jobs", "\"id\": \"id\", \"payload\": \"ID\""),
     "test.json:1:", "tables[0]", "a column named twice"},
    {"unknown isolation", T("jobs", "\"id\": \"id\", \"isolation\": \"snapshot\""),
     "test.json:1:", "tables[0].isolation", "serializable"},
    {"unknown event", T("jobs", "\"id\": \"id\", \"events\": {\"ackk\": \"x\"}"),
     "test.json:1:", "tables[0].events.ackk", "did you mean \"ack\""},
    {"extend without a lease", T("jobs", "\"id\": \"id\", \"events\": {\"extend\": \"x\"}"),
     "test.json:1:", "tables[0].events", "extend is a lease event"},
    {"duplicate tables",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}, {\"name\": \"j\", \"id\": "
     "\"id\"}]}",
     "test.json:1:", "tables[1].name", "twice"},
    {"duplicate queues",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"g\"}],\n"
     " \"subscriptions\": [{\"table\": \"j\", \"queue\": \"q\"}, {\"table\": \"j\", \"queue\": "
     "\"q\"}]}",
     "test.json:2:", "subscriptions[1]", "two subscriptions"},
    {"subscription to an unknown table",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n \"subscriptions\": "
     "[{\"table\": \"k\"}]}",
     "test.json:2:", "subscriptions[0].table", "no table k"},
    {"negative workers",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n \"subscriptions\": "
     "[{\"table\": \"j\", \"workers\": -1}]}",
     "test.json:2:", "subscriptions[0].workers", "whole number"},
    {"max_attempts without a dead letter",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"attempt\": \"a\"}],\n"
     " \"subscriptions\": [{\"table\": \"j\", \"max_attempts\": 3}]}",
     "test.json:2:", "subscriptions[0].max_attempts", "dead letter"},
    {"both a table and a route",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n \"subscriptions\": "
     "[{\"table\": \"j\", \"route\": \"r\"}]}",
     "test.json:2:", "subscriptions[0].route", "exactly one"},
    {"a route with '*' inside",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"g\"}],\n "
     "\"routes\": [{\"name\": \"a*b\", \"table\": \"j\"}]}",
     "test.json:2:", "routes[0].name", "'*' may only end"},
    {"a route to a table without a group",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n \"routes\": "
     "[{\"name\": \"r\", \"table\": \"j\"}]}",
     "test.json:2:", "routes[0].table", "no group column"},
    {"a table file with app members", "{\"name\": \"j\", \"id\": \"id\", \"tables\": []}",
     "test.json:1:", "tables", "not both"},
    {"a payload schema that is not an object", T("j", "\"id\": \"id\", \"payload_schema\": 3"),
     "test.json:1:", "tables[0].payload_schema", "JSON Schema object"},
    {"a NUL in a name", "{\"name\": \"a\\u0000b\", \"tables\": []}", "test.json:1:", NULL,
     "not a JSON document"},
    {"a processed age without processed_at",
     T("j", "\"id\": \"id\", \"retention\": {\"processed_age_ms\": 1000}"),
     "test.json:1:", "tables[0].retention.processed_age_ms", "needs a processed_at column"},
    {"a negative age",
     T("j", "\"id\": \"id\", \"processed_at\": \"p\", \"retention\": {\"processed_age_ms\": -1}"),
     "test.json:1:", "tables[0].retention.processed_age_ms", "0 or more"},
    {"a retention that deletes nothing",
     T("j", "\"id\": \"id\", \"processed_at\": \"p\", \"retention\": {\"batch\": 10}"),
     "test.json:1:", "tables[0].retention", "nothing would ever be deleted"},
    {"a misspelt retention member",
     T("j", "\"id\": \"id\", \"processed_at\": \"p\", \"retention\": {\"procesed_age_ms\": 1}"),
     "test.json:1:", "tables[0].retention.procesed_age_ms", "did you mean \"processed_age_ms\""},
    {"an interval too short",
     T("j", "\"id\": \"id\", \"processed_at\": \"p\", \"retention\": {\"processed_age_ms\": 5, "
            "\"interval_ms\": 3}"),
     "test.json:1:", "tables[0].retention.interval_ms", "at least 10"},
    {"a schedule's cron expression that does not parse",
     SCHED_APP("{\"name\": \"s\", \"table\": \"j\", \"cron\": \"0 25 * * *\"}"),
     "test.json:3:", "schedules[0].cron", "field 2 (hour), position 3: 25 is out of 0-23"},
    {"a schedule with both cron and every",
     SCHED_APP("{\"name\": \"s\", \"table\": \"j\", \"cron\": \"@daily\", \"every\": \"5m\"}"),
     "test.json:3:", "schedules[0].every", "give exactly one"},
    {"a schedule of an unknown zone",
     SCHED_APP(
         "{\"name\": \"s\", \"table\": \"j\", \"cron\": \"@daily\", \"zone\": \"Mars/Base\"}"),
     "test.json:3:", "schedules[0].zone", "zone 'Mars/Base' is not a zone"},
    {"a schedule into a table without unique_key",
     SCHED_APP("{\"name\": \"s\", \"table\": \"n\", \"every\": \"5m\"}"),
     "test.json:3:", "schedules[0].table", "table n has no unique_key column"},
    {"a schedule name with ':'",
     SCHED_APP("{\"name\": \"a:b\", \"table\": \"j\", \"every\": \"5m\"}"),
     "test.json:3:", "schedules[0].name", "holds a ':'"},
    {"two schedules of one name",
     SCHED_APP("{\"name\": \"s\", \"table\": \"j\", \"every\": \"5m\"}, {\"name\": \"s\", "
               "\"table\": \"j\", \"every\": \"1m\"}"),
     "test.json:3:", "schedules[1]", "the app has a schedule of that name already"},
    {"a misspelt schedule member",
     SCHED_APP("{\"name\": \"s\", \"table\": \"j\", \"every\": \"5m\", \"zome\": \"UTC\"}"),
     "test.json:3:", "schedules[0].zome", "did you mean \"zone\""},
    {"a partition key into a table without the column",
     SCHED_APP("{\"name\": \"s\", \"table\": \"j\", \"every\": \"5m\", \"partition_key\": \"k\"}"),
     "test.json:3:", "schedules[0].partition_key", "table j has no partition_key column"},
    {"an unknown missed policy",
     SCHED_APP("{\"name\": \"s\", \"table\": \"j\", \"every\": \"5m\", \"missed\": \"all\"}"),
     "test.json:3:", "schedules[0].missed", "skip"},
    {"a dead letter age without a dead letter",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"g\",\n"
     " \"retry_after\": \"r\", \"retention\": {\"dead_letter_age_ms\": 1000}}],\n"
     " \"subscriptions\": [{\"table\": \"j\", \"queue\": \"q\"}]}",
     "test.json:2:", "tables[0].retention.dead_letter_age_ms", "needs a dead letter destination"},
    {"a deadline column that is no data column",
     T("j", "\"id\": \"id\", \"data\": [\"b\"], \"deadline_column\": \"budget\""),
     "test.json:1:", "tables[0].deadline_column", "(deadline column)"},
    {"a deadline in transactional mode",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"retry_after\": \"r\"}],\n"
     " \"subscriptions\": [{\"table\": \"j\", \"deadline_ms\": 500, \"transactional\": true}]}",
     "test.json:2:", "subscriptions[0].transactional", "(not in transactional mode)"},
    {"controls without a paused column",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n"
     " \"controls\": {\"name\": \"c\", \"table_column\": \"t\", \"queue_column\": \"q\"}}",
     "test.json:2:", "controls.paused_column", "is required"},
    {"a misspelt controls member",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n"
     " \"controls\": {\"name\": \"c\", \"table_column\": \"t\", \"queue_column\": \"q\",\n"
     " \"paused_column\": \"p\", \"pausd_at_column\": \"at\"}}",
     "test.json:3:", "controls.pausd_at_column", "did you mean \"paused_at_column\""},
    {"controls in a table file", "{\"name\": \"j\", \"id\": \"id\", \"controls\": {}}",
     "test.json:1:", "controls", "not both"},
    {"a slots table without an expires column",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n"
     " \"concurrency_slots\": {\"name\": \"s\", \"key_column\": \"k\", \"holder_column\": \"h\"}}",
     "test.json:2:", "concurrency_slots.expires_column", "is required"},
    {"a deadline policy that is no policy",
     "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n"
     " \"subscriptions\": [{\"table\": \"j\", \"on_deadline\": \"drop\"}]}",
     "test.json:2:", "subscriptions[0].on_deadline", "retry_after"},
};

static void refuses_malformed_files(void) {
  size_t n = sizeof bad_cases / sizeof bad_cases[0];
  for (size_t i = 0; i < n; i++) {
    const bad_case *c = &bad_cases[i];
    tabq_app *app = (tabq_app *)&err; /* overwritten with NULL on refusal */
    int rc = tabq_app_parse(c->text, strlen(c->text), "test.json", &app, &err);
    bool ok = rc == TABQ_DECLARATION && app == NULL &&
              !strncmp(err.message, c->where, strlen(c->where)) &&
              (!c->member || strstr(err.message, c->member)) && strstr(err.message, c->rule);
    if (!ok)
      fprintf(stderr, "\n  case '%s': rc %d, message: %s\n", c->why, rc, err.message);
    CU_ASSERT_TRUE(ok);
  }
  CU_ASSERT_TRUE(n >= 20);
  const char *codec = "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}],\n"
                      " \"subscriptions\": [{\"table\": \"j\", \"codec\": \"protobuf\"}]}";
  tabq_app *app = NULL;
  CU_ASSERT_EQUAL(tabq_app_parse(codec, strlen(codec), "test.json", &app, &err), TABQ_DECLARATION);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "test.json:2:44: subscriptions[0].codec"));
  /* The table concerned is named in err.table. */
  const char *fifo = T("jobs", "\"id\": \"id\", \"fifo\": true");
  CU_ASSERT_EQUAL(tabq_app_parse(fifo, strlen(fifo), "test.json", &app, &err), TABQ_DECLARATION);
  CU_ASSERT_STRING_EQUAL(err.table, "jobs");
}

/* Deadlines (docs/deadlines.md): a table's deadline column and a subscription's budget and
 * policy, read and written back. */
static void reads_and_writes_deadlines(void) {
  const char *text =
      "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"q\",\n"
      " \"attempt\": \"attempt\", \"retry_after\": \"r\", \"payload\": \"p\",\n"
      " \"data\": [{\"column\": \"budget_ms\", \"type\": \"int\"}], \"deadline_column\": "
      "\"budget_ms\"}],\n"
      " \"subscriptions\": [{\"table\": \"j\", \"queue\": \"slow\", \"deadline_ms\": 1500,\n"
      "  \"deadline_retry_ms\": 30000},\n"
      " {\"table\": \"j\", \"queue\": \"fast\", \"deadline_ms\": 200, \"on_deadline\": "
      "\"dead_letter\",\n"
      "  \"max_attempts\": 3, \"dead_letter_group\": \"dead\"}]}";
  tabq_app *app = parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  CU_ASSERT_STRING_EQUAL(tabq_app_table_named(app, "j")->deadline_column, "budget_ms");
  const tabq_subscription_options *o = tabq_app_subscription_options(app, 0);
  CU_ASSERT_EQUAL(o->deadline_ms, 1500);
  CU_ASSERT_EQUAL(o->deadline_retry_ms, 30000);
  CU_ASSERT_EQUAL(o->on_deadline, TABQ_DEADLINE_RETRY_AFTER);
  o = tabq_app_subscription_options(app, 1);
  CU_ASSERT_EQUAL(o->deadline_ms, 200);
  CU_ASSERT_EQUAL(o->on_deadline, TABQ_DEADLINE_DEAD_LETTER);
  char *first = NULL, *second = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &first, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"deadline_column\": \"budget_ms\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"deadline_ms\": 1500"));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"deadline_retry_ms\": 30000"));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"on_deadline\": \"dead_letter\""));
  tabq_app *again = parse(first);
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(tabq_app_to_json(again, &second, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(first, second);
  free(first);
  free(second);
  tabq_app_free(again);
  tabq_app_free(app);
}

/* Every JSON example in docs/description-files.md reads (the schema check is tools/). */
/* An app's schedules: read, written back the same; added in C with tabq_schedule's rules. */
static void carries_schedules(void) {
  const char *text = SCHED_APP(
      "{\"name\": \"nightly\", \"table\": \"j\", \"cron\": \"30 2 * * *\", \"zone\": "
      "\"Europe/Berlin\",\n \"missed\": \"catch-up\", \"lead_ms\": 2000, \"payload\": \"{}\", "
      "\"headers\": {\"h\": \"v\"}},\n {\"name\": \"tick\", \"table\": \"j\", \"every\": "
      "\"30s\"}");
  tabq_app *app = parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  CU_ASSERT_EQUAL_FATAL(tabq_app_schedule_count(app), 2);
  const tabq_schedule_options *o = tabq_app_schedule_options(app, 0);
  CU_ASSERT_STRING_EQUAL(o->name, "nightly");
  CU_ASSERT_STRING_EQUAL(o->spec, "30 2 * * *");
  CU_ASSERT_STRING_EQUAL(o->zone, "Europe/Berlin");
  CU_ASSERT_EQUAL(o->missed, TABQ_MISSED_CATCH_UP);
  CU_ASSERT_EQUAL(o->lead_ms, 2000);
  CU_ASSERT_EQUAL(o->message->payload_len, 2);
  CU_ASSERT_EQUAL(o->message->nheaders, 1);
  CU_ASSERT_STRING_EQUAL(o->message->headers[0].value, "v");
  CU_ASSERT_STRING_EQUAL(tabq_app_schedule_table(app, 0)->name, "j");
  CU_ASSERT_STRING_EQUAL(tabq_app_schedule_options(app, 1)->spec, "every 30s");
  CU_ASSERT_PTR_NULL(tabq_app_schedule_options(app, 2));
  char *first = NULL, *second = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &first, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"every\": \"30s\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"missed\": \"catch-up\""));
  tabq_app *again = parse(first);
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(tabq_app_to_json(again, &second, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(first, second);
  /* In C: the same rules, nothing added on a refusal; the template copied. */
  tabq_schedule_options c = TABQ_SCHEDULE_OPTIONS_INIT;
  c.name = "c";
  c.spec = "*/61 * * * *";
  CU_ASSERT_EQUAL(tabq_app_add_schedule(again, "j", &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "field 1 (minute), position 3"));
  CU_ASSERT_EQUAL(tabq_app_add_schedule(again, "nope", &c, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_app_schedule_count(again), 2);
  char payload[] = "abc";
  tabq_message m = TABQ_MESSAGE_INIT;
  m.payload = payload;
  m.payload_len = 3;
  c.spec = "@hourly";
  c.message = &m;
  CU_ASSERT_EQUAL(tabq_app_add_schedule(again, "j", &c, &err), TABQ_OK);
  payload[0] = 'x';
  CU_ASSERT_EQUAL(memcmp(tabq_app_schedule_options(again, 2)->message->payload, "abc", 3), 0);
  free(first);
  free(second);
  tabq_app_free(again);
  tabq_app_free(app);
}

/* A table's retention: read, applied to the app, written back the same; set in C too. */
static void carries_a_retention(void) {
  const char *text =
      "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"g\",\n"
      " \"retry_after\": \"r\", \"processed_at\": \"p\", \"attempt\": \"a\",\n"
      " \"retention\": {\"processed_age_ms\": 604800000, \"dead_letter_age_ms\": 2592000000,\n"
      " \"batch\": 200, \"interval_ms\": 30000}}],\n"
      " \"subscriptions\": [{\"table\": \"j\", \"queue\": \"q\", \"max_attempts\": 5,\n"
      " \"dead_letter_group\": \"q.dead\"}]}";
  tabq_app *app = parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  const tabq_retention_options *o = tabq_app_retention(app, "j");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->processed_age_ms, 604800000);
  CU_ASSERT_EQUAL(o->dead_letter_age_ms, 2592000000LL);
  CU_ASSERT_EQUAL(o->batch, 200);
  CU_ASSERT_EQUAL(o->interval_ms, 30000);
  CU_ASSERT_PTR_NULL(tabq_app_retention(app, "nope"));
  char *first = NULL, *second = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &first, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"retention\": {\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"dead_letter_age_ms\": 2592000000"));
  tabq_app *again = parse(first);
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(tabq_app_to_json(again, &second, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(first, second);
  /* In C: the same rules; destinations are the subscriptions', never the options'. */
  tabq_retention_options c = TABQ_RETENTION_OPTIONS_INIT;
  c.processed_age_ms = 1000;
  CU_ASSERT_EQUAL(tabq_app_set_retention(again, "nope", &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no such table"));
  c.dead_letter_age_ms = 1000;
  c.dead_letter_groups = (const char *[]){"q.dead"};
  c.ndead_letter_groups = 1;
  CU_ASSERT_EQUAL(tabq_app_set_retention(again, "j", &c, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "the options name none"));
  CU_ASSERT_EQUAL(tabq_app_retention(again, "j")->processed_age_ms, 604800000); /* unchanged */
  c.ndead_letter_groups = 0;
  CU_ASSERT_EQUAL(tabq_app_set_retention(again, "j", &c, &err), TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_retention(again, "j")->processed_age_ms, 1000);
  free(first);
  free(second);
  tabq_app_free(again);
  tabq_app_free(app);
}

/* The app's controls table (docs/pause.md): read, written back the same, set in C. */
static void carries_controls(void) {
  const char *text =
      "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"g\"}],\n"
      " \"controls\": {\"name\": \"queue_controls\", \"table_column\": \"queue_table\",\n"
      " \"queue_column\": \"queue\", \"paused_column\": \"paused\", \"paused_at_column\": "
      "\"paused_at\"}}";
  tabq_app *app = parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  const tabq_controls *c = tabq_app_controls(app);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_STRING_EQUAL(c->name, "queue_controls");
  CU_ASSERT_STRING_EQUAL(c->table_column, "queue_table");
  CU_ASSERT_STRING_EQUAL(c->queue_column, "queue");
  CU_ASSERT_STRING_EQUAL(c->paused_column, "paused");
  CU_ASSERT_STRING_EQUAL(c->paused_at_column, "paused_at");
  char *first = NULL, *second = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &first, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"controls\": {\n"));
  tabq_app *again = parse(first);
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(tabq_app_to_json(again, &second, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(first, second);
  /* In C: the members' rules; a refusal keeps what the app had. */
  tabq_controls in = TABQ_CONTROLS_INIT;
  in.name = "ctl";
  in.table_column = "t";
  in.queue_column = "q";
  CU_ASSERT_EQUAL(tabq_app_set_controls(again, &in, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "paused_column"));
  CU_ASSERT_STRING_EQUAL(tabq_app_controls(again)->name, "queue_controls");
  in.paused_column = "p";
  CU_ASSERT_EQUAL(tabq_app_set_controls(again, &in, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(tabq_app_controls(again)->name, "ctl");
  CU_ASSERT_PTR_NULL(tabq_app_controls(again)->paused_at_column);
  /* An app without controls has none. */
  tabq_app *plain = parse("{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\"}]}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
  CU_ASSERT_PTR_NULL(tabq_app_controls(plain));
  free(first);
  free(second);
  tabq_app_free(plain);
  tabq_app_free(again);
  tabq_app_free(app);
}

/* The app's slots table and a subscription's limit (docs/concurrency.md): read, written back the
 * same, set in C. */
static void carries_concurrency_slots(void) {
  const char *text =
      "{\"name\": \"a\", \"tables\": [{\"name\": \"j\", \"id\": \"id\", \"group\": \"g\",\n"
      " \"retry_after\": \"r\", \"partition_key\": \"k\"}],\n"
      " \"subscriptions\": [{\"table\": \"j\", \"queue\": \"q\", \"concurrency_key\": \"k\",\n"
      " \"concurrency_limit\": 3}],\n"
      " \"concurrency_slots\": {\"name\": \"slots\", \"key_column\": \"slot\",\n"
      " \"holder_column\": \"holder\", \"expires_column\": \"expires\", \"ttl_ms\": 5000}}";
  tabq_app *app = parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(app);
  const tabq_concurrency_slots *c = tabq_app_concurrency_slots(app);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_STRING_EQUAL(c->name, "slots");
  CU_ASSERT_STRING_EQUAL(c->key_column, "slot");
  CU_ASSERT_STRING_EQUAL(c->holder_column, "holder");
  CU_ASSERT_STRING_EQUAL(c->expires_column, "expires");
  CU_ASSERT_EQUAL(c->ttl_ms, 5000);
  char *first = NULL, *second = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_to_json(app, &first, &err), TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"concurrency_slots\": {\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"concurrency_limit\": 3"));
  CU_ASSERT_PTR_NOT_NULL(strstr(first, "\"concurrency_key\": \"k\""));
  tabq_app *again = parse(first);
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(tabq_app_to_json(again, &second, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(first, second);
  tabq_concurrency_slots in = TABQ_CONCURRENCY_SLOTS_INIT;
  in.name = "s2";
  in.key_column = "slot";
  in.holder_column = "holder";
  CU_ASSERT_EQUAL(tabq_app_set_concurrency_slots(again, &in, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "expires_column"));
  CU_ASSERT_STRING_EQUAL(tabq_app_concurrency_slots(again)->name, "slots");
  in.expires_column = "e";
  CU_ASSERT_EQUAL(tabq_app_set_concurrency_slots(again, &in, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(tabq_app_concurrency_slots(again)->name, "s2");
  free(first);
  free(second);
  tabq_app_free(again);
  tabq_app_free(app);
}

static void reads_the_docs_examples(void) {
  FILE *f = fopen(TABQ_SOURCE_DIR "/docs/description-files.md", "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  static char doc[1 << 16];
  size_t len = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[len] = '\0';
  unsigned examples = 0;
  for (char *p = strstr(doc, "```json\n"); p; p = strstr(p, "```json\n")) {
    p += 8;
    char *end = strstr(p, "```");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    tabq_app *app = NULL;
    char name[32];
    snprintf(name, sizeof name, "example %u", ++examples);
    int rc = tabq_app_parse(p, (size_t)(end - p), name, &app, &err);
    if (rc)
      fprintf(stderr, "\n  %s: %s\n", name, err.message);
    CU_ASSERT_EQUAL(rc, TABQ_OK);
    tabq_app_free(app);
    p = end + 3;
  }
  CU_ASSERT_TRUE(examples >= 3);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"an app is read from its file", reads_an_app},
      {"handlers named in a file are bound by name", binds_handlers_by_name},
      {"a file written back reads back the same", writes_what_it_reads},
      {"a compiled-in table prints as a file that reads back", prints_a_compiled_in_table},
      {"an app built in C keeps the broker's rules and writes its file", builds_an_app_in_c},
      {"files are read from disk, and a missing one is TABQ_IO", reads_files},
      {"malformed files are refused with file, line, column, member and rule",
       refuses_malformed_files},
      {"the docs' examples read", reads_the_docs_examples},
      {"a table's retention is read, written back and set in C", carries_a_retention},
      {"deadlines are read and written back", reads_and_writes_deadlines},
      {"an app's schedules are read, written back and added in C", carries_schedules},
      {"an app's controls table is read, written back and set in C", carries_controls},
      {"an app's slots table and limits are read, written back and set in C",
       carries_concurrency_slots},
      CU_TEST_INFO_NULL,
  };
  static CU_SuiteInfo suites[] = {{"description files", NULL, NULL, NULL, NULL, tests},
                                  CU_SUITE_INFO_NULL};
  return CU_register_suites(suites);
}
