/* Reading a description file (docs/description-files.md) into an app. jansson parses the text;
 * each member is then read against the format, every refusal naming the file, the line and
 * column, the member's path ("tables[0].locked_until") and the rule, and the tables,
 * subscriptions and routes are added with the rules a broker applies (app.c), so a file that
 * reads is one a service can open. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_model.h"
#include "app_reader.h"
#include "error.h"
#include "table.h"

static const choice types[] = {
    {"any", TABQ_T_NULL},    {"int", TABQ_T_INT},   {"real", TABQ_T_REAL}, {"text", TABQ_T_TEXT},
    {"bytes", TABQ_T_BYTES}, {"time", TABQ_T_TIME}, {"json", TABQ_T_JSON}, {NULL, 0}};

/* A column: "name", or {"column": "name", "generated": true, "type": "int"}. */
static int read_col(reader *r, json_t *v, const char *what, tabq_col *out) {
  if (json_is_string(v)) {
    if (!json_string_length(v))
      return tabq__rd_fail(r, NULL, "%s names a column: the name is empty", what);
    return (out->name = tabq__app_strdup(r->app, json_string_value(v))) ? TABQ_OK
                                                                        : tabq__rd_no_memory(r);
  }
  if (!json_is_object(v))
    return tabq__rd_fail(r, NULL, "%s is a column name, or an object with \"column\"", what);
  static const char *const known[] = {"column", "generated", "type", NULL};
  int rc = tabq__rd_members_known(r, v, what, known);
  if (!rc)
    rc = tabq__rd_string(r, v, "column", true, &out->name);
  if (!rc)
    rc = tabq__rd_bool(r, v, "generated", &out->generated);
  if (!rc)
    rc = tabq__rd_choice(r, v, "type", types, &out->type);
  return rc;
}

static int read_role(reader *r, json_t *table, const char *role, tabq_col *out) {
  json_t *v = json_object_get(table, role);
  if (!v || json_is_null(v))
    return TABQ_OK;
  char what[64];
  snprintf(what, sizeof what, "the %s role", role);
  tabq__rd_enter(r, role, 0);
  int rc = read_col(r, v, what, out);
  tabq__rd_leave(r);
  return rc;
}

static int read_data(reader *r, json_t *table, tabq_table *t) {
  json_t *v = json_object_get(table, "data");
  if (!v)
    return TABQ_OK;
  if (!json_is_array(v) || !json_array_size(v))
    return tabq__rd_fail(r, "data", "\"data\" is a non-empty array of row mode columns");
  tabq_col *cols = tabq__app_alloc(r->app, json_array_size(v) * sizeof *cols);
  if (!cols)
    return tabq__rd_no_memory(r);
  tabq__rd_enter(r, "data", 0);
  int rc = TABQ_OK;
  size_t i;
  json_t *col;
  json_array_foreach(v, i, col) {
    tabq__rd_enter(r, NULL, i);
    rc = read_col(r, col, "a data column", &cols[i]);
    tabq__rd_leave(r);
    if (rc)
      break;
  }
  tabq__rd_leave(r);
  t->data = cols;
  t->ndata = json_array_size(v);
  return rc;
}

static int read_events(reader *r, json_t *table, tabq_events *e) {
  json_t *v = json_object_get(table, "events");
  if (!v)
    return TABQ_OK;
  int rc = tabq__rd_need_object(r, v, "events", "\"events\"");
  if (rc)
    return rc;
  tabq__rd_enter(r, "events", 0);
  rc = tabq__rd_members_known(r, v, "\"events\"", tabq__event_names);
  const char **slot = tabq__event_slots(e);
  for (size_t i = 0; !rc && tabq__event_names[i]; i++)
    rc = tabq__rd_string(r, v, tabq__event_names[i], false, &slot[i]);
  tabq__rd_leave(r);
  return rc;
}

static const char *const table_members[] = {
    "name",          "id",           "group",           "priority",
    "partition_key", "retry_after",  "attempt",         "processed_at",
    "locked_until",  "headers",      "payload",         "fifo",
    "advisory_lock", "clock",        "isolation",       "sqlite_mode",
    "data",          "events",       "payload_schema",  "unique_key",
    "retention",     "cancelled_at", "deadline_column", NULL};

