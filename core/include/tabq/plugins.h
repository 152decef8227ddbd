/* tabq — the installed dialect plugins, listed as tabq_connect finds them (docs/plugins.md):
 * every plugin file of every searched folder, the URL schemes each claims, which file wins each
 * scheme and which files it shadows, and, when asked to load them, what each one serves. The
 * `tabq plugins` command prints this list.
 *
 *   tabq_plugin_list *l;
 *   if (tabq_plugin_list_read(TABQ_PLUGINS_LOAD, &l, &err) == TABQ_OK) {
 *     for (size_t i = 0; i < tabq_plugin_list_count(l); i++)
 *       printf("%s\n", tabq_plugin_list_get(l, i)->path);
 *     tabq_plugin_list_free(l);
 *   }
 *
 * Every string and struct an accessor returns belongs to the list and lives until
 * tabq_plugin_list_free(). The structs are the library's: a later 1.x appends members to them,
 * never moves one. */
#ifndef TABQ_PLUGINS_H
#define TABQ_PLUGINS_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tabq_plugin_list tabq_plugin_list;

/* Flags of tabq_plugin_list_read. Without TABQ_PLUGINS_LOAD nothing is loaded: the list says
 * what the manifests and file names claim. With it every plugin file is loaded and checked as
 * tabq_connect would check it (so its code runs in this process), and its descriptor says what
 * it serves. */
#define TABQ_PLUGINS_LOAD 1u

/* One plugin file, found through its manifest or by its file name. */
typedef struct tabq_plugin_info {
  const char *name;           /* the plugin's name: its manifest's, or its file's base name */
  const char *path;           /* the shared object */
  const char *manifest;       /* its manifest, NULL for a file found by its name */
  const char *folder;         /* the folder it was found in */
  unsigned folder_index;      /* that folder's place in the search order, from 0 */
  const char *const *schemes; /* what it claims, NULL-terminated (by its name: one or none) */
  uint32_t manifest_abi;      /* the manifest's ABI as TABQ_ABI_VERSION encodes it; 0 without */
  bool exists;                /* false: a manifest names a file that is not there */
  /* With TABQ_PLUGINS_LOAD; zero or NULL without. */
  bool loaded;             /* it loaded and passed every check */
  int load_code;           /* else the loader's refusal (TABQ_PLUGIN, ...) */
  const char *load_error;  /* and its message */
  uint32_t abi;            /* the descriptor's ABI */
  const char *driver_from; /* the plugin whose driver it borrows, NULL: its own */
  unsigned forms;          /* TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE | TABQ_FORM_ADVISORY */
  const char *const
      *interfaces;    /* "Driver" (or the lender's), "Dialect", "RowLock", ...: NULL-ended */
  bool notifications; /* its driver listens (LISTEN/NOTIFY wake-ups) */
} tabq_plugin_info;

/* One URL scheme some file claims, and what tabq_connect does with it. */
typedef struct tabq_scheme_info {
  const char *scheme;
  /* The plugin (an index of tabq_plugin_list_get) that tabq_connect loads for the scheme: the
   * first claimant in search order; -1 when the scheme is refused. */
  long chosen;
  const char *refused; /* why: two files of one folder claim it (TABQ_PLUGIN's message) */
  /* The plugins of later folders that claim it too and are never loaded for it. */
  const size_t *shadowed;
  size_t nshadowed;
} tabq_scheme_info;

/* Reads the folders tabq_connect searches (TABQ_PLUGIN_PATH, then tabq-1/ beside libtabq) into
 * a list. Refuses as tabq_connect refuses the folders themselves: TABQ_PLUGIN for a relative
 * TABQ_PLUGIN_PATH entry, a folder any user may write to, or a malformed manifest (its line and
 * rule), with nothing returned. A plugin the loader refuses is listed with its refusal. */
TABQ_API int tabq_plugin_list_read(unsigned flags, tabq_plugin_list **out, tabq_error *err);
TABQ_API void tabq_plugin_list_free(tabq_plugin_list *l);

/* The plugin files, in search order (folder by folder; in a folder, manifests' files first). */
TABQ_API size_t tabq_plugin_list_count(const tabq_plugin_list *l);
TABQ_API const tabq_plugin_info *tabq_plugin_list_get(const tabq_plugin_list *l, size_t i);
/* The schemes claimed, sorted. */
TABQ_API size_t tabq_plugin_list_scheme_count(const tabq_plugin_list *l);
TABQ_API const tabq_scheme_info *tabq_plugin_list_scheme(const tabq_plugin_list *l, size_t i);
/* The folders searched, in order; *missing tells one that does not exist. */
TABQ_API size_t tabq_plugin_list_folder_count(const tabq_plugin_list *l);
TABQ_API const char *tabq_plugin_list_folder(const tabq_plugin_list *l, size_t i, bool *missing);

#ifdef __cplusplus
}
#endif

#endif
