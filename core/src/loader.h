/* Finds, loads and checks dialect plugins. */
#ifndef TABQ_LOADER_H
#define TABQ_LOADER_H

#include <limits.h>
#include <tabq/dialect.h>
#include <tabq/tabq.h>

typedef struct tabq_loaded {
  void *handle;        /* dlopen handle of the plugin */
  void *driver_handle; /* dlopen handle of the plugin lending its driver, or NULL */
  const tabq_plugin *plugin;
  const tabq_driver_v1 *driver;
  char path[PATH_MAX];
} tabq_loaded;

/* Loads the plugin serving a URL scheme. Searches TABQ_PLUGIN_PATH (colon separated), then the
 * tabq-<major>/ folder beside libtabq (the installed folder, once installed). */
int tabq_loader_open(const char *scheme, tabq_loaded *out, tabq_error *err);
/* Loads one plugin file and checks it (the handshake and every interface's members). */
int tabq_loader_open_file(const char *path, tabq_loaded *out, tabq_error *err);
void tabq_loader_close(tabq_loaded *l);

#endif
