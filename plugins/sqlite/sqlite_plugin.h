/* tabq — what the SQLite dialect's sources share. Internal: never installed.
 *
 * Everything here has hidden visibility in the plugin (the .so exports only tabq_plugin_entry);
 * the unit tests reach it through the static library tabq_sqlite_objs. */
#ifndef TABQ_SQLITE_PLUGIN_H
#define TABQ_SQLITE_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tabq/sys/dialect.h>

/* ---- plugin.c: the entry point and the host the core lent at load ---------------------------- */

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi);

const tabq_host *tabq_sqlite_host(void);
/* tabq_plugin_entry sets it; a unit test that calls the vtables directly sets it here. */
void tabq_sqlite_set_host(const tabq_host *host);

/* ---- The vtables (driver.c, statements.c) --------------------------------------------------- */

extern const tabq_driver_v1 tabq_sqlite_driver;
extern const tabq_dialect_v1 tabq_sqlite_dialect;
extern const tabq_lease_v1 tabq_sqlite_lease;
extern const tabq_advisory_v1 tabq_sqlite_advisory;

/* schema.c: the table's schema (Dialect.schema) and the catalog of its indexes
 * (Dialect.indexes), ABI 1.7; statements.c's style and string literal, which they share. */
int tabq_sqlite_schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out);
int tabq_sqlite_indexes(const tabq_build *b, tabq_stmt *out);
struct tabq_sql_style;
const struct tabq_sql_style *tabq_sqlite_style(void);
void tabq_sqlite_literal(tabq_stmt *st, const char *text, size_t n);

/* ---- driver.c: the URL ---------------------------------------------------------------------- */

typedef struct tabq_sqlite_url {
  char *path; /* host allocated */
  int sync;   /* PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA */
  int busy_ms;
} tabq_sqlite_url;

/* Parses sqlite:PATH[?synchronous=..&busy_timeout=MS] (driver.c's comment); TABQ_OK with
 * o->path to free with the host's free, or a refusal through host->fail naming the URL. */
int tabq_sqlite_parse_url(const char *url, tabq_sqlite_url *o);

/* ---- sqltime.c: times as fixed-width UTC text ----------------------------------------------- */

/* "YYYY-MM-DD HH:MM:SS.ffffff": always this width, so text order is time order. */
#define TABQ_SQLITE_TIME_LEN 26

/* Writes the text and a NUL into `out`; false when the year falls outside 0000..9999. */
bool tabq_sqlite_time_format(int64_t time_us, char out[TABQ_SQLITE_TIME_LEN + 1]);
/* Reads the text back ("T" for the space, and 0 to 6 fraction digits, are accepted too). */
bool tabq_sqlite_time_parse(const char *text, size_t len, int64_t *time_us);

/* ---- writer_lock.c: one writer per database file in this process ---------------------------- */

typedef struct tabq_sqlite_writer tabq_sqlite_writer;

/* Takes a reference on the writer lock of the file at `canonical_path`, creating it on first
 * use. TABQ_OK, or TABQ_NOMEM after host->fail. */
int tabq_sqlite_writer_open(const char *canonical_path, tabq_sqlite_writer **out);
/* Drops the reference; the last one frees the lock. */
void tabq_sqlite_writer_close(tabq_sqlite_writer *w);
/* Waits up to timeout_ms for the lock; false when it stayed taken. The lock belongs to no
 * thread: any thread may unlock it (a transaction may begin and end on different threads). */
bool tabq_sqlite_writer_lock(tabq_sqlite_writer *w, int timeout_ms);
void tabq_sqlite_writer_unlock(tabq_sqlite_writer *w);
const char *tabq_sqlite_writer_path(const tabq_sqlite_writer *w);

#endif
