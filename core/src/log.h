/* Logging through the broker's callback (stderr by default). */
#ifndef TABQ_LOG_H
#define TABQ_LOG_H

#include <stdarg.h>
#include <tabq/dialect.h>
#include <tabq/tabq.h>

typedef struct tabq_logger {
  tabq_log_fn fn;
  void *user;
  int level;
} tabq_logger;

void tabq_logger_init(tabq_logger *l, const tabq_broker_options *o);
void tabq_logf(const tabq_logger *l, int level, const char *fmt, ...) TABQ_PRINTF_(3, 4);
/* The logger plugins write to (host->log): stderr, warnings and worse. */
void tabq_log_plugin_v(int level, const char *fmt, va_list ap);

#endif
