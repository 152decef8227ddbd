/* tabq — task queues kept in a service's own SQL tables.
 *
 * A service describes a queue table (tabq/table.h), connects a broker by URL, mounts a handler
 * on a queue with tabq_subscribe(), and publishes rows with tabq_publish(). tabq claims rows,
 * calls the handler, and settles each row by the outcome the handler returns.
 *
 * Every call that can fail returns a tabq_code and, when `err` is not NULL, fills it with the
 * details. Handles are opaque; a broker and its subscriptions may be used from any thread.
 *
 * Structs the service fills (tabq_table, tabq_broker_options, tabq_subscription_options,
 * tabq_message) begin with `size`, set to sizeof the struct as the service was compiled (the
 * TABQ_*_INIT initialisers do it): a newer libtabq then reads an older program's structs safely,
 * and a struct whose size is 0 is refused with TABQ_INVALID. Members are only ever appended.
 * docs/abi-policy.md has the whole policy. */
#ifndef TABQ_TABQ_H
#define TABQ_TABQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tabq/codes.h>
#include <tabq/table.h>
#include <tabq/value.h>
#include <tabq/version.h>

/* TABQ_SIZED_INIT(type): an initialiser that sets `size` and zeroes the rest. In C++ it is a
 * value-initialised struct with its size set: a braced initialiser naming the first member alone
 * would warn about every other one (-Wmissing-field-initializers, an error under -Werror), and
 * C++ before 20 has no designated initialisers. */
#ifdef __cplusplus
template <typename T> inline T tabq_sized_init_() {
  T v = T();
  v.size = static_cast<uint32_t>(sizeof(T));
  return v;
}
#define TABQ_SIZED_INIT(type) tabq_sized_init_<type>()
#else
#define TABQ_SIZED_INIT(type)                                                                      \
  { .size = sizeof(type) }
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TABQ_BUILDING_LIBRARY) && defined(__GNUC__)
#define TABQ_API __attribute__((visibility("default")))
#else
#define TABQ_API
#endif

/* ---- Version ------------------------------------------------------------------------------- */

/* The version of the library running, as TABQ_VERSION_NUMBER encodes it: compare it with the
 * macros of the headers the program was compiled with. */
TABQ_API uint32_t tabq_version(void);
/* The same as text, "0.2.0". */
TABQ_API const char *tabq_version_string(void);

/* ---- Errors -------------------------------------------------------------------------------- */

/* The details of a failure. Only tabq writes it, so a service may leave it uninitialised; its
 * layout and size are fixed for every 1.x (new details take their place in `reserved_`). */
typedef struct tabq_error {
  tabq_code code;
  char message[512];
  char sqlstate[8];   /* SQLSTATE where the database gave one, else "" */
  long native;        /* the driver's own error number, else 0 */
  char table[128];    /* the table concerned, else "" */
  char statement[32]; /* the statement concerned ("claim", "ack", ...), else "" */
  /* ABI 1.7: where in the statement the database says the failure is, the character counted
   * from 1 (PostgreSQL and SQLite tell it for most syntax errors and unknown names); else 0. */
  uint32_t position;
  char reserved_pad_[4]; /* zero */
  /* 1.9: TABQ_DUPLICATE on a table whose id holds integers: the id of the row that holds the
   * message's unique key (the message names it whatever the id's type); else 0. */
  int64_t duplicate_id;
  char reserved_[48]; /* zero; room for details a later 1.x adds */
} tabq_error;

/* "LEASE_LOST", "SCHEMA", ... */
TABQ_API const char *tabq_code_name(tabq_code code);
/* A sentence that explains the code. */
TABQ_API const char *tabq_strerror(tabq_code code);

/* ---- Broker -------------------------------------------------------------------------------- */

typedef struct tabq_broker tabq_broker;
typedef struct tabq_subscription tabq_subscription;
typedef struct tabq_delivery tabq_delivery;
typedef struct tabq_tx tabq_tx; /* a transaction: the service's own or a delivery's */

typedef void (*tabq_log_fn)(int level, const char *message, void *user);

typedef struct tabq_broker_options {
  uint32_t size;               /* sizeof(tabq_broker_options): TABQ_BROKER_OPTIONS_INIT sets it */
  unsigned pool_size;          /* connections, default 8 */
  unsigned acquire_timeout_ms; /* wait for a pooled connection, default 30000 */
  unsigned poll_interval_ms;   /* default 1000, per subscription too */
  unsigned lease_s;            /* default 30, per subscription too */
  tabq_log_fn log;             /* default: warnings and errors to stderr */
  void *log_user;
  int log_level; /* the most detailed level logged (tabq_log_level), default TABQ_LOG_WARN */
  /* PostgreSQL: one pooled connection LISTENs for the broker's life; every publish NOTIFYs, and
   * a notification wakes the subscriptions of its table (and group). Refused elsewhere. */
  bool listen_notify;
} tabq_broker_options;

