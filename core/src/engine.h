/* The engine's objects: a broker, its subscriptions and their deliveries. */
#ifndef TABQ_ENGINE_H
#define TABQ_ENGINE_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>
#include <tabq/trace.h>

#include "buf.h"
#include "histogram.h"
#include "counters.h"
#include "tx_handle.h"
#include "listen.h"
#include "loader.h"
#include "log.h"
#include "pool.h"
#include "statements.h"
#include "table.h"

#define TABQ_NO_STMT UINT32_MAX

/* Whether a value points into a buffer (the row's copy keeps such cells). */
static inline bool tabq__has_buffer(tabq_type t) {
  return t == TABQ_T_TEXT || t == TABQ_T_BYTES || t == TABQ_T_JSON;
}

/* The statements of 2^k rows a publisher may hold, k from 1 (rows[0] is unused: one row is the
 * insert). */
#define TABQ_ROWS_STEPS 8
_Static_assert(1u << (TABQ_ROWS_STEPS - 1) == TABQ_INSERT_ROWS_MAX,
               "one step per power of two up to TABQ_INSERT_ROWS_MAX");

typedef struct tabq_publisher {
  const tabq_table *caller; /* the description as the service passed it: the key, */
  char *name;               /* with its table's name, copied (a reused struct changes it) */
  tabq_table table;         /* its full-size copy (sized.h) */
  /* Where its statements are built: the broker's registry, or a statement check's own
   * (check.c), which prepares them and runs none. */
  tabq_registry *reg;
  unsigned insert;
  /* tabq_publish_many's inserts of many rows (publish_rows.c): rows[k] writes 2^k rows, built
   * on first use (TABQ_NO_STMT until then); `chunk` is the most rows one statement writes, 0
   * where each row is one insert. Set under the broker's mu, never changed once set. */
  unsigned rows[TABQ_ROWS_STEPS];
  unsigned chunk;
  unsigned notify; /* with listen_notify, else TABQ_NO_STMT */
  /* A table with a unique_key: the query of a key's holder (Dialect.find_unique), run when the
   * insert wrote nothing; else TABQ_NO_STMT. */
  unsigned find_unique;
  char channel[TABQ_CHANNEL_CAP];
  char begin_sql[128]; /* tabq_publish_many's transaction, built on its first use, else "" */
  struct tabq_publisher *next;
} tabq_publisher;

struct tabq_broker {
  tabq_loaded plugin;
  const tabq_driver_v1 *drv;
  const tabq_host *host; /* &own_host */
  tabq_host own_host;    /* the broker's host: its log_to writes to `log` (ABI 1.6) */
  tabq_pool pool;
  tabq_registry stmts;
  tabq_logger log;
  unsigned poll_interval_ms;
  unsigned lease_s;

  pthread_mutex_t mu; /* guards the lists below */
  tabq_subscription *subs;
  tabq_publisher *publishers;
  struct tabq_route_entry *routes; /* route.c */
  atomic_bool shut;
  atomic_bool stop_requested;
  bool listen_notify;
  /* The driver's session_scope (ABI 1.9) said a transaction pooler stands between the broker
   * and the server: nothing that needs a session (advisory locks, LISTEN) is served. */
  bool per_transaction;
  tabq_listener listener;
  /* conn_budget.c: connections deliveries hold and claims in flight may take, over all the
   * subscriptions; and how many subscriptions have deliveries that hold one. */
  atomic_uint conns_used;
  atomic_uint conn_subs;
  /* tx.c: the service's transactions, every handle ever made and the ended ones to reuse (under
   * mu), and the begin they run, rendered on first use. */
  struct tabq_tx *txs, *free_txs;
  char tx_begin_sql[128];
  /* delivery_hooks.c: the service's hooks around each delivery, set before any subscription */
  tabq_delivery_hooks hooks;
  bool has_hooks;
  char *test_dir; /* test_drain.c: tabq_test_open's folder, removed by tabq_test_close */
  /* retention.c: the pruner of the tables tabq_retain registered (NULL until the first), under
   * mu; shutdown stops it before the pool closes. */
  struct tabq_retainer *retainer;
  /* schedule.c: the periodic jobs and their thread, made by the first tabq_schedule */
  struct tabq_scheduler *scheduler;
  /* controls.c: the controls table tabq_set_controls gave (tabq/controls.h), else NULL; set once
   * under mu, freed by tabq_close. */
  struct tabq_controls_state *controls;
  /* concurrency_slot.c: the slots table tabq_set_concurrency_slots gave (tabq/concurrency.h),
   * else NULL; set once under mu, its keeper stopped by tabq_shutdown, freed by tabq_close. */
  struct tabq_conc_state *conc;
};

/* schedule.c: stops and joins the scheduler thread (tabq_shutdown); frees it (tabq_close). */
typedef struct tabq_scheduler tabq_scheduler;
void tabq__scheduler_stop(tabq_broker *b);
void tabq__scheduler_free(tabq_broker *b);

/* What a settlement does with its row (settle.c). */
typedef enum tabq_action {
  ACT_RELEASE,
  ACT_ACK,
  ACT_DISCARD,
  ACT_RETRY,
  ACT_RETRY_AFTER,
  ACT_DEAD,
  /* A concurrency limit's step aside (concurrency_slot.c): due again a poll interval on, its
   * attempt as it was before the claim. */
  ACT_STEP_ASIDE
} tabq_action;

