/* The AsyncAPI 3.0 document of an app (tabq/asyncapi.h, docs/asyncapi.md): a channel per
 * queue, a receive operation per subscription, a send operation per route, a server per URL
 * (asyncapi_url.c). Built with jansson from the app alone. */
#include <tabq/asyncapi.h>

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_model.h"
#include "asyncapi_url.h"
#include "error.h"

/* One channel: the rows of a table (a queue of it where it has a group column), or the names a
 * prefix route takes. */
typedef struct chan {
  const tabq_table *t;
  const char *queue; /* the group's value, or the route's name for a prefix; NULL: the table */
  bool prefix;
  char *id;
  json_t *obj; /* a reference of its own; the document's channels hold another */
} chan;

typedef struct doc {
  const tabq_app *app;
  tabq_error *err;
  json_t *channels, *operations;
  chan *chans;
  size_t nchans;
  bool failed; /* out of memory somewhere: checked once at the end */
  int code;    /* a refusal (a payload schema that is not an object), with err filled */
} doc;

static void set(doc *d, json_t *obj, const char *key, json_t *value) {
  if (!obj || !value || json_object_set_new(obj, key, value))
    d->failed = true;
}

static void set_str(doc *d, json_t *obj, const char *key, const char *value) {
  set(d, obj, key, json_string(value));
}

/* ---- Names --------------------------------------------------------------------------------- */

/* A key of `map` made from `base`: the characters AsyncAPI's component names take (letters,
 * digits, '.', '-', '_'; any other byte becomes '_'), a prefix route's final '*' as "any", and
 * "_2", "_3" ... after a key already taken. NULL when out of memory. */