/* `tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;` then set what differs from the defaults. */
#define TABQ_BROKER_OPTIONS_INIT TABQ_SIZED_INIT(tabq_broker_options)
/* The first 1.x layout: a smaller `size` is refused. */
#define TABQ_BROKER_OPTIONS_SIZE_1_0 (offsetof(tabq_broker_options, listen_notify) + sizeof(bool))

/* Connects a broker: the URL's scheme picks the dialect among the installed plugins
 * ("sqlite:jobs.db?synchronous=normal"). `options` may be NULL. */
TABQ_API int tabq_connect(const char *url, const tabq_broker_options *options, tabq_broker **out,
                          tabq_error *err);
/* Runs SQL text without parameters on a pooled connection (schema set-up, maintenance). */
TABQ_API int tabq_exec(tabq_broker *b, const char *sql, tabq_error *err);
/* Stops claiming, lets every delivery in work settle, and joins the subscriptions' threads.
 * Publishing still works afterwards (tabq_publish, tabq_publish_many, tabq_publish_to, and
 * transactions of the service's own: tabq_begin ... tabq_commit); subscribing does not
 * (TABQ_CLOSED). Idempotent. */
TABQ_API void tabq_shutdown(tabq_broker *b);
/* Shuts down if needed and frees the broker with its subscriptions and connections. */
TABQ_API void tabq_close(tabq_broker *b);
/* Blocks until SIGINT or SIGTERM arrives (or tabq_stop() is called), then shuts down. To keep
 * a signal that comes before tabq_run() from ending the process, block SIGINT and SIGTERM with
 * pthread_sigmask() before tabq_connect(): the broker's threads inherit the mask, and tabq_run()
 * unblocks them in its own thread, where a pending one is then taken. */
TABQ_API int tabq_run(tabq_broker *b);
/* Ends a tabq_run() from another thread or a signal-free context. */
TABQ_API void tabq_stop(tabq_broker *b);
/* The dialect's name ("sqlite") and the file it was loaded from. */
TABQ_API const char *tabq_dialect_name(const tabq_broker *b);
TABQ_API const char *tabq_dialect_path(const tabq_broker *b);

/* The broker's connection pool as it stands (docs/metrics.md), into `out`, `size` bytes of it
 * (sizeof *out as the service was compiled; members are only appended). */
typedef struct tabq_pool_stats {
  uint32_t size;               /* the bytes the call wrote */
  uint32_t connections;        /* the pool's size (pool_size) */
  uint32_t in_use;             /* taken now: by deliveries, claims, settlements, publishes */
  uint32_t held_by_deliveries; /* of those, held by deliveries in work (row lock, advisory) */
  uint64_t connects;           /* connections opened, first ones and replacements of broken ones */
  uint64_t waits;              /* acquisitions that found every connection taken and waited */
  uint64_t timeouts;           /* of those, the ones that gave up (TABQ_POOL_TIMEOUT) */
} tabq_pool_stats;
TABQ_API void tabq_broker_pool_stats(tabq_broker *b, tabq_pool_stats *out, size_t size);

/* ---- Outcomes ------------------------------------------------------------------------------ */

typedef enum tabq_outcome_kind {
  TABQ_OUTCOME_NONE = 0,    /* no outcome: settled already, or dropped unsettled (released) */
  TABQ_OUTCOME_ACK,         /* finished: delete the row or set processed_at */
  TABQ_OUTCOME_RETRY,       /* back to the queue at once */
  TABQ_OUTCOME_RETRY_AFTER, /* hidden for delay_ms */
  TABQ_OUTCOME_DROP,        /* finished as ack is */
  TABQ_OUTCOME_DEAD_LETTER, /* moved to the mount's dead letter at once */
} tabq_outcome_kind;

typedef struct tabq_outcome {
  tabq_outcome_kind kind;
  uint32_t delay_ms; /* RETRY_AFTER only */
} tabq_outcome;