struct tabq_delivery {
  tabq_subscription *sub;
  /* Orders a settlement against the lease extender, which never holds it across a wait for the
   * database: an extension marks the delivery `extending` with the expiry it writes (`pending`)
   * and runs without the lock; a settlement waits on `cv` for it to end (tabq__delivery_lock),
   * except one inside the delivery's own transaction, which the extension may be waiting for
   * (SQLite's one writer): that one accepts either token (settle.c, confirm_lease). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool extending;
  int64_t pending;
  bool in_work;                  /* claimed and not yet settled */
  tabq_hist_cells handler_time;  /* this slot's handler durations (metrics) */
  tabq_hist_cells queue_latency; /* from its rows' due times to their handlers (metrics) */
  tabq_count_cells counts;       /* this slot's counters: settlements, and claims into it */
  /* The last settlement's action and result (tabq__settle_count), for on_delivery_end; and
   * what the hooks keep while the delivery is in a handler (delivery_hooks.c). */
  tabq_action settled_as;
  int settled_rc;
  void *hook_token;
  int64_t hook_began_us, handler_us;
  bool settled;
  bool lease_lost;  /* an extension found the token gone */
  bool closed;      /* advisory: shutdown released its lock; settling fails with CLOSED */
  bool gone;        /* advisory: its settlement took the row off the queue (until refilled) */
  unsigned gone_at; /* with gone: the subscription's count of such settlements at this one */
  tabq_pconn *conn; /* row lock and advisory forms: the connection the delivery holds */
  tabq_buf key;     /* advisory: the rendered lock key */
  int64_t token;    /* lease form: the expiry this delivery holds */
  tabq_value id;
  long attempt;
  tabq_value *cells; /* the projection's values, pointing into `row` */
  tabq_buf row;
  json_t *headers; /* parsed on first use (before the handler where a codec is set) */
  void *decoded;   /* the codec's result, released by tabq__delivery_done */
  bool has_decoded;
  struct tabq_tx *tx;           /* transactional mode: the slot's transaction handle (tx.c) */
  struct tabq_batch_run *batch; /* while a batch handler has it: its call (batch.c) */
  /* The integer id while in work (0 otherwise, or for a text id): a claim's check against the
   * rows in work here reads it without the lock, then confirms a match under it (claim.c). */
  atomic_llong work_id;
  /* cancel.c: what the delivery knows of a cancel of its row (TABQ__CANCEL_*), under mu: the
   * settlement of a cancelled delivery is a drop. Reset by each claim into the slot. */
  int cancel;
  /* deadline.c, under mu: the handler's deadline (microseconds since 1970, 0: none) and the same
   * on the monotonic clock; the watchdog settling it now (`expiring`, which the worker waits
   * out); and whether its last leaving work was the watchdog's settlement at the deadline. */
  int64_t deadline_us, deadline_mono_us;
  bool expiring;
  bool by_deadline;
  /* concurrency_slot.c: the settlement to run is the step aside; the key's slot this delivery
   * holds ("<key>#<i>", slot_held). */
  bool stepping_aside, slot_held;
  tabq_buf slot;
};

/* What a delivery knows of a cancel of its row (cancel.c). */
enum {
  TABQ__CANCEL_NONE = 0,
  TABQ__CANCEL_MARKED,   /* the row is still unfinished: the drop's statement finishes it */
  TABQ__CANCEL_FINISHED, /* the cancel finished the row itself: the drop has nothing to change */
};

/* A subscription's statements, by what they do; TABQ_NO_STMT where it needs none. */
typedef enum tabq_sq {
  SQ_CLAIM,
  SQ_CLAIM_ONE, /* a claim of one row in its cheaper shape, where the dialect builds one */
  SQ_EXTEND,
  SQ_RELEASE,
  SQ_ACK,
  SQ_DISCARD,
  SQ_RETRY,
  SQ_RETRY_AFTER,
  SQ_DL_GROUP,
  SQ_DL_COPY,
  SQ_DL_REMOVE,
  SQ_GUARD,      /* FIFO: the group guard of a claim's transaction */
  SQ_STAMP,      /* databases whose UPDATE returns no rows: counts a claimed row's attempt */
  SQ_CANDIDATES, /* advisory */
  SQ_LOCK,
  SQ_UNLOCK,
  SQ_TAKE,
  SQ_FETCH,       /* rows by ids: a fetch of the service's own, or the dialect's by a list */
  SQ_LEASE_ONE,   /* lease form, a claim of the service's own: leases one claimed id */
  SQ_ACK_IDS,     /* a batch's acks in one statement (ABI 1.3, optional) */
  SQ_STAMP_IDS,   /* a claim's stamps in one statement (ABI 1.4, optional) */
  SQ_LOCK_TAKE,   /* advisory: the lock and the take in one statement (ABI 1.5, optional) */
  SQ_ACK_UNLOCK,  /* advisory: the ack and the release in one statement (ABI 1.5, optional) */
  SQ_CANCEL_READ, /* cancel.c: the row's cancel mark and processed_at, where it has the role */
  SQ_STEP_ASIDE,  /* concurrency limits: the row back, due a poll interval on, attempt as was */
  SQ_SLOT_CLEAR,  /* concurrency limits: a key's expired slots deleted */
  SQ_COUNT
} tabq_sq;

/* A claimed id (and, in the advisory form, its key), copied into a claim space's scratch
 * buffer: the next statement on the connection ends the driver's buffers. */
typedef struct candidate {
  tabq_value id;
  size_t id_at, key_at, key_len; /* offsets into the scratch buffer */
} candidate;

/* What one claim in flight reads ids into. A subscription has one per claim that may run at
 * once: one when its claims are serial, one per worker when they are not. */
typedef struct tabq_claim_space {
  candidate *candidates;
  unsigned ncandidates;
  tabq_buf scratch;
} tabq_claim_space;

/* What settling a batch needs per row, allocated once per worker (s->batch long each), so a
 * batch's settlement allocates nothing. */
typedef struct tabq_batch_scratch {
  int64_t *ids;          /* the ids one ack_ids statement binds */
  unsigned *at;          /* where each of them sits in the batch */
  int *rcs;              /* each row's result */
  bool *done;            /* settled by ack_ids */
  tabq_delivery **order; /* the batch by address: its locks are always taken in this order */
  tabq_error err;        /* the first failure of the last settlement (code TABQ_OK: none) */
} tabq_batch_scratch;

/* batch.c: a batch handler's call. Its deliveries point at it while the handler runs, so
 * tabq_batch_settle can settle the claim inside the handler. Allocated once per worker. */
typedef struct tabq_batch_run {
  tabq_delivery **claimed; /* the claim's rows, n long */
  unsigned n;
  tabq_outcome *outcomes; /* each row's: the decode policy's, else the handler's */
  tabq_delivery **passed; /* the rows the handler was given (those that decoded) */
  unsigned *passed_at;    /* where each of them sits among `claimed` */
  tabq_outcome *passed_outcomes;
  unsigned npassed;
  tabq_batch_scratch scratch; /* rcs: each claimed row's result */
  bool settled;               /* settled inside the handler already */
} tabq_batch_run;
int tabq__batch_run_init(tabq_batch_run *r, unsigned cap);
void tabq__batch_run_free(tabq_batch_run *r);
/* Gives the claim's rows that decode to the batch handler, then settles the claim (unless the
 * handler did), and ends every delivery. */
void tabq__batch_handle(tabq_batch_run *r, tabq_delivery **claimed, unsigned n);