static const choice clocks[] = {
    {"host", TABQ_CLOCK_HOST}, {"database", TABQ_CLOCK_DATABASE}, {NULL, 0}};
static const choice isolations[] = {{"default", TABQ_ISOLATION_DEFAULT},
                                    {"read_uncommitted", TABQ_ISOLATION_READ_UNCOMMITTED},
                                    {"read_committed", TABQ_ISOLATION_READ_COMMITTED},
                                    {"repeatable_read", TABQ_ISOLATION_REPEATABLE_READ},
                                    {"serializable", TABQ_ISOLATION_SERIALIZABLE},
                                    {NULL, 0}};
static const choice modes[] = {{"default", TABQ_SQLITE_MODE_DEFAULT},
                               {"deferred", TABQ_SQLITE_DEFERRED},
                               {"immediate", TABQ_SQLITE_IMMEDIATE},
                               {"exclusive", TABQ_SQLITE_EXCLUSIVE},
                               {NULL, 0}};

/* A payload schema: any JSON object, kept as compact text for the AsyncAPI document. */
static int read_schema(reader *r, json_t *obj, const char *table, const char *queue) {
  json_t *v = json_object_get(obj, "payload_schema");
  if (!v)
    return TABQ_OK;
  if (!json_is_object(v))
    return tabq__rd_fail(r, "payload_schema", "\"payload_schema\" is a JSON Schema object");
  char *text = json_dumps(v, JSON_COMPACT);
  if (!text)
    return tabq__rd_no_memory(r);
  int rc = tabq_app_set_payload_schema(r->app, table, queue, text, r->err);
  free(text);
  return rc ? tabq__rd_fail_rule(r, obj, "payload_schema") : TABQ_OK;
}

/* An age in ms: a whole number from 0 (kept) on. */
static int read_age(reader *r, json_t *obj, const char *key, int64_t *out) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return TABQ_OK;
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return tabq__rd_fail(r, key, "\"%s\" is a whole number of milliseconds, 0 or more", key);
  *out = (int64_t)json_integer_value(v);
  return TABQ_OK;
}

/* "retention": {"processed_age_ms", "dead_letter_age_ms", "batch", "interval_ms"}; the dead
 * letter destinations are the subscriptions' (checked once they are read: retention_destinations).
 */
static int read_retention(reader *r, json_t *table, const char *name) {
  json_t *v = json_object_get(table, "retention");
  if (!v)
    return TABQ_OK;
  int rc = tabq__rd_need_object(r, v, "retention", "\"retention\"");
  if (rc)
    return rc;
  static const char *const known[] = {"processed_age_ms", "dead_letter_age_ms", "batch",
                                      "interval_ms", NULL};
  tabq_retention_options o = TABQ_RETENTION_OPTIONS_INIT;
  tabq__rd_enter(r, "retention", 0);
  rc = tabq__rd_members_known(r, v, "\"retention\"", known);
  if (!rc)
    rc = read_age(r, v, "processed_age_ms", &o.processed_age_ms);
  if (!rc)
    rc = read_age(r, v, "dead_letter_age_ms", &o.dead_letter_age_ms);
  if (!rc)
    rc = tabq__rd_count(r, v, "batch", 100000, &o.batch);
  if (!rc)
    rc = tabq__rd_count(r, v, "interval_ms", 86400000, &o.interval_ms);
  if (!rc && tabq_app_set_retention(r->app, name, &o, r->err))
    rc = tabq__rd_fail_rule(r, v, NULL);
  tabq__rd_leave(r);
  return rc;
}

/* Each table that keeps dead letters for an age has a subscription that dead-letters into a
 * group or a table: else nothing would ever be deleted, and the file is refused. */
