/* The table description's rules (R-DESC-1) and the projection's layout. */
#ifndef TABQ_TABLE_RULES_H
#define TABQ_TABLE_RULES_H

#include <tabq/tabq.h>

/* Checks `t` against R-DESC-1; fills `err` with the table and the rule broken. */
int tabq__table_rules(const tabq_table *t, tabq_error *err);

/* The member of a description file a refusal of tabq__table_rules points at ("fifo"), NULL for
 * the table as a whole. */
const char *tabq__table_rule_member(const tabq_error *err);

/* The custom events by name, in the order of tabq_events' members (every one a const char *):
 * tabq__event_sql(e)[i] is the statement of tabq__event_names[i]. NULL-terminated. */
extern const char *const tabq__event_names[];
#define TABQ__EVENT_COUNT 10
static inline const char *const *tabq__event_sql(const tabq_events *e) {
  return (const char *const *)e;
}
static inline const char **tabq__event_slots(tabq_events *e) {
  return (const char **)e;
}

/* Where each role sits in a claim's projection (see dialect.h); -1 where absent. `due`, the
 * row's retry_after after the data columns, is there only where the claims were asked for it
 * (tabq_build.project_due, ABI 1.8). */
typedef struct tabq_projection {
  int id, attempt, group, partition_key, headers, payload, data0, due;
  unsigned ncols;
} tabq_projection;

void tabq__projection_init(tabq_projection *p, const tabq_table *t, bool due);

#endif
