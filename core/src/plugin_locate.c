/* Which file serves a scheme, or bears a name, answered as the loader answers it and without
 * loading anything: for tools (tabq-conformance) that must probe the very file tabq would use. */
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "plugin_index.h"

static int locate(const char *key, bool by_name, char *path, size_t cap, tabq_error *err) {
  tabq__err_clear(err);
  if (!key || !path || !cap)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "a scheme or name and a buffer are needed");
  /* Heap, as the loader does: the folders' paths make it too large for a caller's stack. */
  tabq_plugin_index *ix = calloc(1, sizeof *ix);
  if (!ix)
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate the plugin list");
  int rc = tabq__plugin_index_read(ix, err);
  const tabq_plugin_entry *e = NULL;
  if (!rc)
    rc = by_name ? tabq__plugin_index_by_name(ix, key, &e, err)
                 : tabq__plugin_index_by_scheme(ix, key, &e, NULL, 0, err);
  if (!rc && !e) {
    char searched[512];
    tabq__plugin_index_folders(ix, searched, sizeof searched);
    rc = tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                       "no installed plugin is named '%s' (searched %s)", key, searched);
  }
  if (!rc) {
    char found[PATH_MAX + 256];
    tabq__plugin_entry_path(ix, e, found, sizeof found);
    if ((size_t)snprintf(path, cap, "%s", found) >= cap)
      rc = tabq__err_set(err, TABQ_INVALID, NULL, NULL, "the path %s is longer than the buffer",
                         found);
  }
  tabq__plugin_index_free(ix);
  free(ix);
  return rc;
}

int tabq_plugin_for_scheme(const char *scheme, char *path, size_t cap, tabq_error *err) {
  return locate(scheme, false, path, cap, err);
}

int tabq_plugin_named(const char *name, char *path, size_t cap, tabq_error *err) {
  return locate(name, true, path, cap, err);
}
