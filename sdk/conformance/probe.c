/* The probe: loads the plugin file itself and reads its descriptor with a host of the kit's own,
 * to learn which interfaces and ABI minor it declares and which driver the checks use. It asks
 * libtabq which file serves a scheme (tabq_plugin_for_scheme), so it probes the very file tabq
 * loads, and loads no other. */
#define _GNU_SOURCE /* dladdr */
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

const tabq_host *probe_host(void) {
  return &kit_host;
}

/* Opens one file and hands its descriptor back, or says in `why` what is wrong with it. */
static const tabq_plugin *open_descriptor(const char *path, char *why, size_t cap) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE); /* as tabq loads it */
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
      p->size < TABQ_PLUGIN_SIZE_1_0 || !p->name || !p->schemes || !p->schemes[0] || !p->dialect) {
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
  out->reals = TABQ_ABI_MINOR_OF(p->abi) >= 5;
  snprintf(out->driver_path, sizeof out->driver_path, "%s", out->path);
  if (!p->driver) {
    if (!p->driver_from) {
      snprintf(why, cap, "cannot load plugin %s: it has no driver and names none to borrow",
               out->path);
      return TABQ_PLUGIN;
    }
    /* The lender, found as tabq's loader finds it. */
    char lender[PATH_MAX];
    tabq_error err;
    const tabq_plugin *lp = NULL;
    if (tabq_plugin_named(p->driver_from, lender, sizeof lender, &err) == TABQ_OK)
      lp = open_descriptor(lender, why, cap);
    if (!lp || !lp->driver) {
      snprintf(why, cap, "cannot load plugin %s: the plugin '%s' it borrows its driver from: %s",
               out->path, p->driver_from, lp ? "has no driver" : err.message);
      return TABQ_PLUGIN;
    }
    out->driver = lp->driver;
    out->reals = TABQ_ABI_MINOR_OF(lp->abi) >= 5;
    snprintf(out->driver_scheme, sizeof out->driver_scheme, "%s", lp->schemes[0]);
    snprintf(out->driver_path, sizeof out->driver_path, "%s", lender);
  }
  if (p->rowlock)
    out->forms |= TABQ_FORM_ROWLOCK;
  if (p->lease)
    out->forms |= TABQ_FORM_LEASE;
  if (p->advisory)
    out->forms |= TABQ_FORM_ADVISORY;
  out->placeholder = TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, placeholder);
  out->schema = TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, schema);
  out->indexes = TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, indexes);
  out->fetch_by_ids = p->dialect->fetch != NULL;
  out->process_keys = p->advisory && (p->advisory->flags & TABQ_ADVISORY_PROCESS_KEYS);
  out->listen = TABQ_HAS_MEMBER(out->driver, tabq_driver_v1, listen) &&
                TABQ_HAS_MEMBER(out->driver, tabq_driver_v1, wait_notify) && p->dialect->channel;
  return TABQ_OK;
}

int probe_file(const char *file, kit_plugin *out, char *why, size_t cap) {
  return describe(file, out, why, cap);
}

int probe_scheme(const char *scheme, kit_plugin *out, char *why, size_t cap) {
  char path[PATH_MAX];
  why[0] = '\0';
  tabq_error err;
  if (tabq_plugin_for_scheme(scheme, path, sizeof path, &err)) {
    snprintf(why, cap, "cannot load a plugin for scheme '%s': %s", scheme, err.message);
    return TABQ_PLUGIN;
  }
  return describe(path, out, why, cap);
}
