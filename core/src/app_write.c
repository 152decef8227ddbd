/* Writing an app or a table back as a description file (docs/description-files.md): what a
 * service compiled in, printed in the format tabq_app_load reads. Members at their defaults
 * are left out, so the file says only what the description sets. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "app_model.h"
#include "table.h"
#include "error.h"
#include "sized.h"

static const char *const type_names[] = {
    [TABQ_T_NULL] = "any",    [TABQ_T_INT] = "int",   [TABQ_T_TEXT] = "text",
    [TABQ_T_BYTES] = "bytes", [TABQ_T_TIME] = "time", [TABQ_T_JSON] = "json",
    [TABQ_T_REAL] = "real",
};

/* Each json_object_set_new below takes a new value; a NULL (out of memory) fails the set, and
 * the writer checks once at the end by the document's completeness flag. */
typedef struct writer {
  bool failed;
} writer;

static void put(writer *w, json_t *obj, const char *key, json_t *value) {
  if (!value || json_object_set_new(obj, key, value))
    w->failed = true;
}

static json_t *col_json(const tabq_col *c) {
  bool typed = c->type > 0 && (size_t)c->type < sizeof type_names / sizeof *type_names &&
               type_names[c->type];
  if (!c->generated && !typed)
    return json_string(c->name);
  json_t *o = json_object();
  if (!o)
    return NULL;
  writer w = {false};
  put(&w, o, "column", json_string(c->name));
  if (c->generated)
    put(&w, o, "generated", json_true());
  if (typed)
    put(&w, o, "type", json_string(type_names[c->type]));
  if (w.failed) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static const char *const clock_names[] = {"host", "database"};
static const char *const isolation_names[] = {"default", "read_uncommitted", "read_committed",
                                              "repeatable_read", "serializable"};
static const char *const mode_names[] = {"default", "deferred", "immediate", "exclusive"};

static void put_name(writer *w, json_t *o, const char *key, const char *const *names, size_t n,
                     unsigned value) {
  if (value && value < n)
    put(w, o, key, json_string(names[value]));
}

static void put_schema(writer *w, json_t *o, const char *text) {
  if (text)
    put(w, o, "payload_schema", json_loads(text, 0, NULL));
}

/* "retention": its members at their values, those at their defaults (0) left out. */
static void put_retention(writer *w, json_t *o, const tabq_retention_options *r) {
  if (!r)
    return;
  json_t *j = json_object();
  if (!j) {
    w->failed = true;
    return;
  }
  if (r->processed_age_ms)
    put(w, j, "processed_age_ms", json_integer(r->processed_age_ms));
  if (r->dead_letter_age_ms)
    put(w, j, "dead_letter_age_ms", json_integer(r->dead_letter_age_ms));
  if (r->batch)
    put(w, j, "batch", json_integer(r->batch));
  if (r->interval_ms)
    put(w, j, "interval_ms", json_integer(r->interval_ms));
  put(w, o, "retention", j);
}

static json_t *table_json(writer *w, const tabq_table *t, const char *schema,
                          const tabq_retention_options *retention) {
  const struct {
    const char *role;
    const tabq_col *col;
  } roles[] = {{"id", &t->id},
               {"group", &t->group},
               {"priority", &t->priority},
               {"partition_key", &t->partition_key},
               {"retry_after", &t->retry_after},
               {"attempt", &t->attempt},
               {"processed_at", &t->processed_at},
               {"locked_until", &t->locked_until},
               {"headers", &t->headers},
               {"payload", &t->payload},
               {"unique_key", &t->unique_key},
               {"cancelled_at", &t->cancelled_at}};
  json_t *o = json_object();
  if (!o)
    return NULL;
  put(w, o, "name", json_string(t->name));
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (roles[i].col->name)
      put(w, o, roles[i].role, col_json(roles[i].col));
  if (t->fifo)
    put(w, o, "fifo", json_true());
  if (t->advisory_lock)
    put(w, o, "advisory_lock", json_string(t->advisory_lock));
  put_name(w, o, "clock", clock_names, 2, t->clock);
  put_name(w, o, "isolation", isolation_names, 5, t->isolation);
  put_name(w, o, "sqlite_mode", mode_names, 4, t->mode);
  if (t->ndata) {
    json_t *data = json_array();
    for (size_t i = 0; data && i < t->ndata; i++)
      if (json_array_append_new(data, col_json(&t->data[i])))
        w->failed = true;
    put(w, o, "data", data);
  }
  json_t *events = NULL;
  const char *const *ev = tabq__event_sql(&t->events);
  for (size_t i = 0; tabq__event_names[i]; i++)
    if (ev[i]) {
      if (!events && !(events = json_object()))
        w->failed = true;
      else
        put(w, events, tabq__event_names[i], json_string(ev[i]));
    }
  if (events)
    put(w, o, "events", events);
  if (t->deadline_column)
    put(w, o, "deadline_column", json_string(t->deadline_column));
  put_schema(w, o, schema);
  put_retention(w, o, retention);
  return o;
}

static const char *const policy_names[] = {"drop", "retry_after", "dead_letter"};
static const char *const deadline_policy_names[] = {"retry_after", "dead_letter"};
static const char *const lookahead_names[] = {"adaptive", "off"};
static const char *const ack_mode_names[] = {"default", "alone"};

static json_t *sub_json(writer *w, const tabq_app *app, const tabq_app_sub *s) {
  const tabq_subscription_options *o = &s->o;
  json_t *j = json_object();
  if (!j)
    return NULL;
  if (s->route)
    put(w, j, "route", json_string(s->route));
  else
    put(w, j, "table", json_string(s->table->t.name));
  if (o->queue)
    put(w, j, "queue", json_string(o->queue));
  if (s->handler_name)
    put(w, j, "handler", json_string(s->handler_name));
  const struct {
    const char *key;
    unsigned value;
  } counts[] = {{"workers", o->workers},
                {"batch", s->batch || o->batch_handler ? (o->batch ? o->batch : 16) : 0},
                {"lease_s", o->lease_s},
                {"poll_interval_ms", o->poll_interval_ms},
                {"max_attempts", o->max_attempts},
                {"coalesce_window_us", o->coalesce_window_us},
                {"workers_by_key", o->workers_by_key},
                {"decode_retry_ms", o->decode_retry_ms},
                {"prefetch", o->prefetch},
                {"deadline_ms", (unsigned)o->deadline_ms}, /* at most seven days */
                {"deadline_retry_ms", o->deadline_retry_ms},
                {"concurrency_limit", o->concurrency_limit},
                {"lookahead_wait_ms", (unsigned)o->lookahead_wait_ms}}; /* at most a minute */
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
    if (counts[i].value)
      put(w, j, counts[i].key, json_integer(counts[i].value));
  if (o->dead_letter_group)
    put(w, j, "dead_letter_group", json_string(o->dead_letter_group));
  if (o->dead_letter_table)
    put(w, j, "dead_letter_table", json_string(o->dead_letter_table));
  if (o->concurrency_key)
    put(w, j, "concurrency_key", json_string(o->concurrency_key));
  if (o->coalesce_acks)
    put(w, j, "coalesce_acks", json_true());
  if (o->transactional)
    put(w, j, "transactional", json_true());
  if (o->codec)
    put(w, j, "codec", json_string(o->codec->name ? o->codec->name : "json"));
  put_name(w, j, "on_decode_failure", policy_names, 3, o->on_decode_failure);
  put_name(w, j, "on_deadline", deadline_policy_names, 2, o->on_deadline);
  put_name(w, j, "lookahead", lookahead_names, 2, o->lookahead);
  put_name(w, j, "acks", ack_mode_names, 2, o->acks);
  const char *queue = s->route ? s->route : o->queue;
  const tabq_app_schema *schema = queue ? tabq__app_schema_of(app, s->table->t.name, queue) : NULL;
  put_schema(w, j, schema ? schema->json : NULL);
  return j;
}

/* The document as text, indented, ending in a newline. */
static int dump(writer *w, json_t *doc, char **out, tabq_error *err) {
  char *text = w->failed || !doc ? NULL : json_dumps(doc, JSON_INDENT(2));
  json_decref(doc);
  size_t n = text ? strlen(text) : 0;
  char *with_newline = text ? realloc(text, n + 2) : NULL;
  if (!with_newline) {
    free(text);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "out of memory writing the description");
  }
  memcpy(with_newline + n, "\n", 2);
  *out = with_newline;
  return TABQ_OK;
}

