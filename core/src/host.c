/* The services the core lends plugins (tabq_host): the allocator, failures recorded for the
 * calling thread, and logging, through the broker the host belongs to (ABI 1.6) or, for a
 * plugin before 1.6 that has only `log`, the broker the calling thread works for. */
#include "host.h"

#include <stdarg.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"

static int host_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tabq__plugin_fail_v(code, sqlstate, native, fmt, ap);
  va_end(ap);
  return code;
}

static void host_fail_position(unsigned position) {
  tabq__plugin_fail_position(position);
}

static void host_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tabq__log_plugin_v(level, fmt, ap);
  va_end(ap);
}

/* A line to the log of the broker whose host this is (its context: the broker's logger); the
 * process-wide host has none and logs as `log` does. */
static void host_log_to(const tabq_host *self, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (self && self->context)
    tabq__log_v(self->context, level, fmt, ap);
  else
    tabq__log_plugin_v(level, fmt, ap);
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
    .log_to = host_log_to,
    .fail_position = host_fail_position,
};

const tabq_host *tabq__host_services(void) {
  return &services;
}

void tabq__host_of(tabq_host *out, const tabq_logger *log) {
  *out = services;
  out->context = log;
}
