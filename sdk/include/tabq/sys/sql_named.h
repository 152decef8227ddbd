/* tabq — SQL text with named parameters (:id, :queue ...) rendered into a database's
 * placeholders: how the core turns a service's own statements (tabq_events) into statements
 * like those a dialect builds (link tabq_sqlbuild).
 *
 * A name is a colon followed by a lower-case letter, then letters, digits and underscores. Left
 * as they are: "::" (a PostgreSQL cast), ":=" and any colon not followed by a letter, and
 * everything inside '...' text, "..." and `...` identifiers, -- and slash-star comments. The
 * database's own placeholders (?, ?N, $N) outside those are refused: mixing them with named
 * parameters would bind the wrong values. */
#ifndef TABQ_SQL_NAMED_H
#define TABQ_SQL_NAMED_H

#include <stddef.h>
#include <stdint.h>

#include <tabq/sys/dialect.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The names, as bits of a mask. */
typedef enum tabq_named {
  TABQ_N_ID = 1u << 0,          /* :id          TABQ_P_ID */
  TABQ_N_IDS = 1u << 1,         /* :ids         TABQ_P_IDS */
  TABQ_N_QUEUE = 1u << 2,       /* :queue       TABQ_P_GROUP */
  TABQ_N_LIMIT = 1u << 3,       /* :limit       TABQ_P_LIMIT */
  TABQ_N_NOW = 1u << 4,         /* :now         TABQ_P_NOW */
  TABQ_N_UNTIL = 1u << 5,       /* :until       TABQ_P_LEASE_UNTIL */
  TABQ_N_HELD = 1u << 6,        /* :held        TABQ_P_TOKEN */
  TABQ_N_RETRY_AT = 1u << 7,    /* :retry_at    TABQ_P_RETRY_AT */
  TABQ_N_DESTINATION = 1u << 8, /* :destination TABQ_P_DEST */
  TABQ_N_KEY = 1u << 9,         /* :key         TABQ_P_KEY */
} tabq_named;

/* Appends the placeholder that binds `id`, in the database's style (the dialect's member). */
typedef int (*tabq_placeholder_fn)(tabq_stmt *out, tabq_param id);

/* Renders `sql` into `out`. Names outside `allowed` are refused; *used gets the names that
 * occur. On a refusal returns TABQ_DECLARATION and writes why into why[cap] ("':held' is not
 * a parameter of this statement; it takes :id, :queue, :now"); a failed append returns the
 * statement's status. */
int tabq_sql_render_named(tabq_stmt *out, const char *sql, tabq_placeholder_fn placeholder,
                          uint32_t allowed, uint32_t *used, char *why, size_t cap);

/* Writes the names of `mask` as ":id, :queue" into buf[cap]. */
void tabq_sql_named_list(uint32_t mask, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