static char *unique_key(json_t *map, const char *base) {
  size_t n = strlen(base);
  bool star = n > 0 && base[n - 1] == '*';
  size_t len = n - star;
  char *key = malloc(len + 3 + 24 + 1);
  if (!key)
    return NULL;
  for (size_t i = 0; i < len; i++) {
    char c = base[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_';
    key[i] = ok ? c : '_';
  }
  strcpy(key + len, star ? "any" : "");
  if (!key[0])
    strcpy(key, "_");
  size_t stem = strlen(key);
  for (unsigned k = 2; json_object_get(map, key); k++)
    snprintf(key + stem, 24, "_%u", k);
  return key;
}

static char *ref(const char *a, const char *b, const char *c, const char *d) {
  size_t n = strlen(a) + strlen(b) + (c ? strlen(c) + strlen(d) : 0) + 1;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s%s%s%s", a, b, c ? c : "", c ? d : "");
  return s;
}

static json_t *ref_json(const char *path) {
  return path ? json_pack("{s:s}", "$ref", path) : NULL;
}

/* ---- Messages ------------------------------------------------------------------------------ */

/* A payload schema's text as a JSON object; NULL with d->code set when it is not one. */
static json_t *schema_json(doc *d, const tabq_table *t, const char *queue, const char *text) {
  json_error_t je;
  json_t *s = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (json_is_object(s))
    return s;
  json_decref(s);
  const char *why = s ? "" : je.text, *colon = s ? "" : ": ";
  if (queue)
    d->code = tabq__err_set(d->err, TABQ_DECLARATION, t->name, NULL,
                            "the payload schema of the queue %s of the table %s is not a JSON "
                            "object%s%s",
                            queue, t->name, colon, why);
  else
    d->code = tabq__err_set(d->err, TABQ_DECLARATION, t->name, NULL,
                            "the payload schema of the table %s is not a JSON object%s%s", t->name,
                            colon, why);
  return NULL;
}

/* The route that takes `name` as a publish would (tabq_route: the exact name, else the longest
 * prefix), when it leads to `t`; NULL when none does, or it leads elsewhere. */
static const char *route_taking(const tabq_app *app, const tabq_table *t, const char *name) {
  size_t best = SIZE_MAX, best_len = 0;
  for (size_t i = 0; i < tabq_app_route_count(app); i++) {
    const char *r = tabq_app_route_name(app, i);
    size_t len = strlen(r);
    if (!strcmp(r, name)) {
      best = i;
      break;
    }
    if (len && r[len - 1] == '*' && !strncmp(r, name, len - 1) &&
        (best == SIZE_MAX || len > best_len)) {
      best = i;
      best_len = len;
    }
  }
  if (best == SIZE_MAX || strcmp(tabq_app_route_table(app, best)->name, t->name))
    return NULL;
  return tabq_app_route_name(app, best);
}

/* The schema of a channel's payloads: the queue's own, else the route's that takes its
 * name, else the table's; NULL when the description gives none. A table without a group column
 * has no queues, only subscriptions' labels: the first label with a schema of its own gives it. */
static const tabq_app_schema *schema_of(const doc *d, const chan *c) {
  const char *table = c->t->name;
  const tabq_app_schema *s = c->queue ? tabq__app_schema_of(d->app, table, c->queue) : NULL;
  const char *route = c->queue && !c->prefix ? route_taking(d->app, c->t, c->queue) : NULL;
  if (!s && route)
    s = tabq__app_schema_of(d->app, table, route);
  for (size_t i = 0; !s && !c->t->group.name && i < tabq_app_subscription_count(d->app); i++) {
    const char *label = tabq_app_subscription_options(d->app, i)->queue;
    if (label && !strcmp(tabq_app_subscription_table(d->app, i)->name, table))
      s = tabq__app_schema_of(d->app, table, label);
  }
  return s ? s : tabq__app_schema_of(d->app, table, NULL);
}

/* Row mode: the data columns as the properties of an object, by their declared types. */
static json_t *row_schema(doc *d, const tabq_table *t) {
  json_t *o = json_object(), *props = json_object();
  set_str(d, o, "type", "object");
  for (size_t i = 0; i < t->ndata; i++) {
    const tabq_col *c = &t->data[i];
    json_t *p = json_object();
    switch (c->type) {
    case TABQ_T_INT:
      set_str(d, p, "type", "integer");
      break;
    case TABQ_T_REAL:
      set_str(d, p, "type", "number");
      break;
    case TABQ_T_TEXT:
      set_str(d, p, "type", "string");
      break;
    case TABQ_T_TIME:
      set_str(d, p, "description", "a time column");
      break;
    case TABQ_T_BYTES:
      set_str(d, p, "description", "a bytes column");
      break;
    case TABQ_T_JSON:
      set_str(d, p, "description", "a JSON column");
      break;
    default:
      break;
    }
    set(d, props, c->name, p);
  }
  set(d, o, "properties", props);
  set_str(d, o, "description", "Row mode: the handler reads these columns of the row.");
  return o;
}

static const char *content_type(const doc *d, const chan *c) {
  switch (c->t->payload.name ? c->t->payload.type : TABQ_T_NULL) {
  case TABQ_T_JSON:
    return "application/json";
  case TABQ_T_TEXT:
    return "text/plain";
  case TABQ_T_BYTES:
    return "application/octet-stream";
  default:
    break;
  }
  /* A subscription that decodes with the JSON codec says what its payloads are. */
  for (size_t i = 0; c->t->payload.name && i < tabq_app_subscription_count(d->app); i++) {
    const tabq_subscription_options *o = tabq_app_subscription_options(d->app, i);
    const char *q = tabq_app_subscription_route(d->app, i);
    q = q ? q : o->queue;
    if (!strcmp(tabq_app_subscription_table(d->app, i)->name, c->t->name) &&
        (!c->t->group.name || (q && c->queue && !strcmp(q, c->queue))) && o->codec &&
        o->codec->name && !strcmp(o->codec->name, "json"))
      return "application/json";
  }
  return NULL;
}

static json_t *message(doc *d, const chan *c) {
  json_t *m = json_object();
  set_str(d, m, "name", c->id);
  const char *type = content_type(d, c);
  if (type)
    set_str(d, m, "contentType", type);
  if (c->t->headers.name) {
    json_t *h =
        json_pack("{s:s, s:{s:s}}", "type", "object", "additionalProperties", "type", "string");
    char note[256];
    snprintf(note, sizeof note, "The headers column %s: a JSON object of string values.",
             c->t->headers.name);
    set_str(d, h, "description", note);
    set(d, m, "headers", h);
  }
  const tabq_app_schema *schema = schema_of(d, c);
  if (schema) {
    json_t *s = schema_json(d, c->t, schema->queue, schema->json);
    if (s)
      set(d, m, "payload", s);
  } else if (!c->t->payload.name && c->t->ndata)
    set(d, m, "payload", row_schema(d, c->t));
  if (c->t->payload.name)
    set_str(d, m, "x-tabq-payload-column", c->t->payload.name);
  return m;
}

/* ---- Channels ------------------------------------------------------------------------------ */

static const char *form_name(const tabq_table *t) {
  switch (tabq_table_form(t)) {
  case TABQ_FORM_LEASE:
    return "lease";
  case TABQ_FORM_ADVISORY:
    return "advisory";
  default:
    return "rowlock";
  }
}

/* A channel's address: the name a publish writes into the group column (a prefix's names as
 * "prefix{rest}"), the table's name for a table without one; null (unknown, in AsyncAPI's
 * words) for a name with braces, which an address would read as a parameter. */
static json_t *address(const chan *c) {
  const char *a = c->queue ? c->queue : c->t->name;
  if (strpbrk(a, "{}"))
    return json_null();
  if (!c->prefix)
    return json_string(a);
  size_t n = strlen(a) - 1;
  char *s = malloc(n + sizeof "{rest}");
  if (!s)
    return NULL;
  memcpy(s, a, n);
  strcpy(s + n, "{rest}");
  json_t *j = json_string(s);
  free(s);
  return j;
}

static void describe(doc *d, const chan *c, json_t *o) {
  char text[1024];
  const char *t = c->t->name, *g = c->t->group.name;
  if (!c->queue || !g)
    snprintf(text, sizeof text, "The rows of the table %s.", t);
  else if (c->prefix)
    snprintf(text, sizeof text,
             "The rows of the table %s whose %s starts with \"%.*s\": the names the route %s "
             "takes (an exact route or a longer prefix takes a name first).",
             t, g, (int)strlen(c->queue) - 1, c->queue, c->queue);
  else
    snprintf(text, sizeof text, "The rows of the table %s whose %s is \"%s\".", t, g, c->queue);
  set_str(d, o, "description", text);
}

/* The channel of (table, queue), made on first use. */
static chan *channel(doc *d, const tabq_table *t, const char *queue, bool prefix) {
  if (!t->group.name)
    queue = NULL; /* without a group column every subscription reads the whole table */
  for (size_t i = 0; i < d->nchans; i++) {
    chan *c = &d->chans[i];
    if (!strcmp(c->t->name, t->name) && c->prefix == prefix &&
        (c->queue && queue ? !strcmp(c->queue, queue) : c->queue == queue))
      return c;
  }
  chan *grown = realloc(d->chans, (d->nchans + 1) * sizeof *grown);
  if (!grown) {
    d->failed = true;
    return NULL;
  }
  d->chans = grown;
  chan *c = &d->chans[d->nchans];
  *c = (chan){t, queue, prefix, unique_key(d->channels, queue ? queue : t->name), json_object()};
  if (!c->id || !c->obj) {
    free(c->id);
    json_decref(c->obj);
    d->failed = true;
    return NULL;
  }
  d->nchans++;
  if (json_object_set(d->channels, c->id, c->obj))
    d->failed = true;
  set(d, c->obj, "address", address(c));
  describe(d, c, c->obj);
  if (prefix && json_is_string(json_object_get(c->obj, "address"))) {
    char note[512];
    snprintf(note, sizeof note, "The rest of the name after \"%.*s\": any text, also none.",
             (int)strlen(queue) - 1, queue);
    set(d, c->obj, "parameters", json_pack("{s:{s:s}}", "rest", "description", note));
  }
  set(d, c->obj, "messages", json_pack("{s:o}", c->id, message(d, c)));
  set_str(d, c->obj, "x-tabq-table", t->name);
  if (queue)
    set_str(d, c->obj, prefix ? "x-tabq-route" : "x-tabq-queue", queue);
  if (t->group.name)
    set_str(d, c->obj, "x-tabq-group-column", t->group.name);
  set_str(d, c->obj, "x-tabq-form", form_name(t));
  if (t->fifo)
    set(d, c->obj, "x-tabq-fifo", json_true());
  return c;
}

/* ---- Operations ---------------------------------------------------------------------------- */

static json_t *operation(doc *d, const chan *c, const char *action, const char *summary) {
  json_t *op = json_object();
  set_str(d, op, "action", action);
  char *to = ref("#/channels/", c->id, NULL, NULL);
  char *msg = ref("#/channels/", c->id, "/messages/", c->id);
  set(d, op, "channel", ref_json(to));
  set_str(d, op, "summary", summary);
  set(d, op, "messages", json_pack("[o]", ref_json(msg)));
  free(to);
  free(msg);
  return op;
}

static void add_operation(doc *d, const char *base, json_t *op) {
  char *id = unique_key(d->operations, base);
  if (id)
    set(d, d->operations, id, op);
  else {
    json_decref(op);
    d->failed = true;
  }
  free(id);
}

static void receive_op(doc *d, size_t i) {
  const tabq_table *t = tabq_app_subscription_table(d->app, i);
  const tabq_subscription_options *o = tabq_app_subscription_options(d->app, i);
  const char *route = tabq_app_subscription_route(d->app, i);
  const char *handler = tabq_app_subscription_handler(d->app, i);
  const char *queue = route ? route : o->queue;
  chan *c = channel(d, t, queue, false);
  if (!c)
    return;
  char summary[1024];
  snprintf(summary, sizeof summary, "%s%s handles the rows of %s%s%s.",
           handler ? "The handler " : "A handler", handler ? handler : "", c->t->name,
           c->queue ? " in the queue " : "", c->queue ? c->queue : "");
  json_t *op = operation(d, c, "receive", summary);
  if (handler)
    set_str(d, op, "x-tabq-handler", handler);
  if (route)
    set_str(d, op, "x-tabq-route", route);
  else if (queue && !t->group.name)
    set_str(d, op, "x-tabq-queue", queue); /* a label where the table has no group column */
  unsigned workers = o->workers_by_key ? o->workers_by_key : o->workers ? o->workers : 1;
  set(d, op, "x-tabq-workers", json_integer(workers));
  if (o->workers_by_key)
    set(d, op, "x-tabq-workers-by-key", json_true());
  if (o->batch_handler || d->app->subs[i]->batch)
    set(d, op, "x-tabq-batch", json_integer(o->batch ? o->batch : 16));
  if (o->max_attempts)
    set(d, op, "x-tabq-max-attempts", json_integer(o->max_attempts));
  if (o->dead_letter_group || o->dead_letter_table)
    set(d, op, "x-tabq-dead-letter",
        json_pack("{s:s}", o->dead_letter_group ? "group" : "table",
                  o->dead_letter_group ? o->dead_letter_group : o->dead_letter_table));
  add_operation(d, handler ? handler : queue ? queue : t->name, op);
}

static void send_op(doc *d, size_t i) {
  const char *name = tabq_app_route_name(d->app, i);
  size_t n = strlen(name);
  bool prefix = n > 0 && name[n - 1] == '*';
  chan *c = channel(d, tabq_app_route_table(d->app, i), name, prefix);
  if (!c)
    return;
  char summary[1024];
  if (prefix)
    snprintf(summary, sizeof summary,
             "Publishes by a name that starts with \"%.*s\" (tabq_publish_to), a row of %s.",
             (int)n - 1, name, c->t->name);
  else
    snprintf(summary, sizeof summary, "Publishes by the name %s (tabq_publish_to), a row of %s.",
             name, c->t->name);
  json_t *op = operation(d, c, "send", summary);
  set_str(d, op, "x-tabq-route", name);
  char *base = ref("publish_", name, NULL, NULL);
  add_operation(d, base ? base : "publish", op);
  free(base);
}

/* ---- The document -------------------------------------------------------------------------- */

static json_t *servers(doc *d, const char *const *urls, size_t nurls) {
  json_t *map = json_object();
  for (size_t i = 0; map && i < nurls && !d->code; i++) {
    json_t *server;
    char *base;
    d->code = tabq__asyncapi_server(urls[i], i, &server, &base, d->err);
    if (d->code)
      break;
    char *id = unique_key(map, base);
    if (id)
      set(d, map, id, server);
    else {
      json_decref(server);
      d->failed = true;
    }
    free(id);
    free(base);
  }
  if (!map)
    d->failed = true;
  return map;
}

static json_t *info(doc *d) {
  json_t *o = json_object();
  set_str(d, o, "title", tabq_app_name(d->app));
  const char *version = tabq_app_version(d->app);
  set_str(d, o, "version", version ? version : "0.0.0");
  if (tabq_app_description(d->app))
    set_str(d, o, "description", tabq_app_description(d->app));
  return o;
}

int tabq_asyncapi(const tabq_app *app, const char *const *urls, size_t nurls, char **out_json,
                  tabq_error *err) {
  tabq__err_clear(err);
  if (out_json)
    *out_json = NULL;
  if (!app || !out_json || (nurls && !urls))
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_asyncapi needs an app, the URLs it counts and an out");
  doc d = {app, err, json_object(), json_object(), NULL, 0, false, TABQ_OK};
  json_t *root = json_object();
  set_str(&d, root, "asyncapi", "3.0.0");
  set(&d, root, "info", info(&d));
  json_t *srv = servers(&d, urls, nurls);
  if (nurls)
    set(&d, root, "servers", srv);
  else
    json_decref(srv);
  for (size_t i = 0; !d.code && i < tabq_app_subscription_count(app); i++)
    receive_op(&d, i);
  for (size_t i = 0; !d.code && i < tabq_app_route_count(app); i++)
    send_op(&d, i);
  if (json_object_size(d.channels))
    set(&d, root, "channels", json_incref(d.channels));
  if (json_object_size(d.operations))
    set(&d, root, "operations", json_incref(d.operations));
  char *text = d.failed || d.code ? NULL : json_dumps(root, JSON_INDENT(2));
  json_decref(root);
  json_decref(d.channels);
  json_decref(d.operations);
  for (size_t i = 0; i < d.nchans; i++) {
    free(d.chans[i].id);
    json_decref(d.chans[i].obj);
  }
  free(d.chans);
  if (d.code)
    return d.code;
  size_t n = text ? strlen(text) : 0;
  char *doc_text = text ? realloc(text, n + 2) : NULL;
  if (!doc_text) {
    free(text);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL,
                         "out of memory writing the AsyncAPI document");
  }
  memcpy(doc_text + n, "\n", 2);
  *out_json = doc_text;
  return TABQ_OK;
}