static int retention_destinations(reader *r) {
  for (size_t i = 0; i < r->app->ntables; i++) {
    const tabq_table *t = &r->app->tables[i]->t;
    const tabq_retention_options *o = tabq_app_retention(r->app, t->name);
    if (!o || !o->dead_letter_age_ms)
      continue;
    bool found = false;
    for (size_t k = 0; k < r->app->nsubs && !found; k++)
      found = tabq_app_subscription_table(r->app, k) == t &&
              (tabq_app_subscription_options(r->app, k)->dead_letter_group ||
               tabq_app_subscription_options(r->app, k)->dead_letter_table);
    if (found)
      continue;
    r->table = t->name;
    tabq__rd_enter(r, "tables", 0);
    tabq__rd_enter(r, NULL, i);
    tabq__rd_enter(r, "retention", 0);
    int rc =
        tabq__rd_fail(r, "dead_letter_age_ms",
                      "table %s: retention: dead_letter_age_ms needs a dead letter destination: no "
                      "subscription to the table has a dead_letter_group or dead_letter_table",
                      t->name);
    r->depth -= 3;
    r->table = NULL;
    return rc;
  }
  return TABQ_OK;
}

static int read_table(reader *r, json_t *obj, tabq_table *t) {
  static const char *const roles[] = {"id",          "group",   "priority",     "partition_key",
                                      "retry_after", "attempt", "processed_at", "locked_until",
                                      "headers",     "payload", "unique_key",   "cancelled_at"};
  tabq_col *cols[] = {&t->id,          &t->group,   &t->priority,     &t->partition_key,
                      &t->retry_after, &t->attempt, &t->processed_at, &t->locked_until,
                      &t->headers,     &t->payload, &t->unique_key,   &t->cancelled_at};
  int rc = tabq__rd_need_object(r, obj, NULL, "a table");
  if (!rc)
    rc = tabq__rd_members_known(r, obj, "a table", table_members);
  if (!rc)
    rc = tabq__rd_string(r, obj, "name", true, &t->name);
  if (rc)
    return rc;
  r->table = t->name;
  if (!json_object_get(obj, "id"))
    return tabq__rd_fail(r, NULL, "table %s: \"id\" is required (R-DESC-1, id required)", t->name);
  for (size_t i = 0; !rc && i < sizeof roles / sizeof roles[0]; i++)
    rc = read_role(r, obj, roles[i], cols[i]);
  if (!rc)
    rc = tabq__rd_bool(r, obj, "fifo", &t->fifo);
  if (!rc)
    rc = tabq__rd_string(r, obj, "advisory_lock", false, &t->advisory_lock);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "clock", clocks, (int *)&t->clock);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "isolation", isolations, (int *)&t->isolation);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "sqlite_mode", modes, (int *)&t->mode);
  if (!rc)
    rc = read_data(r, obj, t);
  if (!rc)
    rc = read_events(r, obj, &t->events);
  if (!rc)
    rc = tabq__rd_string(r, obj, "deadline_column", false, &t->deadline_column);
  if (!rc && tabq__table_rules(t, r->err))
    rc = tabq__rd_fail_rule(r, obj, tabq__table_rule_member(r->err));
  return rc;
}

static int read_tables(reader *r, json_t *doc) {
  json_t *tables = json_object_get(doc, "tables");
  if (!json_is_array(tables) || !json_array_size(tables))
    return tabq__rd_fail(r, "tables", "\"tables\" is a non-empty array of table descriptions");
  tabq__rd_enter(r, "tables", 0);
  int rc = TABQ_OK;
  size_t i;
  json_t *obj;
  json_array_foreach(tables, i, obj) {
    tabq__rd_enter(r, NULL, i);
    tabq_table t = {.size = sizeof t};
    rc = read_table(r, obj, &t);
    if (!rc && tabq_app_add_table(r->app, &t, r->err))
      rc = tabq__rd_fail_rule(r, obj, "name");
    if (!rc)
      rc = read_schema(r, obj, t.name, NULL);
    if (!rc)
      rc = read_retention(r, obj, t.name);
    r->table = NULL;
    tabq__rd_leave(r);
    if (rc)
      break;
  }
  tabq__rd_leave(r);
  return rc;
}

