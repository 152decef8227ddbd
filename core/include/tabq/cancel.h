/* tabq — cancelling a job (docs/cancel.md).
 *
 * tabq_cancel finishes a row that is not in work at once (deleted, or given its processed_at, so
 * no claim takes it again), and marks a row in work for its delivery: the handler may ask
 * tabq_delivery_cancelled() and stop early, and whatever it returns, the row's settlement is a
 * drop (counted in tabq_stats.cancelled, reported to the delivery hooks as a drop).
 *
 *   tabq_error err;
 *   int rc = tabq_cancel(broker, &thumbnail_jobs, tabq_int(42), &err);
 *   if (rc == TABQ_NOT_FOUND) ... // no unfinished row 42: finished already, or never there
 *
 * A mark needs a place: the table's cancelled_at role (tabq/table.h), a nullable time column.
 * Which rows in work a cancel reaches depends on the form:
 *
 *   lease     with cancelled_at, any; the handler learns at its next extension (every half
 *             lease), the settlement reads the mark itself. Without the role: refused with
 *             TABQ_DECLARATION, nothing changed.
 *   advisory  needs cancelled_at (TABQ_DECLARATION without it): the row is finished and marked
 *             in one statement; the handler's check reads the mark (one round trip).
 *   row lock  the row is locked by its delivery's transaction: a cancel reaches it only where
 *             that delivery is the calling broker's own (the check then costs nothing); another
 *             process's delivery is refused with TABQ_TRANSACTION_HELD, nothing changed. */
#ifndef TABQ_CANCEL_H
#define TABQ_CANCEL_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Cancels row `id` (tabq_int or tabq_text) of `table`: TABQ_OK when the row was finished or
 * marked; TABQ_NOT_FOUND when the table has no unfinished row with that id (a row finished
 * already, by its handler or an earlier cancel, is not found: nothing is changed);
 * TABQ_DECLARATION or TABQ_TRANSACTION_HELD when the form cannot reach the row in work (above),
 * nothing changed; TABQ_INVALID for a missing broker or table or an id of another type. */
TABQ_API int tabq_cancel(tabq_broker *b, const tabq_table *table, tabq_value id, tabq_error *err);

/* Whether the delivery's row has been cancelled, as far as it can know: in the lease form what
 * its last extension read (no round trip); in the advisory form one round trip on the
 * delivery's connection, until it reads true; in the row lock form what the broker that
 * cancelled told it in the process (no round trip). Once true, it stays true for the delivery;
 * the handler may stop and return anything: the settlement is a drop. */
TABQ_API bool tabq_delivery_cancelled(tabq_delivery *d);

#ifdef __cplusplus
}
#endif

#endif
