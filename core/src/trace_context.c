/* W3C trace context (tabq/trace.h): the `traceparent` header's grammar, version 00 and the
 * rules for later versions (https://www.w3.org/TR/trace-context/#traceparent-header). */
#include <string.h>

#include <tabq/trace.h>

/* n lowercase hex digits at p; *zero says whether they are all '0'. */
static bool hex(const char *p, size_t n, bool *zero) {
  *zero = true;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
    if (c != '0')
      *zero = false;
  }
  return true;
}

static unsigned byte_of(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 2; i++)
    v = v * 16 + (unsigned)(p[i] <= '9' ? p[i] - '0' : p[i] - 'a' + 10);
  return v;
}

/* version "-" trace-id "-" parent-id "-" flags: 2, 32, 16 and 2 hex digits. */
#define TRACEPARENT_LEN 55

bool tabq_trace_parse(const char *tp, const char *tracestate, tabq_trace_context *caller) {
  if (!tp || !caller || strlen(tp) < TRACEPARENT_LEN)
    return false;
  bool zero;
  if (!hex(tp, 2, &zero) || tp[2] != '-' || tp[35] != '-' || tp[52] != '-')
    return false;
  unsigned version = byte_of(tp);
  if (version == 0xff)
    return false;
  /* Version 00 is exactly 55 characters; a later one may append fields after a '-'. */
  size_t len = strlen(tp);
  if ((version == 0 && len != TRACEPARENT_LEN) ||
      (len > TRACEPARENT_LEN && tp[TRACEPARENT_LEN] != '-'))
    return false;
  if (!hex(tp + 3, 32, &zero) || zero || !hex(tp + 36, 16, &zero) || zero ||
      !hex(tp + 53, 2, &zero))
    return false;
  tabq_trace_context tc = {.size = sizeof tc, .version = (uint8_t)version};
  tc.flags = (uint8_t)byte_of(tp + 53);
  memcpy(tc.trace_id, tp + 3, 32);
  memcpy(tc.parent_id, tp + 36, 16);
  tc.tracestate = tracestate;
  size_t size = caller->size && caller->size < sizeof tc ? caller->size : sizeof tc;
  tc.size = (uint32_t)size;
  memcpy(caller, &tc, size);
  return true;
}
