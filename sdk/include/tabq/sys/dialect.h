/* tabq — the dialect plugin ABI, version 1.
 *
 * A dialect is a shared object that serves one database. It exports one function,
 * `tabq_plugin_entry`, which the core calls once after dlopen:
 *
 *   const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi);
 *
 * The handshake goes both ways: the plugin reads the host's ABI version and returns NULL when it
 * cannot serve that host; the core reads the descriptor's version and accepts it only when the
 * major versions are equal and the plugin's minor is not newer than the host's.
 *
 * The descriptor points at one vtable per interface (Driver, Dialect, RowLock, Lease, Advisory,
 * ByName), NULL where the plugin does not serve it. Every vtable begins with `size` and `version`
 * and only ever grows at its end, so a newer core reads an older plugin's tables safely. The core
 * checks at load that every required member of each interface is set, and refuses the plugin,
 * naming the member, otherwise.
 *
 * Statements are data: the dialect renders SQL text once, when a subscription opens, together
 * with the ordered list of parameter ids its placeholders bind (tabq_param). The core binds the
 * values by id at run time; the dialect never sees a message.
 *
 * Memory: the dialect allocates statement text only through tabq_stmt (which uses the host's
 * allocator) and frees its own connection and statement objects itself in close/finalize.
 * Nothing allocated on one side is freed on the other.
 *
 * Errors: every member returns a tabq_code (TABQ_OK on success). Before returning another code,
 * a member calls host->fail() with the details (message, SQLSTATE, native code); the core copies
 * them into the caller's tabq_error. */
#ifndef TABQ_DIALECT_H
#define TABQ_DIALECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tabq/codes.h>
#include <tabq/table.h>
#include <tabq/value.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TABQ_ABI_MAJOR 1
#define TABQ_ABI_MINOR 9
#define TABQ_ABI_VERSION ((uint32_t)(TABQ_ABI_MAJOR << 16 | TABQ_ABI_MINOR))
#define TABQ_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define TABQ_ABI_MINOR_OF(v) ((uint32_t)(v)&0xffffu)

/* Whether vtable `vt` (of type `type`) is large enough to hold `member`: members added in a
 * later minor version are read only where the plugin's table has them. */
#define TABQ_HAS_MEMBER(vt, type, member)                                                          \
  ((vt) && (vt)->size >= offsetof(type, member) + sizeof(((type *)0)->member) && (vt)->member)

/* The name of the one exported symbol. */
#define TABQ_PLUGIN_ENTRY_SYMBOL "tabq_plugin_entry"

#if defined(__GNUC__)
#define TABQ_PLUGIN_EXPORT __attribute__((visibility("default")))
#define TABQ_PRINTF_(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TABQ_PLUGIN_EXPORT
#define TABQ_PRINTF_(fmt, args)
#endif

/* ---- Host services: what the core lends every plugin ------------------------------------- */

typedef struct tabq_host {
  uint32_t size; /* sizeof(tabq_host) as the core was built */
  uint32_t abi;  /* TABQ_ABI_VERSION of the core */
  void *(*alloc)(size_t n);
  void *(*realloc)(void *p, size_t n);
  void (*free)(void *p);
  /* Records the details of a failure for the calling thread and returns `code`, so a member
   * can `return host->fail(TABQ_BACKEND, "40001", 0, "claim failed: %s", msg);`.
   * `sqlstate` may be NULL; `native` is the driver's own error number or 0. */
  int (*fail)(int code, const char *sqlstate, long native, const char *fmt, ...) TABQ_PRINTF_(4, 5);
  /* A line for the log of the broker the calling thread works for (a plugin before ABI 1.6 has
   * no other way; from 1.6 on, prefer log_to). */
  void (*log)(int level, const char *fmt, ...) TABQ_PRINTF_(2, 3);

  /* ---- ABI 1.6 ---- */
  /* The host of one broker: each broker has its own (`context` tells them apart; it is the
   * core's, not the plugin's), handed to every connection its pool opens (Driver.connect_host)
   * and to every statement it builds (tabq_stmt.host). A line logged through log_to(self, ...)
   * reaches that broker's log callback from any thread, so a driver keeps its connection's host
   * and logs through it. Read both through TABQ_HAS_MEMBER(host, tabq_host, log_to): a core
   * before 1.6 hands a host without them. */
  const void *context;
  void (*log_to)(const struct tabq_host *self, int level, const char *fmt, ...) TABQ_PRINTF_(3, 4);

  /* ---- ABI 1.7 ---- */
  /* Where in its statement the calling thread's last failure points, as the database told it:
   * the character, counted from 1 (PostgreSQL's error position; SQLite's error offset turned into
   * characters); 0 for none. Called right after `fail`, which sets it back to 0. The core hands it
   * on in tabq_error.position. Read through TABQ_HAS_MEMBER(host, tabq_host, fail_position): a
   * core before 1.7 has none. */
  void (*fail_position)(unsigned position);
} tabq_host;

