/* Deadlines' rules (docs/deadlines.md), checked without a database when a subscription opens and
 * when a description file is read: a deadline column is a data column of integers, and a
 * deadline is refused where the core could not settle the row at it while the handler runs. */
#include <stdio.h>
#include <string.h>

#include "deadline.h"
#include "error.h"

#define MAX_DEADLINE_MS 604800000u /* seven days */

static const char *form_name(const tabq_table *t) {
  switch (tabq_table_form(t)) {
  case TABQ_FORM_LEASE:
    return "lease";
  case TABQ_FORM_ADVISORY:
    return "advisory";
  case TABQ_FORM_ROWLOCK:
    break;
  }
  return "row lock";
}

int tabq__deadline_table_rule(const tabq_table *t, tabq_error *err) {
  const char *name = t->deadline_column;
  if (!name)
    return TABQ_OK;
  for (size_t i = 0; i < t->ndata; i++) {
    if (!t->data[i].name || strcmp(t->data[i].name, name))
      continue;
    if (t->data[i].type == TABQ_T_NULL || t->data[i].type == TABQ_T_INT)
      return TABQ_OK;
    return tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                         "table %s breaks R-DESC-1 (deadline column): data column '%s' declares "
                         "type %d; a deadline column holds integers (milliseconds), TABQ_T_INT "
                         "or TABQ_T_NULL",
                         t->name, name, t->data[i].type);
  }
  return tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                       "table %s breaks R-DESC-1 (deadline column): deadline_column '%s' names no "
                       "data column; the row's budget is one of its data columns, so a publish "
                       "writes it with the message's data",
                       t->name, name);
}

static int refuse(tabq_error *err, const tabq_table *t, const char *rule, const char *detail) {
  return tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                       "subscription to table %s (%s form) breaks the deadline rule (%s): %s",
                       t->name, form_name(t), rule, detail);
}

int tabq__deadline_mount_rule(const tabq_table *t, const tabq_subscription_options *o,
                              tabq_error *err) {
  bool used = tabq__deadline_used(t, o);
  if (o->on_deadline != TABQ_DEADLINE_RETRY_AFTER && o->on_deadline != TABQ_DEADLINE_DEAD_LETTER)
    return refuse(err, t, "on_deadline",
                  "on_deadline is none of TABQ_DEADLINE_RETRY_AFTER, _DEAD_LETTER");
  if (!used && (o->on_deadline || o->deadline_retry_ms))
    return refuse(err, t, "a policy needs a deadline",
                  "on_deadline and deadline_retry_ms need deadline_ms or the table's "
                  "deadline_column");
  if (!used)
    return TABQ_OK;
  if (o->deadline_ms > MAX_DEADLINE_MS)
    return refuse(err, t, "deadline_ms", "deadline_ms is at most 604,800,000 (seven days)");
  if (o->transactional)
    return refuse(
        err, t, "not in transactional mode",
        "transactional: the handler's own transaction runs on its thread, which C cannot stop, and "
        "holds what the core would settle the row with (the row lock form's very "
        "row, SQLite's write lock): the core cannot settle the row at the deadline "
        "while it is open");
  if (o->batch_handler)
    return refuse(err, t, "a handler of one delivery",
                  "a deadline budgets a handler of one delivery; a batch handler's rows (batch) "
                  "settle together");
  if (o->on_deadline == TABQ_DEADLINE_RETRY_AFTER && !t->retry_after.name)
    return refuse(err, t, "retry_after needs its column",
                  "the policy retry_after needs a retry_after column (without one the row would "
                  "come back at once, and run out of time again)");
  if (o->on_deadline == TABQ_DEADLINE_DEAD_LETTER && !o->dead_letter_group && !o->dead_letter_table)
    return refuse(err, t, "dead_letter needs a dead letter",
                  "the policy dead_letter needs the mount's dead letter (max_attempts with a "
                  "dead letter group or table)");
  if (o->on_deadline == TABQ_DEADLINE_DEAD_LETTER && o->deadline_retry_ms)
    return refuse(err, t, "deadline_retry_ms",
                  "deadline_retry_ms is the delay of the policy retry_after; the policy is "
                  "dead_letter");
  return TABQ_OK;
}
