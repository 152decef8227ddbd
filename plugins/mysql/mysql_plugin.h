/* tabq — the MySQL/MariaDB dialect's internal declarations, shared by its files and tests. */
#ifndef TABQ_MYSQL_PLUGIN_H
#define TABQ_MYSQL_PLUGIN_H

#include <stdbool.h>
#include <tabq/sys/dialect.h>

/* The host services the core handed the entry function (set once, read everywhere). */
const tabq_host *tabq_my_host(void);
void tabq_my_set_host(const tabq_host *host);

extern const tabq_driver_v1 tabq_my_driver;     /* driver.c */
extern const tabq_dialect_v1 tabq_my_dialect;   /* statements.c */
extern const tabq_rowlock_v1 tabq_my_rowlock;   /* statements.c */
extern const tabq_lease_v1 tabq_my_lease;       /* statements.c */
extern const tabq_advisory_v1 tabq_my_advisory; /* statements.c */

/* schema.c: the table's schema (Dialect.schema) and the catalog of its indexes
 * (Dialect.indexes), ABI 1.7; statements.c's style and string literal, which they share. */
int tabq_my_schema(const tabq_build *b, const tabq_schema_spec *spec, tabq_stmt *out);
int tabq_my_indexes(const tabq_build *b, tabq_stmt *out);
struct tabq_sql_style;
const struct tabq_sql_style *tabq_my_style(void);
void tabq_my_literal(tabq_stmt *st, const char *text, size_t n);

/* The server's version as server_version reports it: number = major*10000 + minor*100 + patch
 * (MariaDB 10.11.19 is 101119, MySQL 8.0.36 is 80036); the text is the server's own, which
 * names MariaDB when it is one. */
#define TABQ_MY_MYSQL_FLOOR 80001    /* MySQL 8.0.1: SKIP LOCKED */
#define TABQ_MY_MARIADB_FLOOR 100600 /* MariaDB 10.6: SKIP LOCKED */

/* The floor check of statements.c, exposed for tests with given versions: TABQ_OK, or
 * TABQ_SERVER_TOO_OLD reported through the host naming the server, its version and the floor. */
int tabq_my_check_version(const char *table, uint32_t number, const char *text);
/* Whether a server's version text names MariaDB, in any case ("10.11.19-MariaDB-0+deb12u1"). */
bool tabq_my_names_mariadb(const char *text);

#endif
