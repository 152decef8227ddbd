/* The loader: a plugin is looked up first as <scheme>.so in each folder, then by reading every
 * plugin's descriptor there. Every refusal says what was wrong and with which file. */
#define _GNU_SOURCE /* dladdr */
#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "host.h"
#include "plugin_file.h"

#define MAX_DIRS 16

typedef struct search_dirs {
  char dirs[MAX_DIRS][PATH_MAX];
  size_t n;
} search_dirs;

static void add_dir(search_dirs *s, const char *dir, size_t len) {
  if (!len || s->n == MAX_DIRS || len >= PATH_MAX)
    return;
  for (size_t i = 0; i < s->n; i++)
    if (strlen(s->dirs[i]) == len && !strncmp(s->dirs[i], dir, len))
      return;
  memcpy(s->dirs[s->n], dir, len);
  s->dirs[s->n++][len] = '\0';
}

static void find_dirs(search_dirs *s) {
  s->n = 0;
  const char *env = getenv("TABQ_PLUGIN_PATH");
  for (const char *p = env; p && *p;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    add_dir(s, p, len);
    p += len + (colon ? 1 : 0);
  }
  /* Beside libtabq: the build tree and an installed tree share this layout. */
  Dl_info self;
  if (dladdr((void *)&tabq_loader_open, &self) && self.dli_fname) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", self.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash) {
      *slash = '\0';
      char beside[PATH_MAX + 32];
      int n = snprintf(beside, sizeof beside, "%s/%s", dir, TABQ_PLUGIN_SUBDIR);
      if (n > 0)
        add_dir(s, beside, (size_t)n);
    }
  }
}

static int refuse(tabq_error *err, const char *fmt_path, const char *path, const char *detail) {
  return tabq_err_set(err, TABQ_PLUGIN, NULL, NULL, fmt_path, path, detail);
}

/* Each interface's required members, checked by name so the refusal can name the one missing. */
#define REQUIRE(vt, iface, member)                                                                 \
  do {                                                                                             \
    if (!(vt)->member)                                                                             \
      return refuse(err, "plugin %s: interface %s lacks the required member '" #member "'", path,  \
                    iface);                                                                        \
  } while (0)

static int check_header(const char *path, const char *iface, uint32_t size, uint32_t min_size,
                        uint32_t version, tabq_error *err) {
  if (size < min_size || version < 1)
    return tabq_err_set(err, TABQ_PLUGIN, NULL, NULL,
                        "plugin %s: interface %s has size %u and version %u; version 1 needs "
                        "size %u or more",
                        path, iface, size, version, min_size);
  return TABQ_OK;
}