/* ---- Statements --------------------------------------------------------------------------- */

/* What a placeholder binds. The core supplies each value by its id. */
typedef enum tabq_param {
  TABQ_P_ID = 1,        /* the row's id (integer or text, as the id column holds) */
  TABQ_P_IDS,           /* a list of ids (TABQ_T_INT_LIST): a fetch, ack_ids, stamp_ids */
  TABQ_P_GROUP,         /* the subscription's queue name, or a published row's group */
  TABQ_P_NOW,           /* "now", read once per claim or settlement (TABQ_T_TIME) */
  TABQ_P_LIMIT,         /* the most rows a claim may return */
  TABQ_P_LEASE_UNTIL,   /* the new lease expiry (TABQ_T_TIME) */
  TABQ_P_TOKEN,         /* the expiry the delivery holds: its ownership token */
  TABQ_P_RETRY_AT,      /* when a delayed retry falls due (TABQ_T_TIME) */
  TABQ_P_DEST,          /* the dead-letter group */
  TABQ_P_KEY,           /* an advisory lock key (text) */
  TABQ_P_PRIORITY,      /* insert: the priority */
  TABQ_P_PARTITION_KEY, /* insert: the partition key */
  TABQ_P_HEADERS,       /* insert: the headers (TABQ_T_JSON) */
  TABQ_P_PAYLOAD,       /* insert: the payload (TABQ_T_BYTES) */
  TABQ_P_ATTEMPT,       /* insert: the first attempt */
  TABQ_P_CHANNEL,       /* notify: the table's notification channel (text) */
  TABQ_P_UNIQUE_KEY,    /* ABI 1.9, insert and find_unique: the message's unique key (text) */
  TABQ_P_DATA = 256,    /* insert: data column n is TABQ_P_DATA + n */
} tabq_param;

#define TABQ_STMT_MAX_PARAMS 64

/* A statement under construction: SQL text grown through the host allocator, and the parameter
 * id bound at each placeholder position (params[0] is placeholder 1). sql.h has the helpers. */
typedef struct tabq_stmt {
  const tabq_host *host;
  char *sql;
  size_t len, cap;
  uint16_t params[TABQ_STMT_MAX_PARAMS];
  unsigned nparams;
  int status; /* the first failure while building (TABQ_NOMEM, TABQ_INVALID), else TABQ_OK */
} tabq_stmt;

/* What a statement is built for: the table, its form and the mount's options. */
typedef struct tabq_build {
  const tabq_table *table;
  tabq_form form;
  const char *dead_letter_table; /* dead letter into a table: its name, else NULL */
  /* The server's version as the driver's server_version gave it (0 when not read yet), so
   * `check` can refuse features the server is too old for (TABQ_SERVER_TOO_OLD). */
  uint32_t server_version;
  const char *server_version_text;
  /* The connection's current database (or schema) when the driver tells it, else NULL: for
   * dialects whose names depend on it (MySQL's GET_LOCK names). */
  const char *database;

  /* ---- ABI 1.4 ---- */
  /* Dialect.insert_rows: the rows its statement writes (a power of two, 2 to
   * TABQ_INSERT_ROWS_MAX). 0 for every other statement. A plugin built before 1.4 reads the
   * members above only. */
  unsigned rows;

  /* ---- ABI 1.8 ---- */
  /* The claim's rows bring their due time: every statement this build makes that returns the
   * projection ends it with the row's retry_after (below). The core sets it only for a plugin
   * whose form table declares TABQ_PROJECTS_DUE, on a table with a retry_after column; false for
   * every other statement and plugin. */
  bool project_due;
} tabq_build;

