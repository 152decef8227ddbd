/* What a plugin file must be before dlopen maps it, and what its entry must be before the core
 * calls it: no file in a plugin folder may crash the host. */
#ifndef TABQ_PLUGIN_FILE_H
#define TABQ_PLUGIN_FILE_H

#include <tabq/tabq.h>

/* Refuses (TABQ_PLUGIN, naming the file) anything but a complete ELF shared object of this
 * process's class, byte order and machine. dlopen maps a truncated file and the process faults
 * later, on the first touch of a page past its end. */
int tabq__plugin_file_check(const char *path, tabq_error *err);

/* Refuses an entry symbol `sym` (found with dlsym in `handle`) that is not a function of the
 * plugin itself: calling a data object crashes the host. */
int tabq__plugin_entry_check(const char *path, void *handle, void *sym, tabq_error *err);

#endif
