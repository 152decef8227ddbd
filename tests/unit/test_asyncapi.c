/* The AsyncAPI document (tabq/asyncapi.h, docs/asyncapi.md) from the C API, without a database:
 * a server for every form of URL the plugins read and nothing of a URL but where its server is;
 * URLs refused without their text; channels, operations and messages of apps built in C; payload
 * schemas chosen and refused. The official parser validates documents in asyncapi_documents. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/asyncapi.h>

#include "cunit_main.h"

static tabq_error err;

/* The document of `app` for `n` URLs, parsed (NULL when refused); its text in *text. */
static json_t *document(const tabq_app *app, const char *const *urls, size_t n, char **text) {
  char *out = NULL;
  if (tabq_asyncapi(app, urls, n, &out, &err)) {
    *text = NULL;
    return NULL;
  }
  json_error_t je;
  json_t *doc = json_loads(out, 0, &je);
  CU_ASSERT_PTR_NOT_NULL(doc);
  CU_ASSERT(strlen(out) > 0 && out[strlen(out) - 1] == '\n');
  *text = out;
  return doc;
}

static const char *str_at(json_t *doc, const char *path) {
  json_t *v = doc;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", path);
  for (char *save, *k = strtok_r(copy, "/", &save); k && v; k = strtok_r(NULL, "/", &save))
    v = json_is_array(v) ? json_array_get(v, (size_t)atoi(k)) : json_object_get(v, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The string at `path` is `want`; else says what is there. */
#define EXPECT_STR(doc, path, want)                                                                \
  do {                                                                                             \
    const char *got_ = str_at((doc), (path));                                                      \
    if (!got_ || strcmp(got_, (want)))                                                             \
      fprintf(stderr, "\n  %s: \"%s\", not \"%s\"\n", (path), got_ ? got_ : "(none)", (want));     \
    CU_ASSERT(got_ && !strcmp(got_, (want)));                                                      \
  } while (0)

static json_t *at(json_t *doc, const char *path) {
  json_t *v = doc;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", path);
  for (char *save, *k = strtok_r(copy, "/", &save); k && v; k = strtok_r(NULL, "/", &save))
    v = json_is_array(v) ? json_array_get(v, (size_t)atoi(k)) : json_object_get(v, k);
  return v;
}

static tabq_app *empty_app(void) {
  tabq_app *app = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_new("unit", NULL, &app, &err), TABQ_OK);
  return app;
}

/* ---- Servers ------------------------------------------------------------------------------- */

typedef struct url_case {
  const char *url, *id, *protocol, *host, *pathname; /* pathname NULL: none */
  const char *never[4];                              /* texts the document must not hold */
} url_case;

static const url_case url_cases[] = {
    {"postgresql://svc:pw-A1@db.example.com:5433/orders?sslmode=require",
     "postgresql",
     "postgresql",
     "db.example.com:5433",
     "/orders",
     {"pw-A1", "svc", "sslmode"}},
    {"postgres://svc@db.example.com/orders",
     "postgresql",
     "postgresql",
     "db.example.com",
     "/orders",
     {"svc@"}},
    {"postgres://svc:pw-A2@[2001:db8::1]:6432/orders?password=pw-A2",
     "postgresql",
     "postgresql",
     "[2001:db8::1]:6432",
     "/orders",
     {"pw-A2", "svc"}},
    {"postgresql://h1.example.com,h2.example.com:5433/orders",
     "postgresql",
     "postgresql",
     "h1.example.com,h2.example.com:5433",
     "/orders",
     {NULL}},
    {"postgresql://h1.example.com,h2.example.com/orders?port=7000",
     "postgresql",
     "postgresql",
     "h1.example.com:7000,h2.example.com:7000",
     "/orders",
     {NULL}},
    {"postgresql:///orders?host=%2Fvar%2Frun%2Fpg-secret",
     "postgresql",
     "postgresql",
     "localhost",
     "/orders",
     {"/var", "pg-secret"}},
    {"postgresql://%2Ftmp%2Fpg-secret/orders",
     "postgresql",
     "postgresql",
     "localhost",
     "/orders",
     {"pg-secret", "/tmp"}},
    {"postgresql://", "postgresql", "postgresql", "localhost", NULL, {NULL}},
    {"postgresql://ignored.example.com/orders?host=real.example.com&dbname=other",
     "postgresql",
     "postgresql",
     "real.example.com",
     "/other",
     {"ignored"}},
    {"postgresql://?hostaddr=10.1.2.3&port=5439",
     "postgresql",
     "postgresql",
     "10.1.2.3:5439",
     NULL,
     {NULL}},
    {"postgres:host=db.internal port=6543 dbname=orders user=svc password='pw A3'",
     "postgresql",
     "postgresql",
     "db.internal:6543",
     "/orders",
     {"pw A3", "svc", "pw"}},
    {"postgres:dbname='my orders' password=pw\\ A4 host=a,b port=1,2",
     "postgresql",
     "postgresql",
     "a:1,b:2",
     "/my%20orders",
     {"pw", "A4"}},
    {"postgresql:host=/run/pg-secret",
     "postgresql",
     "postgresql",
     "localhost",
     NULL,
     {"pg-secret"}},
    {"postgres:dbname=postgresql://svc:pw-A5@h/db",
     "postgresql",
     "postgresql",
     "localhost",
     NULL,
     {"pw-A5", "svc"}},
    {"mysql://svc:pw-B1@db.example.com:3307/orders?connect_timeout=5&sql_mode=ANSI",
     "mysql",
     "mysql",
     "db.example.com:3307",
     "/orders",
     {"pw-B1", "svc", "connect_timeout", "ANSI"}},
    {"mariadb://svc:pw-B2@[::1]/orders", "mariadb", "mysql", "[::1]", "/orders", {"pw-B2", "svc"}},
    {"mysql://svc:pw-B3@/orders?socket=/run/mysqld/secret.sock",
     "mysql",
     "mysql",
     "localhost",
     "/orders",
     {"pw-B3", "secret.sock", "/run"}},
    {"mysql://db.example.com", "mysql", "mysql", "db.example.com", NULL, {NULL}},
    {"mysql://svc:p%40ss-B4@db.example.com/or%2Fders",
     "mysql",
     "mysql",
     "db.example.com",
     "/or%2Fders",
     {"ss-B4", "svc"}},
    {"sqlite:/srv/secret-dir/jobs.db?synchronous=normal",
     "sqlite",
     "sqlite",
     "",
     NULL,
     {"secret-dir", "jobs.db", "synchronous"}},
    {"sqlite:jobs.db", "sqlite", "sqlite", "", NULL, {"jobs"}},
    {"sqlite:///var/secret/jobs.db", "sqlite", "sqlite", "", NULL, {"/var", "secret"}},
    {"sqlite://secret-rel/jobs.db", "sqlite", "sqlite", "", NULL, {"secret-rel", "jobs"}},
    {"cockroach://svc:pw-C1@crdb.example.com:26257/orders?sslrootcert=/secret/ca.pem",
     "cockroach",
     "cockroach",
     "crdb.example.com:26257",
     NULL,
     {"pw-C1", "svc", "sslrootcert", "orders"}},
    {"DuckDB:/var/secret/file.duckdb", "duckdb", "duckdb", "", NULL, {"secret", "file"}},
    {"duck+db://some/path/secret.db", "duck_db", "duck+db", "some", NULL, {"path", "secret"}},
};

static void servers_say_where_and_nothing_else(void) {
  tabq_app *app = empty_app();
  for (size_t i = 0; i < sizeof url_cases / sizeof *url_cases; i++) {
    const url_case *c = &url_cases[i];
    char *text;
    json_t *doc = document(app, &c->url, 1, &text);
    if (!doc) {
      fprintf(stderr, "\n  %s: refused: %s\n", c->url, err.message);
      CU_FAIL("a URL the plugins read was refused");
      continue;
    }
    json_t *servers = json_object_get(doc, "servers");
    json_t *s = json_object_get(servers, c->id);
    CU_ASSERT_EQUAL(json_object_size(servers), 1);
    if (!s) {
      fprintf(stderr, "\n  %s: no server %s in\n%s\n", c->url, c->id, text);
      CU_FAIL("the server's id");
    } else {
      const char *host = json_string_value(json_object_get(s, "host"));
      const char *path = json_string_value(json_object_get(s, "pathname"));
      const char *protocol = json_string_value(json_object_get(s, "protocol"));
      bool ok = host && !strcmp(host, c->host) && protocol && !strcmp(protocol, c->protocol) &&
                (c->pathname ? path && !strcmp(path, c->pathname) : !path);
      if (!ok)
        fprintf(stderr, "\n  %s: host %s, pathname %s, protocol %s\n", c->url, host ? host : "-",
                path ? path : "-", protocol ? protocol : "-");
      CU_ASSERT(ok);
      const char *key;
      json_t *v;
      json_object_foreach(s, key, v) {
        bool known = !strcmp(key, "host") || !strcmp(key, "pathname") || !strcmp(key, "protocol") ||
                     !strcmp(key, "title") || !strcmp(key, "description");
        CU_ASSERT(known);
      }
    }
    for (size_t k = 0; k < 4 && c->never[k]; k++)
      if (strstr(text, c->never[k])) {
        fprintf(stderr, "\n  %s: the document holds \"%s\"\n", c->url, c->never[k]);
        CU_FAIL("a part of the URL that is not where the server is");
      }
    json_decref(doc);
    free(text);
  }
  tabq_app_free(app);
}

static void servers_of_one_protocol_get_their_own_ids(void) {
  tabq_app *app = empty_app();
  const char *urls[] = {"postgresql://a.example.com/x", "sqlite:a.db", "postgres://b.example.com/x",
                        "sqlite:b.db", "postgresql://c.example.com/x"};
  char *text;
  json_t *doc = document(app, urls, 5, &text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  EXPECT_STR(doc, "servers/postgresql/host", "a.example.com");
  EXPECT_STR(doc, "servers/postgresql_2/host", "b.example.com");
  EXPECT_STR(doc, "servers/postgresql_3/host", "c.example.com");
  CU_ASSERT_PTR_NOT_NULL(at(doc, "servers/sqlite_2"));
  /* In the order given. */
  const char *order[] = {"postgresql", "sqlite", "postgresql_2", "sqlite_2", "postgresql_3"};
  size_t i = 0;
  const char *key;
  json_t *v;
  json_object_foreach(json_object_get(doc, "servers"), key, v) {
    CU_ASSERT(i < 5 && !strcmp(key, order[i]));
    i++;
  }
  json_decref(doc);
  free(text);
  tabq_app_free(app);
}

static void bad_urls_are_refused_without_their_text(void) {
  static const char *const bad[] = {
      "db.example.com/orders",                       /* no scheme */
      "1pg://svc:pw-Z1@h/db",                        /* a scheme starts with a letter */
      "mysql://svc:pw-Z1@[::1/db",                   /* no ']' */
      "mysql://svc:pw-Z1@[::1]x/db",                 /* text after it */
      "mysql://svc:pw-Z1@host:99999/db",             /* a port too large */
      "mariadb://svc:pw-Z1@host:33a/db",             /* not a number */
      "mysql:svc:pw-Z1@host/db",                     /* not mysql:// */
      "postgresql://svc:pw-Z1@h1,h2,h3/db?port=1,2", /* ports and hosts do not pair */
      "postgresql://svc:pw-Z1@ho%zzst/db",           /* a malformed escape */
      "postgresql://svc:pw-Z1@ho%00st/db",           /* one that decodes to NUL */
      "postgresql://svc:pw-Z1@h{x}/db",              /* braces: a server variable */
      "postgresql://svc:pw-Z1@h/db?password",        /* a parameter without a value */
      "postgres:host=h password='pw-Z1",             /* an unclosed quote */
      "postgres:host=h pw-Z1",                       /* a key without a value */
      "postgres:host=h%2Fx password=pw-Z1",          /* '%' in a host */
      "sqlite:",                                     /* no file */
      "sqlite://?synchronous=normal&pw-Z1",          /* no file either */
  };
  tabq_app *app = empty_app();
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *urls[] = {"sqlite:fine.db", bad[i]};
    char *out = (char *)"untouched";
    int rc = tabq_asyncapi(app, urls, 2, &out, &err);
    if (rc != TABQ_INVALID)
      fprintf(stderr, "\n  %s: %s\n", bad[i], rc ? err.message : out);
    CU_ASSERT_EQUAL(rc, TABQ_INVALID);
    CU_ASSERT_EQUAL(err.code, TABQ_INVALID);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "URL 2"));
    CU_ASSERT_PTR_NULL(strstr(err.message, "pw-Z1"));
    CU_ASSERT_PTR_NULL(strstr(err.message, "svc"));
    if (rc == TABQ_OK)
      free(out);
  }
  tabq_app_free(app);
}