int tabq_table_to_json(const tabq_table *table, char **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!table || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_table_to_json needs a table and an out");
  *out = NULL;
  tabq_table t;
  int rc = tabq__table_take(table, &t, err);
  if (rc)
    return rc;
  writer w = {false};
  return dump(&w, table_json(&w, &t, NULL, NULL), out, err);
}

/* A schedule as the file's "schedules" hold it: an interval as "every", anything else "cron". */
static json_t *sched_json(writer *w, const tabq_app_sched *s) {
  const tabq_schedule_options *o = &s->o;
  const tabq_message *m = &s->m;
  json_t *j = json_object();
  if (!j)
    return NULL;
  put(w, j, "name", json_string(o->name));
  put(w, j, "table", json_string(s->table->t.name));
  bool every = !strncmp(o->spec, "every ", 6);
  put(w, j, every ? "every" : "cron", json_string(every ? o->spec + 6 : o->spec));
  if (o->zone)
    put(w, j, "zone", json_string(o->zone));
  if (o->missed == TABQ_MISSED_CATCH_UP)
    put(w, j, "missed", json_string("catch-up"));
  if (o->lead_ms)
    put(w, j, "lead_ms", json_integer(o->lead_ms));
  if (m->group)
    put(w, j, "queue", json_string(m->group));
  if (m->partition_key)
    put(w, j, "partition_key", json_string(m->partition_key));
  if (m->payload)
    put(w, j, "payload", json_stringn(m->payload, m->payload_len));
  if (m->nheaders) {
    json_t *h = json_object();
    for (size_t i = 0; h && i < m->nheaders; i++)
      put(w, h, m->headers[i].name, json_string(m->headers[i].value));
    put(w, j, "headers", h);
  }
  return j;
}