/* Written without compound literals, so the header compiles as C++ too. */
static inline tabq_outcome tabq_outcome_of(tabq_outcome_kind kind, uint32_t delay_ms) {
  tabq_outcome o;
  o.kind = kind;
  o.delay_ms = delay_ms;
  return o;
}
static inline tabq_outcome tabq_ack(void) {
  return tabq_outcome_of(TABQ_OUTCOME_ACK, 0);
}
static inline tabq_outcome tabq_retry(void) {
  return tabq_outcome_of(TABQ_OUTCOME_RETRY, 0);
}
static inline tabq_outcome tabq_retry_after(uint32_t delay_ms) {
  return tabq_outcome_of(TABQ_OUTCOME_RETRY_AFTER, delay_ms);
}
static inline tabq_outcome tabq_drop(void) {
  return tabq_outcome_of(TABQ_OUTCOME_DROP, 0);
}
static inline tabq_outcome tabq_dead_letter(void) {
  return tabq_outcome_of(TABQ_OUTCOME_DEAD_LETTER, 0);
}
static inline tabq_outcome tabq_no_outcome(void) {
  return tabq_outcome_of(TABQ_OUTCOME_NONE, 0);
}

/* ---- Subscriptions ------------------------------------------------------------------------- */

typedef tabq_outcome (*tabq_handler)(tabq_delivery *d, void *user);
/* A batch handler writes one outcome per delivery, in the order given. */
typedef void (*tabq_batch_handler)(tabq_delivery *const *deliveries, size_t n,
                                   tabq_outcome *outcomes, void *user);

/* ---- Decoding (docs/decoding.md) ---------------------------------------------------------- */

/* A codec turns each claimed row into what its handler reads, before the handler runs:
 * `decode` a payload (payload mode), `decode_row` a row's data columns (row mode, read with
 * tabq_delivery_column). A row that does not decode never reaches the handler: the
 * subscription's decode policy settles it. What a decoder returns in *out the handler reads with
 * tabq_delivery_decoded(); `release` frees it after the settlement (NULL: nothing to free).
 * On failure a decoder returns nonzero and writes why into `why` (cap bytes, NUL-terminated). */
typedef struct tabq_codec {
  uint32_t size;    /* sizeof(tabq_codec): TABQ_CODEC_INIT sets it */
  const char *name; /* in messages: "json" */
  int (*decode)(const void *payload, size_t len, void **out, char *why, size_t cap, void *user);
  int (*decode_row)(const tabq_delivery *d, void **out, char *why, size_t cap, void *user);
  void (*release)(void *decoded, void *user);
  void *user;
} tabq_codec;

#define TABQ_CODEC_INIT TABQ_SIZED_INIT(tabq_codec)
#define TABQ_CODEC_SIZE_1_0 (offsetof(tabq_codec, user) + sizeof(void *))

/* The built-in JSON codec (jansson): a payload is any JSON text; tabq_delivery_decoded() gives
 * its `json_t *`, borrowed for the handler's call (json_incref() it to keep it longer). */
TABQ_API const tabq_codec *tabq_json_codec(void);

/* What settles a row that does not decode: a payload the codec refuses, a row-mode column that
 * does not read as its declared type, headers that are not a JSON object of strings (checked
 * where a codec is set), or a claimed id the fetch found no row for. Its attempt stays counted. */
typedef enum tabq_decode_policy {
  TABQ_DECODE_DROP = 0,    /* finished as a drop is (the default) */
  TABQ_DECODE_RETRY_AFTER, /* hidden for decode_retry_ms, then claimed again */
  TABQ_DECODE_DEAD_LETTER, /* moved to the mount's dead letter */
} tabq_decode_policy;

/* What settles a row whose handler's deadline passed (docs/deadlines.md). The core settles it at
 * the deadline with the delivery's own hold, whether or not the handler has returned. */
typedef enum tabq_deadline_policy {
  TABQ_DEADLINE_RETRY_AFTER = 0, /* hidden for deadline_retry_ms, then claimed again (default) */
  TABQ_DEADLINE_DEAD_LETTER,     /* moved to the mount's dead letter */
} tabq_deadline_policy;

/* How a subscription claims rows ahead of its idle workers (docs/prefetch.md). */
typedef enum tabq_lookahead {
  TABQ_LOOKAHEAD_ADAPTIVE = 0, /* the default, where the mount allows it; elsewhere none */
  TABQ_LOOKAHEAD_OFF,          /* a claim takes rows for idle workers only */
} tabq_lookahead;

/* How the acks of a lease subscription's workers settle (docs/coalesced-acks.md). */
typedef enum tabq_acks {
  /* The default: gathered into one commit (as coalesce_acks without a window) where the
   * database has one writer (SQLite) and several workers handle one delivery each; elsewhere
   * each ack commits alone. */
  TABQ_ACKS_DEFAULT = 0,
  TABQ_ACKS_ALONE, /* each ack commits alone, unless coalesce_acks */
} tabq_acks;

