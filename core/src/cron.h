/* Schedules' specs (docs/schedule.md): a five-field cron expression, a macro (@hourly ...) or an
 * interval ("every 30s", "@every 5m"), parsed into sets of allowed values; and the next wall
 * time a cron expression allows, on the civil calendar alone (the zone is schedule_zone.c's).
 * Debian ships no C library that parses cron expressions, hence this small one of tabq's own. */
#ifndef TABQ_CRON_H
#define TABQ_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tabq_cron {
  uint64_t minutes;  /* bit m: minute m allowed, 0-59 */
  uint32_t hours;    /* 0-23 */
  uint32_t days;     /* bits 1-31 */
  uint32_t months;   /* bits 1-12 */
  uint32_t weekdays; /* bits 0-6, Sunday 0 (7 in the expression is Sunday too) */
  /* The day of month or the day of week field began with '*': both must then match (the other
   * matches every day); when neither did, a day matching either one fires (crontab(5)). */
  bool dom_star, dow_star;
  /* The minute or the hour field began with '*': the job runs by the clock's elapsed time at a
   * daylight saving change (both passes of a repeated hour, nothing for a skipped one); a job of
   * fixed times runs once per wall time (the first pass; a skipped time at the change). */
  bool wildcard;
  /* An interval instead of an expression: slots every interval_s seconds since 1970 UTC. */
  int64_t interval_s;
} tabq_cron;

/* Parses `spec`. On a refusal writes why into `why` ("field 2 (hour), position 3: 25 is out of
 * 0-23"), sets *position to the character concerned counted from 1 (0: the whole spec), and
 * returns nonzero. */
int tabq__cron_parse(const char *spec, tabq_cron *out, unsigned *position, char *why, size_t cap);

/* The first wall time at or after `wall_s` (seconds since 1970 read as a wall clock, rounded up
 * to the minute) that the expression allows; -1 when none comes within 30 years. */
int64_t tabq__cron_next_wall(const tabq_cron *c, int64_t wall_s);

/* The civil calendar: days since 1970-01-01 and back. */
int64_t tabq__days_from_civil(int64_t y, unsigned m, unsigned d);
void tabq__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif
