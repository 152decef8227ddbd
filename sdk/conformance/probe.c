/* The probe: loads the plugin file itself and reads its descriptor with a host of the kit's own,
 * to learn which interfaces and ABI minor it declares and which driver the checks use. It finds
 * a plugin by scheme in the folders tabq's loader searches, in the same order. */
#define _GNU_SOURCE /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"

static _Thread_local char last_failure[512];

static int kit_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  (void)sqlstate, (void)native;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_failure, sizeof last_failure, fmt, ap);
  va_end(ap);
  return code;
}

static void kit_log(int level, const char *fmt, ...) {
  if (level > TABQ_LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("plugin: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static const tabq_host kit_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = malloc,
    .realloc = realloc,
    .free = free,
    .fail = kit_fail,
    .log = kit_log,
};

const char *probe_last_failure(void) {
  return last_failure;
}

void probe_clear_failure(void) {
  last_failure[0] = '\0';
}

/* Opens one file and hands its descriptor back, or says in `why` what is wrong with it. */
static const tabq_plugin *open_descriptor(const char *path, char *why, size_t cap) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    snprintf(why, cap, "cannot load plugin %s: %s", path, dlerror());
    return NULL;
  }
  void *sym = dlsym(handle, TABQ_PLUGIN_ENTRY_SYMBOL);
  if (!sym) {
    snprintf(why, cap, "cannot load plugin %s: it does not export %s", path,
             TABQ_PLUGIN_ENTRY_SYMBOL);
    dlclose(handle);
    return NULL;
  }
  tabq_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry);
  const tabq_plugin *p = entry(&kit_host, TABQ_ABI_VERSION);
  if (!p) {
    snprintf(why, cap, "cannot load plugin %s: its entry refused plugin ABI %u.%u", path,
             TABQ_ABI_MAJOR, TABQ_ABI_MINOR);
    dlclose(handle);
    return NULL;
  }
  if (TABQ_ABI_MAJOR_OF(p->abi) != TABQ_ABI_MAJOR || TABQ_ABI_MINOR_OF(p->abi) > TABQ_ABI_MINOR ||
      p->size < sizeof(tabq_plugin) || !p->name || !p->schemes || !p->schemes[0] || !p->dialect) {
    snprintf(why, cap,
             "cannot load plugin %s: descriptor of ABI %u.%u, size %u, which this kit (ABI "
             "%u.%u) cannot read",
             path, TABQ_ABI_MAJOR_OF(p->abi), TABQ_ABI_MINOR_OF(p->abi), p->size, TABQ_ABI_MAJOR,
             TABQ_ABI_MINOR);
    dlclose(handle);
    return NULL;
  }
  return p; /* the handle stays open for the run: the driver's code lives there */
}

static bool serves(const tabq_plugin *p, const char *scheme) {
  for (const char *const *s = p->schemes; *s; s++)
    if (!strcmp(*s, scheme))
      return true;
  return false;
}

/* The folders tabq's loader searches: TABQ_PLUGIN_PATH, beside libtabq, the installed one. */
static size_t search_dirs(char dirs[][PATH_MAX], size_t max) {
  size_t n = 0;
  const char *env = getenv("TABQ_PLUGIN_PATH");
  for (const char *p = env; p && *p && n < max;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    if (len && len < PATH_MAX)
      snprintf(dirs[n++], PATH_MAX, "%.*s", (int)len, p);
    p += len + (colon ? 1 : 0);
  }
  Dl_info self;
  if (n < max && dladdr((void *)&tabq_connect, &self) && self.dli_fname) {
    char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s", self.dli_fname);
    char *slash = strrchr(lib, '/');
    if (slash) {
      *slash = '\0';
      snprintf(dirs[n++], PATH_MAX, "%.*s/%s", PATH_MAX - 16, lib, TABQ_PLUGIN_SUBDIR);
    }
  }
  if (n < max)
    snprintf(dirs[n++], PATH_MAX, "%s", TABQ_INSTALL_PLUGIN_DIR);
  return n;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The plugin serving `scheme` (by_name false) or named `scheme` (by_name true) in one folder. */
static bool find_in_dir(const char *dir, const char *scheme, bool by_name, char *path, char *why,
                        size_t cap) {
  snprintf(path, PATH_MAX, "%.*s/%.64s.so", PATH_MAX - 80, dir, scheme);
  if (is_file(path))
    return true;
  DIR *d = opendir(dir);
  if (!d)
    return false;
  bool found = false;
  for (struct dirent *e; !found && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".so"))
      continue;
    snprintf(path, PATH_MAX, "%.*s/%.255s", PATH_MAX - 300, dir, e->d_name);
    char ignored[512];
    const tabq_plugin *p = open_descriptor(path, ignored, sizeof ignored);
    found = p && (by_name ? !strcmp(p->name, scheme) : serves(p, scheme));
  }
  closedir(d);
  (void)why, (void)cap;
  return found;
}