typedef struct tabq_subscription_options {
  uint32_t size;        /* sizeof(tabq_subscription_options): TABQ_SUBSCRIPTION_OPTIONS_INIT */
  const char *queue;    /* the group it reads; with no group column, a label */
  tabq_handler handler; /* one of handler and batch_handler */
  tabq_batch_handler batch_handler;
  void *user;                    /* passed to the handler */
  unsigned workers;              /* parallel handlers, default 1 */
  unsigned batch;                /* rows per batch handler call, default 16 with batch_handler */
  unsigned lease_s;              /* lease form: default the broker's */
  unsigned poll_interval_ms;     /* default the broker's */
  unsigned max_attempts;         /* with a dead letter: a failed delivery at this attempt moves */
  const char *dead_letter_group; /* tables with a group column */
  const char *dead_letter_table; /* a table with the same columns */
  /* Lease form, a handler of one delivery: acks that workers return at about the
   * same time settle in one transaction (one commit, one statement per lease token), each
   * row's token still checked and each call returning after its row's commit; see
   * docs/coalesced-acks.md. The first ack waits up to coalesce_window_us for the others (0: no
   * wait; acks that come while one commits go together in the next). */
  bool coalesce_acks;
  unsigned coalesce_window_us; /* at most 1,000,000 */
  /* Transactional mode (docs/transactions.md): the handler runs its own SQL and publishes in
   * its delivery's transaction (tabq_delivery_tx); an ack commits them with the settlement, any
   * other outcome rolls them back first. Not with a batch handler nor coalesce_acks. */
  bool transactional;
  /* n workers, the rows of one partition key handled in claim order on one of them (chosen by
   * a hash of the key; rows without a key go to any); sets the worker count, so `workers` is 0
   * or n. Needs a partition_key column and a handler of one delivery; see
   * docs/partition-keys.md for what the order holds against in each form. */
  unsigned workers_by_key;
  /* Decoding (docs/decoding.md): the codec run before the handler (NULL: none), and the policy
   * for rows that do not decode, with its delay for TABQ_DECODE_RETRY_AFTER. */
  const tabq_codec *codec;
  tabq_decode_policy on_decode_failure;
  uint32_t decode_retry_ms;
  /* Lease form, a handler of one delivery: up to this many rows claimed ahead of the idle
   * workers, each waiting its turn in the process with its lease extended, so one claim serves
   * several deliveries (docs/prefetch.md). 0, the default: `lookahead` decides (adaptive unless
   * turned off). At most 1,000. */
  unsigned prefetch;
  /* Deadlines (docs/deadlines.md): each handler's time budget in milliseconds, counted from its
   * call (0: none; a table's deadline_column may give a row a smaller one). When it passes, the
   * core settles the row by on_deadline with the delivery's hold (tabq_delivery_held turns
   * false; the handler's own settlement then fails with TABQ_LEASE_LOST): C cannot stop the
   * handler's thread, which stays busy until the handler returns. A lease is not extended past
   * the deadline. Not with transactional nor a batch handler. deadline_retry_ms: the delay of
   * TABQ_DEADLINE_RETRY_AFTER, default 1000. deadline_ms is 64 bits wide so that it starts on
   * the struct's alignment (at most seven days all the same). */
  uint64_t deadline_ms;
  tabq_deadline_policy on_deadline;
  uint32_t deadline_retry_ms;
  /* Concurrency limits (docs/concurrency.md, tabq/concurrency.h): at most concurrency_limit
   * deliveries of a key in work at once over every process whose broker has the same slots
   * table (0: no limit). concurrency_key names a column of the table whose value is the key (the
   * partition key, the group or a row mode data column); NULL with a limit: the whole queue is
   * one key. A delivery whose key has every slot held steps aside: its row is due again a poll
   * interval on, its attempt as it was (tabq_stats.deferred). Needs the broker's slots table
   * (tabq_set_concurrency_slots), a retry_after column, a handler of one delivery; at most 32. */
  const char *concurrency_key;
  unsigned concurrency_limit;
  /* Appended: the look-ahead of a lease subscription whose handler takes one delivery
   * (docs/prefetch.md). TABQ_LOOKAHEAD_ADAPTIVE, the default, claims ahead as many rows as the
   * workers start within lookahead_wait_ms (0: a tenth of the lease, at most 250 ms; at most
   * 60,000), learned from how long they take a delivery: none while they are slow, up to 8 a
   * worker (at least 32, at most 64) while they are fast. A nonzero `prefetch` fixes the look-ahead
   * instead. A program built before these members has it off, as it had. lookahead_wait_ms is 64
   * bits wide so that it starts past an older program's struct, tail padding included. */
  uint64_t lookahead_wait_ms;
  tabq_lookahead lookahead;
  /* Appended with lookahead: where acks gather by default; coalesce_acks, when set, decides
   * instead. A program built before these members has its acks alone, as it had. */
  tabq_acks acks;
} tabq_subscription_options;

