/* Finds, loads and checks dialect plugins. */
#ifndef TABQ_LOADER_H
#define TABQ_LOADER_H

#include <limits.h>
#include <tabq/dialect.h>
#include <tabq/tabq.h>

typedef struct tabq_loaded {
  void *handle;              /* dlopen handle of the plugin */
  void *driver_handle;       /* dlopen handle of the plugin lending its driver, or NULL */
  const tabq_plugin *lender; /* that plugin's descriptor, or NULL */
  const tabq_plugin *plugin;
  const tabq_driver_v1 *driver;
  char path[PATH_MAX];
} tabq_loaded;

/* Loads the one plugin serving a URL scheme, chosen from the manifests and file names in the
 * folders of TABQ_PLUGIN_PATH (colon separated) and tabq-<major>/ beside libtabq, and checks it
 * (the file, the handshake, every interface's members, agreement with its manifest). */
int tabq_loader_open(const char *scheme, tabq_loaded *out, tabq_error *err);
void tabq_loader_close(tabq_loaded *l);

#endif
