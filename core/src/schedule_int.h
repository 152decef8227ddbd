/* What the scheduler (schedule.c) shares with the description files' schedules
 * (app_schedule.c): the rules a schedule is checked by, so a file is refused as tabq_schedule
 * would refuse it. */
#ifndef TABQ_SCHEDULE_INT_H
#define TABQ_SCHEDULE_INT_H

#include <tabq/schedule.h>

/* The options against the description (full-size copies) and the template (NULL: none):
 * TABQ_DECLARATION or TABQ_INVALID naming the table and the rule, as tabq_schedule refuses. */
int tabq__schedule_check(const tabq_table *t, const tabq_schedule_options *o, const tabq_message *m,
                         tabq_error *err);

#endif
