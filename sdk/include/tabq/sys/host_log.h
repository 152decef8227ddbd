/* tabq — logging from a dialect plugin (part of the SDK's static library, tabq::sqlbuild).
 *
 * From ABI 1.6 the core hands each connection its broker's host (Driver.connect_host): a line
 * logged through that host reaches that broker's log callback from any thread. A driver keeps
 * the host with its connection and logs with tabq_host_log; with no such host (a core before
 * 1.6, or a line outside any connection) the line goes through `fallback`, the host the plugin's
 * entry received, to the broker the calling thread works for. */
#ifndef TABQ_HOST_LOG_H
#define TABQ_HOST_LOG_H

#include <tabq/sys/dialect.h>

#ifdef __cplusplus
extern "C" {
#endif

void tabq_host_log(const tabq_host *conn_host, const tabq_host *fallback, int level,
                   const char *fmt, ...) TABQ_PRINTF_(4, 5);

#ifdef __cplusplus
}
#endif

#endif
