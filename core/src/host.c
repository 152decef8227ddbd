#include "host.h"

#include <stdarg.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"

static int host_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tabq_plugin_fail_v(code, sqlstate, native, fmt, ap);
  va_end(ap);
  return code;
}

static void host_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tabq_log_plugin_v(level, fmt, ap);
  va_end(ap);
}

static const tabq_host services = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = malloc,
    .realloc = realloc,
    .free = free,
    .fail = host_fail,
    .log = host_log,
};

const tabq_host *tabq_host_services(void) {
  return &services;
}