/* ack_coalesce.c: acks of concurrent deliveries gathered into one transaction (lease form). */
typedef struct tabq_ack_entry tabq_ack_entry;
typedef struct tabq_coalescer {
  bool ready; /* the option is on and the memory below allocated */
  unsigned cap, window_us;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tabq_ack_entry *pending; /* acks waiting for a leader (each on its caller's stack) */
  unsigned npending;
  bool flushing; /* a leader is settling */
  /* The leader's flush, cap long: the deliveries, their outcomes, their waiters. */
  tabq_delivery **ds;
  tabq_outcome *outcomes;
  tabq_ack_entry **entries;
  tabq_batch_scratch scratch;
} tabq_coalescer;

/* What differs between the forms (SPEC 3), one table per form defined in its form_*.c and
 * chosen once at subscribe (s->ops). Everything that depends on the form is an operation here:
 * nothing outside the form files asks which form a subscription has. */
typedef struct tabq_form_ops {
  const char *name; /* in messages: "the %s form" */
  /* Whether the dialect serves the form at all; check: the form's further refusals (or NULL). */
  bool (*served)(const tabq_plugin *p);
  /* The capability flags of the form's table in a plugin that serves it (TABQ_CLAIM_SERIAL ...). */
  uint32_t (*flags)(const tabq_plugin *p);
  int (*check)(tabq_subscription *s, tabq_error *err);
  /* Renders the begins of the transactions the form opens and builds its statements. */
  int (*open)(tabq_subscription *s, tabq_error *err);
  /* The events of the service's own in this form (custom.c): the slot its claim takes, and the
   * names its settlements may bind besides every form's. */
  void (*events)(tabq_sq *claim_slot, uint32_t *settle_names);
  /* What a claim of the service's own needs here (the statement run on each id it returns) and
   * the claim that runs it (s->claim); NULL where its claim stays the form's own (the advisory
   * take reads its row itself, so no fetch is needed either). */
  int (*own_claim)(tabq_subscription *s, tabq_error *err);
  /* The form's built-in claim (a claim of the service's own may replace it). */
  int (*claim)(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
               unsigned *got, tabq_error *err);
  /* The most rows one claim takes when `want` would serve the idle workers. */
  unsigned (*claim_limit)(const tabq_subscription *s, unsigned want);
  /* The pooled connections a claim of `rows` rows leaves its deliveries holding until they
   * settle (the broker's budget counts them, conn_budget.c). */
  unsigned (*conns_held)(const tabq_subscription *s, unsigned rows);
  /* Settles one delivery; *a tells what the settlement did. */
  int (*settle)(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err);
  /* Settles a batch handler's outcomes. */
  void (*settle_batch)(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                       tabq_batch_scratch *x);
  /* Whether a settlement that did `a` with result `rc` left the row due at once (the
   * subscription then claims at once rather than a poll interval on). */
  bool (*due_now)(tabq_action a, int rc);
  /* Whether `a` runs a settlement statement: retry and release run none where the end of what
   * the delivery holds puts the row back (a row lock's commit, an advisory key's release). */
  bool (*by_statement)(tabq_action a);
  /* The error of a settlement statement that changed no row. */
  int (*lost)(tabq_subscription *s, const char *what, tabq_error *err);
  /* NULL, or: inside a transaction on c, confirms that the delivery still holds its row (the
   * lease form writes its token over itself), with d->mu held. */
  int (*confirm)(tabq_delivery *d, tabq_pconn *c, const tabq_bind *v, tabq_error *err);
  /* Whether the delivery's hold on its row still stands as far as tabq knows, with d->mu held
   * and d in work; and its lease token (0 outside the lease form). */
  bool (*held)(tabq_delivery *d);
  int64_t (*token)(const tabq_delivery *d);
  /* Transactional mode: opens the delivery's transaction before its handler runs and starts its
   * handle (tabq__tx_start); rolls the handler's writes back (an outcome other than ack), then the
   * settlement goes on as without the mode; gives back what the transaction held once it ended,
   * with d->mu held; and gives back what a claim reserved for a transaction that will not open
   * (NULL: nothing). */
  int (*tx_open)(tabq_delivery *d, tabq_error *err);
  int (*tx_undo)(tabq_delivery *d, tabq_error *err);
  void (*tx_end)(tabq_delivery *d, tabq_pconn *c, bool committed);
  void (*tx_skip)(tabq_delivery *d);
  /* Hooks, NULL where the form has none: start before the workers start; stopping once they are
   * told to stop and their claims in flight ended, before they are joined; stop after. */
  int (*start)(tabq_subscription *s, tabq_error *err);
  void (*stopping)(tabq_subscription *s);
  void (*stop)(tabq_subscription *s);
  /* Gives back what a delivery holds after a joined settlement, with its mu held (NULL: it
   * holds nothing). */
  bool (*release)(tabq_delivery *d);
  /* cancel.c: whether a cancel of a row in work writes its mark into the row (lease, advisory),
   * for the extensions and settlements to read where the table has cancelled_at; else it reaches
   * only a delivery of the broker that cancels (row lock: the row is locked by the delivery's
   * transaction). And whether tabq_delivery_cancelled reads the mark (one round trip) rather
   * than what the delivery learnt already (the lease form learns at each extension). */
  bool cancel_in_row;
  bool cancel_check_reads;
} tabq_form_ops;

/* form_lease.c, form_rowlock.c, form_advisory.c */
extern const tabq_form_ops tabq_lease_ops, tabq_rowlock_ops, tabq_advisory_ops;

