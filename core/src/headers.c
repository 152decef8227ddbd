/* Headers: one JSON object of string values, written with a publish and read lazily from a
 * delivery (parsing costs nothing unless the handler asks). */
#include <string.h>

#include "engine.h"
#include "error.h"

int tabq__headers_render(const tabq_header *h, size_t n, tabq_buf *out, tabq_error *err,
                         const char *table) {
  out->len = 0;
  return tabq__headers_append(h, n, out, err, table);
}

int tabq__headers_append(const tabq_header *h, size_t n, tabq_buf *out, tabq_error *err,
                         const char *table) {
  json_t *obj = json_object();
  if (!obj)
    return tabq__err_set(err, TABQ_NOMEM, table, "insert", "cannot build the headers");
  int rc = TABQ_OK;
  tabq_trace_context tc = TABQ_TRACE_CONTEXT_INIT;
  for (size_t i = 0; i < n && !rc; i++) {
    if (!h[i].name || !h[i].value)
      rc = tabq__err_set(err, TABQ_HEADER, table, "insert", "header %zu has no name or value", i);
    else if (!strcmp(h[i].name, "traceparent") && !tabq_trace_parse(h[i].value, NULL, &tc))
      rc = tabq__err_set(err, TABQ_HEADER, table, "insert",
                         "header 'traceparent' is '%.80s', not a W3C trace context "
                         "(version-traceid-parentid-flags in lowercase hex, ids not all zero)",
                         h[i].value);
    else if (json_object_set_new(obj, h[i].name, json_string(h[i].value)))
      rc = tabq__err_set(err, TABQ_HEADER, table, "insert",
                         "header '%s' is not valid UTF-8 (names and values must be)", h[i].name);
  }
  if (!rc) {
    size_t len = json_dumpb(obj, NULL, 0, JSON_COMPACT);
    if (tabq__buf_reserve(out, out->len + len + 1))
      rc = tabq__err_set(err, TABQ_NOMEM, table, "insert", "cannot hold the headers");
    else
      out->len += json_dumpb(obj, out->p + out->len, len, JSON_COMPACT);
  }
  json_decref(obj);
  return rc;
}

const char *tabq__headers_get(tabq_delivery *d, const char *name) {
  int col = d->sub->proj.headers;
  if (col < 0 || !name)
    return NULL;
  const tabq_value *v = &d->cells[col];
  if (v->type != TABQ_T_TEXT && v->type != TABQ_T_JSON && v->type != TABQ_T_BYTES)
    return NULL;
  if (!d->headers) {
    json_error_t jerr;
    d->headers = json_loadb(v->u.buf.ptr, v->u.buf.len, 0, &jerr);
    if (!d->headers) {
      tabq__logf(&d->sub->b->log, TABQ_LOG_WARN, "table %s: headers are not JSON: %s",
                 d->sub->t->name, jerr.text);
      return NULL;
    }
  }
  return json_string_value(json_object_get(d->headers, name));
}