static int check_driver(const char *path, const tabq_driver_v1 *d, tabq_error *err) {
  int rc = check_header(path, "Driver", d->size, (uint32_t)offsetof(tabq_driver_v1, listen),
                        d->version, err);
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

static int check_interfaces(const char *path, const tabq_plugin *p, tabq_error *err) {
  const tabq_dialect_v1 *dl = p->dialect;
  if (!dl)
    return refuse(err, "plugin %s: %s", path, "the descriptor has no Dialect interface");
  int rc =
      /* 1.0's table ends at notify; what 1.1 added is read only where the size covers it. */
      check_header(path, "Dialect", dl->size, (uint32_t)offsetof(tabq_dialect_v1, placeholder),
                   dl->version, err);
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
    if ((rc = check_header(path, "RowLock", p->rowlock->size, sizeof(tabq_rowlock_v1),
                           p->rowlock->version, err)))
      return rc;
    REQUIRE(p->rowlock, "RowLock", claim);
  }
  if (p->lease) {
    if ((rc = check_header(path, "Lease", p->lease->size,
                           (uint32_t)offsetof(tabq_lease_v1, lease_one), p->lease->version, err)))
      return rc;
    REQUIRE(p->lease, "Lease", claim);
    REQUIRE(p->lease, "Lease", extend);
    REQUIRE(p->lease, "Lease", release);
  }
  if (p->advisory) {
    if ((rc = check_header(path, "Advisory", p->advisory->size, sizeof(tabq_advisory_v1),
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
    if ((rc = check_header(path, "ByName", p->byname->size, sizeof(tabq_byname_v1),
                           p->byname->version, err)))
      return rc;
    REQUIRE(p->byname, "ByName", check);
  }
  return TABQ_OK;
}

static int handshake(const char *path, void *handle, const tabq_plugin **out, tabq_error *err) {
  dlerror();
  void *sym = dlsym(handle, TABQ_PLUGIN_ENTRY_SYMBOL);
  if (!sym)
    return refuse(err, "plugin %s does not export the entry function '%s'", path,
                  TABQ_PLUGIN_ENTRY_SYMBOL);
  int rc = tabq_plugin_entry_check(path, handle, sym, err);
  if (rc)
    return rc;
  tabq_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry); /* dlsym returns data pointers; POSIX allows this copy */
  const tabq_plugin *p = entry(tabq_host_services(), TABQ_ABI_VERSION);
  if (!p)
    return tabq_err_set(err, TABQ_PLUGIN, NULL, NULL,
                        "plugin %s refused this tabq's plugin ABI %u.%u (its entry returned NULL)",
                        path, TABQ_ABI_MAJOR, TABQ_ABI_MINOR);
  uint32_t major = TABQ_ABI_MAJOR_OF(p->abi), minor = TABQ_ABI_MINOR_OF(p->abi);
  if (major != TABQ_ABI_MAJOR || minor > TABQ_ABI_MINOR)
    return tabq_err_set(err, TABQ_PLUGIN, NULL, NULL,
                        "plugin %s was built for plugin ABI %u.%u; this tabq loads ABI %u.%u "
                        "(major %u, minor up to %u)",
                        path, major, minor, TABQ_ABI_MAJOR, TABQ_ABI_MINOR, TABQ_ABI_MAJOR,
                        TABQ_ABI_MINOR);
  if (p->size < sizeof(tabq_plugin))
    return tabq_err_set(err, TABQ_PLUGIN, NULL, NULL,
                        "plugin %s: descriptor size %u is smaller than ABI %u.%u's %zu", path,
                        p->size, major, minor, sizeof(tabq_plugin));
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
  *out = p;
  return TABQ_OK;
}

static int open_named(const search_dirs *s, const char *name, tabq_loaded *out, tabq_error *err,
                      bool *found);

int tabq_loader_open_file(const char *path, tabq_loaded *out, tabq_error *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", path);
  int rc = tabq_plugin_file_check(path, err);
  if (rc)
    return rc;
  out->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!out->handle)
    return refuse(err, "cannot load plugin %s: %s", path, dlerror());
  rc = handshake(path, out->handle, &out->plugin, err);
  if (rc) {
    dlclose(out->handle);
    out->handle = NULL;
    return rc;
  }
  out->driver = out->plugin->driver;
  if (!out->driver) {
    /* A dialect over another plugin's driver: load that plugin by name and borrow its driver. */
    search_dirs s;
    find_dirs(&s);
    tabq_loaded lender;
    bool found = false;
    rc = open_named(&s, out->plugin->driver_from, &lender, err, &found);
    if (!rc && !found)
      rc = tabq_err_set(err, TABQ_PLUGIN, NULL, NULL,
                        "plugin %s borrows the driver of plugin '%s', which is not installed", path,
                        out->plugin->driver_from);
    if (rc) {
      dlclose(out->handle);
      out->handle = NULL;
      return rc;
    }
    out->driver_handle = lender.handle;
    out->driver = lender.driver;
  }
  return TABQ_OK;
}

void tabq_loader_close(tabq_loaded *l) {
  if (l->handle)
    dlclose(l->handle);
  if (l->driver_handle)
    dlclose(l->driver_handle);
  l->handle = l->driver_handle = NULL;
}

static bool serves(const tabq_plugin *p, const char *scheme) {
  for (const char *const *s = p->schemes; *s; s++)
    if (!strcmp(*s, scheme))
      return true;
  return false;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* <dir>/<name>.so in each folder: the fast path, and the file a scheme's failure is about. */
static int open_named(const search_dirs *s, const char *name, tabq_loaded *out, tabq_error *err,
                      bool *found) {
  *found = false;
  for (size_t i = 0; i < s->n; i++) {
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s.so", s->dirs[i], name);
    if (!is_file(path))
      continue;
    int rc = tabq_loader_open_file(path, out, err);
    if (rc)
      return rc;
    *found = true;
    return TABQ_OK;
  }
  return TABQ_OK;
}

static void append(char *buf, size_t cap, const char *text) {
  size_t len = strlen(buf);
  if (len < cap)
    snprintf(buf + len, cap - len, "%s", text);
}

int tabq_loader_open(const char *scheme, tabq_loaded *out, tabq_error *err) {
  search_dirs s;
  find_dirs(&s);
  bool found = false;
  int rc = open_named(&s, scheme, out, err, &found);
  if (rc)
    return rc;
  if (found) {
    if (serves(out->plugin, scheme))
      return TABQ_OK;
    tabq_loader_close(out);
  }
  /* Read every plugin's descriptor for the scheme, and note the schemes seen for the error. */
  char installed[512] = "", searched[1024] = "";
  for (size_t i = 0; i < s.n; i++) {
    append(searched, sizeof searched, i ? ", " : "");
    append(searched, sizeof searched, s.dirs[i]);
    DIR *dir = opendir(s.dirs[i]);
    if (!dir)
      continue;
    struct dirent *e;
    while ((e = readdir(dir))) {
      size_t len = strlen(e->d_name);
      if (len < 4 || strcmp(e->d_name + len - 3, ".so"))
        continue;
      char path[PATH_MAX * 2];
      snprintf(path, sizeof path, "%s/%s", s.dirs[i], e->d_name);
      tabq_error ignored;
      if (tabq_loader_open_file(path, out, &ignored))
        continue; /* a broken plugin serves no scheme; it fails loudly when asked for by name */
      if (serves(out->plugin, scheme)) {
        closedir(dir);
        return TABQ_OK;
      }
      for (const char *const *sc = out->plugin->schemes; *sc; sc++) {
        if (strstr(installed, *sc))
          continue;
        append(installed, sizeof installed, installed[0] ? ", " : "");
        append(installed, sizeof installed, *sc);
      }
      tabq_loader_close(out);
    }
    closedir(dir);
  }
  return tabq_err_set(err, TABQ_BACKEND, NULL, NULL,
                      "no installed dialect serves the URL scheme '%s'; installed schemes: %s "
                      "(searched %s)",
                      scheme, installed[0] ? installed : "none", searched);
}