struct tabq_subscription {
  tabq_broker *b;
  const tabq_table *t; /* &table */
  tabq_table table;    /* the service's description, taken at full size (sized.h) */
  tabq_subscription_options o;
  char *queue;
  char *dead_letter_group;
  char *dead_letter_table;
  /* Bound as they are by every claim and settlement, measured once: the queue (NULL without a
   * group column) and the dead letter's destination, group or table (NULL without one). */
  tabq_value queue_value, dest_value;
  char channel[TABQ_CHANNEL_CAP]; /* with listen_notify: the table's channel, else "" */
  tabq_form form;
  const tabq_form_ops *ops; /* the form's operations */
  bool by_name;             /* opened by tabq_subscribe_to(): its queue is a route's name */
  /* Where its statements are built: the broker's registry, or, opened for a statement check
   * (`checking`, check.c), the check's own; such a subscription takes nothing of the process
   * (no advisory key registry, no thread) and is freed once its statements are prepared. */
  tabq_registry *reg;
  bool checking;
  tabq_projection proj;
  unsigned st[SQ_COUNT];
  /* The begin of the engine's transactions (at the table's level only for the row lock form's
   * claims), and of a transactional delivery's in the lease and advisory forms (the table's). */
  char begin_sql[128];
  char tx_begin_sql[128];
  /* Transactional mode in the row lock form: the savepoint after the claim and the rollback to
   * it, the dialect's (ABI 1.6) or the SQL standard's. */
  char savepoint_sql[96], rollback_sql[96];
  uint32_t claim_flags; /* the RowLock or Lease table's flags (TABQ_CLAIM_*) */
  bool serial;          /* claims run one at a time, one claimer serving every idle worker */
  uint32_t server_version;
  char server_version_text[64];
  /* The connection's current database, "" when the driver does not say: a file's path (SQLite)
   * as well as a name. */
  char database[PATH_MAX];
  /* Claims up to `limit` rows into `slots`; `ids` is the claimer's own room for `limit` ids,
   * where a claim's stamps run as one statement (SQ_STAMP_IDS), else NULL. */
  int (*claim)(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
               unsigned *got, tabq_error *err);
  /* Advisory claims and claims by ids: nspaces claim spaces, the free ones stacked in
   * free_spaces (under mu). Claims of the service's own are serial and use spaces[0]. */
  tabq_claim_space *spaces;
  tabq_claim_space **free_spaces;
  const candidate **in_claim; /* per space: the candidate its claim is locking, else NULL */
  unsigned nspaces, nfree_spaces;
  /* Integer ids of rows settled off the queue here lately, round a ring as long as a space's
   * candidates, gone_next counting every one: a candidates read from before such a settlement
   * still lists its row, and trying its key would cost a round trip for nothing (the
   * delivery's own `gone` ends when its slot is claimed into again). INT64_MIN: empty. */
  _Atomic int64_t *gone_ids;
  atomic_uint gone_next;
  unsigned ngone;
  int64_t *id_list;   /* a fetch by a list of ids: the list */
  candidate *refetch; /* a fetch of the service's own: the ids of the rows it reads again */
  tabq_buf refetch_buf;
  uint32_t custom;    /* bit 1 << tabq_sq: the statement in that slot is the service's own */
  bool fetch_by_list; /* SQ_FETCH binds :ids (one run) rather than :id (one run an id) */
  unsigned lease_s, poll_ms, workers, batch;
  struct tabq_subscription *next;

  /* Claiming and handing out, under mu. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
  unsigned claiming; /* claims in flight */
  /* How many claims may be in flight (0: no bound), the way TCP's slow start grows a window: a
   * claim that comes back short sets it to one, so a wake-up on a queue that looks empty costs
   * one claim, not one per idle worker; each full claim doubles it (worker.c). */
  unsigned claim_window;
  uint64_t wakes; /* wake-ups so far: a claim that saw one come needs no poll wait */
  int64_t next_claim_ms;
  /* claim_failures.c: claims failed in a row, since when, and the next time to say so again. */
  unsigned claim_failures;
  int64_t claim_failing_since_ms, claim_next_log_ms;
  unsigned busy; /* workers inside a handler */
  tabq_delivery *slots;
  unsigned nslots;
  tabq_delivery **free_slots; /* stack */
  unsigned nfree;
  tabq_delivery **ready; /* claimed, waiting for a worker (FIFO ring) */
  unsigned ready_head, ready_count;
  /* The adaptive look-ahead (lookahead.c): the most rows it may claim ahead (0: not adaptive),
   * how long a worker takes a delivery lately, and how long a row may wait for one. */
  unsigned ahead_max;
  int64_t took_us, ahead_wait_us;
  struct tabq_key_dispatch *bykey; /* workers_by_key: each worker's own queue, else NULL */

  pthread_t *threads;
  void *worker_ctx; /* worker.c's per-thread contexts */
  unsigned nthreads;
  pthread_t extender;
  bool extender_started;
  pthread_mutex_t ext_mu;
  pthread_cond_t ext_cv;
  bool ext_stop;

  atomic_bool warned_retry_after;
  tabq_count_cells counts; /* the counts that belong to no delivery slot (counters.h) */
  tabq_coalescer coalescer;
  struct tabq_pkeys *pkeys; /* process_keys.c: advisory keys kept in the process, else NULL */
  /* decode.c: the codec taken at full size (has_codec false without one); whether the row mode
   * columns declare types to check. */
  tabq_codec codec;
  bool has_codec;
  bool typed_rows;
  struct tabq_deadlines *deadlines; /* deadline.c: the watchdog, NULL without deadlines */
  /* controls_flag.c, under mu: with the broker's controls (ctl), whether the queue's row said
   * paused at its last read, when that was (monotonic ms, 0: never), a read in flight, and the
   * notifications counted so far and as of the last read (a newer one makes it stale). The key
   * read: the table's name and the queue ('' for a table without a group column). */
  bool ctl, ctl_paused, ctl_reading, ctl_failing; /* failing: the last read failed (logged once) */
  int64_t ctl_read_ms;
  uint64_t ctl_notes, ctl_seen;
  tabq_value ctl_table, ctl_queue;
  /* concurrency_slot.c: the limit (0: none, and the hot path tests only this), the key's cell
   * in the projection (-1: the whole queue is one key) and the slots' names' beginning. */
  unsigned conc_limit;
  int conc_cell;
  char *conc_prefix;
};

/* subscription.c */
/* tabq_subscribe's body; by_name adds the dialect's ByName check before the subscription opens. */
int tabq__sub_open(tabq_broker *b, const tabq_table *table,
                   const tabq_subscription_options *options, bool by_name, tabq_subscription **out,
                   tabq_error *err);
/* The statement check's (check.c): the subscription tabq__sub_open would open, its rules
 * checked and its statements built into `reg` as they would be, and nothing more: nothing
 * prepared, claimed or started. Free it with tabq__sub_free. On a failure *out is the
 * subscription as far as it was built (NULL when the description or the mount broke a rule). */
int tabq__sub_open_for_check(tabq_broker *b, const tabq_table *table,
                             const tabq_subscription_options *options, bool by_name,
                             tabq_registry *reg, tabq_subscription **out, tabq_error *err);
/* tabq_test_drain's: a subscription of one worker whose claims the caller runs (tabq__drain),
 * not listed in the broker; stop it with tabq__workers_stop, then tabq__sub_free. */
int tabq__sub_open_drain(tabq_broker *b, const tabq_table *table,
                         const tabq_subscription_options *options, tabq_subscription **out,
                         tabq_error *err);
/* tabq_test_deliver's: a subscription of the description's and the mount's rules checked, its
 * deliveries allocated, with `ops` for its form and no statement, prepared or claimed; free it
 * with tabq__sub_free (*out set once it exists, whatever failed after). */
