/* The URL's `pooler` setting, one of tabq's own (settings.c takes it out before libpq reads the
 * URL).
 *
 *   postgres://app@127.0.0.1:6432/jobs?pooler=transaction
 *   postgres:host=127.0.0.1 port=6432 dbname=jobs pooler=transaction
 *
 * pooler=transaction declares a transaction pooler between tabq and the server (PgBouncer's
 * pool_mode=transaction): each transaction may run on another server session, so the driver
 * prepares nothing that outlives a statement and the core refuses what needs a session.
 * pooler=session (or none) is a session of its own, PgBouncer's session pooling included.
 * Whether a pooler is there cannot be read off the connection (PgBouncer answers as the server
 * does), so the URL says it. */
#include <stdbool.h>
#include <string.h>

#include "postgres_plugin.h"

int tabq_pg_take_pooler(const char *url, bool uri, char *out, size_t cap, bool *per_transaction) {
  *per_transaction = false;
  if (strlen(url) >= cap)
    return tabq_pg_host()->fail(TABQ_INVALID, NULL, 0, "postgres URL too long (%zu bytes)",
                                strlen(url));
  strcpy(out, url);
  char value[48];
  size_t n;
  if (!tabq_pg_take_setting(out, uri, "pooler", value, sizeof value, &n))
    return TABQ_OK;
  if (!strcmp(value, "transaction"))
    *per_transaction = true;
  else if (strcmp(value, "session") != 0 || n >= sizeof value)
    return tabq_pg_host()->fail(TABQ_INVALID, NULL, 0,
                                "postgres URL: pooler=%.*s: the setting takes transaction (a "
                                "transaction pooler, as PgBouncer's pool_mode=transaction, stands "
                                "between tabq and the server) or session",
                                (int)(n > 40 ? 40 : n), value);
  return TABQ_OK;
}
