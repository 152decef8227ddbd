/* tabq — the fuzz targets' plugin host and helpers (fuzz.h). */
#include <string.h>

#include "fuzz.h"

char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s)
    abort();
  if (size)
    memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

static int fuzz_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  (void)sqlstate;
  (void)native;
  (void)fmt;
  return code;
}

static void fuzz_log(int level, const char *fmt, ...) {
  (void)level;
  (void)fmt;
}

const tabq_host fuzz_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = malloc,
    .realloc = realloc,
    .free = free,
    .fail = fuzz_fail,
    .log = fuzz_log,
};