/* The most rows the core asks one Dialect.insert_rows statement to write (ABI 1.4); fewer for a
 * table whose insert binds many parameters. */
#define TABQ_INSERT_ROWS_MAX 128

/* The projection. A claim, a take and a fetch return the columns of a row in this order, each
 * only where the table has the role: id, attempt, group, partition_key, headers, payload, then the
 * data columns. A claim and a take return the attempt as stored after they counted it. With
 * b->project_due (ABI 1.8) the row's retry_after follows the data columns, as the driver reads a
 * time: a TABQ_T_TIME cell, or UTC text "YYYY-MM-DD HH:MM:SS[.ffffff]"; the core measures the
 * queue latency from it (docs/metrics.md). A statement that returns one more cell after the
 * projection (Advisory.lock_take) returns it after the due time. */

/* ---- Driver: talks to the database -------------------------------------------------------- */

typedef struct tabq_conn tabq_conn;         /* a plugin's connection */
typedef struct tabq_prepared tabq_prepared; /* a plugin's prepared statement */

typedef struct tabq_driver_v1 {
  uint32_t size;
  uint32_t version; /* 1 */
  /* Opens a connection for a URL of one of the plugin's schemes. */
  int (*connect)(const char *url, tabq_conn **out);
  void (*close)(tabq_conn *c);
  /* Runs SQL text without parameters or rows (schema, session settings). */
  int (*exec)(tabq_conn *c, const char *sql);
  /* Prepares a statement on the server; a table or column the database lacks fails with
   * TABQ_SCHEMA. `name` is a short label for messages ("claim", "ack", ...). */
  int (*prepare)(tabq_conn *c, const char *sql, unsigned nparams, const char *name,
                 tabq_prepared **out);
  /* Binds `n` values and runs the statement; rows, if any, are read with next/cell. A list
   * (TABQ_T_INT_LIST: IDS) binds in the one form the dialect's statements read it in, the
   * driver's choice: an array on PostgreSQL, a JSON array as text on MySQL and SQLite. */
  int (*execute)(tabq_prepared *p, const tabq_value *params, unsigned n);
  /* Moves to the next row: *row is true when one is there. */
  int (*next)(tabq_prepared *p, bool *row);
  /* Reads cell `col` of the current row. Text and bytes stay valid until next/reset. */
  int (*cell)(tabq_prepared *p, unsigned col, tabq_value *out);
  /* Rows changed by the last execute. */
  uint64_t (*affected)(tabq_prepared *p);
  /* Ends the execution (frees rows, ends an autocommit statement); keeps it prepared. */
  void (*reset)(tabq_prepared *p);
  void (*finalize)(tabq_prepared *p);
  /* Transactions. `begin_sql` comes from the dialect's begin member. */
  int (*begin)(tabq_conn *c, const char *begin_sql);
  int (*commit)(tabq_conn *c);
  int (*rollback)(tabq_conn *c);
  /* The server's version as text ("3.40.1") and as a number (30040001 style, dialect defined). */
  int (*server_version)(tabq_conn *c, char *text, size_t cap, uint32_t *number);
  /* False once the connection is known broken; the pool then replaces it. */
  bool (*alive)(tabq_conn *c);
  /* Optional (NULL where the database has no notifications): starts listening on a channel
   * named by the dialect's `channel` member (the driver quotes it). */
  int (*listen)(tabq_conn *c, const char *channel);
  /* Waits up to timeout_ms for a notification; *got tells whether one came. */
  int (*wait_notify)(tabq_conn *c, int timeout_ms, char *channel, size_t channel_cap, char *payload,
                     size_t payload_cap, bool *got);
  /* Optional: the connection's current database or schema, NUL-terminated. */
  int (*database)(tabq_conn *c, char *out, size_t cap);

  /* ---- ABI 1.6 ---- */
  /* Optional: `connect` for the broker whose host (tabq_host, its log_to) it is given; the
   * driver keeps the host with the connection for the lines it logs. The core opens every pooled
   * connection with it where the driver has it, else with `connect`. */
  int (*connect_host)(const tabq_host *host, const char *url, tabq_conn **out);

  /* ---- ABI 1.7 ---- */
  /* Optional, for a database that types its placeholders when it prepares (PostgreSQL infers
   * each from where it stands): whether a value of `sample`'s type binds placeholder `i` (from 0)
   * of `p` as execute would bind it, without a round trip: TABQ_OK, or the failure execute would
   * meet, reported through host->fail. The statement check (tabq/check.h) asks it for every
   * placeholder, so a column whose type the statements cannot bind (a payload column of
   * integers) is found before anything runs. */
  int (*bindable)(tabq_prepared *p, unsigned i, const tabq_value *sample);

  /* ---- ABI 1.9 ---- */
  /* Optional: how long the connection's server session lasts, as its URL declares it.
   * TABQ_SESSION_OWN (what a driver without the member gives): the connection is one server
   * session for its life, so session locks, LISTEN and named prepared statements hold.
   * TABQ_SESSION_PER_TRANSACTION: a transaction pooler (PgBouncer's pool_mode=transaction) hands
   * each transaction, and each statement outside one, whichever server session is free; the
   * driver then prepares nothing that outlives a statement, and the core refuses what needs a
   * session (the advisory lock form, listen_notify) and elects no retention pruner. */
  int (*session_scope)(tabq_conn *c);
} tabq_driver_v1;

