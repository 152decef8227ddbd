#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static const char *level_name(int level) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  return level >= 0 && level <= TABQ_LOG_DEBUG ? names[level] : "log";
}

static void log_to_stderr(int level, const char *message, void *user) {
  (void)user;
  fprintf(stderr, "tabq %s: %s\n", level_name(level), message);
}

void tabq__logger_init(tabq_logger *l, const tabq_broker_options *o) {
  l->fn = o && o->log ? o->log : log_to_stderr;
  l->user = o ? o->log_user : NULL;
  l->level = o && o->log_level ? o->log_level : TABQ_LOG_WARN;
}

void tabq__logf(const tabq_logger *l, int level, const char *fmt, ...) {
  if (level > l->level)
    return;
  char message[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  l->fn(level, message, l->user);
}

static _Thread_local const tabq_logger *current;

const tabq_logger *tabq__log_enter(const tabq_logger *l) {
  const tabq_logger *outer = current;
  current = l;
  return outer;
}

void tabq__log_leave(const tabq_logger *outer) {
  current = outer;
}

void tabq__log_v(const tabq_logger *l, int level, const char *fmt, va_list ap) {
  if (level > l->level)
    return;
  char message[768];
  vsnprintf(message, sizeof message, fmt, ap);
  l->fn(level, message, l->user);
}

void tabq__log_plugin_v(int level, const char *fmt, va_list ap) {
  static const tabq_logger fallback = {log_to_stderr, NULL, TABQ_LOG_WARN};
  tabq__log_v(current ? current : &fallback, level, fmt, ap);
}
