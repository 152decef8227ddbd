/* The error record: filled by the failing call, copied from a plugin's report when the failure
 * came from the plugin. */
#ifndef TABQ_ERROR_H
#define TABQ_ERROR_H

#include <stdarg.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

void tabq__err_clear(tabq_error *e);
/* Fills `e` (when not NULL) and returns `code`. `table` and `statement` may be NULL. */
int tabq__err_set(tabq_error *e, int code, const char *table, const char *statement,
                  const char *fmt, ...) TABQ_PRINTF_(5, 6);
/* Fills `e` with what the plugin reported through host->fail on this thread, for a member that
 * returned `code`, and returns `code`. */
int tabq__err_from_plugin(tabq_error *e, int code, const char *table, const char *statement);
/* The plugin's report on this thread (the host->fail side). */
int tabq__plugin_fail_v(int code, const char *sqlstate, long native, const char *fmt, va_list ap);
/* Where in its statement the plugin's last report on this thread points (ABI 1.7). */
void tabq__plugin_fail_position(unsigned position);

#endif