int tabq_app_to_json(const tabq_app *app, char **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_app_to_json needs an app and an out");
  *out = NULL;
  writer w = {false};
  json_t *doc = json_object(), *tables = json_array(), *subs = json_array(), *routes = json_array();
  if (!doc || !tables || !subs || !routes)
    w.failed = true;
  if (doc) {
    put(&w, doc, "name", json_string(app->name));
    if (app->version)
      put(&w, doc, "version", json_string(app->version));
    if (app->description)
      put(&w, doc, "description", json_string(app->description));
  }
  for (size_t i = 0; tables && i < app->ntables; i++) {
    const tabq_table *t = &app->tables[i]->t;
    const tabq_app_schema *s = tabq__app_schema_of(app, t->name, NULL);
    const tabq_retention_options *ret =
        app->tables[i]->has_retention ? &app->tables[i]->retention : NULL;
    if (json_array_append_new(tables, table_json(&w, t, s ? s->json : NULL, ret)))
      w.failed = true;
  }
  for (size_t i = 0; routes && i < app->nroutes; i++) {
    const tabq_app_route *r = app->routes[i];
    json_t *j = json_object();
    if (j) {
      put(&w, j, "name", json_string(r->name));
      put(&w, j, "table", json_string(r->table->t.name));
      const tabq_app_schema *s = tabq__app_schema_of(app, r->table->t.name, r->name);
      put_schema(&w, j, s ? s->json : NULL);
    }
    if (json_array_append_new(routes, j))
      w.failed = true;
  }
  for (size_t i = 0; subs && i < app->nsubs; i++)
    if (json_array_append_new(subs, sub_json(&w, app, app->subs[i])))
      w.failed = true;
  if (!doc)
    json_decref(tables);
  else {
    put(&w, doc, "tables", tables);
    if (app->nroutes)
      put(&w, doc, "routes", json_incref(routes));
    if (app->nsubs)
      put(&w, doc, "subscriptions", json_incref(subs));
    if (app->nscheds) {
      json_t *scheds = json_array();
      for (size_t i = 0; scheds && i < app->nscheds; i++)
        if (json_array_append_new(scheds, sched_json(&w, app->scheds[i])))
          w.failed = true;
      put(&w, doc, "schedules", scheds);
    }
    if (app->controls) {
      const tabq_controls *c = app->controls;
      json_t *j = json_object();
      if (!j)
        w.failed = true;
      else {
        put(&w, j, "name", json_string(c->name));
        put(&w, j, "table_column", json_string(c->table_column));
        put(&w, j, "queue_column", json_string(c->queue_column));
        put(&w, j, "paused_column", json_string(c->paused_column));
        if (c->paused_at_column)
          put(&w, j, "paused_at_column", json_string(c->paused_at_column));
        put(&w, doc, "controls", j);
      }
    }
    if (app->conc_slots) {
      const tabq_concurrency_slots *c = app->conc_slots;
      json_t *j = json_object();
      if (!j)
        w.failed = true;
      else {
        put(&w, j, "name", json_string(c->name));
        put(&w, j, "key_column", json_string(c->key_column));
        put(&w, j, "holder_column", json_string(c->holder_column));
        put(&w, j, "expires_column", json_string(c->expires_column));
        if (c->ttl_ms)
          put(&w, j, "ttl_ms", json_integer(c->ttl_ms));
        put(&w, doc, "concurrency_slots", j);
      }
    }
  }
  json_decref(routes);
  json_decref(subs);
  return dump(&w, doc, out, err);
}
