/* The plugins installed in the searched folders, read from their manifests and file names
 * without loading any of them. */
#ifndef TABQ_PLUGIN_INDEX_H
#define TABQ_PLUGIN_INDEX_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <tabq/tabq.h>

#include "manifest.h"

#define TABQ_MAX_PLUGIN_DIRS 16

typedef struct tabq_plugin_entry {
  unsigned dir;                  /* the folder: an index into tabq_plugin_index.dirs */
  char name[TABQ_FILE_NAME_CAP]; /* the plugin's name: its manifest's or its file's base name */
  bool has_manifest;             /* found through <name>.tabq-plugin, else by its file name */
  /* What the manifest says; for a plugin found by its file name, that file and the one scheme
   * its name gives (none when the name is no scheme), ABI unknown. */
  tabq_manifest m;
  bool exists; /* the file is there (a manifest may name a missing one) */
  dev_t dev;   /* the file's identity: one file reached twice is one plugin */
  ino_t ino;
  mode_t mode, manifest_mode;
} tabq_plugin_entry;

typedef struct tabq_plugin_index {
  char dirs[TABQ_MAX_PLUGIN_DIRS][PATH_MAX];
  bool missing[TABQ_MAX_PLUGIN_DIRS];
  unsigned ndirs;
  tabq_plugin_entry *entries;
  size_t n, cap;
} tabq_plugin_index;

/* Reads the folders into `ix` (which it first empties; free it with tabq__plugin_index_free
 * whatever the result): each TABQ_PLUGIN_PATH entry, then tabq-<major>/ beside libtabq. Refuses
 * (TABQ_PLUGIN) a relative entry, a folder any user may write to and a malformed manifest. */
int tabq__plugin_index_read(tabq_plugin_index *ix, tabq_error *err);
void tabq__plugin_index_free(tabq_plugin_index *ix);

/* The plugin claiming `scheme`, chosen as PATH chooses: the first in search order; the ones of
 * later folders it shadows are described in `shadowed` (cap bytes, "" for none; may be NULL).
 * TABQ_BACKEND listing the installed schemes and the folders when none does; TABQ_PLUGIN naming
 * both when two different files of one folder do. */
int tabq__plugin_index_by_scheme(const tabq_plugin_index *ix, const char *scheme,
                                 const tabq_plugin_entry **out, char *shadowed, size_t cap,
                                 tabq_error *err);
/* The plugin named `name`, chosen the same way; *out is NULL when none is. */
int tabq__plugin_index_by_name(const tabq_plugin_index *ix, const char *name,
                               const tabq_plugin_entry **out, tabq_error *err);
/* "/dir/x.so (manifest x.tabq-plugin)" or "/dir/x.so (by its file name)". */
void tabq__plugin_index_describe(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                                 size_t cap);

/* "<folder>/<file>" of the plugin's file, and of its manifest ("" without one). */
void tabq__plugin_entry_path(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                             size_t cap);
void tabq__plugin_manifest_path(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                                size_t cap);
/* The folders as a message lists them: "a, b (missing)". */
void tabq__plugin_index_folders(const tabq_plugin_index *ix, char *out, size_t cap);

#endif
