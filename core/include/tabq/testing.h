/* tabq — helpers for a service's own tests (docs/testing.md).
 *
 * tabq_test_deliver() runs a handler once on a delivery made in memory, without any database:
 * the handler reads the message through the usual tabq_delivery_* calls and its outcome comes
 * back, as tabq would settle it (max_attempts and the dead letter applied).
 *
 * tabq_test_open() gives a broker on a fresh SQLite file in a temporary folder with the tables
 * created; tabq_test_drain() then runs a queue to empty on the calling thread, so a test
 * publishes, drains, and checks what its handlers did, with no thread of its own to wait for.
 *
 *   tabq_test_message m = TABQ_TEST_MESSAGE_INIT;
 *   m.message.payload = "{\"user\": 7}";
 *   m.message.payload_len = 11;
 *   m.attempt = 3;
 *   tabq_outcome out;
 *   tabq_test_deliver(&jobs, &options, &m, &out, &err);
 *   CU_ASSERT_EQUAL(out.kind, TABQ_OUTCOME_ACK);
 */
#ifndef TABQ_TESTING_H
#define TABQ_TESTING_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A message as a delivery of it reads: what a publish writes, and what the row holds beside. */
typedef struct tabq_test_message {
  uint32_t size;        /* sizeof(tabq_test_message): TABQ_TEST_MESSAGE_INIT sets it */
  tabq_message message; /* group, payload, headers, partition key, row mode data, id */
  long attempt;         /* the attempt the delivery reads; 0: 1 */
} tabq_test_message;

#define TABQ_TEST_MESSAGE_INIT TABQ_SIZED_INIT(tabq_test_message)

/* Runs `options`' handler (or batch handler, with this one delivery) once on a delivery of `m`
 * from `table`, with the options' codec and decode policy, and writes into *out what tabq would
 * settle the row as: the handler's outcome (or what it settled with tabq_delivery_settle), a
 * retry at max_attempts turned into a dead letter, the decode policy's outcome for a message
 * that does not decode (the handler not called). The description and the options are checked
 * as tabq_subscribe checks them, the message as tabq_publish does (TABQ_DECLARATION, TABQ_HEADER,
 * TABQ_INVALID naming the rule). Transactional mode is refused: its handlers need a database. */
TABQ_API int tabq_test_deliver(const tabq_table *table, const tabq_subscription_options *options,
                               const tabq_test_message *m, tabq_outcome *out, tabq_error *err);

/* A broker on a new SQLite file in a new folder under $TMPDIR (or /tmp), with each of the
 * `n` tables created as tabq_schema_apply creates them (and their claim-order indexes). Close
 * it with tabq_test_close, which removes the folder. `options` may be NULL. */
TABQ_API int tabq_test_open(const tabq_table *const *tables, size_t n,
                            const tabq_broker_options *options, tabq_broker **out, tabq_error *err);
/* The folder of a broker of tabq_test_open (its database is queue.db there); NULL for another
 * broker. */
TABQ_API const char *tabq_test_folder(const tabq_broker *b);
/* Closes a broker of tabq_test_open and removes its folder. */
TABQ_API void tabq_test_close(tabq_broker *b);

/* Runs a subscription of `options` on the calling thread until a claim finds no row due: each
 * row claimed, handed to the handler on this thread and settled, one at a time (a batch handler
 * gets its batches). Rows retried after a delay and not yet due are left; drain again later.
 * *stats (if not NULL; `size` bytes of it, sizeof *stats as compiled) gets the drain's counts.
 * Works on any broker, not only tabq_test_open's; `workers`, `workers_by_key` and `prefetch`
 * are ignored (one row at a time), the rest is as tabq_subscribe takes it. */
TABQ_API int tabq_test_drain(tabq_broker *b, const tabq_table *table,
                             const tabq_subscription_options *options, tabq_stats *stats,
                             size_t size, tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