/* ---- Channels, operations, messages -------------------------------------------------------- */

static const tabq_col data_cols[] = {
    {"email", false, TABQ_T_TEXT}, {"tries", false, TABQ_T_INT},  {"score", false, TABQ_T_REAL},
    {"sent", false, TABQ_T_TIME},  {"blob", false, TABQ_T_BYTES}, {"any", false, TABQ_T_NULL},
};

static tabq_table events_table(void) {
  tabq_table t = {.size = sizeof(tabq_table),
                  .name = "events",
                  .id = {"id", .generated = true},
                  .group = {"topic"},
                  .attempt = {"attempt", .generated = true},
                  .locked_until = {"locked_until"},
                  .headers = {"hdrs"},
                  .payload = {"payload", .type = TABQ_T_JSON}};
  return t;
}

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_ack();
}

/* Adds a subscription, saying why when the app refuses it. */
static void add(tabq_app *app, const char *table, const char *route, tabq_subscription_options o) {
  o.handler = handle;
  int rc = table ? tabq_app_add_subscription(app, table, &o, &err)
                 : tabq_app_add_subscription_to(app, route, &o, &err);
  if (rc)
    fprintf(stderr, "\n  refused: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
}

static tabq_app *built_app(void) {
  tabq_app *app = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_new("shop", "2.0.1", &app, &err), TABQ_OK);
  tabq_table events = events_table();
  tabq_table mirror = events_table();
  mirror.name = "mirror";
  mirror.headers.name = NULL;
  mirror.payload.type = TABQ_T_TEXT;
  tabq_table rows = {.size = sizeof(tabq_table),
                     .name = "rows",
                     .id = {"id"},
                     .data = data_cols,
                     .ndata = sizeof data_cols / sizeof *data_cols};
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_table(app, &events, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_table(app, &mirror, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_table(app, &rows, &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_route(app, "order.*", "events", &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_route(app, "order.eu.*", "events", &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_route(app, "odd{name}", "events", &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_route(app, "*", "mirror", &err), TABQ_OK);
  CU_ASSERT_EQUAL_FATAL(tabq_app_add_route(app, "oth*", "mirror", &err), TABQ_OK);
  /* Schemas: the table's, a prefix route's, a longer prefix's, one queue's own. */
  CU_ASSERT_EQUAL(tabq_app_set_payload_schema(app, "events", NULL, "{\"title\": \"table\"}", &err),
                  TABQ_OK);
  CU_ASSERT_EQUAL(
      tabq_app_set_payload_schema(app, "events", "order.*", "{\"title\": \"order\"}", &err),
      TABQ_OK);
  CU_ASSERT_EQUAL(
      tabq_app_set_payload_schema(app, "events", "order.eu.*", "{\"title\": \"eu\"}", &err),
      TABQ_OK);
  CU_ASSERT_EQUAL(
      tabq_app_set_payload_schema(app, "events", "order.own", "{\"title\": \"own\"}", &err),
      TABQ_OK);
  CU_ASSERT_EQUAL(tabq_app_set_payload_schema(app, "mirror", "oth*", "{\"title\": \"oth\"}", &err),
                  TABQ_OK);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.workers = 3;
  add(app, NULL, "order.eu.vat", o);
  add(app, NULL, "order.new", o);
  tabq_subscription_options q = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  q.queue = "order.own";
  q.max_attempts = 4;
  q.dead_letter_group = "order.dead";
  add(app, "events", NULL, q);
  q.queue = "other";
  q.max_attempts = 0;
  q.dead_letter_group = NULL;
  add(app, "events", NULL, q);
  add(app, "mirror", NULL, q); /* the same name in another table: a channel of its own */
  tabq_subscription_options r = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  add(app, "rows", NULL, r);
  return app;
}

static void channels_and_operations_of_an_app_built_in_c(void) {
  tabq_app *app = built_app();
  char *text;
  json_t *doc = document(app, NULL, 0, &text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  EXPECT_STR(doc, "asyncapi", "3.0.0");
  EXPECT_STR(doc, "info/title", "shop");
  EXPECT_STR(doc, "info/version", "2.0.1");
  CU_ASSERT_PTR_NULL(at(doc, "info/description"));
  CU_ASSERT_PTR_NULL(at(doc, "servers")); /* no URL, no servers */

  /* A channel per queue: the subscriptions' first, then the routes' not yet there. */
  const char *channels[] = {"order.eu.vat", "order.new",    "order.own", "other", "other_2", "rows",
                            "order.any",    "order.eu.any", "odd_name_", "any",   "othany"};
  json_t *ch = json_object_get(doc, "channels");
  CU_ASSERT_EQUAL(json_object_size(ch), sizeof channels / sizeof *channels);
  for (size_t i = 0; i < sizeof channels / sizeof *channels; i++)
    if (!json_object_get(ch, channels[i])) {
      fprintf(stderr, "\n  no channel %s in\n%s\n", channels[i], text);
      CU_FAIL("a channel");
    }
  EXPECT_STR(doc, "channels/order.new/address", "order.new");
  EXPECT_STR(doc, "channels/order.any/address", "order.{rest}");
  CU_ASSERT_PTR_NOT_NULL(at(doc, "channels/order.any/parameters/rest/description"));
  EXPECT_STR(doc, "channels/any/address", "{rest}");
  CU_ASSERT_TRUE(json_is_null(at(doc, "channels/odd_name_/address"))); /* braces: unknown */
  CU_ASSERT_PTR_NULL(at(doc, "channels/odd_name_/parameters"));
  EXPECT_STR(doc, "channels/odd_name_/x-tabq-queue", "odd{name}"); /* the name kept */
  EXPECT_STR(doc, "channels/other/x-tabq-table", "events");
  EXPECT_STR(doc, "channels/other_2/x-tabq-table", "mirror");
  EXPECT_STR(doc, "channels/rows/address", "rows");
  EXPECT_STR(doc, "channels/rows/x-tabq-form", "rowlock");
  EXPECT_STR(doc, "channels/order.own/x-tabq-form", "lease");
  EXPECT_STR(doc, "channels/order.own/x-tabq-group-column", "topic");

  /* Payload schemas: a queue's own, else the route that takes its name (the longest prefix),
   * else the table's. */
  EXPECT_STR(doc, "channels/order.own/messages/order.own/payload/title", "own");
  EXPECT_STR(doc, "channels/order.eu.vat/messages/order.eu.vat/payload/title", "eu");
  EXPECT_STR(doc, "channels/order.new/messages/order.new/payload/title", "order");
  EXPECT_STR(doc, "channels/other/messages/other/payload/title", "table");
  EXPECT_STR(doc, "channels/order.any/messages/order.any/payload/title", "order");
  /* "other" of mirror: the route oth* takes it (longer than *); "other" of events: oth* takes
   * the name too, but to mirror, so events' own schema. */
  EXPECT_STR(doc, "channels/other_2/messages/other_2/payload/title", "oth");
  /* Headers where the table has the column; content types by the payload column's type. */
  EXPECT_STR(doc, "channels/other/messages/other/headers/additionalProperties/type", "string");
  CU_ASSERT_PTR_NULL(at(doc, "channels/other_2/messages/other_2/headers"));
  EXPECT_STR(doc, "channels/other/messages/other/contentType", "application/json");
  EXPECT_STR(doc, "channels/other_2/messages/other_2/contentType", "text/plain");
  /* Row mode: the data columns by their types. */
  EXPECT_STR(doc, "channels/rows/messages/rows/payload/properties/email/type", "string");
  EXPECT_STR(doc, "channels/rows/messages/rows/payload/properties/tries/type", "integer");
  EXPECT_STR(doc, "channels/rows/messages/rows/payload/properties/score/type", "number");
  CU_ASSERT_PTR_NOT_NULL(at(doc, "channels/rows/messages/rows/payload/properties/any"));
  CU_ASSERT_PTR_NULL(at(doc, "channels/rows/messages/rows/contentType"));

  /* A receive operation per subscription, a send operation per route. */
  const char *ops[][3] = {
      {"order.eu.vat", "receive", "order.eu.vat"}, {"order.new", "receive", "order.new"},
      {"order.own", "receive", "order.own"},       {"other", "receive", "other"},
      {"other_2", "receive", "other_2"},           {"rows", "receive", "rows"},
      {"publish_order.any", "send", "order.any"},  {"publish_order.eu.any", "send", "order.eu.any"},
      {"publish_odd_name_", "send", "odd_name_"},  {"publish_any", "send", "any"},
      {"publish_othany", "send", "othany"},
  };
  json_t *operations = json_object_get(doc, "operations");
  CU_ASSERT_EQUAL(json_object_size(operations), sizeof ops / sizeof *ops);
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    char path[256], want[256];
    snprintf(path, sizeof path, "operations/%s/action", ops[i][0]);
    const char *action = str_at(doc, path);
    snprintf(path, sizeof path, "operations/%s/channel/$ref", ops[i][0]);
    snprintf(want, sizeof want, "#/channels/%s", ops[i][2]);
    const char *channel = str_at(doc, path);
    snprintf(path, sizeof path, "operations/%s/messages/0/$ref", ops[i][0]);
    const char *message = str_at(doc, path);
    bool ok = action && !strcmp(action, ops[i][1]) && channel && !strcmp(channel, want) &&
              message && !strncmp(message, want, strlen(want)) &&
              !strncmp(message + strlen(want), "/messages/", 10);
    if (!ok)
      fprintf(stderr, "\n  operation %s: %s %s %s\n", ops[i][0], action ? action : "-",
              channel ? channel : "-", message ? message : "-");
    CU_ASSERT(ok);
  }
  json_t *own = at(doc, "operations/order.own");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(own, "x-tabq-max-attempts")), 4);
  EXPECT_STR(doc, "operations/order.own/x-tabq-dead-letter/group", "order.dead");
  CU_ASSERT_EQUAL(json_integer_value(at(doc, "operations/order.new/x-tabq-workers")), 3);
  EXPECT_STR(doc, "operations/order.new/x-tabq-route", "order.new");
  CU_ASSERT_PTR_NULL(at(doc, "operations/order.new/x-tabq-handler")); /* bound in C */

  /* The same app gives the same text. */
  char *again = NULL;
  CU_ASSERT_EQUAL(tabq_asyncapi(app, NULL, 0, &again, &err), TABQ_OK);
  CU_ASSERT_STRING_EQUAL(again, text);
  free(again);
  json_decref(doc);
  free(text);
  tabq_app_free(app);
}

static void an_app_without_a_version_is_0_0_0(void) {
  static const char file[] =
      "{\"name\": \"mini\", \"description\": \"Small.\", \"tables\": [{\"name\": \"jobs\", "
      "\"id\": \"id\", \"payload\": \"payload\"}], \"subscriptions\": [{\"table\": \"jobs\", "
      "\"handler\": \"work\"}, {\"table\": \"jobs\", \"queue\": \"again\", \"handler\": "
      "\"work\", \"payload_schema\": {\"title\": \"again\"}}]}";
  tabq_app *app = NULL;
  CU_ASSERT_EQUAL_FATAL(tabq_app_parse(file, strlen(file), NULL, &app, &err), TABQ_OK);
  char *text;
  json_t *doc = document(app, NULL, 0, &text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  EXPECT_STR(doc, "info/version", "0.0.0");
  EXPECT_STR(doc, "info/description", "Small.");
  /* Two subscriptions to a table without a group column read one channel, the table; one
   * handler's two operations get ids of their own. */
  CU_ASSERT_EQUAL(json_object_size(json_object_get(doc, "channels")), 1);
  EXPECT_STR(doc, "operations/work/channel/$ref", "#/channels/jobs");
  EXPECT_STR(doc, "operations/work_2/channel/$ref", "#/channels/jobs");
  EXPECT_STR(doc, "operations/work_2/x-tabq-queue", "again");
  EXPECT_STR(doc, "operations/work/x-tabq-handler", "work");
  EXPECT_STR(doc, "channels/jobs/messages/jobs/payload/title", "again"); /* the label's */
  CU_ASSERT_PTR_NULL(at(doc, "channels/jobs/messages/jobs/contentType"));
  json_decref(doc);
  free(text);
  tabq_app_free(app);
}

static void payload_schemas_that_are_not_objects_are_refused(void) {
  static const char *const bad[] = {"not json", "[1, 2]", "true", "{\"a\": 1, \"a\": 2}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tabq_app *app = built_app();
    CU_ASSERT_EQUAL(tabq_app_set_payload_schema(app, "events", "order.own", bad[i], &err), TABQ_OK);
    char *out = NULL;
    CU_ASSERT_EQUAL(tabq_asyncapi(app, NULL, 0, &out, &err), TABQ_DECLARATION);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_STRING_EQUAL(err.table, "events");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "order.own"));
    tabq_app_free(app);
  }
}

static void missing_arguments_are_refused(void) {
  tabq_app *app = empty_app();
  char *out = (char *)"untouched";
  CU_ASSERT_EQUAL(tabq_asyncapi(NULL, NULL, 0, &out, &err), TABQ_INVALID);
  CU_ASSERT_PTR_NULL(out);
  CU_ASSERT_EQUAL(tabq_asyncapi(app, NULL, 0, NULL, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_asyncapi(app, NULL, 2, &out, &err), TABQ_INVALID);
  const char *none[] = {NULL};
  CU_ASSERT_EQUAL(tabq_asyncapi(app, none, 1, &out, &err), TABQ_INVALID);
  CU_ASSERT_EQUAL(tabq_asyncapi(app, NULL, 0, &out, NULL), TABQ_OK); /* err may be NULL */
  free(out);
  tabq_app_free(app);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"servers say where, and nothing else", servers_say_where_and_nothing_else},
      {"servers of one protocol get ids of their own", servers_of_one_protocol_get_their_own_ids},
      {"bad URLs are refused without their text", bad_urls_are_refused_without_their_text},
      {"channels and operations of an app built in C",
       channels_and_operations_of_an_app_built_in_c},
      {"an app without a version is 0.0.0", an_app_without_a_version_is_0_0_0},
      {"payload schemas that are not objects are refused",
       payload_schemas_that_are_not_objects_are_refused},
      {"missing arguments are refused", missing_arguments_are_refused},
      CU_TEST_INFO_NULL};
  static CU_SuiteInfo suites[] = {{"asyncapi", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
  return CU_register_suites(suites);
}
