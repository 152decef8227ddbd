/* The loader: chooses the plugin for a URL scheme from the manifests and file names of the
 * plugin folders (plugin_index.c), checks the chosen file before and after it loads it, and
 * refuses a plugin that is not what its manifest or its file name said. Every refusal names the
 * file and says what to do. */
#include "loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "host.h"
#include "plugin_file.h"
#include "plugin_index.h"

static int refuse(tabq_error *err, const char *fmt_path, const char *path, const char *detail) {
  return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, fmt_path, path, detail);
}

/* Each interface's required members, checked by name so the refusal can name the one missing. */
#define REQUIRE(vt, iface, member)                                                                 \
  do {                                                                                             \
    if (!(vt)->member)                                                                             \
      return refuse(err, "plugin %s: interface %s lacks the required member '" #member "'", path,  \
                    iface);                                                                        \
  } while (0)

/* A table's size must cover its 1.0 members and end on a whole member: after the header every
 * member is a pointer, so a size between two of them is no build's sizeof. */
static int check_header(const char *path, const char *iface, uint32_t size, size_t min_size,
                        uint32_t version, tabq_error *err) {
  if (size < min_size || version < 1)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: interface %s has size %u and version %u; ABI 1.0 needs "
                         "version 1 and size %zu or more",
                         path, iface, size, version, min_size);
  if (size % sizeof(void *))
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: interface %s has size %u, which ends inside a member (no "
                         "build of dialect.h gives it)",
                         path, iface, size);
  return TABQ_OK;
}

/* Copies a plugin's table into the core's full-size one: the bytes its size covers, the rest
 * zero. `size` was checked (check_header), so every member copied is a whole one. */
static void take_sized(void *dst, size_t dst_size, const void *src, uint32_t size) {
  memset(dst, 0, dst_size);
  memcpy(dst, src, size < dst_size ? size : dst_size);
  memcpy(dst, &(uint32_t){(uint32_t)dst_size}, sizeof(uint32_t)); /* the copy's own size */
}
#define TAKE(dst, src) take_sized(&(dst), sizeof(dst), (src), (src)->size)

static int check_driver(const char *path, const tabq_driver_v1 *d, tabq_error *err) {
  int rc = check_header(path, "Driver", d->size, TABQ_DRIVER_SIZE_1_0, d->version, err);
  if (rc)
    return rc;
  REQUIRE(d, "Driver", connect);
  REQUIRE(d, "Driver", close);
  REQUIRE(d, "Driver", exec);
  REQUIRE(d, "Driver", prepare);
  REQUIRE(d, "Driver", execute);
  REQUIRE(d, "Driver", next);
  REQUIRE(d, "Driver", cell);
  REQUIRE(d, "Driver", affected);
  REQUIRE(d, "Driver", reset);
  REQUIRE(d, "Driver", finalize);
  REQUIRE(d, "Driver", begin);
  REQUIRE(d, "Driver", commit);
  REQUIRE(d, "Driver", rollback);
  REQUIRE(d, "Driver", server_version);
  REQUIRE(d, "Driver", alive);
  return TABQ_OK;
}

/* Each interface the plugin serves, against ABI 1.0's size (what a later minor appended is
 * read only where the plugin's size covers it), then its required members, which 1.0 had. */
