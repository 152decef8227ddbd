/* tabq — the MySQL/MariaDB dialect's entry point and descriptor. */
#include <stddef.h>

#include <tabq/sys/dialect.h>

#include "mysql_plugin.h"

/* Written once at load, before any other member runs; read-only afterwards. */
static const tabq_host *g_host;

const tabq_host *tabq_my_host(void) {
  return g_host;
}

void tabq_my_set_host(const tabq_host *host) {
  g_host = host;
}

/* A subscription by name is an ordinary subscription whose queue is the route's name, bound
 * like any queue into the group column: every form and table this dialect opens, MySQL and MariaDB
 * serves by name as well, so there is nothing to refuse here (the dialect's own check runs too). */
static int byname_check(const tabq_build *b) {
  (void)b;
  return TABQ_OK;
}

static const tabq_byname_v1 byname = {
    .size = sizeof(tabq_byname_v1),
    .version = 1,
    .check = byname_check,
};

static const char *const schemes[] = {"mysql", "mariadb", NULL};

static const tabq_plugin descriptor = {
    .size = sizeof(tabq_plugin),
    .abi = TABQ_ABI_VERSION,
    .name = "mysql",
    .schemes = schemes,
    .driver_from = NULL,
    .driver = &tabq_my_driver,
    .dialect = &tabq_my_dialect,
    .rowlock = &tabq_my_rowlock,
    .lease = &tabq_my_lease,
    .advisory = &tabq_my_advisory,
    .byname = &byname,
};

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi) {
  if (!host || TABQ_ABI_MAJOR_OF(host_abi) != TABQ_ABI_MAJOR)
    return NULL;
  g_host = host;
  return &descriptor;
}