static bool find_plugin(const char *scheme, bool by_name, const char *first_dir, char *path,
                        char *why, size_t cap) {
  if (first_dir && find_in_dir(first_dir, scheme, by_name, path, why, cap))
    return true;
  char dirs[20][PATH_MAX];
  size_t n = search_dirs(dirs, 20);
  for (size_t i = 0; i < n; i++)
    if (find_in_dir(dirs[i], scheme, by_name, path, why, cap))
      return true;
  return false;
}

static int describe(const char *path, kit_plugin *out, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  if (!realpath(path, out->path)) {
    snprintf(why, cap, "cannot load plugin %s: no such file", path);
    return TABQ_PLUGIN;
  }
  const tabq_plugin *p = open_descriptor(out->path, why, cap);
  if (!p)
    return TABQ_PLUGIN;
  out->desc = p;
  out->driver = p->driver;
  snprintf(out->driver_path, sizeof out->driver_path, "%s", out->path);
  if (!p->driver) {
    if (!p->driver_from) {
      snprintf(why, cap, "cannot load plugin %s: it has no driver and names none to borrow",
               out->path);
      return TABQ_PLUGIN;
    }
    /* The lender is looked up next to the plugin first. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", out->path);
    *strrchr(dir, '/') = '\0';
    char lender[PATH_MAX];
    const tabq_plugin *lp = NULL;
    if (find_plugin(p->driver_from, true, dir, lender, why, cap))
      lp = open_descriptor(lender, why, cap);
    if (!lp || !lp->driver) {
      snprintf(why, cap,
               "cannot load plugin %s: the plugin '%s' it borrows its driver from is "
               "not installed",
               out->path, p->driver_from);
      return TABQ_PLUGIN;
    }
    out->driver = lp->driver;
    snprintf(out->driver_path, sizeof out->driver_path, "%s", lender);
  }
  if (p->rowlock)
    out->forms |= TABQ_FORM_ROWLOCK;
  if (p->lease)
    out->forms |= TABQ_FORM_LEASE;
  if (p->advisory)
    out->forms |= TABQ_FORM_ADVISORY;
  out->placeholder = TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, placeholder);
  out->fetch_by_ids = p->dialect->fetch != NULL;
  out->listen = out->driver->listen && out->driver->wait_notify && p->dialect->channel;
  return TABQ_OK;
}

int probe_file(const char *file, kit_plugin *out, char *why, size_t cap) {
  return describe(file, out, why, cap);
}

int probe_scheme(const char *scheme, kit_plugin *out, char *why, size_t cap) {
  char path[PATH_MAX];
  why[0] = '\0';
  if (!find_plugin(scheme, false, NULL, path, why, cap)) {
    snprintf(why, cap,
             "cannot load a plugin for scheme '%s': none installed serves it "
             "(TABQ_PLUGIN_PATH, beside libtabq, " TABQ_INSTALL_PLUGIN_DIR ")",
             scheme);
    return TABQ_PLUGIN;
  }
  return describe(path, out, why, cap);
}
