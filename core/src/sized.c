#include "sized.h"

#include <stdint.h>
#include <string.h>

#include "error.h"

/* "TABQ_MESSAGE_SIZE_1_0" -> "tabq_message", for messages that name the C type. */
static void type_name(const char *macro, char *out, size_t cap) {
  size_t n = 0;
  for (const char *p = macro; *p && n + 1 < cap; p++) {
    if (!strncmp(p, "_SIZE_1_0", 9))
      break;
    out[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
  }
  out[n] = '\0';
}

int tabq__sized_take(const void *in, void *out, size_t full, size_t min, const char *type,
                     const char *table, tabq_error *err) {
  char name[64];
  type_name(type, name, sizeof name);
  uint32_t size;
  memcpy(&size, in, sizeof size);
  if (size == 0)
    return tabq__err_set(err, TABQ_INVALID, table, NULL,
                         "%s.size is 0: set it to sizeof(%s) (the TABQ_..._INIT initialisers do)",
                         name, name);
  if (size < min)
    return tabq__err_set(err, TABQ_INVALID, table, NULL,
                         "%s.size is %u, smaller than the first 1.x %s (%zu bytes): it was not "
                         "set to sizeof(%s)",
                         name, size, name, min, name);
  if (size > full)
    return tabq__err_set(err, TABQ_INVALID, table, NULL,
                         "%s.size is %u, larger than this libtabq's %zu: the program was compiled "
                         "against a newer tabq than libtabq %s it runs with",
                         name, size, full, TABQ_VERSION_STRING);
  memcpy(out, in, size);
  memset((char *)out + size, 0, full - size);
  return TABQ_OK;
}

int tabq__table_take(const tabq_table *in, tabq_table *out, tabq_error *err) {
  /* Every 1.x layout has the name right after the size: read it for the messages. */
  const char *name = in->name;
  if (in->size == 0)
    return tabq__err_set(err, TABQ_DECLARATION, name, NULL,
                         "table %s: the description's .size is 0; set .size = "
                         "sizeof(tabq_table) in its initialiser",
                         name ? name : "(unnamed)");
  return tabq__sized_take(in, out, sizeof *out, TABQ_TABLE_SIZE_1_0, "TABQ_TABLE_SIZE_1_0", name,
                          err);
}

int tabq__options_take(const tabq_subscription_options *in, tabq_subscription_options *out,
                       const char *table, tabq_error *err) {
  int rc = TABQ_TAKE(in, out, TABQ_SUBSCRIPTION_OPTIONS_SIZE_1_0, table, err);
  /* A program built before `lookahead` had no look-ahead unless it set prefetch, and its acks
   * alone unless it set coalesce_acks: it keeps that.
   * (lookahead_wait_ms starts past the older struct's end, its tail padding included.) */
  if (!rc && in->size <= offsetof(tabq_subscription_options, lookahead_wait_ms)) {
    out->lookahead = TABQ_LOOKAHEAD_OFF;
    out->acks = TABQ_ACKS_ALONE;
  }
  return rc;
}