int tabq__sub_open_synthetic(tabq_broker *b, const tabq_table *table,
                             const tabq_subscription_options *options, const tabq_form_ops *ops,
                             tabq_subscription **out, tabq_error *err);
void tabq__sub_free(tabq_subscription *s);

/* sub_stmts.c: what the dialect's builders get for this subscription (table, form, mount,
 * server); and a statement built into slot q with the dialect's builder, unless the service
 * gave its own there. */
tabq_build tabq__sub_build(const tabq_subscription *s);
int tabq__sub_stmt(tabq_subscription *s, tabq_build_fn fn, const char *name, tabq_sq q,
                   tabq_error *err);
/* Renders the begins of the subscription's transactions: the engine's own (at the table's
 * level where claims_at_level, else the database's default) and, in transactional mode outside
 * a claim's transaction, the delivery's (the table's). */
int tabq__sub_begins(tabq_subscription *s, bool claims_at_level, tabq_error *err);

/* The operations of a form. */
const tabq_form_ops *tabq__form_ops_of(tabq_form form);
/* The refusals every subscription on build->table meets whatever its mount: the dialect's
 * check, and a form the dialect does not serve. A publish meets them too: a row no
 * subscription could claim is not written. */
int tabq__form_servable(tabq_broker *b, const tabq_build *build, tabq_error *err);

/* worker.c */
/* Starts the subscription's workers (with `threads` false only their contexts and the lease
 * extender, for tabq__drain on the caller's thread). */
int tabq__workers_start(tabq_subscription *s, bool threads, tabq_error *err);
/* tabq_test_drain: claims and handles on the calling thread until a claim takes no row. */
int tabq__drain(tabq_subscription *s, tabq_error *err);
void tabq__workers_stop(tabq_subscription *s);

/* claim_failures.c, under s->mu: a failed claim logged (the first, then once a minute) and the
 * time of the next one, backing off from one poll interval to five seconds; a claim that
 * succeeds after failures says so and starts the count again. */
int64_t tabq__claim_failed(tabq_subscription *s, const tabq_error *err);
void tabq__claim_succeeded(tabq_subscription *s);

/* wake.c: a subscription claims at once instead of after its poll interval; and so do this
 * process's subscriptions of a table (and of `group`, where it has a group column). */
void tabq__sub_wake(tabq_subscription *s);
void tabq__publish_wake(tabq_broker *b, const tabq_table *t, const char *group);

/* key_dispatch.c: workers_by_key(n), one FIFO of claimed rows per worker (under s->mu). */
typedef struct tabq_key_dispatch tabq_key_dispatch;
/* Allocates the queues and makes the claims serial; tabq__bykey_free frees them. */
int tabq__bykey_open(tabq_subscription *s, tabq_error *err);
void tabq__bykey_free(tabq_subscription *s);
/* Queues d on the worker its key's hash picks; false for a row without a key (the caller puts
 * it on the shared ring). */
bool tabq__bykey_push(tabq_subscription *s, tabq_delivery *d);
/* The next row waiting for `worker`, or for any worker (shutdown), else NULL. */
tabq_delivery *tabq__bykey_pop(tabq_subscription *s, unsigned worker);
tabq_delivery *tabq__bykey_pop_any(tabq_subscription *s);

/* custom.c: the service's own statements (SPEC 8), registered before the forms build theirs. */
int tabq__custom_open(tabq_subscription *s, tabq_error *err);
/* Refuses a generated attempt column whose default is not 1, where the dialect reads it. */
int tabq__check_attempt_default(tabq_subscription *s, tabq_error *err);
/* After the form opened: the claim and the claimer the service's own statements need. */
int tabq__custom_after_open(tabq_subscription *s, tabq_error *err);
static inline bool tabq__sub_own(const tabq_subscription *s, tabq_sq q) {
  return s->custom & (1u << q);
}

/* claim_ids.c: claims that read ids first and the rows after. */
/* Runs `stmt` and copies its rows' first cell (the id) and, with_key, second (the key) into
 * sp's candidates, at most sp->ncandidates of them. */
int tabq__ids_read(tabq_subscription *s, tabq_claim_space *sp, tabq_pconn *c, unsigned stmt,
                   const tabq_bind *v, bool with_key, unsigned *n, tabq_error *err);
/* Gives the subscription n claim spaces of `ncandidates` each (keeping those it has). */
int tabq__claim_spaces(tabq_subscription *s, unsigned n, unsigned ncandidates, tabq_error *err);
/* Takes a free claim space for a claim, and gives it back after. */
tabq_claim_space *tabq__claim_space_take(tabq_subscription *s);
void tabq__claim_space_give(tabq_subscription *s, tabq_claim_space *sp);
/* Marks k as the row sp's claim is locking, unless another claim of this subscription is on the
 * same row (false: pass it over, a round trip saved); NULL clears the mark, which must be clear
 * while sp's candidates are rewritten (others read the marked candidate under s->mu). */
bool tabq__claim_space_mark(tabq_subscription *s, tabq_claim_space *sp, const candidate *k);
/* Sets whether d's settlement took its row off the queue and, where it did, notes it (the ring
 * keeps integer ids); tells the count of such notes so far; and asks whether an id was noted
 * since that count was `since` (a row settled before a read began is not in what the read
 * found, and a row written again under its id since is a new one). */
void tabq__claim_gone(tabq_delivery *d, bool gone);
unsigned tabq__claim_gone_count(tabq_subscription *s);
bool tabq__claim_gone_since(tabq_subscription *s, unsigned since, const tabq_value *id);
bool tabq__delivery_gone_since(const tabq_delivery *d, unsigned since);
void tabq__claim_spaces_free(tabq_subscription *s);
/* Reads the rows of ids [0, n) with SQ_FETCH into slots, in candidate order, each
 * delivery holding `token` and `conn`; a claimed id without a row is dropped with the discard
 * statement and logged. *got is the number of slots filled. */
int tabq__fetch_into(tabq_subscription *s, tabq_pconn *c, const candidate *ids, unsigned n,
                     tabq_delivery **slots, unsigned *got, int64_t token, tabq_pconn *conn,
                     tabq_error *err);
/* A claim of the service's own that returns ids (the lease and row lock forms), as its form
 * takes them: `take` run on each id (TABQ_NO_STMT: none) with `now` and `lease_until`, the
 * claim's transaction kept for the rows' settlement where keep_txn. */
