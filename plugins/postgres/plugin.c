/* tabq — the PostgreSQL dialect's entry point and descriptor. */
#include <stddef.h>

#include <tabq/sys/dialect.h>

#include "postgres_plugin.h"

/* Written once at load, before any other member runs; read-only afterwards. */
static const tabq_host *g_host;

const tabq_host *tabq_pg_host(void) {
  return g_host;
}

void tabq_pg_set_host(const tabq_host *host) {
  g_host = host;
}

/* A subscription by name is an ordinary subscription whose queue is the route's name, bound
 * like any queue into the group column: every form and table this dialect opens, PostgreSQL serves
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

static const char *const schemes[] = {"postgres", "postgresql", NULL};

static const tabq_plugin descriptor = {
    .size = sizeof(tabq_plugin),
    .abi = TABQ_ABI_VERSION,
    .name = "postgres",
    .schemes = schemes,
    .driver_from = NULL,
    .driver = &tabq_pg_driver,
    .dialect = &tabq_pg_dialect,
    .rowlock = &tabq_pg_rowlock,
    .lease = &tabq_pg_lease,
    .advisory = &tabq_pg_advisory,
    .byname = &byname,
};

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi) {
  if (!host || TABQ_ABI_MAJOR_OF(host_abi) != TABQ_ABI_MAJOR)
    return NULL;
  g_host = host;
  return &descriptor;
}
