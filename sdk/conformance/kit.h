/* tabq-conformance: what the kit's files share.
 *
 * The kit tests a dialect plugin through the public API (tabq.h) and checks the database through
 * the plugin's own Driver vtable, so it links no database client and runs against any plugin. */
#ifndef TABQ_CONFORMANCE_KIT_H
#define TABQ_CONFORMANCE_KIT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

#include "child_pipe.h"
#include "handlers.h"

/* ---- The plugin, as the probe found it (probe.c) ------------------------------------------- */

typedef struct kit_plugin {
  char path[PATH_MAX];        /* the plugin file */
  char driver_path[PATH_MAX]; /* the file the driver comes from (the lender with driver_from) */
  const tabq_plugin *desc;
  const tabq_driver_v1 *driver;
  /* With driver_from: the lender's first scheme, which its driver takes URLs in; else "". */
  char driver_scheme[32];
  unsigned forms;    /* TABQ_FORM_* the plugin declares */
  bool placeholder;  /* ABI 1.1 Dialect.placeholder: custom events */
  bool fetch_by_ids; /* Dialect.fetch: a claim of the service's own needs no fetch of its own */
  bool listen;       /* Driver.listen and wait_notify, Dialect.channel: LISTEN/NOTIFY wake-ups */
  bool reals;        /* the driver's plugin is of ABI 1.5 or later: it binds TABQ_T_REAL */
  /* Advisory keys kept in the process (TABQ_ADVISORY_PROCESS_KEYS): one process at a time serves
   * advisory subscriptions on a database, a second is refused at subscribe. */
  bool process_keys;
  /* ABI 1.7: Dialect.schema renders a table's schema; Dialect.indexes lists its indexes. */
  bool schema, indexes;
} kit_plugin;

/* Loads the plugin file (or finds the one serving `scheme`, as tabq's loader does) and reads its
 * descriptor with a host of the kit's own. On failure writes one line into `why`. */
int probe_file(const char *file, kit_plugin *out, char *why, size_t cap);
int probe_scheme(const char *scheme, kit_plugin *out, char *why, size_t cap);
/* The driver's last failure, as reported to the kit's host (empty when none, or when the plugin
 * reports to tabq's host since a broker connected). */
const char *probe_last_failure(void);
void probe_clear_failure(void);
/* The kit's host, for statements built with the plugin's own builders. */
const tabq_host *probe_host(void);

/* ---- DDL (ddl.c) ----------------------------------------------------------------------------- */

#define DDL_MAX_STMTS 8
typedef struct ddl_section {
  char *stmts[DDL_MAX_STMTS]; /* each with {table} placeholders */
  unsigned n;
} ddl_section;

typedef struct kit_ddl {
  char name[PATH_MAX]; /* "sqlite", or the file */
  ddl_section jobs, dead, drop;
  ddl_section rows;     /* optional: the row mode table */
  ddl_section controls; /* optional: the controls table pauses are written in */
  ddl_section slots;    /* optional: the slots table concurrency limits take slots in */
} kit_ddl;

/* A built-in family (sqlite, postgres, mysql) or a file; one line in `why` on failure. */
int ddl_load(const char *family_or_file, kit_ddl *out, char *why, size_t cap);
/* The built-in family for a plugin name, or NULL. */
const char *ddl_family_for(const char *plugin_name);

/* ---- The run ----------------------------------------------------------------------------------
 */

typedef struct kit_state {
  kit_plugin plugin;
  kit_ddl ddl;
  const char *url;
  /* The URL the plugin's driver takes for the checks: `url`, or with a borrowed driver the same
   * URL under the lender's scheme, as tabq hands it (pglease://... -> postgres://...). */
  char driver_url[1024];
  tabq_form form; /* the form of the suite running */
  /* The driver says the URL reaches the server through a transaction pooler (ABI 1.9
   * Driver.session_scope): the advisory form and LISTEN are refused, and their tests skipped. */
  bool per_transaction;
} kit_state;

extern kit_state kit;

const char *form_name(tabq_form f); /* "rowlock", "lease", "advisory" */

/* ---- Tests ------------------------------------------------------------------------------------
 */

#define ALL_FORMS (TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE | TABQ_FORM_ADVISORY)
/* Beside a test's forms: one of the few tests --smoke runs (a claim of one row and of many, an
 * ack, a retry, a lease's extensions; the advisory form's claims lock and take), quick enough to
 * run on many plugins. */
#define KIT_SMOKE 0x100u