/* Driver.session_scope's answers (ABI 1.9). */
#define TABQ_SESSION_OWN 0
#define TABQ_SESSION_PER_TRANSACTION 1

/* ---- Dialect: the statements every form shares ------------------------------------------- */

typedef int (*tabq_build_fn)(const tabq_build *b, tabq_stmt *out);

/* The statements of a table's schema (ABI 1.7, Dialect.schema), in the order they run. */
typedef enum tabq_schema_part {
  TABQ_SCHEMA_TABLE = 1,  /* CREATE TABLE: every role column, then the data columns */
  TABQ_SCHEMA_INDEX,      /* the claim-order index (docs/table-description.md) */
  TABQ_SCHEMA_SETTINGS,   /* the table's storage settings (PostgreSQL: autovacuum, fillfactor) */
  TABQ_SCHEMA_DEAD_TABLE, /* b->dead_letter_table, with the table's columns */
  /* The index of the finished rows, "(group, processed_at) WHERE processed_at IS NOT NULL",
   * where the claim-order index is partial and so holds none of them: what purge's deletes by
   * age and stats' processed counts walk. Rendered after the claim-order index; a dialect that
   * renders nothing for it (out->sql left NULL) leaves it out. */
  TABQ_SCHEMA_FINISHED_INDEX,
  /* ABI 1.9: the unique index of a table's unique_key column (index_name "jobs_unique"), over the
   * unfinished rows where the database has partial indexes and the table has processed_at, else
   * over every row. Nothing for a table without the role. */
  TABQ_SCHEMA_UNIQUE_INDEX,
} tabq_schema_part;

/* tabq_schema_spec.flags. */
#define TABQ_SCHEMA_IF_NOT_EXISTS 1u /* CREATE ... IF NOT EXISTS: what exists is left as it is */
/* The part on its own, for a table that exists already (the index the statement check advises):
 * a dialect that writes its index inside CREATE TABLE writes it as a statement of its own. */
#define TABQ_SCHEMA_ALONE 2u

/* What one Dialect.schema call renders. The core fills it; members are only appended, a plugin
 * reading those its `size` covers. */
typedef struct tabq_schema_spec {
  uint32_t size;         /* sizeof(tabq_schema_spec) as the core was built */
  uint32_t flags;        /* TABQ_SCHEMA_* */
  tabq_schema_part part; /* the statement to render */
  /* The name of the index the part writes, without a schema: the claim-order index's for the
   * table and TABQ_SCHEMA_INDEX ("jobs_claim"), the finished rows' for
   * TABQ_SCHEMA_FINISHED_INDEX ("jobs_finished"). */
  const char *index_name;
} tabq_schema_spec;