static int check_interfaces(const char *path, const tabq_plugin *p, tabq_error *err) {
  const tabq_dialect_v1 *dl = p->dialect;
  if (!dl)
    return refuse(err, "plugin %s: %s", path, "the descriptor has no Dialect interface");
  int rc = check_header(path, "Dialect", dl->size, TABQ_DIALECT_SIZE_1_0, dl->version, err);
  if (rc)
    return rc;
  REQUIRE(dl, "Dialect", check);
  REQUIRE(dl, "Dialect", quote);
  REQUIRE(dl, "Dialect", insert);
  REQUIRE(dl, "Dialect", ack);
  REQUIRE(dl, "Dialect", discard);
  REQUIRE(dl, "Dialect", retry);
  REQUIRE(dl, "Dialect", retry_after);
  REQUIRE(dl, "Dialect", dead_letter_group);
  REQUIRE(dl, "Dialect", dead_letter_table);
  REQUIRE(dl, "Dialect", begin);
  if (p->rowlock) {
    if ((rc = check_header(path, "RowLock", p->rowlock->size, TABQ_ROWLOCK_SIZE_1_0,
                           p->rowlock->version, err)))
      return rc;
    REQUIRE(p->rowlock, "RowLock", claim);
  }
  if (p->lease) {
    if ((rc = check_header(path, "Lease", p->lease->size, TABQ_LEASE_SIZE_1_0, p->lease->version,
                           err)))
      return rc;
    REQUIRE(p->lease, "Lease", claim);
    REQUIRE(p->lease, "Lease", extend);
    REQUIRE(p->lease, "Lease", release);
  }
  if (p->advisory) {
    if ((rc = check_header(path, "Advisory", p->advisory->size, TABQ_ADVISORY_SIZE_1_0,
                           p->advisory->version, err)))
      return rc;
    REQUIRE(p->advisory, "Advisory", candidates);
    REQUIRE(p->advisory, "Advisory", take);
    if (!(p->advisory->flags & TABQ_ADVISORY_PROCESS_KEYS)) {
      REQUIRE(p->advisory, "Advisory", lock);
      REQUIRE(p->advisory, "Advisory", unlock);
    }
  }
  if (p->byname) {
    if ((rc = check_header(path, "ByName", p->byname->size, TABQ_BYNAME_SIZE_1_0,
                           p->byname->version, err)))
      return rc;
    REQUIRE(p->byname, "ByName", check);
  }
  return TABQ_OK;
}

/* The checked descriptor and its tables, copied at this core's sizes into `own`. */
static void take_interfaces(const tabq_plugin *p, tabq_ifaces *own) {
  take_sized(&own->desc, sizeof own->desc, p, p->size);
  own->desc.driver = p->driver ? (TAKE(own->driver, p->driver), &own->driver) : NULL;
  own->desc.dialect = (TAKE(own->dialect, p->dialect), &own->dialect);
  own->desc.rowlock = p->rowlock ? (TAKE(own->rowlock, p->rowlock), &own->rowlock) : NULL;
  own->desc.lease = p->lease ? (TAKE(own->lease, p->lease), &own->lease) : NULL;
  own->desc.advisory = p->advisory ? (TAKE(own->advisory, p->advisory), &own->advisory) : NULL;
  own->desc.byname = p->byname ? (TAKE(own->byname, p->byname), &own->byname) : NULL;
}

/* Plugins stay loaded (RTLD_NODELETE, below), so each one's entry runs once per process: a later
 * broker reuses the descriptor it returned. Called again, the entry would rewrite the plugin's
 * globals (the host it keeps) while an earlier broker's threads read them. Keyed by the entry's
 * address, which stays the same while the file is mapped. */
typedef struct entered {
  const void *entry;
  const tabq_plugin *plugin;
  struct entered *next;
} entered;
static pthread_mutex_t entered_mu = PTHREAD_MUTEX_INITIALIZER;
static entered *entered_list; /* kept for the process's life, as the plugins are */

static const tabq_plugin *enter_once(const void *sym, tabq_plugin_entry_fn entry) {
  pthread_mutex_lock(&entered_mu);
  entered *e = entered_list;
  while (e && e->entry != sym)
    e = e->next;
  const tabq_plugin *p = e ? e->plugin : entry(tabq__host_services(), TABQ_ABI_VERSION);
  entered *added = !e && p ? malloc(sizeof *added) : NULL;
  if (added) { /* out of memory: the next broker calls the entry again, as before */
    *added = (entered){.entry = sym, .plugin = p, .next = entered_list};
    entered_list = added;
  }
  pthread_mutex_unlock(&entered_mu);
  return p;
}

