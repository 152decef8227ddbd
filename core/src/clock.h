/* Time: the host clock for leases and due times, a monotonic one for waits. */
#ifndef TABQ_CLOCK_H
#define TABQ_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds since the Unix epoch, UTC. */
int64_t tabq__now_us(void);
/* Milliseconds on CLOCK_MONOTONIC. */
int64_t tabq__mono_ms(void);
/* The CLOCK_MONOTONIC deadline `ms` from now, for pthread_cond_timedwait. */
struct timespec tabq__deadline_ms(int64_t mono_ms_at);

#endif