typedef struct tabq_dialect_v1 {
  uint32_t size;
  uint32_t version; /* 1 */
  /* Refusals of the dialect's own (a form or level it does not open), as TABQ_DIALECT with a
   * message that names the table and what the dialect serves. Runs before any statement. */
  int (*check)(const tabq_build *b);
  /* Appends a quoted identifier ("schema.table" quotes each part). */
  int (*quote)(tabq_stmt *out, const char *name);
  tabq_build_fn insert;            /* every non-generated role column, then the data columns */
  tabq_build_fn ack;               /* delete the row, or set processed_at */
  tabq_build_fn discard;           /* drop: finished as ack is */
  tabq_build_fn retry;             /* back to the queue at once */
  tabq_build_fn retry_after;       /* hidden until TABQ_P_RETRY_AT */
  tabq_build_fn dead_letter_group; /* move the row to TABQ_P_DEST */
  /* Dead letter into b->dead_letter_table: a copy then a delete, run in one transaction. */
  int (*dead_letter_table)(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove);
  /* Begins a transaction at the table's isolation level or mode. */
  tabq_build_fn begin;
  /* Optional: a fetch by a list of ids (TABQ_P_IDS), returning the projection. */
  tabq_build_fn fetch;
  /* Optional: the guard a FIFO claim's transaction runs first (locks its group: GROUP). A row
   * back means the group is the claim's; no row (or a false first cell) means another
   * transaction holds it and the claim takes nothing. */
  tabq_build_fn fifo_guard;
  /* Optional, with the driver's listen/wait_notify: the table's channel name as plain text in
   * out->sql (not SQL); a name the database cannot take fails with TABQ_DECLARATION. */
  tabq_build_fn channel;
  /* Optional: announces a row written (CHANNEL, GROUP), run right after a publish's insert. */
  tabq_build_fn notify;

  /* ---- ABI 1.1 ---- */
  /* Appends the placeholder binding `id` in the database's style: the core renders the
   * service's own statements (tabq_events) with it. Without it custom events are refused. */
  int (*placeholder)(tabq_stmt *out, tabq_param id);
  /* Counts the attempt of one claimed row (ID), for a claim of the service's own in the row
   * lock and advisory forms: "UPDATE T SET attempt = attempt + 1 WHERE id = :ID". */
  tabq_build_fn count_attempt;

  /* ---- ABI 1.2 ---- */
  /* Optional: a query of the database's catalog, without parameters, for the default of column
   * `column` of b->table: one row whose first cell is the default's expression as text (NULL
   * when the column has none), or no row when there is no such column. With it the core checks
   * at open that a generated attempt column starts at 1. */
  int (*column_default)(const tabq_build *b, const char *column, tabq_stmt *out);

  /* ---- ABI 1.3 ---- */
  /* Optional: a batch's acks in one statement. Finishes, as `ack` does, every row whose id is in
   * IDS (a TABQ_T_INT_LIST) and, in the lease form, whose lease is TOKEN; returns one row per row
   * it finished, its id in the first cell. The core runs it inside the batch's transaction for
   * integer ids, once per token, and fails each row it did not return as `ack` fails. */
  tabq_build_fn ack_ids;

  /* ---- ABI 1.4 ---- */
  /* Optional: `insert` for b->rows rows in one statement, "INSERT INTO T (cols) VALUES (..),
   * (..), ..": row after row, each row's placeholders those of `insert`, so the statement binds
   * b->rows copies of insert's parameter list in order, copy k from message k. out->params holds
   * one copy (the list of row 0; tabq_sql_param_row numbers the others' placeholders, $n and ?n
   * counting on across the rows), which keeps a statement of many rows within
   * TABQ_STMT_MAX_PARAMS. The driver's prepare is then told b->rows times out->nparams, and must
   * take that many. tabq_publish_many writes its full chunks and the remainder's powers of two
   * with it. Writing no SQL declines that many rows (the core then takes half as many); without
   * the member, or with every size declined, each row is one `insert`. tabq_sqlb_insert_rows
   * builds it. */
  tabq_build_fn insert_rows;

  /* ---- ABI 1.6 ---- */
  /* Optional: the savepoint of a row lock delivery's transaction in transactional mode, set
   * after the claim (into `set`) and rolled back to for any outcome but an ack (`back`), so the
   * claim's counted attempt stays; no parameters. Without it the core runs the SQL standard's
   * "SAVEPOINT tabq_handler" and "ROLLBACK TO SAVEPOINT tabq_handler". */
  int (*savepoint)(const tabq_build *b, tabq_stmt *set, tabq_stmt *back);

  /* ---- ABI 1.7 ---- */
  /* Optional: statement spec->part of b->table's schema, without parameters (tabq/schema.h): the
   * CREATE TABLE with a column of a fitting type for every role and data column, the claim-order
   * index for exactly the table's roles, the table's settings, the dead letter table
   * b->dead_letter_table. Writing no SQL says the database has no such statement (settings
   * elsewhere than PostgreSQL; the dead letter table when b->dead_letter_table is NULL; an index
   * written inside the CREATE TABLE unless TABQ_SCHEMA_ALONE), and so does a part this plugin does
   * not know. A description the database cannot hold is refused (TABQ_DECLARATION or
   * TABQ_DIALECT, naming the table and the rule). tabq_sqlb_schema builds it from a style. */
  int (*schema)(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out);
  /* Optional: a query of the catalog, without parameters, for the indexes of b->table: one row per
   * column of each index, ordered by index and position, its cells the index's name (text), the
   * column's position in it from 1 (integer), the column's name (text; NULL for an expression)
   * and the index's predicate as text (NULL where the index holds every row). The primary key is
   * one of them (on SQLite the rowid of an INTEGER PRIMARY KEY too). No row: no index, or no such
   * table. With it the statement check tells whether the claims have an index to walk. */
  tabq_build_fn indexes;

  /* ---- ABI 1.9 ---- */
  /* Unique jobs (tabq_table.unique_key, docs/unique-jobs.md). A 1.9 dialect's `insert`, for a
   * table with a unique_key column, writes that column (UNIQUE_KEY, NULL when the message has no
   * key) and, when a row holds the key already, writes nothing without failing: the statement
   * changes 0 rows (PostgreSQL and SQLite: ON CONFLICT (key) DO NOTHING; MySQL: INSERT IGNORE). The
   * core then runs find_unique, and never asks insert_rows for such a table. A plugin that sets
   * find_unique returns a fifth cell from its `indexes` query, 1 when the index is unique (0
   * otherwise), which the core reads to check the key's unique index at open. find_unique:
   * UNIQUE_KEY -> the id of a row that holds the key, an unfinished one first (no row when none
   * does). Without it the core refuses a table with a unique_key column. */
  tabq_build_fn find_unique;
} tabq_dialect_v1;

