/* tabq — the description of a queue table.
 *
 * A service describes each queue table once, as a constant struct with designated initialisers:
 *
 *   static const tabq_table thumbnail_jobs = {
 *       .size = sizeof(tabq_table),
 *       .name = "thumbnail_jobs",
 *       .id = {"id", .generated = true},
 *       .attempt = {"attempt", .generated = true},
 *       .locked_until = {"locked_until"},
 *       .payload = {"payload"},
 *   };
 *
 * Every role but `id` is optional. The description is read, never written, by tabq and by the
 * dialects; its rules are checked when a subscription or publisher opens (R-DESC-1).
 *
 * `size` comes first and must be sizeof(tabq_table) as the service was compiled: a newer tabq
 * reads an older program's smaller description safely (members it lacks read as empty), and a
 * description without its size is refused (TABQ_DECLARATION) rather than guessed at. Members are
 * only ever appended; tabq_col and tabq_events never change size within a major version. */
#ifndef TABQ_TABLE_H
#define TABQ_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tabq/value.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One column playing a role. An empty role has a NULL name. Its layout is fixed for 1.x (the
 * data columns are an array of them). */
typedef struct tabq_col {
  const char *name;
  bool generated; /* filled by the database, left out of the insert */
  /* Row mode data columns: the declared type (TABQ_T_INT, _REAL, _TEXT, _BYTES, _TIME or _JSON),
   * TABQ_T_NULL when any type goes. A cell that does not read as its declared type is settled
   * by the subscription's decode policy (docs/decoding.md); SQL NULL reads as any type.
   * The payload: TABQ_T_BYTES (TABQ_T_NULL says the same), _TEXT or _JSON, the type a publish
   * binds it as and the column tabq/schema.h renders. The id: TABQ_T_INT (TABQ_T_NULL says the
   * same) or _TEXT, the column the schema renders for an id that is not generated. */
  int type;
} tabq_col;

typedef enum tabq_clock {
  TABQ_CLOCK_HOST = 0, /* times computed on the host (the default; the only choice for a lease) */
  TABQ_CLOCK_DATABASE, /* "now" read from the database's clock */
} tabq_clock;

typedef enum tabq_isolation {
  TABQ_ISOLATION_DEFAULT = 0, /* plain BEGIN (READ COMMITTED on MySQL/MariaDB) */
  TABQ_ISOLATION_READ_UNCOMMITTED,
  TABQ_ISOLATION_READ_COMMITTED,
  TABQ_ISOLATION_REPEATABLE_READ,
  TABQ_ISOLATION_SERIALIZABLE,
} tabq_isolation;

typedef enum tabq_sqlite_mode {
  TABQ_SQLITE_MODE_DEFAULT = 0,
  TABQ_SQLITE_DEFERRED,
  TABQ_SQLITE_IMMEDIATE,
  TABQ_SQLITE_EXCLUSIVE,
} tabq_sqlite_mode;

/* Statements of the service's own, each replacing the one tabq builds for that event (SPEC 8).
 * Each is SQL text in the database's own dialect, written with tabq's named parameters, which
 * tabq renders into the database's placeholders when the subscription opens and prepares once:
 *
 *   :id        the row's id                  :ids       the claimed ids, as a list (PostgreSQL)
 *   :queue     the subscription's queue      :limit     the most rows a claim may return
 *   :now       the time of the call          :until     a lease's new expiry
 *   :held      the lease the delivery holds  :retry_at  when a delayed retry falls due
 *   :destination  the dead letter group or table     :key  an advisory lock key
 *
 * A `::` (a PostgreSQL cast) and text inside quotes or comments are left as they are. Which
 * names each event may use, and what it returns, is in docs/custom-events.md. Every member is
 * optional; a NULL one keeps tabq's statement. */
