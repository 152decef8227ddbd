/* tabq — the statement check (docs/check.md): every statement a subscription, a publish or a
 * route would run, built as they build it and prepared on the live database, without running
 * any: nothing is claimed, settled or written. Each statement is reported with the database's
 * answer, so a deploy can stop on a column the table lacks before a subscription would.
 * Included by tabq/tabq.h. */
#ifndef TABQ_CHECK_H
#define TABQ_CHECK_H

#include <stdio.h>

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tabq_check_severity {
  TABQ_CHECK_OK = 0,  /* the database takes the statement */
  TABQ_CHECK_WARNING, /* it runs, but not as it should: the claim-order index is missing */
  TABQ_CHECK_ERROR,   /* it would fail: the database refused it, or it could not be built */
} tabq_check_severity;

/* One statement checked. tabq owns it and its strings, for as long as its report lives: read
 * them, never write or free them. Members are only ever appended. */
typedef struct tabq_check_item {
  const char *table; /* the table the statement runs on */
  /* What it is for: "subscription resize: claim", "publish: insert", "route signups: claim";
   * a statement of the service's own says so ("subscription resize: claim (events.claim)"). */
  const char *purpose;
  /* The statement as prepared ("" when it could not be built); for a missing claim-order
   * index, the statement that creates it. */
  const char *sql;
  tabq_check_severity severity;
  tabq_code code;       /* TABQ_OK, or what it fails with (TABQ_SCHEMA: a table or column) */
  const char *sqlstate; /* the database's SQLSTATE, "" when it gave none */
  long native;          /* the database's or its driver's own error number, 0 when none */
  const char *message;  /* the database's message, or the warning's; "" when the item is ok */
  /* The character of `sql` the database points at, counted from 1; 0 when it gave none
   * (PostgreSQL and SQLite give it for most errors, MySQL/MariaDB never). */
  uint32_t position;
} tabq_check_item;

/* The items of one or more checks, in the order they were checked. */
typedef struct tabq_check_report tabq_check_report;

/* A new, empty report (NULL when out of memory). */
TABQ_API tabq_check_report *tabq_check_report_new(void);
TABQ_API size_t tabq_check_report_count(const tabq_check_report *r);
/* Item i, from 0; NULL past the last. */
TABQ_API const tabq_check_item *tabq_check_report_item(const tabq_check_report *r, size_t i);
/* The most severe item's severity (TABQ_CHECK_OK for an empty report). */
TABQ_API tabq_check_severity tabq_check_report_worst(const tabq_check_report *r);
/* Writes the report as text on `out`: a line an item ("error   jobs: publish: insert"), the
 * message, SQLSTATE, position and statement of a warning or an error indented below it, and a
 * last line of counts. `all` false leaves the ok items out. Returns 0, or -1 when writing
 * failed. tabq_app_main --check and `tabq check` print this. */
TABQ_API int tabq_check_report_print(const tabq_check_report *r, FILE *out, bool all);
/* Frees the report and its items. */
TABQ_API void tabq_check_report_free(tabq_check_report *r);

/* The checks. Each adds its items to `report` and returns:
 * - TABQ_OK when every statement prepared (warnings allowed);
 * - the code of the first item in error, with `err` filled from it, when a statement failed or
 *   the description, the mount or the dialect refused what was asked (a refusal stops the
 *   check of that subscription, publish or route: nothing past it can be built; a statement
 *   the database refuses does not, every other one is checked);
 * - another code, with `err` and no item, when the check could not run (TABQ_INVALID
 *   arguments, TABQ_NOMEM, no connection to the database).
 * Nothing runs on the database but the prepares and the catalog's queries (a generated
 * attempt's default, the table's indexes); every prepared statement is dropped again. */

/* What tabq_subscribe(b, table, options) would prepare: the claims (claim_one where the
 * dialect has it), the fetch, the settlements, the lease's extension and release, the dead
 * letter into a group or a table, the advisory lock and unlock, the FIFO guard, the stamps, and
 * the statements of the service's own (table->events). `options` is the mount (queue, dead
 * letter, batch handler ...); its handlers may be NULL. Where the claim is tabq's own, a
 * claim-order index the table lacks is a warning whose `sql` creates it (docs/schema.md). */
TABQ_API int tabq_check_subscription(tabq_broker *b, const tabq_table *table,
                                     const tabq_subscription_options *options,
                                     tabq_check_report *report, tabq_error *err);
/* What tabq_publish and tabq_publish_many would prepare: the insert, the insert of many rows
 * (each power of two a batch writes, one item), and the notify with listen_notify; on a table
 * with a unique_key, the key's unique index (an error whose `sql` creates it when it is missing,
 * docs/unique-jobs.md) and the query of a key's holder. */
TABQ_API int tabq_check_publish(tabq_broker *b, const tabq_table *table, tabq_check_report *report,
                                tabq_error *err);
/* What tabq_route(b, name, table) would accept, and then what a subscription by name
 * (tabq_subscribe_to) and a publish by name (tabq_publish_to) would prepare, the name as the
 * queue; purposes read "route <name>: ...". The route itself is not declared. */
TABQ_API int tabq_check_route(tabq_broker *b, const char *name, const tabq_table *table,
                              tabq_check_report *report, tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