/* ---- Capability flags, every one in this one place ------------------------------------------
 * The `flags` member of the RowLock, Lease and Advisory tables. Each bit has one meaning in every
 * table; a table sets only the bits listed for it, and the core ignores bits it does not know
 * (a newer minor may add some: they are only ever appended). */
/* RowLock, Lease: claims of one subscription must run one at a time (a database with one
 * writer, where concurrent claims would only queue). */
#define TABQ_CLAIM_SERIAL 1u
/* Advisory: the database has no session locks; the core would keep the keys in a registry of
 * its own. Reserved: this core refuses an advisory subscription on such a plugin (TABQ_DIALECT)
 * until that registry exists. */
#define TABQ_ADVISORY_PROCESS_KEYS 2u
/* Lease: expiries are whole seconds (the core rounds them up), so a column without fractions
 * holds the token exactly. */
#define TABQ_LEASE_WHOLE_SECONDS 4u
/* RowLock, Lease (ABI 1.4): `claim_one` counts the attempt (and writes the lease) itself, so
 * `stamp` follows only `claim`. A dialect whose claim of many rows selects then stamps, to hand
 * the rows over in claim order, keeps its claim of one row a single statement. */
#define TABQ_CLAIM_ONE_STAMPS 8u
/* RowLock, Lease, Advisory (ABI 1.8): given a build with project_due, this form's statements that
 * return the projection (claim, claim_one, take, lock_take) and Dialect.fetch end it with the
 * row's retry_after. Without the flag the core never asks, and measures no queue latency. */
#define TABQ_PROJECTS_DUE 16u

