/* Publishing's parts: one message's row written on a connection, the table's publisher built
 * on first use, and the statements of many rows tabq_publish_many writes with. Included by the
 * files that publish (tabq_publish, publish_many, transactions, schedules, the check). */
#ifndef TABQ_PUBLISHING_H
#define TABQ_PUBLISHING_H

#include "engine.h"

/* publish.c: what tabq_publish, tabq_publish_many and tabq_publish_tx share. */
/* Writes message m's row on c (taken at full size by the caller), with its NOTIFY where the
 * broker listens; `headers` is the caller's buffer for their JSON. Wakes nobody. */
int tabq__publish_on(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const tabq_message *m,
                     tabq_buf *headers, tabq_error *err);
/* The table's publisher, built and prepared on first use: on `on` (a connection the caller
 * holds: a transaction's), else on a pooled one. Called with b->mu held. */
int tabq__publisher_of(tabq_broker *b, const tabq_table *caller, tabq_pconn *on,
                       tabq_publisher **out, tabq_error *err);
/* A publisher's statements built into p->reg, from the description (taken into p->table and
 * checked) on: the insert and, with listen_notify, the notify. Lists and prepares nothing. */
int tabq__publisher_build(tabq_broker *b, const tabq_table *caller, tabq_publisher *p,
                          tabq_error *err);
/* Runs the insert of one message's bound values on `c`. On a table with a unique_key, an insert
 * that wrote nothing is a duplicate: TABQ_DUPLICATE with the holder's id in err (found by
 * find_unique); the row's key was free but no row was written (MySQL's conflict on the id):
 * TABQ_BACKEND. */
int tabq__insert_row(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const tabq_message *m,
                     const tabq_bind *v, tabq_error *err);
/* The checks of one message against the table, before anything is written. */
int tabq__message_check(const tabq_table *t, const tabq_message *m, tabq_error *err);
/* The insert's values for a checked message: its rendered headers, and `now` for the row's
 * times (retry_after is now + its delay); the payload as the table declares it. */
tabq_bind tabq__message_bind(const tabq_table *t, const tabq_message *m, const char *headers,
                             size_t headers_len, int64_t now);
/* The type a publish binds the payload as: TABQ_T_BYTES, or the TABQ_T_TEXT or _JSON the
 * payload column declares. */
tabq_type tabq__payload_type(const tabq_table *t);

/* publish_rows.c: the statements of many rows tabq_publish_many writes with. */
/* The publisher's chunk, from the dialect's insert_rows and the insert's parameters; no
 * statement is built yet. */
void tabq__rows_init(tabq_broker *b, tabq_publisher *p);
/* Builds every statement a batch of n rows runs, not built yet, and tells the most rows and the
 * most values one of them binds (*values 0: every row goes one insert). Called with b->mu held. */
int tabq__rows_plan(tabq_broker *b, tabq_publisher *p, size_t n, unsigned *rows, size_t *values,
                    tabq_error *err);
/* The rows the next statement of a planned batch writes with `left` rows to go, and that
 * statement; 1 row is the insert. */
unsigned tabq__rows_next(const tabq_publisher *p, size_t left, unsigned *stmt);
/* Builds the statement of every number of rows a batch may write at once (2 up to the chunk),
 * for the statement check. */
int tabq__rows_build_every(tabq_broker *b, tabq_publisher *p, tabq_error *err);

#endif
