/* The dashboard's JSON endpoints (web_api.h), built with jansson. A library refusal is one line
 * of plain text, "400: INVALID: message", as every other error of the listener is. */
#include "web_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin_sql.h"

#define JSON_TYPE "application/json"

static void send_json(tabq_http_reply *out, json_t *doc) {
  char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(doc);
  if (text)
    tabq__http_take(out, 200, JSON_TYPE, text, strlen(text));
  else
    tabq__http_error(out, 500, "cannot render the JSON reply");
}

static void send_failure(tabq_http_reply *out, const tabq_error *err) {
  unsigned status = err->code == TABQ_INVALID ? 400 : err->code == TABQ_POOL_TIMEOUT ? 503 : 500;
  char line[sizeof err->message + 32];
  snprintf(line, sizeof line, "%s: %s", tabq_code_name(err->code), err->message);
  tabq__http_error(out, status, line);
}

static json_t *count(int64_t n) {
  return n < 0 ? json_null() : json_integer(n);
}

void tabq__web_stats(tabq_broker *b, const tabq_app *app, tabq_http_reply *out) {
  tabq_admin_stats *s;
  tabq_error err;
  if (tabq_admin_stats_read(b, app, &s, &err)) {
    send_failure(out, &err);
    return;
  }
  json_t *doc = tabq__admin_stats_doc(s);
  json_object_set_new(doc, "app", json_string(tabq_app_name(app)));
  json_object_set_new(doc, "dialect", json_string(tabq_dialect_name(b)));
  send_json(out, doc);
  tabq_admin_stats_free(s);
}

/* A payload's first bytes as a JSON string: as they are when they are UTF-8 (a character cut
 * at the end of the preview dropped), else with every byte that is no printable ASCII as '.'. */
static json_t *preview(const char *p, size_t len) {
  if (!p)
    return json_null();
  for (size_t cut = 0; cut < 4 && cut <= len; cut++) {
    json_t *s = json_stringn(p, len - cut);
    if (s)
      return s;
  }
  char *dots = malloc(len + 1);
  if (!dots)
    return json_null();
  for (size_t i = 0; i < len; i++)
    dots[i] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.';
  json_t *s = json_stringn(dots, len);
  free(dots);
  return s;
}

static json_t *time_or_null(int64_t us) {
  return us < 0 ? json_null() : json_integer(us);
}

void tabq__web_rows(tabq_broker *b, const tabq_app *app, const tabq_http_request *r,
                    tabq_http_reply *out) {
  const char *table = tabq__http_arg(r, "table"), *queue = tabq__http_arg(r, "queue");
  const char *kind_text = tabq__http_arg(r, "kind");
  static const char *const kinds[] = {"due", "in_work", "dead"};
  int kind = -1;
  for (int k = 0; kind_text && k < 3; k++)
    if (!strcmp(kind_text, kinds[k]))
      kind = k;
  if (!table || kind < 0) {
    tabq__http_error(out, 400, "give table=TABLE, queue=QUEUE and kind=due, in_work or dead");
    return;
  }
  tabq_admin_rows *rows;
  tabq_error err;
  if (tabq_admin_rows_read(b, app, table, queue, (tabq_admin_rows_kind)kind, 20, &rows, &err)) {
    send_failure(out, &err);
    return;
  }
  json_t *list = json_array();
  for (size_t i = 0; i < tabq_admin_rows_count(rows); i++) {
    const tabq_admin_row *row = tabq_admin_rows_get(rows, i);
    json_array_append_new(list,
                          json_pack("{s:s,s:o,s:I,s:o,s:o,s:o,s:I,s:I}", "id", row->id, "attempt",
                                    count(row->attempt), "priority", (json_int_t)row->priority,
                                    "retry_after_us", time_or_null(row->retry_after_us),
                                    "locked_until_us", time_or_null(row->locked_until_us),
                                    "payload", preview(row->payload, row->payload_shown),
                                    "payload_shown", (json_int_t)row->payload_shown, "payload_len",
                                    (json_int_t)row->payload_len));
  }
  tabq_admin_rows_free(rows);
  send_json(out, json_pack("{s:o}", "rows", list));
}

void tabq__web_requeue(tabq_broker *b, const tabq_app *app, const tabq_http_request *r,
                       tabq_http_reply *out) {
  char queue[512];
  bool one = tabq__http_form(r, "queue", queue, sizeof queue);
  uint64_t moved = 0;
  tabq_error err;
  if (tabq_admin_requeue(b, app, one ? queue : NULL, false, 0, &moved, &err)) {
    send_failure(out, &err);
    return;
  }
  send_json(out, json_pack("{s:s?,s:I}", "queue", one ? queue : NULL, "moved", (json_int_t)moved));
}

void tabq__web_purge(tabq_broker *b, const tabq_app *app, const tabq_http_request *r,
                     tabq_http_reply *out) {
  char text[32], *end = text;
  long long seconds = -1;
  if (tabq__http_form(r, "older_than_s", text, sizeof text) && text[0])
    seconds = strtoll(text, &end, 10);
  if (seconds < 0 || *end || seconds > 100LL * 366 * 86400) {
    tabq__http_error(out, 400, "give older_than_s=SECONDS, a whole number of seconds");
    return;
  }
  uint64_t processed = 0, dead = 0;
  tabq_error err;
  if (tabq_admin_purge(b, app, seconds * 1000, false, 0, &processed, &dead, &err)) {
    send_failure(out, &err);
    return;
  }
  send_json(out, json_pack("{s:I,s:I}", "processed", (json_int_t)processed, "dead_letters",
                           (json_int_t)dead));
}
