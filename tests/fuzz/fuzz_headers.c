/* tabq — fuzz target: the header decoder (core/src/headers.c, core/src/decode.c). The input is a
 * row's headers column up to the first newline, its payload after it. The headers are read
 * lazily (tabq__headers_get, no codec) and through the decode gate with the JSON codec, which
 * checks them (one JSON object of strings) before the payload decodes. Headers the gate accepts,
 * written again by the publisher's renderer, read back the same. */
#include <jansson.h>
#include <string.h>

#include "fuzz_delivery.h"

static const tabq_table table = {.size = sizeof(tabq_table),
                                 .name = "jobs",
                                 .id = {.name = "id"},
                                 .attempt = {.name = "attempt"},
                                 .headers = {.name = "headers"},
                                 .payload = {.name = "payload"}};

static void set_cells(fuzz_delivery *f, const char *headers, size_t hlen, const char *payload,
                      size_t plen) {
  f->cells[f->s->proj.id] = tabq_text("job-1", 5);
  f->cells[f->s->proj.attempt] = tabq_int(1);
  f->cells[f->s->proj.headers] = (tabq_value){.type = TABQ_T_TEXT, .u.buf = {headers, hlen}};
  f->cells[f->s->proj.payload] = (tabq_value){.type = TABQ_T_BYTES, .u.buf = {payload, plen}};
}

/* Headers the gate accepted, rendered as a publish writes them and parsed again. */
static void render_again(json_t *headers) {
  size_t n = json_object_size(headers), i = 0;
  tabq_header *h = calloc(n ? n : 1, sizeof *h);
  if (!h)
    abort();
  const char *name;
  json_t *value;
  json_object_foreach(headers, name, value) {
    h[i].name = name;
    h[i++].value = json_string_value(value);
  }
  tabq_buf out = {0};
  tabq_error err = {0};
  if (tabq__headers_render(h, n, &out, &err, "jobs") == TABQ_OK) {
    json_t *again = json_loadb(out.p, out.len, 0, NULL);
    FUZZ_CHECK(again && json_equal(again, headers), "headers read back as written: %.*s",
               (int)out.len, out.p);
    json_decref(again);
  }
  tabq__buf_free(&out);
  free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nl = memchr(text, '\n', size);
  size_t hlen = nl ? (size_t)(nl - text) : size;
  const char *payload = nl ? nl + 1 : text + size;
  size_t plen = (size_t)(text + size - payload);
  static const char *const names[] = {"traceparent", "tracestate", "x", ""};

  /* Without a codec: the handler's read parses them on first use. */
  tabq_subscription_options plain = {.size = sizeof plain};
  fuzz_delivery f;
  if (!fuzz_delivery_open(&f, &table, &plain))
    abort();
  set_cells(&f, text, hlen, payload, plen);
  fuzz_delivery_fill(&f);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    tabq__headers_get(&f.d, names[i]);
  fuzz_delivery_end(&f);
  fuzz_delivery_close(&f);

  /* With the JSON codec: the gate checks them, and the payload decodes. */
  tabq_subscription_options coded = {.size = sizeof coded, .codec = tabq_json_codec()};
  if (!fuzz_delivery_open(&f, &table, &coded))
    abort();
  set_cells(&f, text, hlen, payload, plen);
  fuzz_delivery_fill(&f);
  tabq_outcome policy;
  if (tabq__decode_gate(&f.d, &policy)) {
    FUZZ_CHECK(tabq_delivery_decoded(&f.d) != NULL, "an accepted row has its decoded payload");
    if (f.d.headers) {
      FUZZ_CHECK(json_is_object(f.d.headers), "accepted headers are an object");
      render_again(f.d.headers);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      tabq__headers_get(&f.d, names[i]);
  }
  fuzz_delivery_end(&f);
  fuzz_delivery_close(&f);
  return 0;
}
