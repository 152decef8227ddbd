/* The services table the core lends every plugin. */
#ifndef TABQ_HOST_H
#define TABQ_HOST_H

#include <tabq/dialect.h>

const tabq_host *tabq_host_services(void);

#endif