#define TABQ_SUBSCRIPTION_OPTIONS_INIT TABQ_SIZED_INIT(tabq_subscription_options)
#define TABQ_SUBSCRIPTION_OPTIONS_SIZE_1_0                                                         \
  (offsetof(tabq_subscription_options, dead_letter_table) + sizeof(const char *))

/* Checks the description and the mount (R-DESC-1), builds and prepares every statement
 * (R-DESC-2), then starts claiming. Nothing is claimed when it fails. */
TABQ_API int tabq_subscribe(tabq_broker *b, const tabq_table *table,
                            const tabq_subscription_options *options, tabq_subscription **out,
                            tabq_error *err);

typedef struct tabq_stats {
  uint64_t claimed;       /* deliveries handed to handlers */
  uint64_t acked;         /* ack and drop */
  uint64_t retried;       /* retry and retry_after */
  uint64_t dead_lettered; /* moved to the dead letter */
  uint64_t released;      /* dropped unsettled */
  uint64_t lease_lost;    /* settlements and extensions refused: the token no longer held */
  uint64_t failed;        /* settlements whose statement failed */
  uint64_t extensions;    /* leases moved */
  uint64_t claims;        /* claim statements run */
  /* Advisory form, at shutdown: locks of deliveries in work released with their connection
   * back in the pool, and connections closed instead (the release was not confirmed). */
  uint64_t shutdown_released;
  uint64_t shutdown_closed;
  uint64_t coalesced;     /* acks settled in one transaction with another delivery's */
  uint64_t decode_failed; /* rows the decode policy settled before a handler saw them */
  /* Appended: of `acked`, the drops; of `retried`, the retries after a delay; the statements the
   * claims sent to the server (a claim's BEGIN, claim, stamps, fetch and COMMIT each count). */
  uint64_t dropped;
  uint64_t delayed;
  uint64_t claim_round_trips;
  /* Appended: of `dropped`, the settlements a cancel turned into a drop (docs/cancel.md). */
  uint64_t cancelled;
  /* Appended: deliveries whose deadline passed before their settlement, settled by the core by
   * the subscription's on_deadline (counted in `retried` or `dead_lettered` too). */
  uint64_t deadline_expired;
  /* Appended: deliveries that stepped aside, every slot of their key held by other deliveries
   * (docs/concurrency.md); their rows are due again a poll interval on. */
  uint64_t deferred;
  /* Appended: rows a claim took ahead of the idle workers, to wait their turn in the process
   * (prefetch, or the adaptive look-ahead; docs/prefetch.md). */
  uint64_t claimed_ahead;
} tabq_stats;

/* Copies the counters into `out`, `size` bytes of it (sizeof *out as the service was compiled):
 * an older program's smaller tabq_stats gets the counters it knows. */
TABQ_API void tabq_subscription_stats(const tabq_subscription *s, tabq_stats *out, size_t size);

/* Durations as a histogram of fixed buckets: `cumulative[i]` samples took at most `le[i]`
 * seconds (the last bound is +Inf, so it equals `count`), as Prometheus histograms count. */
#define TABQ_HISTOGRAM_BUCKETS 15
typedef struct tabq_histogram {
  uint32_t size;     /* the bytes the call wrote */
  uint32_t nbuckets; /* TABQ_HISTOGRAM_BUCKETS */
  double le[TABQ_HISTOGRAM_BUCKETS];
  uint64_t cumulative[TABQ_HISTOGRAM_BUCKETS];
  uint64_t count;
  double sum_seconds;
} tabq_histogram;

/* How long the subscription's handlers ran, one sample a delivery handed to a handler of one
 * delivery, one a call of a batch handler, summed over the workers on read, into
 * `out`, `size` bytes of it (sizeof *out as the service was compiled), as tabq_subscription_stats
 * does. */
TABQ_API void tabq_subscription_handler_durations(const tabq_subscription *s, tabq_histogram *out,
                                                  size_t size);
/* How long rows waited for a handler: from each row's due time (its retry_after column) to the
 * call of its handler, one sample a delivery handed to a handler (a batch handler's call gives one
 * for each of its rows), into `out` as tabq_subscription_handler_durations writes it. No samples
 * for a table without retry_after, a row whose retry_after is NULL, a table with a fetch of its
 * own (events.fetch), or a plugin before ABI 1.8 (docs/metrics.md). */