/* Calls the entry, checks the descriptor and its tables, and copies them into out->own. */
static int handshake(const char *path, void *handle, tabq_loaded *out, tabq_error *err) {
  dlerror();
  void *sym = dlsym(handle, TABQ_PLUGIN_ENTRY_SYMBOL);
  if (!sym)
    return refuse(err, "plugin %s does not export the entry function '%s'", path,
                  TABQ_PLUGIN_ENTRY_SYMBOL);
  int rc = tabq__plugin_entry_check(path, handle, sym, err);
  if (rc)
    return rc;
  tabq_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry); /* dlsym returns data pointers; POSIX allows this copy */
  const tabq_plugin *p = enter_once(sym, entry);
  if (!p)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s refused this tabq's plugin ABI %u.%u (its entry returned NULL)",
                         path, TABQ_ABI_MAJOR, TABQ_ABI_MINOR);
  uint32_t major = TABQ_ABI_MAJOR_OF(p->abi), minor = TABQ_ABI_MINOR_OF(p->abi);
  if (major != TABQ_ABI_MAJOR || minor > TABQ_ABI_MINOR)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s was built for plugin ABI %u.%u; this tabq loads ABI %u.%u "
                         "(major %u, minor up to %u)",
                         path, major, minor, TABQ_ABI_MAJOR, TABQ_ABI_MINOR, TABQ_ABI_MAJOR,
                         TABQ_ABI_MINOR);
  /* The 1.0 descriptor's size, not this core's: members a later minor appends are read only
   * where the plugin's size covers them. */
  if (p->size < TABQ_PLUGIN_SIZE_1_0 || p->size % sizeof(void *))
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: descriptor size %u is not a descriptor's (ABI 1.0's is %zu)",
                         path, p->size, (size_t)TABQ_PLUGIN_SIZE_1_0);
  if (!p->name || !p->name[0] || !p->schemes || !p->schemes[0])
    return refuse(err, "plugin %s: %s", path, "the descriptor names no dialect or no URL scheme");
  if (!p->driver && !p->driver_from)
    return refuse(err, "plugin %s: %s", path,
                  "the descriptor has no Driver interface and names no plugin to borrow one from");
  if (p->driver && (rc = check_driver(path, p->driver, err)))
    return rc;
  rc = check_interfaces(path, p, err);
  if (rc)
    return rc;
  out->returned = p;
  take_interfaces(p, &out->own);
  out->plugin = &out->own.desc;
  return TABQ_OK;
}

/* Mode bits that let every user replace the file: then it could be anyone's code. */
static int refuse_writable(tabq_error *err, const char *what, const char *path, mode_t mode) {
  return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                       "%s %s is writable by every user (mode %04o), so it could be anyone's code; "
                       "remove that write permission (chmod o-w)",
                       what, path, (unsigned)(mode & 07777));
}

/* What can be refused before anything is loaded: the files' modes, the manifest's ABI and the
 * file's ELF header. */
static int check_unloaded(const tabq_plugin_entry *e, const char *path, const char *mpath,
                          tabq_error *err) {
  if (e->has_manifest && (e->manifest_mode & S_IWOTH))
    return refuse_writable(err, "plugin manifest", mpath, e->manifest_mode);
  if (!e->exists)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin manifest %s names the file %s, which is not there; install the "
                         "plugin or remove its manifest",
                         mpath, path);
  if (e->mode & S_IWOTH)
    return refuse_writable(err, "plugin", path, e->mode);
  uint32_t major = TABQ_ABI_MAJOR_OF(e->m.abi), minor = TABQ_ABI_MINOR_OF(e->m.abi);
  if (e->has_manifest && (major != TABQ_ABI_MAJOR || minor > TABQ_ABI_MINOR))
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: its manifest says plugin ABI %u.%u; this tabq loads ABI %u.%u "
                         "(major %u, minor up to %u)",
                         path, major, minor, TABQ_ABI_MAJOR, TABQ_ABI_MINOR, TABQ_ABI_MAJOR,
                         TABQ_ABI_MINOR);
  return tabq__plugin_file_check(path, err);
}

