/* tabq_host_log (tabq/host_log.h): a line through the connection's host where it has log_to
 * (ABI 1.6), else through the fallback host's log. */
#include <stdarg.h>
#include <stdio.h>
#include <tabq/sys/host_log.h>

void tabq_host_log(const tabq_host *conn_host, const tabq_host *fallback, int level,
                   const char *fmt, ...) {
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (conn_host && TABQ_HAS_MEMBER(conn_host, tabq_host, log_to))
    conn_host->log_to(conn_host, level, "%s", line);
  else if (fallback)
    fallback->log(level, "%s", line);
}