static int read_route(reader *r, json_t *obj) {
  static const char *const known[] = {"name", "table", "payload_schema", NULL};
  const char *name = NULL, *table = NULL;
  int rc = tabq__rd_need_object(r, obj, NULL, "a route");
  if (!rc)
    rc = tabq__rd_members_known(r, obj, "a route", known);
  if (!rc)
    rc = tabq__rd_string(r, obj, "name", true, &name);
  if (!rc)
    rc = tabq__rd_string(r, obj, "table", true, &table);
  if (!rc && tabq_app_add_route(r->app, name, table, r->err))
    rc = tabq__rd_fail_rule(r, obj, strstr(r->err->message, "table") ? "table" : "name");
  if (!rc)
    rc = read_schema(r, obj, table, name);
  return rc;
}

static const char *const sub_members[] = {"table",
                                          "route",
                                          "queue",
                                          "handler",
                                          "workers",
                                          "batch",
                                          "lease_s",
                                          "poll_interval_ms",
                                          "max_attempts",
                                          "dead_letter_group",
                                          "dead_letter_table",
                                          "coalesce_acks",
                                          "coalesce_window_us",
                                          "transactional",
                                          "workers_by_key",
                                          "codec",
                                          "on_decode_failure",
                                          "decode_retry_ms",
                                          "prefetch",
                                          "lookahead",
                                          "lookahead_wait_ms",
                                          "acks",
                                          "deadline_ms",
                                          "on_deadline",
                                          "deadline_retry_ms",
                                          "payload_schema",
                                          "concurrency_key",
                                          "concurrency_limit",
                                          NULL};

static const choice policies[] = {{"drop", TABQ_DECODE_DROP},
                                  {"retry_after", TABQ_DECODE_RETRY_AFTER},
                                  {"dead_letter", TABQ_DECODE_DEAD_LETTER},
                                  {NULL, 0}};
static const choice deadline_policies[] = {{"retry_after", TABQ_DEADLINE_RETRY_AFTER},
                                           {"dead_letter", TABQ_DEADLINE_DEAD_LETTER},
                                           {NULL, 0}};

static const choice lookaheads[] = {
    {"adaptive", TABQ_LOOKAHEAD_ADAPTIVE}, {"off", TABQ_LOOKAHEAD_OFF}, {NULL, 0}};

static const choice ack_modes[] = {
    {"default", TABQ_ACKS_DEFAULT}, {"alone", TABQ_ACKS_ALONE}, {NULL, 0}};

static int read_options(reader *r, json_t *obj, tabq_subscription_options *o) {
  const struct {
    const char *key;
    unsigned max, *out;
  } counts[] = {{"workers", 1000, &o->workers},
                {"batch", 10000, &o->batch},
                {"lease_s", 86400, &o->lease_s},
                {"poll_interval_ms", 3600000, &o->poll_interval_ms},
                {"max_attempts", 1000000, &o->max_attempts},
                {"coalesce_window_us", 1000000, &o->coalesce_window_us},
                {"workers_by_key", 1000, &o->workers_by_key},
                {"decode_retry_ms", 86400000, &o->decode_retry_ms},
                {"prefetch", 1000, &o->prefetch},
                {"deadline_retry_ms", 86400000, &o->deadline_retry_ms},
                {"concurrency_limit", 32, &o->concurrency_limit}};
  int rc = TABQ_OK;
  for (size_t i = 0; !rc && i < sizeof counts / sizeof counts[0]; i++)
    rc = tabq__rd_count(r, obj, counts[i].key, counts[i].max, counts[i].out);
  unsigned deadline_ms = 0;
  if (!rc && !(rc = tabq__rd_count(r, obj, "deadline_ms", 604800000, &deadline_ms)))
    o->deadline_ms = deadline_ms;
  unsigned wait_ms = 0;
  if (!rc && !(rc = tabq__rd_count(r, obj, "lookahead_wait_ms", 60000, &wait_ms)))
    o->lookahead_wait_ms = wait_ms;
  if (!rc)
    rc = tabq__rd_string(r, obj, "queue", false, &o->queue);
  if (!rc)
    rc = tabq__rd_string(r, obj, "dead_letter_group", false, &o->dead_letter_group);
  if (!rc)
    rc = tabq__rd_string(r, obj, "dead_letter_table", false, &o->dead_letter_table);
  if (!rc)
    rc = tabq__rd_string(r, obj, "concurrency_key", false, &o->concurrency_key);
  if (!rc)
    rc = tabq__rd_bool(r, obj, "coalesce_acks", &o->coalesce_acks);
  if (!rc)
    rc = tabq__rd_bool(r, obj, "transactional", &o->transactional);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "on_decode_failure", policies, (int *)&o->on_decode_failure);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "on_deadline", deadline_policies, (int *)&o->on_deadline);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "lookahead", lookaheads, (int *)&o->lookahead);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "acks", ack_modes, (int *)&o->acks);
  const char *codec = NULL;
  if (!rc)
    rc = tabq__rd_string(r, obj, "codec", false, &codec);
  if (!rc && codec && strcmp(codec, "json"))
    rc = tabq__rd_fail(
        r, "codec",
        "\"codec\" is \"json\", the one codec built in (a codec of the service's own is set "
        "in C)");
  o->codec = codec ? tabq_json_codec() : NULL;
  return rc;
}