static size_t count_schemes(const tabq_plugin *p) {
  size_t n = 0;
  while (p->schemes[n])
    n++;
  return n;
}

static bool serves(const tabq_plugin *p, const char *scheme) {
  for (const char *const *s = p->schemes; *s; s++)
    if (!strcmp(*s, scheme))
      return true;
  return false;
}

static void append(char *buf, size_t cap, const char *text) {
  size_t len = strlen(buf);
  if (len < cap)
    snprintf(buf + len, cap - len, "%s", text);
}

/* "name 'x', schemes 'a b', ABI 1.1" of a manifest or a descriptor. */
static void describe(char *out, size_t cap, const char *name, const char *const *schemes, size_t n,
                     uint32_t abi) {
  snprintf(out, cap, "name '%s', schemes '", name);
  for (size_t i = 0; i < n; i++) {
    append(out, cap, i ? " " : "");
    append(out, cap, schemes[i]);
  }
  size_t len = strlen(out);
  snprintf(out + len, cap > len ? cap - len : 0, "', ABI %u.%u", TABQ_ABI_MAJOR_OF(abi),
           TABQ_ABI_MINOR_OF(abi));
}

/* A manifest must say what the descriptor says: a manifest that lies would send a scheme to a
 * plugin that does not serve it. */
static int check_manifest_agrees(const tabq_plugin_entry *e, const char *path, const char *mpath,
                                 const tabq_plugin *p, tabq_error *err) {
  bool agree = !strcmp(p->name, e->name) && p->abi == e->m.abi && count_schemes(p) == e->m.nschemes;
  for (unsigned i = 0; agree && i < e->m.nschemes; i++)
    agree = serves(p, e->m.schemes[i]);
  if (agree)
    return TABQ_OK;
  const char *said[TABQ_MANIFEST_MAX_SCHEMES];
  for (unsigned i = 0; i < e->m.nschemes; i++)
    said[i] = e->m.schemes[i];
  char manifest[160], plugin[160];
  describe(manifest, sizeof manifest, e->name, said, e->m.nschemes, e->m.abi);
  describe(plugin, sizeof plugin, p->name, p->schemes, count_schemes(p), p->abi);
  return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                       "plugin %s does not match its manifest %s: the manifest says %s; the "
                       "plugin says %s. Install the plugin and its manifest from one build",
                       path, mpath, manifest, plugin);
}

/* A plugin found by its file name: for a scheme it must serve it; lending its driver, it must
 * bear the name it was found by. */
static int check_name_agrees(const tabq_plugin_entry *e, const char *path, const char *scheme,
                             const tabq_plugin *p, tabq_error *err) {
  if (scheme && !serves(p, scheme)) {
    char plugin[160];
    describe(plugin, sizeof plugin, p->name, p->schemes, count_schemes(p), p->abi);
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s is found by its file name for the URL scheme '%s', but it says "
                         "%s; install its manifest beside it",
                         path, scheme, plugin);
  }
  if (!scheme && strcmp(p->name, e->name))
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s is found by its file name as plugin '%s', but it names itself "
                         "'%s'; install its manifest beside it",
                         path, e->name, p->name);
  return TABQ_OK;
}

static int open_entry(const tabq_plugin_index *ix, const tabq_plugin_entry *e, const char *scheme,
                      bool may_borrow, tabq_loaded *out, tabq_error *err);

/* A dialect over another plugin's driver: that plugin, found by name, lends it. The lender must
 * have a driver of its own, so borrowing never chains (nor loops). */