TABQ_API void tabq_subscription_queue_latencies(const tabq_subscription *s, tabq_histogram *out,
                                                size_t size);

/* ---- Deliveries (valid inside the handler call) ------------------------------------------- */

/* The id, when the id column holds integers (else 0). */
TABQ_API int64_t tabq_delivery_id(const tabq_delivery *d);
/* The id as read (integer or text). */
TABQ_API tabq_value tabq_delivery_id_value(const tabq_delivery *d);
/* The attempt as it stood before this claim; the first delivery reads 1. 0: unknown. */
TABQ_API long tabq_delivery_attempt(const tabq_delivery *d);
/* The payload bytes (payload mode), NULL with *len 0 when absent. */
TABQ_API const void *tabq_delivery_payload(const tabq_delivery *d, size_t *len);
/* The row's group and partition key, NULL when the table has none. */
TABQ_API const char *tabq_delivery_group(const tabq_delivery *d);
TABQ_API const char *tabq_delivery_partition_key(const tabq_delivery *d);
/* A header's value, NULL when absent. Parses the headers on first use. */
TABQ_API const char *tabq_delivery_header(tabq_delivery *d, const char *name);
/* Row mode: a data column by name, as read (a column with a declared type reads as that type,
 * or the row did not reach the handler). TABQ_INVALID when the description has no such
 * column. Text, bytes and JSON point into the delivery's row, valid during the handler's call. */
TABQ_API int tabq_delivery_column(const tabq_delivery *d, const char *name, tabq_value *out);
/* What the subscription's codec decoded (NULL without a codec): valid during the handler's
 * call, released after its settlement. */
TABQ_API void *tabq_delivery_decoded(const tabq_delivery *d);
/* Settles now, inside the handler, and says whether it took effect (TABQ_LEASE_LOST when the
 * lease had ended, TABQ_CLOSED when shutdown released an advisory lock). The handler then
 * returns tabq_no_outcome(), or anything: it is ignored. Not for the rows of a row lock batch,
 * which settle together (TABQ_INVALID): tabq_batch_settle settles them and tells each result. */
TABQ_API int tabq_delivery_settle(tabq_delivery *d, tabq_outcome outcome, tabq_error *err);
/* Settles a batch handler's rows now, inside the handler, with one outcome each, and writes each
 * row's result into codes[i]: TABQ_OK; the code of a row whose settlement failed; in a row lock
 * batch, whose rows commit together, TABQ_BATCH_ROLLED_BACK for every other row once one
 * failed (the whole batch rolled back: each row is back in the queue and no attempt is spent);
 * TABQ_LEASE_LOST for a lease batch's row whose lease had ended. `ds` and `n` are what the
 * handler was given, all of them in their order; the outcomes it then writes are ignored.
 * Returns TABQ_OK when every row settled, else the first failure's code (its details in err).
 * Rows that did not decode settle with the batch too, by the decode policy. */
TABQ_API int tabq_batch_settle(tabq_delivery *const *ds, size_t n, const tabq_outcome *outcomes,
                               int *codes, tabq_error *err);
/* Whether the delivery's hold on its row still stands, as far as tabq knows now, without a
 * round trip: false once an extension found the lease gone (lease), or once the connection that
 * holds the row's lock or transaction is known broken (row lock, advisory), and after the
 * delivery settled. True is no promise the server has not ended the session since: a row lock
 * or advisory handler learns that for sure only at settlement (docs/outcomes.md). */
TABQ_API bool tabq_delivery_held(tabq_delivery *d);
/* Lease form: the lease token, the expiry the row holds now in microseconds since 1970 UTC
 * (extensions move it); 0 in the other forms or once settled. */
TABQ_API int64_t tabq_delivery_lease_token(tabq_delivery *d);
/* The delivery's deadline in microseconds since 1970 UTC, 0 without one: its handler's call plus
 * the smaller of the subscription's deadline_ms and the row's deadline_column (docs/deadlines.md).
 * Past it the core has settled the row (or is settling it): a handler that watches the clock, or
 * tabq_delivery_held(), may stop early; its work after that is not the row's any more. */
TABQ_API int64_t tabq_delivery_deadline(const tabq_delivery *d);
/* Transactional mode: the delivery's transaction, for tabq_tx_exec, tabq_tx_query and
 * tabq_publish_tx from the handler's thread while the handler runs (NULL without the mode). It
 * ends with the settlement: the handler returns its outcome (or settles), it does not commit; a
 * call on it after that fails with TABQ_TRANSACTION_HELD. */
TABQ_API tabq_tx *tabq_delivery_tx(tabq_delivery *d);

/* ---- Publishing ---------------------------------------------------------------------------- */