static int read_sub(reader *r, json_t *obj) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  const char *table = NULL, *route = NULL, *handler = NULL;
  int rc = tabq__rd_need_object(r, obj, NULL, "a subscription");
  if (!rc)
    rc = tabq__rd_members_known(r, obj, "a subscription", sub_members);
  if (!rc)
    rc = tabq__rd_string(r, obj, "table", false, &table);
  if (!rc)
    rc = tabq__rd_string(r, obj, "route", false, &route);
  if (!rc && !table == !route)
    rc = tabq__rd_fail(
        r, table ? "route" : NULL,
        "a subscription reads a \"table\" (with its queue) or a \"route\" by name: give "
        "exactly one");
  if (!rc)
    rc = tabq__rd_string(r, obj, "handler", false, &handler);
  if (!rc)
    rc = read_options(r, obj, &o);
  if (rc)
    return rc;
  r->table = table;
  /* The handler a file names defaults to the queue's name (or the route's, or the table's). */
  if (!handler)
    handler = route ? route : o.queue ? o.queue : table;
  bool batch = o.batch > 0;
  if (tabq__app_add_sub(r->app, table, route, &o, handler, batch, r->err))
    return tabq__rd_fail_rule(r, obj, NULL);
  const tabq_table *t = tabq_app_subscription_table(r->app, r->app->nsubs - 1);
  return read_schema(r, obj, t->name, route ? route : o.queue);
}

static const choice missed_policies[] = {
    {"skip", TABQ_MISSED_SKIP}, {"catch-up", TABQ_MISSED_CATCH_UP}, {NULL, 0}};

/* A schedule's "headers": an object of string values. */
static int read_headers(reader *r, json_t *obj, tabq_header *out, size_t cap, size_t *n) {
  json_t *h = json_object_get(obj, "headers");
  *n = 0;
  if (!h)
    return TABQ_OK;
  if (!json_is_object(h) || json_object_size(h) > cap)
    return tabq__rd_fail(r, "headers", "\"headers\" is an object of at most %zu string values",
                         cap);
  const char *key;
  json_t *v;
  json_object_foreach(h, key, v) {
    if (!json_is_string(v)) {
      tabq__rd_enter(r, "headers", 0);
      int rc = tabq__rd_fail(r, key, "a header's value is a string");
      tabq__rd_leave(r);
      return rc;
    }
    out[*n].name = key;
    out[(*n)++].value = json_string_value(v);
  }
  return TABQ_OK;
}

/* "schedules": [{"name", "table", "cron" or "every", "zone", "missed", "lead_ms", "queue",
 * "payload", "partition_key", "headers"}] (docs/schedule.md). */