typedef struct kit_test {
  const char *name;
  void (*run)(void);
  unsigned forms; /* the forms the test belongs to, and KIT_SMOKE for a smoke test */
  /* NULL, or why the plugin cannot be tested here (the test is then reported as skipped);
   * called with kit.form set. */
  const char *(*needs)(void);
  /* The feature the README's matrix counts the test under (tools/feature_matrix.py); NULL:
   * its group's. */
  const char *feature;
} kit_test;

/* Each group file, NULL-name terminated. */
extern const kit_test outcome_tests[];
extern const kit_test lease_tests[];
extern const kit_test crash_tests[];
extern const kit_test fifo_tests[];
extern const kit_test custom_tests[];
extern const kit_test claim_tests[];
extern const kit_test publish_tests[];
extern const kit_test transaction_tests[];
extern const kit_test decode_tests[];
extern const kit_test partition_tests[];
extern const kit_test every_role_tests[];
extern const kit_test prefetch_tests[];
extern const kit_test schema_tests[];
extern const kit_test unique_tests[];
extern const kit_test deadline_tests[];
extern const kit_test pause_tests[];
extern const kit_test cancel_tests[];
extern const kit_test schedule_tests[];
extern const kit_test retention_tests[];
extern const kit_test concurrency_tests[];

/* ---- The database of one test (db.c) --------------------------------------------------------- */

/* Fresh tables for the test: {jobs} with every role and {dead} its dead letter table, under
 * names no other test or run uses, and a checking connection through the plugin's driver. */
void fresh_db(void);
/* New names for the test's tables and the checking connection, and no table: for a test that
 * creates them itself (the rendered schema), and says so with db_made. */
void fresh_names(void);
#define DB_JOBS 1u
#define DB_DEAD 2u
#define DB_ROWS 4u
#define DB_CONTROLS 8u
void db_made(unsigned tables);
/* Ends the test: closes its brokers, kills its children, drops its tables (suite teardown). */
void end_test(void);
/* The names a child works on: {jobs} and {jobs}_dead. */
void db_set_names(const char *jobs);
const char *jobs_name(void);
const char *dead_name(void);
/* The row mode table of the DDL's [rows] section, created for the test ({rows} in SQL), and
 * its description in kit.form; NULL reason when the DDL has one (needs_rows). */
void db_make_rows(void);
const char *rows_name(void);
const tabq_table *rows_table(void);
const char *needs_rows(void);
/* The controls table of the DDL's [controls] section, created for the test ({controls} in SQL),
 * its name; NULL reason when the DDL has one (needs_controls). */
void db_make_controls(void);
const char *controls_name(void);
const char *needs_controls(void);
/* The slots table concurrency limits take their slots in (docs/concurrency.md): the DDL's
 * optional [slots] section made under its name; NULL reason when the DDL has one. */
#define DB_SLOTS 16u
void db_make_slots(void);
const char *slots_name(void);
const char *needs_slots(void);

/* SQL on the checking connection, {jobs} and {dead} replaced by the test's table names. */
void db_exec(const char *sql);
/* The first cell of the first row as an integer, -1 with no row or NULL. */
long long db_int(const char *sql);
/* The first cell of the first row as text; a time cell as microseconds since 1970. */
void db_text(const char *sql, char *buf, size_t cap);
/* Every cell of every row of `sql` (run as given, with `n` parameters) as text: " | " between
 * cells, a newline after each row. For plans, whatever shape the database gives them. */
void db_rows_text(const char *sql, const tabq_value *params, unsigned n, char *buf, size_t cap);
/* The server's version as the plugin's driver numbers it, 0 when it cannot read it. */
uint32_t db_server_version(void);
/* Writes n rows to `queue` directly, payloads "job-1".."job-<n>". */
void db_fill(const char *queue, int n);
/* The first cell of the first row as a time, in ms after the client's clock (negative: before);
 * LLONG_MIN with no row, NULL or a cell that is no time. */
long long db_ms_from_now(const char *sql);
/* Rows of {jobs} whose retry_after lies more than `ms` after the client's clock. */
long long db_due_after(int ms);
/* The lease of the {jobs} row, to compare a token before and after. */
void db_lease_text(char *buf, size_t cap);
/* Waits until a count reaches `want` (a liveness bound, never a speed check). */
bool wait_count(const char *sql, long long want, int timeout_ms);

/* ---- Descriptions, options and messages (tables.c: the one place that builds them) ----------- */