typedef struct tabq_header {
  const char *name;
  const char *value;
} tabq_header;

typedef struct tabq_message {
  uint32_t size;     /* sizeof(tabq_message): TABQ_MESSAGE_INIT sets it */
  const char *group; /* required when the table has a group column */
  const void *payload;
  size_t payload_len;
  const tabq_header *headers;
  size_t nheaders;
  int64_t priority;          /* where the table has a priority column */
  const char *partition_key; /* where the table has one */
  /* retry_after = now + delay_ms; refused (TABQ_INVALID) where the table has no retry_after
   * column, or a generated one the insert leaves to the database. */
  uint32_t delay_ms;
  tabq_value id;          /* when the id column is not generated */
  const tabq_value *data; /* row mode: one value per data column, in description order */
  size_t ndata;
  /* 1.9, where the table has a unique_key column: the job's key, UTF-8 (NULL: none, the column
   * is left NULL and the row is not unique). A key a row holds already writes nothing and the
   * publish returns TABQ_DUPLICATE (docs/unique-jobs.md). */
  const char *unique_key;
} tabq_message;

#define TABQ_MESSAGE_INIT TABQ_SIZED_INIT(tabq_message)
#define TABQ_MESSAGE_SIZE_1_0 (offsetof(tabq_message, ndata) + sizeof(size_t))

/* Writes one row and wakes this process's subscriptions of its table (and group). On a table
 * with a unique_key column, a message whose key a row holds already writes nothing and returns
 * TABQ_DUPLICATE, err->duplicate_id and err->message naming the holder; concurrent publishers of
 * one key write exactly one row (the database's unique index decides). */
TABQ_API int tabq_publish(tabq_broker *b, const tabq_table *table, const tabq_message *m,
                          tabq_error *err);
/* Writes n rows in one transaction on one connection: all of them or none. Every message is
 * checked first as tabq_publish checks it; a refusal names the message's index in `msgs` ("message
 * 17 of 100: ...", counted from 0) and writes nothing, as does a NULL element (TABQ_INVALID) or a
 * failure of the database halfway, which rolls the whole batch back and names the messages of
 * the statement that failed ("messages 0 to 127 of 300: ..."). The rows are inserted in the
 * order given, up to 128 to a statement where the dialect can (else one insert a row, as
 * tabq_publish writes it). After the commit each distinct group of the batch wakes this
 * process's subscriptions once; with listen_notify, each distinct group is notified once inside
 * the transaction, so listeners hear of it at the commit (a failed notify fails the batch,
 * unlike tabq_publish's). n == 0 writes nothing and returns 0 (`msgs` may then be NULL). The
 * elements are pointers so that each message keeps its own `size`: an array of messages from a
 * program compiled against an older tabq works as it is. */
TABQ_API int tabq_publish_many(tabq_broker *b, const tabq_table *table,
                               const tabq_message *const *msgs, size_t n, tabq_error *err);
/* tabq_publish_many for a table with a unique_key column, telling each message's fate: codes[i]
 * gets TABQ_OK (written) or TABQ_DUPLICATE (its key was held: nothing written for it), and
 * ids[i], when `ids` is not NULL, the holder's id for a duplicate on a table of integer ids (0
 * otherwise). The messages whose keys were free are written and committed together; the call
 * returns TABQ_OK when every message was written, TABQ_DUPLICATE when some were not (err names
 * how many and the first), or a failure as tabq_publish_many's, with nothing written. Each row is
 * one insert here (a key's conflict is told row by row). On a table without unique_key it is
 * tabq_publish_many, every code TABQ_OK. */
TABQ_API int tabq_publish_many_results(tabq_broker *b, const tabq_table *table,
                                       const tabq_message *const *msgs, size_t n, int *codes,
                                       int64_t *ids, tabq_error *err);
/* The insert the broker's dialect renders for `table`, as SQL text. */
TABQ_API int tabq_insert_sql(tabq_broker *b, const tabq_table *table, char *buf, size_t cap,
                             tabq_error *err);

/* ---- Transactions of the service's own (docs/transactions.md) ------------------------------
 * A business row and its job commit together or not at all: begin, write with tabq_tx_exec,
 * publish with tabq_publish_tx, commit. The wake-ups of this process's subscriptions (and, with
 * listen_notify, the listeners' notifications, sent inside the transaction) come only with the
 * commit. A transaction is used from the thread that began it; after its commit or rollback the
 * handle is ended and every call on it fails with TABQ_INVALID (it stays readable memory until
 * the broker closes, so a late call is an error, never a crash). */

/* Begins a transaction on a pooled connection, at the database's default isolation (SQLite:
 * BEGIN IMMEDIATE). It holds the connection until its commit or rollback. */