static int read_schedule(reader *r, json_t *obj) {
  static const char *const known[] = {"name",    "table",   "cron",          "every",
                                      "zone",    "missed",  "lead_ms",       "queue",
                                      "payload", "headers", "partition_key", NULL};
  tabq_schedule_options o = TABQ_SCHEDULE_OPTIONS_INIT;
  tabq_message m = TABQ_MESSAGE_INIT;
  tabq_header headers[64];
  const char *table = NULL, *cron = NULL, *every = NULL, *payload = NULL;
  int rc = tabq__rd_need_object(r, obj, NULL, "a schedule");
  if (!rc)
    rc = tabq__rd_members_known(r, obj, "a schedule", known);
  if (!rc)
    rc = tabq__rd_string(r, obj, "name", true, &o.name);
  if (!rc)
    rc = tabq__rd_string(r, obj, "table", true, &table);
  if (!rc)
    rc = tabq__rd_string(r, obj, "cron", false, &cron);
  if (!rc)
    rc = tabq__rd_string(r, obj, "every", false, &every);
  if (!rc && !cron == !every)
    rc =
        tabq__rd_fail(r, cron ? "every" : NULL,
                      "a schedule's slots are a \"cron\" expression or an \"every\" interval: give "
                      "exactly one");
  if (!rc)
    rc = tabq__rd_string(r, obj, "zone", false, &o.zone);
  if (!rc)
    rc = tabq__rd_choice(r, obj, "missed", missed_policies, (int *)&o.missed);
  if (!rc)
    rc = tabq__rd_count(r, obj, "lead_ms", 3600000, &o.lead_ms);
  if (!rc)
    rc = tabq__rd_string(r, obj, "queue", false, &m.group);
  if (!rc)
    rc = tabq__rd_string(r, obj, "partition_key", false, &m.partition_key);
  if (!rc)
    rc = tabq__rd_string(r, obj, "payload", false, &payload);
  if (!rc)
    rc = read_headers(r, obj, headers, sizeof headers / sizeof headers[0], &m.nheaders);
  if (rc)
    return rc;
  char spec[512];
  snprintf(spec, sizeof spec, "%s%s", cron ? "" : "every ", cron ? cron : every);
  o.spec = spec;
  m.payload = payload;
  m.payload_len = payload ? strlen(payload) : 0;
  m.headers = headers;
  o.message = &m;
  r->table = table;
  if (tabq_app_add_schedule(r->app, table, &o, r->err)) {
    const char *said = r->err->message;
    const char *member = strstr(said, "spec") || strstr(said, "interval")
                             ? (cron ? "cron" : "every")
                         : strstr(said, "zone")                                    ? "zone"
                         : strstr(said, "catch-up")                                ? "missed"
                         : strstr(said, "schedule name") || strstr(said, "a name") ? "name"
                         : strstr(said, "header")                                  ? "headers"
                         : strstr(said, "partition")                               ? "partition_key"
                         : strstr(said, "group")                                   ? "queue"
                                                                                   : "table";
    return tabq__rd_fail_rule(r, obj, member);
  }
  return TABQ_OK;
}

/* "controls": {"name", "table_column", "queue_column", "paused_column", "paused_at_column"}: the
 * controls table pauses are written in (tabq/controls.h, docs/pause.md). */
static int read_controls(reader *r, json_t *doc) {
  json_t *v = json_object_get(doc, "controls");
  if (!v)
    return TABQ_OK;
  int rc = tabq__rd_need_object(r, v, "controls", "\"controls\"");
  if (rc)
    return rc;
  static const char *const known[] = {"name",          "table_column",     "queue_column",
                                      "paused_column", "paused_at_column", NULL};
  tabq_controls c = TABQ_CONTROLS_INIT;
  tabq__rd_enter(r, "controls", 0);
  rc = tabq__rd_members_known(r, v, "\"controls\"", known);
  if (!rc)
    rc = tabq__rd_string(r, v, "name", true, &c.name);
  if (!rc)
    rc = tabq__rd_string(r, v, "table_column", true, &c.table_column);
  if (!rc)
    rc = tabq__rd_string(r, v, "queue_column", true, &c.queue_column);
  if (!rc)
    rc = tabq__rd_string(r, v, "paused_column", true, &c.paused_column);
  if (!rc)
    rc = tabq__rd_string(r, v, "paused_at_column", false, &c.paused_at_column);
  if (!rc && tabq_app_set_controls(r->app, &c, r->err))
    rc = tabq__rd_fail_rule(r, v, NULL);
  tabq__rd_leave(r);
  return rc;
}

