/* tabq — the SQLite dialect's entry point and descriptor. */
#include <stddef.h>

#include <tabq/dialect.h>

#include "sqlite_plugin.h"

/* Written once at load, before any other member runs; read-only afterwards. */
static const tabq_host *g_host;

const tabq_host *tabq_sqlite_host(void) {
  return g_host;
}

void tabq_sqlite_set_host(const tabq_host *host) {
  g_host = host;
}

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
    .advisory = NULL,
    .byname = NULL,
};

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi) {
  if (!host || TABQ_ABI_MAJOR_OF(host_abi) != TABQ_ABI_MAJOR)
    return NULL;
  g_host = host;
  return &descriptor;
}
