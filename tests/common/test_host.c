/* tabq — the tests' plugin host: see test_host.h. */
#include "test_host.h"

#include <stdarg.h>
#include <stdlib.h>

_Thread_local char g_msg[1024];
_Thread_local char g_state[8];
_Thread_local long g_native;
_Thread_local int g_code;
atomic_ulong g_allocs;

int test_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  snprintf(g_state, sizeof g_state, "%s", sqlstate ? sqlstate : "");
  g_native = native;
  g_code = code;
  return code;
}

void test_host_reset(void) {
  g_msg[0] = '\0';
  g_state[0] = '\0';
  g_native = 0;
  g_code = 0;
}

_Thread_local char g_warning[1024];

/* Errors and warnings only: the drivers' connection notes would bury the CUnit report. */
static void test_log(int level, const char *fmt, ...) {
  if (level > TABQ_LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_warning, sizeof g_warning, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", g_warning);
}

static void *test_alloc(size_t n) {
  g_allocs++;
  return malloc(n);
}

static void *test_realloc(void *p, size_t n) {
  g_allocs++;
  return realloc(p, n);
}

static void *no_realloc(void *p, size_t n) {
  (void)p;
  (void)n;
  return NULL;
}

const tabq_host test_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = test_alloc,
    .realloc = test_realloc,
    .free = free,
    .fail = test_fail,
    .log = test_log,
};

const tabq_host starved_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = test_alloc,
    .realloc = no_realloc,
    .free = free,
    .fail = test_fail,
    .log = test_log,
};