/* "concurrency_slots": {"name", "key_column", "holder_column", "expires_column", "ttl_ms"}: the
 * slots table concurrency limits take their slots in (tabq/concurrency.h, docs/concurrency.md). */
static int read_conc_slots(reader *r, json_t *doc) {
  json_t *v = json_object_get(doc, "concurrency_slots");
  if (!v)
    return TABQ_OK;
  int rc = tabq__rd_need_object(r, v, "concurrency_slots", "\"concurrency_slots\"");
  if (rc)
    return rc;
  static const char *const known[] = {"name",           "key_column", "holder_column",
                                      "expires_column", "ttl_ms",     NULL};
  tabq_concurrency_slots c = TABQ_CONCURRENCY_SLOTS_INIT;
  tabq__rd_enter(r, "concurrency_slots", 0);
  rc = tabq__rd_members_known(r, v, "\"concurrency_slots\"", known);
  if (!rc)
    rc = tabq__rd_string(r, v, "name", true, &c.name);
  if (!rc)
    rc = tabq__rd_string(r, v, "key_column", true, &c.key_column);
  if (!rc)
    rc = tabq__rd_string(r, v, "holder_column", true, &c.holder_column);
  if (!rc)
    rc = tabq__rd_string(r, v, "expires_column", true, &c.expires_column);
  if (!rc)
    rc = tabq__rd_count(r, v, "ttl_ms", 86400000, &c.ttl_ms);
  if (!rc && tabq_app_set_concurrency_slots(r->app, &c, r->err))
    rc = tabq__rd_fail_rule(r, v, NULL);
  tabq__rd_leave(r);
  return rc;
}

static int read_list(reader *r, json_t *doc, const char *key, int (*read)(reader *, json_t *)) {
  json_t *list = json_object_get(doc, key);
  if (!list)
    return TABQ_OK;
  if (!json_is_array(list))
    return tabq__rd_fail(r, key, "\"%s\" is an array", key);
  tabq__rd_enter(r, key, 0);
  int rc = TABQ_OK;
  size_t i;
  json_t *obj;
  json_array_foreach(list, i, obj) {
    tabq__rd_enter(r, NULL, i);
    rc = read(r, obj);
    r->table = NULL;
    tabq__rd_leave(r);
    if (rc)
      break;
  }
  tabq__rd_leave(r);
  return rc;
}

static int read_app(reader *r, json_t *doc) {
  static const char *const known[] = {
      "$schema", "name",      "version",  "description",       "tables", "subscriptions",
      "routes",  "schedules", "controls", "concurrency_slots", NULL};
  int rc = tabq__rd_members_known(r, doc, "an app", known);
  const char *schema = NULL, *description = NULL;
  if (!rc)
    rc = tabq__rd_string(r, doc, "$schema", false, &schema);
  if (!rc)
    rc = tabq__rd_string(r, doc, "name", true, &r->app->name);
  if (!rc)
    rc = tabq__rd_string(r, doc, "version", false, &r->app->version);
  if (!rc)
    rc = tabq__rd_string(r, doc, "description", false, &description);
  r->app->description = description;
  if (!rc)
    rc = read_tables(r, doc);
  if (!rc)
    rc = read_list(r, doc, "routes", read_route);
  if (!rc)
    rc = read_list(r, doc, "subscriptions", read_sub);
  if (!rc)
    rc = retention_destinations(r);
  if (!rc)
    rc = read_list(r, doc, "schedules", read_schedule);
  if (!rc)
    rc = read_controls(r, doc);
  if (!rc)
    rc = read_conc_slots(r, doc);
  return rc;
}

/* A file of one table: an app of that table alone, named after it. */
static int read_one_table(reader *r, json_t *doc) {
  static const char *const app_only[] = {
      "tables",   "subscriptions",     "routes", "version", "schedules",
      "controls", "concurrency_slots", NULL};
  for (const char *const *k = app_only; *k; k++)
    if (json_object_get(doc, *k))
      return tabq__rd_fail(
          r, *k,
          "a file holds one table (an object with \"id\") or an app (with \"tables\"), "
          "not both");
  tabq_table t = {.size = sizeof t};
  int rc = read_table(r, doc, &t);
  if (!rc && tabq_app_add_table(r->app, &t, r->err))
    rc = tabq__rd_fail_rule(r, doc, NULL);
  if (!rc)
    rc = read_schema(r, doc, t.name, NULL);
  if (!rc)
    rc = read_retention(r, doc, t.name);
  r->app->name = t.name;
  return rc;
}

