/* The rules a subscription's mount and a route's names keep, checked without a database. */
#ifndef TABQ_MOUNT_H
#define TABQ_MOUNT_H

#include <stdbool.h>
#include <tabq/tabq.h>

/* The options against the table (TABQ_DECLARATION naming the table and the rule; TABQ_INVALID
 * without exactly one handler). */
int tabq__mount_check(const tabq_table *t, const tabq_subscription_options *o, tabq_error *err);
/* A name a route takes (`route`: a '*' may end it) or a publish or subscription gives; `what`
 * begins the message ("route", "subscription"). */
int tabq__route_name_check(const char *name, bool route, const char *what, tabq_error *err);
/* What a subscription by name `name` to table `t` may not set (SPEC 9). */
int tabq__by_name_check(const char *name, const tabq_table *t, const tabq_subscription_options *o,
                        tabq_error *err);

#endif
