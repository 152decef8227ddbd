/* The plugin ABI as a plugin's binary carries it, for the ABI check (tools/abi_check.sh).
 *
 * A plugin exports one function, tabq_plugin_entry; its signature reaches every type of the
 * plugin ABI: the descriptor tabq_plugin, each vtable it points at, tabq_host, and through the
 * vtables' members tabq_build, tabq_stmt, tabq_table and tabq_value. This file is that entry
 * and nothing else, so the debug info abidw reads depends on tabq/dialect.h (and the headers it
 * includes) alone: a built-in dialect would serve as well today, but its own code and build
 * could change what the baseline records without any change to the ABI. It is never loaded. */
#include <tabq/sys/dialect.h>

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *host, uint32_t host_abi) {
  (void)host;
  (void)host_abi;
  return NULL;
}
