/* tabq — the PostgreSQL dialect's internal declarations, shared by its files and its tests. */
#ifndef TABQ_POSTGRES_PLUGIN_H
#define TABQ_POSTGRES_PLUGIN_H

#include <tabq/sys/dialect.h>

/* The host services the core handed the entry function (set once, read everywhere). */
const tabq_host *tabq_pg_host(void);
void tabq_pg_set_host(const tabq_host *host);

extern const tabq_driver_v1 tabq_pg_driver;     /* driver.c */
extern const tabq_dialect_v1 tabq_pg_dialect;   /* statements.c */
extern const tabq_rowlock_v1 tabq_pg_rowlock;   /* statements.c */
extern const tabq_lease_v1 tabq_pg_lease;       /* statements.c */
extern const tabq_advisory_v1 tabq_pg_advisory; /* statements.c */

/* schema.c: the table's schema (Dialect.schema) and the catalog of its indexes
 * (Dialect.indexes), ABI 1.7; statements.c's style and string literal, which they share. */
int tabq_pg_schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out);
int tabq_pg_indexes(const tabq_build *b, tabq_stmt *out);
struct tabq_sql_style;
const struct tabq_sql_style *tabq_pg_style(void);
void tabq_pg_literal(tabq_stmt *st, const char *text, size_t n);

/* url.c: the URL. What libpq parses: the whole URI, or the conninfo after "postgres:" (NULL
 * for other schemes); and the URL as messages show it, every password replaced by "***". */
#define TABQ_PG_URL_SHOWN 512
const char *tabq_pg_conninfo_of(const char *url);
const char *tabq_pg_shown_url(const char *url, char buf[TABQ_PG_URL_SHOWN]);

/* settings.c: takes tabq's setting `key` out of `conninfo` (a URI when `uri`, else key=value
 * pairs) in place, its value into `value` (`cap` bytes, cut to fit; *len its whole length);
 * false when the URL has none. */
bool tabq_pg_take_setting(char *conninfo, bool uri, const char *key, char *value, size_t cap,
                          size_t *len);
/* settings.c: the URL's statement_timeout taken out of `conninfo`, in seconds (the default
 * without one; 0: no bound); TABQ_INVALID, reported to the host, for a value that is not. */
#define TABQ_PG_DEFAULT_STATEMENT_TIMEOUT_S 30
#define TABQ_PG_MAX_STATEMENT_TIMEOUT_S 86400
/* What the driver waits for a reply beyond the statement timeout: the server's own cancel
 * arrives first whenever the server still answers. */
#define TABQ_PG_REPLY_GRACE_S 2
int tabq_pg_take_statement_timeout(char *conninfo, bool uri, unsigned *seconds);

/* pooler.c: `conninfo` (a URI when `uri`, else key=value pairs) without its pooler setting into
 * `out` (`cap` bytes, at least strlen(conninfo) + 1), and whether it declares a transaction
 * pooler; TABQ_INVALID, reported to the host, for a value other than transaction or session. */
int tabq_pg_take_pooler(const char *conninfo, bool uri, char *out, size_t cap,
                        bool *per_transaction);

/* Version floors (server_version_num). */
#define TABQ_PG_SKIP_LOCKED_FLOOR 90500 /* FOR UPDATE SKIP LOCKED */
#define TABQ_PG_HASH_FLOOR 110000       /* hashtextextended: advisory and FIFO claims */

#endif
