/* Logging through the broker's callback (stderr by default). */
#ifndef TABQ_LOG_H
#define TABQ_LOG_H

#include <stdarg.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

typedef struct tabq_logger {
  tabq_log_fn fn;
  void *user;
  int level;
} tabq_logger;

void tabq__logger_init(tabq_logger *l, const tabq_broker_options *o);
void tabq__logf(const tabq_logger *l, int level, const char *fmt, ...) TABQ_PRINTF_(3, 4);
/* A line to logger l, as tabq__logf writes it. */
void tabq__log_v(const tabq_logger *l, int level, const char *fmt, va_list ap);
/* What a plugin writes through host->log (it has no broker argument: one loaded plugin serves
 * every broker of the process) goes to the broker the calling thread works for: its threads
 * name it when they start, and each API call around its work. Outside any broker, warnings and
 * worse go to stderr. A plugin of ABI 1.6 logs through its broker's host instead
 * (host->log_to), which needs none of this. */
void tabq__log_plugin_v(int level, const char *fmt, va_list ap);
/* Makes `l` the calling thread's broker logger; returns the one before, for tabq__log_leave. */
const tabq_logger *tabq__log_enter(const tabq_logger *l);
void tabq__log_leave(const tabq_logger *outer);

#endif
