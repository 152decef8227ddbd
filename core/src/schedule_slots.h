/* A schedule's slots: its spec (cron.h) read in a zone, through ICU's calendar, and each
 * slot's unique key. */
#ifndef TABQ_SCHEDULE_SLOTS_H
#define TABQ_SCHEDULE_SLOTS_H

#include <tabq/schedule.h>

#include "cron.h"

/* A zone: UTC, or an ICU calendar of a named zone (used by one thread at a time). */
typedef struct tabq_zone {
  void *cal; /* UCalendar *, NULL for UTC */
  char name[64];
} tabq_zone;

/* Opens `name` (NULL, "", "UTC" or "Etc/UTC": UTC); TABQ_INVALID for a name ICU does not know
 * as a system zone. */
int tabq__zone_open(const char *name, tabq_zone *z, tabq_error *err);
void tabq__zone_close(tabq_zone *z);

/* The spec parsed, zone checked against it (an interval takes none), in one call. */
int tabq__spec_parse(const char *spec, const char *zone, tabq_cron *c, tabq_error *err);

/* The first slot strictly after `after_s` (seconds since 1970 UTC), -1 when none comes. */
int64_t tabq__slot_next(const tabq_cron *c, tabq_zone *z, int64_t after_s);

/* "NAME:YYYY-MM-DDTHH:MMZ" (":SS" before the Z for an interval of odd seconds). */
int tabq__slot_key(const char *name, const tabq_cron *c, int64_t slot_s, char *buf, size_t cap);

#endif