const tabq_table *jobs_table(void);       /* the test's {jobs} in kit.form, every role */
const tabq_table *marked_table(void);     /* the same, acks set processed_at */
const tabq_table *keyed_table(void);      /* the same with the partition_key role */
const tabq_table *every_role_table(void); /* every role at once: keyed and marked */
/* Marked, with the unique key "ukey" (its index comes from the dialect's schema: unique jobs). */
const tabq_table *unique_table(void);
/* {jobs} in another form (for the refusal of a form the plugin lacks). */
tabq_table table_in_form(tabq_form form);
typedef enum refusal_table {
  TABLE_NO_HEADERS,     /* no headers column: a publish with headers fails */
  TABLE_NO_ATTEMPT,     /* no attempt role: max_attempts is refused */
  TABLE_MISSING_COLUMN, /* a role named after a column the table lacks: "lease_ends" */
  TABLE_MISSING,        /* a table the database lacks: "nope" */
} refusal_table;
tabq_table table_for_refusal(refusal_table which);

tabq_broker_options broker_options(unsigned poll_ms, unsigned pool_size);
tabq_subscription_options sub_options(const char *queue, tabq_handler handler, void *user);
tabq_subscription_options batch_options(const char *queue, tabq_batch_handler handler, void *user,
                                        unsigned batch);
tabq_message message(const char *group, const void *payload, size_t len);
void stats_of(const tabq_subscription *s, tabq_stats *out);
/* The stats once `settled` settlements are counted (up to 10 s): a settlement's statement
 * commits before its count goes up, so a test that saw the rows change waits for the count. */
void stats_after(const tabq_subscription *s, uint64_t settled, tabq_stats *out);

/* ---- What the tests share (support.c) -------------------------------------------------------- */

/* A broker on kit.url, closed by end_test unless closed before with close_broker. */
tabq_broker *connect_broker(unsigned poll_ms);
tabq_broker *connect_broker_with(const tabq_broker_options *o);
void close_broker(tabq_broker *b);
/* Publishes n rows to `queue` with payload "job-<i>", i from 0. */
void publish_n(tabq_broker *b, const char *queue, int n);
/* The subscription's claimed count once it reaches `n` (up to 10 s), or as it stands then. */
uint64_t claimed_within(const tabq_subscription *sub, uint64_t n);
/* Asserts that the subscription is refused at subscribe (TABQ_DECLARATION) with a message that
 * names the table and holds `rule`. */
void expect_refused(tabq_broker *b, const tabq_table *t, const tabq_subscription_options *o,
                    const char *rule);

/* A handler whose first call waits at the gate (the rows claimed after it wait in the process),
 * counting every call; and a shutdown of `b` begun while that first call is held, the gate
 * opened once the broker is stopping, returning when the shutdown has. */
typedef struct held_first {
  gate g;
  atomic_uint calls;
} held_first;
tabq_outcome hold_first(tabq_delivery *d, void *user);
/* Asserts (fatally) that the subscription claims `n` rows while the first is held; on failure
 * it opens the gate first, so the test's end does not wait for the held handler for ever. */
void held_until_claimed(held_first *h, const tabq_subscription *sub, uint64_t n);
void shutdown_while_held(tabq_broker *b, held_first *h);
/* On a table of two rows, `o` mounting hold_first on `h` in a way that claims the second row
 * while the first is held (prefetch, workers_by_key): the second row's lease (`o` sets it to
 * one second) is extended while it waits three leases long, and both are acked, none lost. */
void waiting_row_keeps_its_lease(tabq_broker *b, const tabq_table *t, tabq_subscription_options *o,
                                 held_first *h);

/* A child: this executable again with the hidden --child MODE (child.c), on the test's table,
 * its stdout and stdin as pipes; killed by end_test if still running. */
void child_start(child *c, const char *mode);
/* Fresh tables with one row, a broker on them (returned), and a child in `mode` that has said
 * it claimed the row (its handler is running). */
tabq_broker *child_claims_one_row(child *c, const char *mode);
int child_wait(child *c); /* its status as waitpid gives it */
/* The child's side: runs MODE on the URL and table; returns the exit status. */
int child_main(const char *mode, const char *url, tabq_form form, const char *jobs);

/* ---- Skips ------------------------------------------------------------------------------------
 */

const char *needs_custom_events(void); /* ABI 1.1 */
const char *needs_listen(void);
const char *needs_key_column(void); /* the DDL's [jobs] has a partition_key column */
const char *needs_schema(void);     /* ABI 1.7 Dialect.schema and Dialect.indexes */

#endif