typedef struct tabq_by_ids {
  unsigned take;
  int64_t now, lease_until;
  bool keep_txn;
} tabq_by_ids;
int tabq__claim_by_ids(tabq_subscription *s, tabq_delivery **slots, unsigned limit, unsigned *got,
                       const tabq_by_ids *how, tabq_error *err);

/* claim.c: what the forms' claims share. */
/* Builds the dialect's claim_one (`fn`, NULL for a plugin older than ABI 1.3) into
 * SQ_CLAIM_ONE, unless the service claims with a statement of its own or the dialect declines
 * the table. */
int tabq__claim_one_open(tabq_subscription *s, tabq_build_fn fn, tabq_error *err);
/* The statement a claim of `limit` rows runs: claim_one for one row where there is one. */
static inline unsigned tabq__claim_stmt(const tabq_subscription *s, unsigned limit) {
  return limit == 1 && s->st[SQ_CLAIM_ONE] != TABQ_NO_STMT ? s->st[SQ_CLAIM_ONE] : s->st[SQ_CLAIM];
}
/* Whether the stamp follows a claim of `limit` rows: where there is one, unless claim_one ran
 * and stamps itself (TABQ_CLAIM_ONE_STAMPS). */
static inline bool tabq__claim_stamps(const tabq_subscription *s, unsigned limit) {
  return s->st[SQ_STAMP] != TABQ_NO_STMT && !(tabq__claim_stmt(s, limit) == s->st[SQ_CLAIM_ONE] &&
                                              (s->claim_flags & TABQ_CLAIM_ONE_STAMPS));
}

/* Counts the attempt of each claimed row (and writes its lease) where the dialect stamps: all
 * at once with stamp_ids, the ids listed in `ids` (n long; NULL: row by row), where the rows
 * are more than one and their ids integers. */
int tabq__stamp_claimed(tabq_subscription *s, tabq_pconn *c, tabq_delivery **slots, int64_t *ids,
                        unsigned n, int64_t lease_until, tabq_error *err);
/* Builds the dialect's stamp_ids (`fn`, NULL before ABI 1.4) into SQ_STAMP_IDS where the
 * subscription stamps (SQ_STAMP) with the dialect's claim, unless the dialect declines. */
int tabq__stamp_ids_open(tabq_subscription *s, tabq_build_fn fn, tabq_error *err);

/* Takes a connection and begins a claim's transaction, then runs the FIFO guard where there is
 * one (*mine false: another transaction holds the group). *out is NULL when nothing is held. */
int tabq__claim_begin(tabq_subscription *s, tabq_pconn **out, bool *mine, tabq_error *err);

/* The FIFO guard: *held is true when the claim's transaction now holds the group. */
int tabq__guard_group(tabq_subscription *s, tabq_pconn *c, bool *held, tabq_error *err);

/* Fills one delivery from the current row of p; the delivery holds `token` (lease form, else
 * 0) and `conn` (row lock and advisory forms, else NULL). */
int tabq__claim_fill(tabq_delivery *d, tabq_prepared *p, int64_t token, tabq_pconn *conn,
                     tabq_error *err);
/* Reads the rows of a claim's statement p into slots[*got..limit) and ends p's run; each
 * delivery holds `token` and `conn` as above. */
int tabq__claim_read(tabq_subscription *s, tabq_prepared *p, tabq_delivery **slots, unsigned limit,
                     unsigned *got, int64_t token, tabq_pconn *conn, tabq_error *err);
/* A subscription never hands out a row it has in work already (its session or lease ended under
 * the handler and a claim here took it again): such rows leave the claim; in the lease form the
 * running delivery takes the new lease (`token`), so its settlement still holds the row. */
void tabq__claim_dedup(tabq_subscription *s, tabq_delivery **slots, unsigned *got, int64_t token);
/* A built-in claim's rows read again by the service's own fetch; the slots past *got are taken
 * out of work. */
int tabq__refetch(tabq_subscription *s, tabq_pconn *c, tabq_delivery **slots, unsigned *got,
                  int64_t token, tabq_pconn *conn, tabq_error *err);

/* form_lease.c */
/* The expiry of a lease taken or extended at `now`. */
int64_t tabq__lease_expiry(const tabq_subscription *s, int64_t now);
int tabq__lease_open(tabq_subscription *s, tabq_error *err);
int tabq__lease_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                      unsigned *got, tabq_error *err);
int tabq__lease_extender_start(tabq_subscription *s, tabq_error *err);
void tabq__lease_extender_stop(tabq_subscription *s);

/* form_rowlock.c */
int tabq__rowlock_open(tabq_subscription *s, tabq_error *err);
int tabq__rowlock_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                        unsigned *got, tabq_error *err);

/* form_advisory.c */
int tabq__advisory_open(tabq_subscription *s, tabq_error *err);
int tabq__advisory_claim(tabq_subscription *s, tabq_delivery **slots, int64_t *ids, unsigned limit,
                         unsigned *got, tabq_error *err);
/* Releases the delivery's key on its connection and gives the connection back (or closes it
 * when the release is not confirmed). Returns true when the release was confirmed. */
bool tabq__advisory_release(tabq_delivery *d);
/* Gives the delivery's connection back after its key's release: to the pool when `released`,
 * else closed (which ends the lock), with a warning that says `why` when given. */
void tabq__advisory_give_back(tabq_delivery *d, bool released, const char *why);
/* Shutdown: releases the lock of every delivery in work that is not settling. */
void tabq__advisory_release_all(tabq_subscription *s);

/* process_keys.c: advisory keys kept in the process, for a dialect with
 * TABQ_ADVISORY_PROCESS_KEYS (no session locks), unless the service locks with its own
 * statements. One registry per database file (s->database), shared by the process's
 * subscriptions; a second process serving advisory subscriptions on the file is refused. */
typedef struct tabq_pkeys tabq_pkeys;
/* Joins the file's registry with an entry per delivery slot (s->pkeys). */
int tabq__pkeys_open(tabq_subscription *s, tabq_error *err);
/* Leaves it, releasing what the subscription still holds; the last one frees the lock file. */
void tabq__pkeys_close(tabq_subscription *s);
/* Takes `key` for delivery d: *locked false when another delivery of the process holds it.
 * TABQ_NOMEM only when the key is longer than any d held before. */
int tabq__pkeys_lock(tabq_subscription *s, const tabq_delivery *d, const char *key, size_t n,
                     bool *locked);
/* Releases d's key, if it holds one; nothing without a registry. */
void tabq__pkeys_release(tabq_subscription *s, const tabq_delivery *d);