typedef struct tabq_events {
  const char *claim;       /* :queue :limit :now -> the ids of the rows to claim, in claim order
                              (advisory form: the id and the rendered key) */
  const char *fetch;       /* :id (or :ids) -> the projection of the claimed rows (dialect.h) */
  const char *ack;         /* :id */
  const char *retry;       /* :id */
  const char *retry_after; /* :id :retry_at */
  const char *discard;     /* :id */
  const char *dead_letter; /* :id :destination */
  const char *extend;      /* lease form: :id :held :until, changes one row while :held holds */
  const char *lock;        /* advisory form, with unlock: :key -> one row, 1 when taken */
  const char *unlock;      /* advisory form, with lock: :key -> one row, 1 when released */
  /* Room for events a later 1.x adds without moving the members after `events`: keep NULL. */
  const char *reserved_[6];
} tabq_events;

typedef struct tabq_table {
  uint32_t size;    /* sizeof(tabq_table): required */
  const char *name; /* "table" or "schema.table" */

  tabq_col id;            /* required: identifies the row in every settlement */
  tabq_col group;         /* queue name column; dead letters move rows to another group */
  tabq_col priority;      /* smaller claimed first */
  tabq_col partition_key; /* carried by the delivery */
  tabq_col retry_after;   /* rows are due when retry_after <= now */
  tabq_col attempt;       /* counted at every claim */
  tabq_col processed_at;  /* ack/drop set it instead of deleting the row */
  tabq_col locked_until;  /* the lease form: the expiry is the ownership token */
  tabq_col headers;       /* one JSON object of string values */
  tabq_col payload;       /* payload mode; without it the handler reads data columns */

  bool fifo;                 /* with group: at most one row of a group in work */
  const char *advisory_lock; /* key template, "jobs-{id}": selects the advisory lock form */
  tabq_clock clock;
  tabq_isolation isolation;
  tabq_sqlite_mode mode; /* SQLite only, instead of isolation */

  const tabq_col *data; /* row mode data columns, `ndata` of them */
  size_t ndata;

  tabq_events events; /* statements of the service's own */

  /* ---- 1.9 ---- */
  /* Unique jobs (docs/unique-jobs.md): the text column that holds a message's unique_key, under
   * a unique index of that one column (the whole table's, or on PostgreSQL and SQLite a partial
   * one over the unfinished rows, "WHERE processed_at IS NULL"). A publish whose key a row holds
   * already writes nothing and reports TABQ_DUPLICATE with that row's id. Needs plugin ABI 1.9. */
  tabq_col unique_key;
  /* A nullable time column tabq_cancel writes when it cancels a row (docs/cancel.md). With it,
   * a row in work can be cancelled: the mark tells its handler (tabq_delivery_cancelled) and turns
   * its settlement into a drop; without it, only rows not in work can be. */
  tabq_col cancelled_at;
  /* Appended. Deadlines (docs/deadlines.md): the name of one of the data columns whose integer
   * value is the row's handler budget in milliseconds (NULL, 0 or less: none); where the
   * subscription has deadline_ms too, the smaller wins. A data column, so a publish writes it
   * with the message's data and the claim brings it with the row. */
  const char *deadline_column;
} tabq_table;

/* The size of the first tabq_table a 1.x tabq reads: a smaller `size` is refused. */
#define TABQ_TABLE_SIZE_1_0 (offsetof(tabq_table, events) + sizeof(tabq_events))

/* The claim forms. A table takes its rows in exactly one. */
typedef enum tabq_form {
  TABQ_FORM_ROWLOCK = 1, /* no locked_until, no advisory key */
  TABQ_FORM_LEASE = 2,   /* locked_until */
  TABQ_FORM_ADVISORY = 4 /* advisory_lock key template */
} tabq_form;

/* The form a description selects (it does not check the rules). */
static inline tabq_form tabq_table_form(const tabq_table *t) {
  if (t->locked_until.name)
    return TABQ_FORM_LEASE;
  if (t->advisory_lock)
    return TABQ_FORM_ADVISORY;
  return TABQ_FORM_ROWLOCK;
}

#ifdef __cplusplus
}
#endif

#endif
