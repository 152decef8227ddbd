/* tabq — the SQLite dialect's entry point and descriptor. */
#include <stddef.h>

#include <tabq/sys/dialect.h>

#include "sqlite_plugin.h"

/* Written once at load, before any other member runs; read-only afterwards. */
static const tabq_host *g_host;

const tabq_host *tabq_sqlite_host(void) {
  return g_host;
}

void tabq_sqlite_set_host(const tabq_host *host) {
  g_host = host;
}

/* A subscription by name is an ordinary subscription whose queue is the route's name, bound
 * like any queue into the group column: every form and table this dialect opens, SQLite serves
 * by name as well, so there is nothing to refuse here (the dialect's own check runs too). */
static int byname_check(const tabq_build *b) {
  (void)b;
  return TABQ_OK;
}

static const tabq_byname_v1 byname = {
    .size = sizeof(tabq_byname_v1),
    .version = 1,
    .check = byname_check,
};

static const char *const schemes[] = {"sqlite", NULL};

static const tabq_plugin descriptor = {
    .size = sizeof(tabq_plugin),
    .abi = TABQ_ABI_VERSION,
    .name = "sqlite",
    .schemes = schemes,
    .driver_from = NULL,
    .driver = &tabq_sqlite_driver,
    .dialect = &tabq_sqlite_dialect,
    .rowlock = NULL, /* SQLite has no FOR UPDATE SKIP LOCKED */
    .lease = &tabq_sqlite_lease,
    .advisory = &tabq_sqlite_advisory, /* keys kept by the core (TABQ_ADVISORY_PROCESS_KEYS) */
    .byname = &byname,
};

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi) {
  if (!host || TABQ_ABI_MAJOR_OF(host_abi) != TABQ_ABI_MAJOR)
    return NULL;
  g_host = host;
  return &descriptor;
}