/* conn_budget.c */
/* Connections claims may still take, over the broker. */
unsigned tabq__budget_room(const tabq_broker *b);
/* Takes up to `want` of them for a claim in flight; returns how many it took. */
unsigned tabq__budget_take(tabq_broker *b, unsigned want);
/* Gives n back without waking anyone (with s->mu held). */
void tabq__budget_put(tabq_broker *b, unsigned n);
/* Gives n back, and wakes the other subscriptions that may wait for room; never with a
 * subscription's mu held (it takes b->mu, then theirs). */
void tabq__budget_give(tabq_broker *b, const tabq_subscription *s, unsigned n);
/* Gives back the connections of n deliveries that settled, and wakes s's workers. */
void tabq__sub_unhold(tabq_subscription *s, unsigned n);

/* txn.c: the begin the dialect renders for build->table into out (cap bytes): at the table's
 * isolation level (or SQLite mode) when table_level, else at the database's default. */
int tabq__txn_render_begin(tabq_broker *b, const tabq_build *build, bool table_level, char *out,
                           size_t cap, tabq_error *err);
/* txn.c: the savepoint of a row lock delivery's transaction and the rollback to it, rendered
 * by the dialect (ABI 1.6) into set and back (cap bytes each), else the SQL standard's. */
int tabq__txn_render_savepoint(tabq_broker *b, const tabq_build *build, char *set, char *back,
                               size_t cap, tabq_error *err);
/* txn.c: a transaction on a pooled connection; failures reported as the statement "begin" or
 * "commit" of `table`. A rollback that fails is logged and marks the connection broken, so
 * the pool closes it when it comes back; false then. */
int tabq__txn_begin(tabq_broker *b, const char *table, tabq_pconn *c, const char *begin_sql,
                    tabq_error *err);
int tabq__txn_commit(tabq_broker *b, const char *table, tabq_pconn *c, tabq_error *err);
bool tabq__txn_rollback(tabq_broker *b, const char *table, tabq_pconn *c);
/* Ends a transaction by what happened in it: commits when rc is TABQ_OK, else (or when the
 * commit fails) rolls back; returns rc, or the commit's failure. */
int tabq__txn_end(tabq_broker *b, const char *table, tabq_pconn *c, int rc, tabq_error *err);
/* The same, for a subscription's transactions (its table, its begin). */
static inline int tabq__sub_begin(tabq_subscription *s, tabq_pconn *c, tabq_error *err) {
  return tabq__txn_begin(s->b, s->t->name, c, s->begin_sql, err);
}
static inline int tabq__sub_commit(tabq_subscription *s, tabq_pconn *c, tabq_error *err) {
  return tabq__txn_commit(s->b, s->t->name, c, err);
}
static inline bool tabq__sub_rollback(tabq_subscription *s, tabq_pconn *c) {
  return tabq__txn_rollback(s->b, s->t->name, c);
}

/* delivery.c */
/* Locks d->mu once no lease extension of d is in flight: what every settlement takes. */
void tabq__delivery_lock(tabq_delivery *d);
/* Whether the connection holding d's row (its lock or its transaction) is not known broken. */
bool tabq__conn_held(tabq_delivery *d);
/* Two ids of the same row (integer or text). */
bool tabq__same_id(const tabq_value *a, const tabq_value *b);
int tabq__delivery_fill(tabq_delivery *d, const tabq_driver_v1 *drv, tabq_prepared *p,
                        tabq_error *err);
void tabq__delivery_done(tabq_delivery *d);
/* Takes claimed deliveries back out of work (their claim failed or rolled back). */
void tabq__delivery_unclaim(tabq_delivery **slots, unsigned n);

/* settle_rows.c: what every form's settlement shares. */
/* The action an outcome asks of the delivery's row (max_attempts and the dead letter decide). */
tabq_action tabq__choose(tabq_delivery *d, tabq_outcome o);
/* A settlement statement that changed `changed` rows: TABQ_OK for one, else its error. */
int tabq__expect_one(tabq_subscription *s, uint64_t changed, const char *what, tabq_error *err);
/* Runs the statements of action a for d on c (in_txn: inside a transaction the caller ends; a
 * statement of the service's own otherwise gets one of its own). */
int tabq__run_action(tabq_delivery *d, tabq_action a, tabq_outcome o, tabq_pconn *c, bool in_txn,
                     tabq_error *err);
/* Counts a claim's rows in the first slot's counters (the claiming thread holds it). */
static inline void tabq__count_claimed(tabq_delivery **slots, unsigned got) {
  if (got)
    tabq__count(&slots[0]->counts, TABQ__N_CLAIMED, got);
}
/* Counts d's settlement in its slot's counters. */
void tabq__settle_count(tabq_delivery *d, tabq_action a, int rc);
/* Whether a settlement that did `a` took the row off the queue. */
bool tabq__takes_row_off(tabq_action a);
/* The error of settling a delivery no longer in work (CLOSED after the advisory form's shutdown
 * released it); and the delivery leaving work, with d->mu held. */
int tabq__not_in_work(tabq_delivery *d, tabq_error *err);
void tabq__leave_work(tabq_delivery *d);
/* Transactional mode: the settlement of a delivery whose own transaction is open. */
int tabq__settle_tx(tabq_delivery *d, tabq_outcome o, tabq_action *a, tabq_error *err);
/* What action a is called in messages ("ack", "retry", ...), and the slot of its statement. */
const char *tabq__action_name(tabq_action a);
tabq_sq tabq__action_stmt(tabq_action a);

/* Operations two forms share: retry and release run no statement where what a delivery holds
 * (a row lock's transaction, an advisory key) puts its row back when it ends; no lease token;
 * a claim as large as asked. */
bool tabq__put_back_by_holder(tabq_action a);
int64_t tabq__no_token(const tabq_delivery *d);
unsigned tabq__claim_as_asked(const tabq_subscription *s, unsigned want);

/* settle_joined.c */
/* A batch's acks in one ack_ids statement per lease token, the rows done marked in x. */
int tabq__ack_by_ids(tabq_delivery *const *ds, unsigned n, const tabq_action *actions,
                     tabq_pconn *c, tabq_batch_scratch *x, tabq_error *err);
/* A lease or advisory batch's actions in one transaction, one commit (each row's token still
 * checked; the acks in one statement where the dialect has ack_ids), on a pooled connection or,
 * not pooled, the first row's own; counted, each row's result in x->rcs. False, nothing settled,
 * when that cannot be (a statement of the service's own, a failure other than a lost lease, a
 * row its handler settled). */
