/* Finds, loads and checks dialect plugins. */
#ifndef TABQ_LOADER_H
#define TABQ_LOADER_H

#include <limits.h>
#include <tabq/sys/dialect.h>
#include <tabq/tabq.h>

/* A plugin's descriptor and tables as this core reads them: each copied at this core's full
 * size, the members a plugin of an earlier minor does not have zero (NULL, no flag), so the
 * engine reads one layout and never past the end of an older plugin's table. */
typedef struct tabq_ifaces {
  tabq_plugin desc; /* its pointers lead to the copies below (NULL where not served) */
  tabq_driver_v1 driver;
  tabq_dialect_v1 dialect;
  tabq_rowlock_v1 rowlock;
  tabq_lease_v1 lease;
  tabq_advisory_v1 advisory;
  tabq_byname_v1 byname;
} tabq_ifaces;

typedef struct tabq_loaded {
  void *handle;                 /* dlopen handle of the plugin */
  void *driver_handle;          /* dlopen handle of the plugin lending its driver, or NULL */
  const tabq_plugin *lender;    /* that plugin's descriptor as it returned it, or NULL */
  const tabq_plugin *returned;  /* the plugin's descriptor as it returned it */
  const tabq_plugin *plugin;    /* &own.desc: the engine reads this one */
  const tabq_driver_v1 *driver; /* &own.driver: the plugin's driver, or the lender's */
  tabq_ifaces own;
  char path[PATH_MAX];
  /* For the log at connect: the file chosen for the scheme, and the files of later folders that
   * also claim it, which it shadows ("" for none). Last: open_entry clears what comes before. */
  char chosen[PATH_MAX + 64];
  char shadowed[1024];
} tabq_loaded;

/* Loads the plugin serving a URL scheme, chosen from the manifests and file names in the
 * folders of TABQ_PLUGIN_PATH (colon separated) and tabq-<major>/ beside libtabq, the first in
 * that order (a later folder's claimant is shadowed; two of one folder are refused), and checks it
 * (the file, the handshake, every interface's members, agreement with its manifest). */
int tabq__loader_open(const char *scheme, tabq_loaded *out, tabq_error *err);
/* Loads and checks one plugin of an index, as tabq__loader_open would once it chose that file
 * (tabq_plugin_list_read, which asks every installed plugin what it serves). */
struct tabq_plugin_index;
struct tabq_plugin_entry;
int tabq__loader_open_entry(const struct tabq_plugin_index *ix, const struct tabq_plugin_entry *e,
                            tabq_loaded *out, tabq_error *err);
void tabq__loader_close(tabq_loaded *l);

#endif