TABQ_API int tabq_begin(tabq_broker *b, tabq_tx **out, tabq_error *err);
/* Runs SQL of the service's own with `n` values bound to its placeholders, written in the
 * database's style ($1 on PostgreSQL, ? on MySQL/MariaDB, ?1 or ? on SQLite). *changed (when
 * not NULL) gets the rows it changed. */
TABQ_API int tabq_tx_exec(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                          uint64_t *changed, tabq_error *err);
/* Reads the first `ncols` cells (at most 64) of each row of a query: row(user, cells, ncols)
 * per row, the cells valid during the call; a nonzero return stops reading (tabq_tx_query
 * returns it). */
typedef int (*tabq_row_fn)(void *user, const tabq_value *cells, unsigned ncols);
TABQ_API int tabq_tx_query(tabq_tx *tx, const char *sql, const tabq_value *params, unsigned n,
                           unsigned ncols, tabq_row_fn row, void *user, tabq_error *err);
/* Writes a message's row in the transaction, as tabq_publish writes it; its wake-up waits for
 * the commit and is dropped by a rollback. A duplicate unique key (TABQ_DUPLICATE) writes
 * nothing and leaves the transaction usable: the service decides whether to commit. */
TABQ_API int tabq_publish_tx(tabq_tx *tx, const tabq_table *table, const tabq_message *m,
                             tabq_error *err);
/* Commits (a failed commit rolls back) and ends the transaction, then wakes the subscriptions of
 * the rows it published. */
TABQ_API int tabq_commit(tabq_tx *tx, tabq_error *err);
/* Rolls back and ends the transaction: nothing it wrote stays, nothing is woken. */
TABQ_API int tabq_rollback(tabq_tx *tx, tabq_error *err);

/* ---- Plugins ------------------------------------------------------------------------------- */

/* The file of the installed dialect plugin that serves URL scheme `scheme`, or that is named
 * `name`, found as tabq_connect finds it (TABQ_PLUGIN_PATH, then tabq-1/ beside libtabq; from
 * manifests and file names, loading nothing). For tools that probe the file tabq would load.
 * TABQ_BACKEND when no plugin serves the scheme, TABQ_PLUGIN when none bears the name or the
 * folders are refused. */
TABQ_API int tabq_plugin_for_scheme(const char *scheme, char *path, size_t cap, tabq_error *err);
TABQ_API int tabq_plugin_named(const char *name, char *path, size_t cap, tabq_error *err);

/* Checks a description against R-DESC-1 without a database. */
TABQ_API int tabq_table_check(const tabq_table *table, tabq_error *err);

/* ---- Routes -------------------------------------------------------------------------------- */

/* Leads `name` into `table`, whose group column receives the name. A name ending in '*' is a
 * prefix ("billing.*" takes "billing.invoice"; "*" alone takes every name); '*' elsewhere is
 * refused. An exact name wins over every prefix, and among prefixes the longest wins. Names
 * are non-empty UTF-8, compared byte for byte.
 *
 * The description is copied at full size and checked (R-DESC-1); a table without a group column
 * is refused with TABQ_DECLARATION. Routing a name again to the same table (by table name)
 * changes nothing; to another table it is refused with TABQ_INVALID, as is a route that would
 * take a name an open subscription by name reads to another table. */
TABQ_API int tabq_route(tabq_broker *b, const char *name, const tabq_table *table, tabq_error *err);

/* Publishes `m` through the route of `name` (one name, not a pattern): the name is written into
 * the group column, so `m->group` must be NULL (TABQ_INVALID otherwise). A name no route leads
 * anywhere fails with TABQ_NO_ROUTE and writes nothing. */
TABQ_API int tabq_publish_to(tabq_broker *b, const char *name, const tabq_message *m,
                             tabq_error *err);

/* Subscribes to `name` (one name, not a pattern) on the table its route leads to, with the name
 * as the queue. Needs the dialect's ByName interface (TABQ_DIALECT otherwise). The subscription
 * takes the broker's poll interval and lease; options that set `queue`, `lease_s`,
 * `poll_interval_ms`, `max_attempts` or a dead letter are refused with TABQ_DECLARATION
 * (subscribe to the table with tabq_subscribe() for those). Otherwise as tabq_subscribe(). */
TABQ_API int tabq_subscribe_to(tabq_broker *b, const char *name,
                               const tabq_subscription_options *options, tabq_subscription **out,
                               tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif

#include <tabq/schema.h>
#include <tabq/check.h>
#include <tabq/cancel.h>
#include <tabq/controls.h>
#include <tabq/concurrency.h>