bool tabq__settle_joined_try(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                             const tabq_action *actions, tabq_batch_scratch *x, bool pooled);
/* The acks of single deliveries gathered by ack_coalesce.c, settled as a lease batch is: true
 * when they settled together, each row's result in x->rcs (TABQ_OK or TABQ_LEASE_LOST); false
 * when they could not (nothing settled: settle each alone). */
bool tabq__settle_acks_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                              tabq_batch_scratch *x);
int tabq__batch_scratch_init(tabq_batch_scratch *x, unsigned n);
void tabq__batch_scratch_free(tabq_batch_scratch *x);

/* ack_coalesce.c */
int tabq__coalescer_init(tabq_coalescer *c, unsigned cap, unsigned window_us);
void tabq__coalescer_free(tabq_coalescer *c);
/* Settles an ack with the acks other workers return meanwhile. *settled false: it could not
 * join them, settle it alone. */
int tabq__ack_coalesced(tabq_delivery *d, tabq_outcome o, bool *settled, tabq_error *err);

/* settle.c: a delivery settled by its outcome (coalesced, in its own transaction, or by its
 * form), counted, and its subscription woken where the row is due again at once. */
int tabq__settle(tabq_delivery *d, tabq_outcome outcome, tabq_error *err);
/* Settles a handler's returned outcome unless the handler settled already; logs failures. */
void tabq__settle_returned(tabq_delivery *d, tabq_outcome outcome);
/* The service's delivery hooks (delivery_hooks.c): start just before a handler gets d (it also
 * readies what end reports), end after d's settlement; no-ops without hooks. */
void tabq__hooks_start(tabq_delivery *d);
void tabq__hooks_end(tabq_delivery *d);
/* The same, returning the result: TABQ_INVALID when settled already, else the settlement's
 * (its details in *err). */
int tabq__settle_logged(tabq_delivery *d, tabq_outcome outcome, tabq_error *err);
/* A lease or advisory batch: joined where it can be (tabq__settle_joined_try), else one by one. */
void tabq__settle_joined(tabq_delivery *const *ds, unsigned n, const tabq_outcome *outcomes,
                         tabq_batch_scratch *x, bool pooled);

/* cancel_delivery.c: a cancel as the deliveries see it (docs/cancel.md). */
/* Builds SQ_CANCEL_READ where the table has cancelled_at and the form marks rows. */
int tabq__cancel_open(tabq_subscription *s, tabq_error *err);
/* The outcome a settlement of d carries out: a drop when d's row was cancelled (read where the
 * mark is in the row and d does not know yet: one round trip, only with the role), else o. */
tabq_outcome tabq__cancel_outcome(tabq_delivery *d, tabq_outcome o);
/* The lease extender's read of the mark after d's extension on c (only with the role). */
void tabq__cancel_after_extension(tabq_delivery *d, tabq_pconn *c);
/* Tells the deliveries of broker b in work on row `id` of table `name` that it is cancelled
 * (state TABQ__CANCEL_*): how many it found. */
unsigned tabq__cancel_tell(tabq_broker *b, const char *name, const tabq_value *id, int state);

/* headers.c */
int tabq__headers_render(const tabq_header *h, size_t n, tabq_buf *out, tabq_error *err,
                         const char *table);
/* As tabq__headers_render, after what `out` holds already (out->len grows). */
int tabq__headers_append(const tabq_header *h, size_t n, tabq_buf *out, tabq_error *err,
                         const char *table);
const char *tabq__headers_get(tabq_delivery *d, const char *name);

/* listen.c: the table's notification channel from the dialect (TABQ_DECLARATION when too
 * long). */
int tabq__channel_of(tabq_broker *b, const tabq_table *t, char *out, size_t cap, tabq_error *err);

/* decode.c: the codec and the decode policy (docs/decoding.md). */
/* Takes the codec and checks the policy at subscribe (refusals name the table and the rule). */
int tabq__decode_open(tabq_subscription *s, const tabq_subscription_options *o, tabq_error *err);
/* Reads and decodes a claimed delivery before its handler: true when the handler may have it;
 * false with *policy the outcome that settles it (logged and counted). */
bool tabq__decode_gate(tabq_delivery *d, tabq_outcome *policy);
/* The outcome the decode policy settles with. */
tabq_outcome tabq__decode_outcome(const tabq_subscription *s);
/* Frees what the codec decoded for d. */
void tabq__decode_release(tabq_delivery *d);

/* row_read.c: a row mode row read against its columns' declared types, converting cells the
 * driver read as another type that holds the declared one (text of a number or a time, an
 * integer as a real); false with why otherwise. */
bool tabq__row_read(tabq_delivery *d, char *why, size_t cap);
/* "integer", "real", "text", ... for messages. */
const char *tabq__type_name(int t);
/* A row's id as a message shows it, in buf: 42, 'abc' (text, cut at 64 bytes, read by its
 * length), or "(an id of type real)" for what a driver may read from an id column of another
 * type, whose value is no text to print. Returns buf. */
#define TABQ__ID_SHOWN 96
const char *tabq__id_shown(const tabq_value *id, char buf[TABQ__ID_SHOWN]);
/* Whether a published value may go into a column declared `declared`. */
bool tabq__row_value_fits(int declared, const tabq_value *v);
/* A delivery cell as a time (*us, microseconds since 1970): a time, or its UTC text as
 * tabq__row_read reads a declared time; false for NULL and anything else. */
bool tabq__cell_time(const tabq_value *v, int64_t *us);

/* queue_latency.c: the claims of s asked for the rows' due time where the table, the plugin and
 * the service's statements allow (its projection set for it); and one sample of d's queue
 * latency, taken on the handler's thread right before the handler gets d. */
void tabq__due_open(tabq_subscription *s);
void tabq__queue_latency_add(tabq_delivery *d);
/* A histogram summed over the subscription's delivery slots: the cells at `cells_at` in each
 * (offsetof(tabq_delivery, handler_time) ...), into `caller`, `size` bytes of it. */
void tabq__slots_histogram(const tabq_subscription *s, size_t cells_at, tabq_histogram *caller,
                           size_t size);

/* route.c: what a route of `name` to table t (taken and checked) must be: a name, '*' only at
 * its end, and a group column to write it into. */
int tabq__route_check(const char *name, const tabq_table *t, tabq_error *err);
/* Whether the dialect serves subscriptions by name (its ByName interface); TABQ_DIALECT naming
 * the plugin otherwise. */
int tabq__byname_served(tabq_broker *b, const char *name, const char *table, tabq_error *err);
/* route.c: frees the broker's routes (tabq_close). */
void tabq__routes_free(tabq_broker *b);

#endif
