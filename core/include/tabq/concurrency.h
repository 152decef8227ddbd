/* tabq — concurrency limits across processes (docs/concurrency.md).
 *
 * At most N deliveries of a key (or of a whole queue) in work at once, counted over every
 * process: each delivery of a limited subscription takes one of the key's N slots before its
 * handler runs. The slots are rows of a table of the service's own, the slots table, described
 * by its columns as a queue table is by its roles:
 *
 *   CREATE TABLE concurrency_slots (slot TEXT PRIMARY KEY, holder TEXT NOT NULL,
 *                                   expires TIMESTAMPTZ NOT NULL);
 *
 *   tabq_concurrency_slots slots = TABQ_CONCURRENCY_SLOTS_INIT;
 *   slots.name = "concurrency_slots";
 *   slots.key_column = "slot";
 *   slots.holder_column = "holder";
 *   slots.expires_column = "expires";
 *   tabq_set_concurrency_slots(b, &slots, &err);  // in every process, before its subscriptions
 *
 *   o.concurrency_key = "customer";   // a column of the table: its value is the key
 *   o.concurrency_limit = 2;          // at most two rows of a customer in work at once
 *   tabq_subscribe(b, &jobs, &o, NULL, &err);
 *
 * A delivery whose key has every slot held is not handled: it steps aside (its row is due again
 * a poll interval later, its attempt as it was) and counts in tabq_stats.deferred. A slot is
 * given back when the handler returns; the broker's keeper moves the expiry of the slots it
 * holds every ttl/3, so the slots of a process that died free themselves after ttl. */
#ifndef TABQ_CONCURRENCY_H
#define TABQ_CONCURRENCY_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The slots table, described by its columns (each name as the database knows it). */
typedef struct tabq_concurrency_slots {
  uint32_t size;    /* sizeof(tabq_concurrency_slots): TABQ_CONCURRENCY_SLOTS_INIT sets it */
  const char *name; /* the table */
  /* Text, the primary key: the slot, "<key>#<i>" for i in 0..N-1. */
  const char *key_column;
  /* Text: the process holding the slot (the broker's holder name, tabq_concurrency_holder). */
  const char *holder_column;
  /* A time: when the slot frees itself unless its holder's keeper moves it on. */
  const char *expires_column;
  /* How long a slot outlives the last word of its holder, in milliseconds; 0: 30,000. The
   * keeper moves the expiry every ttl/3. At least 300. */
  unsigned ttl_ms;
} tabq_concurrency_slots;

#define TABQ_CONCURRENCY_SLOTS_INIT TABQ_SIZED_INIT(tabq_concurrency_slots)
#define TABQ_CONCURRENCY_SLOTS_SIZE_1_0                                                            \
  (offsetof(tabq_concurrency_slots, ttl_ms) + sizeof(unsigned))

/* Gives the broker its slots table, once, before its first subscription: subscriptions opened
 * after it may set concurrency_limit. The table is checked on the database now (a query naming
 * each column, reading no row: TABQ_SCHEMA naming the table when it or a column is missing), and
 * the keeper thread starts. Refused with TABQ_INVALID naming the member or the rule: a member
 * missing, a ttl_ms under 300, slots given already, a subscription opened already; TABQ_CLOSED
 * after tabq_shutdown. */
TABQ_API int tabq_set_concurrency_slots(tabq_broker *b, const tabq_concurrency_slots *slots,
                                        tabq_error *err);

/* The text this broker writes into the holder column ("host/pid/random"), "" without slots. */
TABQ_API const char *tabq_concurrency_holder(const tabq_broker *b);

/* ---- In an app (tabq/app.h, docs/description-files.md) -----------------------------------
 * An app carries its slots table, as a description file's "concurrency_slots" member does:
 * tabq_app_main gives it to the broker before the subscriptions. The members' rules are
 * tabq_set_concurrency_slots' (the table itself is checked when a broker gets it). A second call
 * replaces the first. */
struct tabq_app;
TABQ_API int tabq_app_set_concurrency_slots(struct tabq_app *app,
                                            const tabq_concurrency_slots *slots, tabq_error *err);
/* The app's slots table (full size, owned by the app), NULL when it has none. */
TABQ_API const tabq_concurrency_slots *tabq_app_concurrency_slots(const struct tabq_app *app);

#ifdef __cplusplus
}
#endif

#endif