/* ---- RowLock: FOR UPDATE SKIP LOCKED, transaction held while the handler runs --------------- */
typedef struct tabq_rowlock_v1 {
  uint32_t size;
  uint32_t version; /* 1 */
  uint32_t flags;
  /* NOW GROUP LIMIT -> projection, locking the rows; counts the attempt unless `stamp` does. */
  tabq_build_fn claim;
  /* Optional: counts the attempt of one claimed row (ID), in the claim's transaction, for
   * databases whose UPDATE returns no rows. The claim then returns the attempt plus one. */
  tabq_build_fn stamp;

  /* ---- ABI 1.3 ---- */
  /* Optional: `claim` for a single row, in the shape the database runs cheapest (no LIMIT to
   * bind, no re-sort). Binds what claim binds, LIMIT aside; returns claim's projection of the one
   * row claim with LIMIT 1 would take, and `stamp` follows it where it follows claim
   * (TABQ_CLAIM_ONE_STAMPS aside). The core runs it for every claim of one row. A builder that
   * writes no SQL (out->sql NULL, TABQ_OK) declines the table (FIFO groups, say, where claim is one
   * row already); then, as without the member, the core runs claim with LIMIT 1. */
  tabq_build_fn claim_one;

  /* ---- ABI 1.4 ---- */
  /* Optional, with `stamp`: stamps at once every row whose id is in IDS (a TABQ_T_INT_LIST,
   * read as ack_ids reads it), as `stamp` stamps one row: "UPDATE T SET attempt = attempt + 1
   * WHERE id IN :IDS". The core runs it in the claim's transaction, instead of one `stamp` a
   * row, after a claim of more than one row whose ids are integers, and fails the claim (rolled
   * back, its rows back in the queue) unless it changed as many rows as the claim took. A builder
   * that writes no SQL declines the table: the core then stamps row by row. */
  tabq_build_fn stamp_ids;
} tabq_rowlock_v1;

/* ---- Lease: an expiry written into the row is the ownership token ------------------------ */
typedef struct tabq_lease_v1 {
  uint32_t size;
  uint32_t version; /* 1 */
  uint32_t flags;
  /* Leases due rows and returns the projection. Binds NOW, LEASE_UNTIL, GROUP, LIMIT. */
  tabq_build_fn claim;
  /* Optional: when set, `claim` only selects (locking, FOR UPDATE SKIP LOCKED, returning the
   * attempt plus one) and this statement stamps each row (ID, LEASE_UNTIL; counts the
   * attempt); the core runs the select and the stamps in one transaction and commits. */
  tabq_build_fn stamp;
  /* Moves a lease: LEASE_UNTIL, ID, TOKEN; changes one row while the token holds. */
  tabq_build_fn extend;
  /* Ends a lease without settling (a delivery dropped unsettled): ID, TOKEN. */
  tabq_build_fn release;

  /* ---- ABI 1.1 ---- */
  /* Leases one row a claim of the service's own returned (ID, NOW, LEASE_UNTIL): changes it
   * only while no lease holds it and it is unfinished, and counts the attempt. */
  tabq_build_fn lease_one;

  /* ---- ABI 1.3 ---- */
  /* Optional: `claim` for a single row, as RowLock.claim_one is (binds NOW, LEASE_UNTIL, GROUP;
   * `stamp` follows it where it follows claim, unless flags has TABQ_CLAIM_ONE_STAMPS; no SQL
   * declines the table). A claim that only selects binds LEASE_UNTIL only with that flag. */
  tabq_build_fn claim_one;

  /* ---- ABI 1.4 ---- */
  /* Optional, with `stamp`: `stamp` for every row whose id is in IDS (a TABQ_T_INT_LIST, read
   * as ack_ids reads it) in one statement: binds IDS and LEASE_UNTIL, writes each row's lease and
   * counts its attempt. Run as RowLock.stamp_ids is (after a claim of more than one row of
   * integer ids, in its transaction; the rows changed must be the rows claimed); no SQL
   * declines the table. */
  tabq_build_fn stamp_ids;
} tabq_lease_v1;

