/* The services table the core lends every plugin. */
#ifndef TABQ_HOST_H
#define TABQ_HOST_H

#include <tabq/sys/dialect.h>

#include "log.h"

/* The process-wide host, handed to each plugin's entry (its log goes to the broker the calling
 * thread works for). */
const tabq_host *tabq__host_services(void);
/* A broker's own host: the same services, its log_to writing to `log` from any thread. */
void tabq__host_of(tabq_host *out, const tabq_logger *log);

#endif
