/* tabq — pausing and resuming a queue across processes (docs/pause.md).
 *
 * A pause must reach every process that claims from a queue, so it is written where they all
 * read: a table of the service's own, the controls table, one row per queue, described by its
 * columns as a queue table is by its roles:
 *
 *   CREATE TABLE queue_controls (queue_table TEXT NOT NULL, queue TEXT NOT NULL,
 *                                paused INTEGER NOT NULL DEFAULT 0, paused_at TIMESTAMPTZ,
 *                                PRIMARY KEY (queue_table, queue));
 *
 *   tabq_controls c = TABQ_CONTROLS_INIT;
 *   c.name = "queue_controls";
 *   c.table_column = "queue_table";
 *   c.queue_column = "queue";
 *   c.paused_column = "paused";
 *   c.paused_at_column = "paused_at";         // optional
 *   tabq_set_controls(b, &c, &err);           // in every process, before its subscriptions
 *   ...
 *   tabq_pause(b, &jobs, "emails", &err);     // from any process: claims stop everywhere
 *   tabq_resume(b, &jobs, "emails", &err);
 *
 * Each subscription of a broker given controls reads its queue's row once per poll interval,
 * before a claim (one SELECT of one row by its key, never part of the claim), and claims nothing
 * while the row says paused: within one poll interval of a pause no process claims from the
 * queue. Rows in work when the pause comes finish and settle as usual; tabq_shutdown works as
 * ever. With listen_notify (PostgreSQL), a pause or resume notifies the controls table's channel
 * and every listening process reads its row at once. A broker without controls reads nothing. */
#ifndef TABQ_CONTROLS_H
#define TABQ_CONTROLS_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The controls table, described by its columns (each name as the database knows it). */
typedef struct tabq_controls {
  uint32_t size;    /* sizeof(tabq_controls): TABQ_CONTROLS_INIT sets it */
  const char *name; /* the table */
  /* Text: the name of the queue table the row controls, as its tabq_table names it (one
   * controls table serves every queue table of a database). */
  const char *table_column;
  /* Text: the queue, as the table's group column holds it; '' (empty) for a table without a
   * group column, whose pause stops the whole table. */
  const char *queue_column;
  /* An integer: 1 paused, 0 running (a missing row is running). */
  const char *paused_column;
  /* Optional, a nullable time: when the queue was paused, NULL once resumed (for people reading
   * the table; tabq never reads it). NULL: the table has none. */
  const char *paused_at_column;
} tabq_controls;

#define TABQ_CONTROLS_INIT TABQ_SIZED_INIT(tabq_controls)
#define TABQ_CONTROLS_SIZE_1_0 (offsetof(tabq_controls, paused_at_column) + sizeof(const char *))

/* Gives the broker its controls table, once, before its first subscription: every subscription
 * opened after it honours the pauses written there, and tabq_pause/tabq_resume/tabq_paused may
 * be called. The table is checked on the database now (a query naming each column, reading no
 * row: TABQ_SCHEMA naming the table when it or a column is missing). Refused with TABQ_INVALID
 * naming the member or the rule: a member missing (name, table_column, queue_column,
 * paused_column), controls given already, a subscription opened already; TABQ_CLOSED after
 * tabq_shutdown. With listen_notify the broker also listens on the controls table's channel. */
TABQ_API int tabq_set_controls(tabq_broker *b, const tabq_controls *controls, tabq_error *err);

/* Pauses `queue` of `table` (NULL for a table without a group column) for every process whose
 * broker has these controls: writes its row (paused = 1, paused_at = now) in one transaction,
 * with a NOTIFY of the controls table's channel where the broker listens; this broker's own
 * subscriptions of the queue learn it at once. Pausing a paused queue changes nothing more.
 * Refused, nothing written (TABQ_INVALID naming the table and the rule): no controls given, a
 * queue missing where the table has a group column, a queue given where it has none; TABQ_SCHEMA
 * when the table does not match its description (tabq_admin_verify). */
TABQ_API int tabq_pause(tabq_broker *b, const tabq_table *table, const char *queue,
                        tabq_error *err);
/* Resumes it (paused = 0, paused_at = NULL), by the same rules: claims restart within one poll
 * interval (at once where notified). Resuming a queue never paused writes its row, running. */
TABQ_API int tabq_resume(tabq_broker *b, const tabq_table *table, const char *queue,
                         tabq_error *err);
/* Whether the queue is paused as its row says now (*paused false without a row), by the same
 * rules. */
TABQ_API int tabq_paused(tabq_broker *b, const tabq_table *table, const char *queue, bool *paused,
                         tabq_error *err);

/* ---- In an app (tabq/app.h, docs/description-files.md) -----------------------------------
 * An app carries its controls table, as a description file's "controls" member does:
 * tabq_app_main gives it to the broker before the subscriptions, and `tabq pause` and
 * `tabq resume` write into it. The members' rules are tabq_set_controls' (the table itself is
 * checked when a broker gets it). A second call replaces the first. */
struct tabq_app;
TABQ_API int tabq_app_set_controls(struct tabq_app *app, const tabq_controls *controls,
                                   tabq_error *err);
/* The app's controls table (full size, owned by the app), NULL when it has none. */
TABQ_API const tabq_controls *tabq_app_controls(const struct tabq_app *app);

#ifdef __cplusplus
}
#endif

#endif