static int borrow_driver(const tabq_plugin_index *ix, tabq_loaded *out, tabq_error *err) {
  const tabq_plugin_entry *e;
  int rc = tabq__plugin_index_by_name(ix, out->plugin->driver_from, &e, err);
  if (rc)
    return rc;
  if (!e) {
    char searched[256];
    tabq__plugin_index_folders(ix, searched, sizeof searched);
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s borrows the driver of plugin '%s', which is not installed "
                         "(searched %s)",
                         out->path, out->plugin->driver_from, searched);
  }
  tabq_loaded lender;
  if ((rc = open_entry(ix, e, NULL, false, &lender, err)))
    return rc;
  out->driver_handle = lender.handle;
  out->own.driver = lender.own.driver;
  out->driver = &out->own.driver;
  out->lender = lender.returned;
  return TABQ_OK;
}

/* Loads the plugin `e` (for `scheme`, or by its name when that is NULL) and checks it. */
static int open_entry(const tabq_plugin_index *ix, const tabq_plugin_entry *e, const char *scheme,
                      bool may_borrow, tabq_loaded *out, tabq_error *err) {
  memset(out, 0, offsetof(tabq_loaded, chosen)); /* what the choice wrote stays */
  char mpath[PATH_MAX + TABQ_FILE_NAME_CAP];
  tabq__plugin_entry_path(ix, e, out->path, sizeof out->path);
  tabq__plugin_manifest_path(ix, e, mpath, sizeof mpath);
  int rc = check_unloaded(e, out->path, mpath, err);
  if (rc)
    return rc;
  /* NODELETE: a plugin stays mapped for the process's life once loaded. Its database client
   * library keeps process-wide state (libmariadb's, OpenSSL's) that cannot be torn down safely
   * while another broker or thread may still use it. */
  out->handle = dlopen(out->path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!out->handle)
    return refuse(err, "cannot load plugin %s: %s", out->path, dlerror());
  if (!(rc = handshake(out->path, out->handle, out, err)))
    rc = e->has_manifest ? check_manifest_agrees(e, out->path, mpath, out->plugin, err)
                         : check_name_agrees(e, out->path, scheme, out->plugin, err);
  if (!rc && !out->plugin->driver && !may_borrow)
    rc = tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                       "plugin %s has no driver of its own to lend (it borrows one from '%s')",
                       out->path, out->plugin->driver_from);
  out->driver = rc ? NULL : out->plugin->driver;
  if (!rc && !out->driver)
    rc = borrow_driver(ix, out, err);
  if (rc)
    tabq__loader_close(out);
  return rc;
}

int tabq__loader_open(const char *scheme, tabq_loaded *out, tabq_error *err) {
  memset(out, 0, sizeof *out);
  tabq_plugin_index *ix = calloc(1, sizeof *ix);
  if (!ix)
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate the plugin list");
  const tabq_plugin_entry *e;
  int rc = tabq__plugin_index_read(ix, err);
  if (!rc)
    rc = tabq__plugin_index_by_scheme(ix, scheme, &e, out->shadowed, sizeof out->shadowed, err);
  if (!rc)
    tabq__plugin_index_describe(ix, e, out->chosen, sizeof out->chosen);
  if (!rc)
    rc = open_entry(ix, e, scheme, true, out, err);
  tabq__plugin_index_free(ix);
  free(ix);
  return rc;
}

int tabq__loader_open_entry(const tabq_plugin_index *ix, const tabq_plugin_entry *e,
                            tabq_loaded *out, tabq_error *err) {
  memset(out, 0, sizeof *out);
  tabq__plugin_index_describe(ix, e, out->chosen, sizeof out->chosen);
  /* Found by its file name, it must serve the scheme that name gives (when it gives one). */
  const char *scheme = !e->has_manifest && e->m.nschemes ? e->m.schemes[0] : NULL;
  return open_entry(ix, e, scheme, true, out, err);
}

void tabq__loader_close(tabq_loaded *l) {
  if (l->handle)
    dlclose(l->handle);
  if (l->driver_handle)
    dlclose(l->driver_handle);
  l->handle = l->driver_handle = NULL;
}