/* ---- Advisory: a lock on a key rendered from the row ------------------------------------- */
typedef struct tabq_advisory_v1 {
  uint32_t size;
  uint32_t version; /* 1 */
  uint32_t flags;
  tabq_build_fn candidates; /* NOW GROUP LIMIT -> id, key (text), in claim order */
  tabq_build_fn lock;       /* KEY -> one row, 1 when taken (NULL with PROCESS_KEYS) */
  tabq_build_fn unlock;     /* KEY -> one row, 1 when released (NULL with PROCESS_KEYS) */
  tabq_build_fn take;       /* ID NOW GROUP -> projection while claimable; counts the attempt */
  /* Optional: counts the attempt of a taken row (ID), for databases whose UPDATE returns no
   * rows; `take` then only selects and returns the attempt plus one. */
  tabq_build_fn stamp;
  /* ---- ABI 1.5 ---- */
  /* Optional, each on its own: one round trip where two ran. Not used with `stamp`, with keys
   * kept in the process, or where the service locks (or acks) with statements of its own.
   * lock_take: ID NOW GROUP KEY -> exactly one row: `take`'s projection, then one more cell, 1
   *   when the key is held now. It tries the key's lock first, then takes the row as `take`
   *   would only while the lock is held; with the row not taken the projection's cells are NULL,
   *   and a key it locked anyway stays held (the core releases it with `unlock`).
   * ack_unlock: what `ack` binds, and KEY -> exactly one row: the rows the ack changed, then 1
   *   when the key was released. The ack must take effect before the release (a claim that
   *   locks the key next must not find the row still due).
   * Either writing no SQL declines the table: the core then runs the two statements. */
  tabq_build_fn lock_take;
  tabq_build_fn ack_unlock;
} tabq_advisory_v1;

/* ---- ByName: subscriptions by route name ------------------------------------------------- *
 * A route (tabq_route) leads a name into a table; a subscription by name (tabq_subscribe_to)
 * opens on that table with the name as its queue, bound as TABQ_P_GROUP like any queue, so it
 * runs the statements of the table's form and nothing of its own. Serving this interface says
 * the dialect serves such subscriptions; without it they are refused (TABQ_DIALECT), while
 * publishing by name, a plain insert, works on every dialect. */
typedef struct tabq_byname_v1 {
  uint32_t size;
  uint32_t version; /* 1 */
  /* Called once per subscription by name, after the Dialect's check and before any statement is
   * built: refuses (TABQ_DIALECT, through host->fail, naming the table and the reason) a routed
   * table the database cannot serve by name, else TABQ_OK. The build has no dead letter (a
   * subscription by name takes none). */
  int (*check)(const tabq_build *b);
} tabq_byname_v1;

/* ---- The descriptor ----------------------------------------------------------------------- */
typedef struct tabq_plugin {
  uint32_t size;              /* sizeof(tabq_plugin) as the plugin was built */
  uint32_t abi;               /* TABQ_ABI_VERSION the plugin was built against */
  const char *name;           /* "sqlite" */
  const char *const *schemes; /* URL schemes served, NULL-terminated: {"sqlite", NULL} */
  /* A dialect that reuses another plugin's driver names that plugin here and leaves `driver`
   * NULL; the loader then lends it the other plugin's driver. */
  const char *driver_from;
  const tabq_driver_v1 *driver;
  const tabq_dialect_v1 *dialect;
  const tabq_rowlock_v1 *rowlock;   /* NULL: no row lock form */
  const tabq_lease_v1 *lease;       /* NULL: no lease form */
  const tabq_advisory_v1 *advisory; /* NULL: no advisory lock form */
  const tabq_byname_v1 *byname;     /* NULL: no subscriptions by name */
} tabq_plugin;

/* The descriptor and each table as ABI 1.0 has them: the loader refuses a smaller one; members
 * a later minor appends are read only where the plugin's size covers them (TABQ_HAS_MEMBER). */
#define TABQ_PLUGIN_SIZE_1_0 (offsetof(tabq_plugin, byname) + sizeof(const tabq_byname_v1 *))
/* The driver's optional members (listen, wait_notify, database) may be left out of its size. */
#define TABQ_DRIVER_SIZE_1_0 offsetof(tabq_driver_v1, listen)
#define TABQ_DIALECT_SIZE_1_0 offsetof(tabq_dialect_v1, placeholder)
#define TABQ_ROWLOCK_SIZE_1_0 offsetof(tabq_rowlock_v1, claim_one)
#define TABQ_LEASE_SIZE_1_0 offsetof(tabq_lease_v1, lease_one)
#define TABQ_ADVISORY_SIZE_1_0 offsetof(tabq_advisory_v1, lock_take)
#define TABQ_BYNAME_SIZE_1_0 sizeof(tabq_byname_v1)

typedef const tabq_plugin *(*tabq_plugin_entry_fn)(const tabq_host *host, uint32_t host_abi);

#ifdef __cplusplus
}
#endif

#endif