/* Parses the text with jansson and refuses what it cannot read, at jansson's position. */
static json_t *parse(reader *r) {
  json_error_t jerr;
  json_t *doc = json_loadb(r->text, r->len, JSON_REJECT_DUPLICATES, &jerr);
  if (!doc) {
    bool nul = strstr(jerr.text, "JSON_ALLOW_NUL") != NULL; /* the text names a parser flag */
    tabq__err_set(r->err, TABQ_DECLARATION, NULL, NULL, "%s:%d:%d: not a JSON document: %s",
                  r->file, jerr.line < 1 ? 1 : jerr.line, jerr.column < 1 ? 1 : jerr.column,
                  nul ? "a string holds \\u0000 (NUL), which no name or statement may" : jerr.text);
    return NULL;
  }
  if (!json_is_object(doc)) {
    tabq__rd_fail(r, NULL, "a description file holds one JSON object (an app or a table)");
    json_decref(doc);
    return NULL;
  }
  return doc;
}

int tabq_app_parse(const char *text, size_t len, const char *file, tabq_app **out,
                   tabq_error *err) {
  tabq__err_clear(err);
  if (!out || (!text && len))
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_app_parse needs text and an out");
  *out = NULL;
  tabq_app *app = calloc(1, sizeof *app);
  if (!app)
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "out of memory");
  reader r = {
      .text = text ? text : "", .len = len, .file = file ? file : "<text>", .app = app, .err = err};
  json_t *doc = parse(&r);
  int rc = !doc                         ? (int)err->code
           : json_object_get(doc, "id") ? read_one_table(&r, doc)
                                        : read_app(&r, doc);
  json_decref(doc);
  if (rc) {
    tabq_app_free(app);
    return rc;
  }
  *out = app;
  return TABQ_OK;
}

int tabq_app_load(const char *path, tabq_app **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!path || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_app_load needs a path and an out");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return tabq__err_set(err, TABQ_IO, NULL, NULL, "%s: cannot read it: %s", path, strerror(errno));
  char *text = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[8192];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n > cap) {
      cap = (len + n) * 2;
      char *grown = realloc(text, cap);
      if (!grown) {
        free(text);
        fclose(f);
        return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "%s: out of memory reading it", path);
      }
      text = grown;
    }
    memcpy(text + len, chunk, n);
    len += n;
  }
  bool failed = ferror(f);
  fclose(f);
  int rc = failed ? tabq__err_set(err, TABQ_IO, NULL, NULL, "%s: reading it failed", path)
                  : tabq_app_parse(text, len, path, out, err);
  free(text);
  return rc;
}

/* One table alone, owned by an app of its own behind it. */
typedef struct owned_table {
  tabq_table t; /* first: tabq_table_free finds the app from the table */
  tabq_app *app;
} owned_table;

int tabq_table_parse(const char *text, size_t len, const char *file, tabq_table **out,
                     tabq_error *err) {
  if (!out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_table_parse needs an out");
  *out = NULL;
  tabq_app *app;
  int rc = tabq_app_parse(text, len, file, &app, err);
  if (rc)
    return rc;
  if (app->ntables != 1 || app->nsubs || app->nroutes) {
    tabq_app_free(app);
    return tabq__err_set(err, TABQ_DECLARATION, NULL, NULL,
                         "%s: holds an app; tabq_table_parse reads one table (an object with "
                         "\"id\")",
                         file ? file : "<text>");
  }
  owned_table *o = tabq__app_alloc(app, sizeof *o);
  if (!o) {
    tabq_app_free(app);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "out of memory");
  }
  o->t = app->tables[0]->t;
  o->app = app;
  *out = &o->t;
  return TABQ_OK;
}

void tabq_table_free(tabq_table *table) {
  if (table)
    tabq_app_free(((owned_table *)table)->app);
}
