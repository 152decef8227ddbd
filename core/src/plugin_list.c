/* tabq_plugin_list: every installed plugin as the loader sees it (plugin_index.c), which file
 * wins each scheme and which it shadows, and, on request, each one loaded and checked
 * (loader.c) to read what it serves. For the `tabq plugins` command and for tools. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/plugins.h>

#include "error.h"
#include "loader.h"
#include "plugin_index.h"

struct tabq_plugin_list {
  tabq_plugin_info *plugins;
  size_t n;
  tabq_scheme_info *schemes;
  size_t nschemes;
  const char **folders;
  bool *missing;
  size_t nfolders;
  void **owned; /* every allocation the accessors' strings and arrays point into */
  size_t nowned, cap;
};

static void *own(tabq_plugin_list *l, size_t size) {
  if (l->nowned == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    void **grown = realloc(l->owned, cap * sizeof *grown);
    if (!grown)
      return NULL;
    l->owned = grown;
    l->cap = cap;
  }
  void *p = calloc(1, size ? size : 1);
  if (p)
    l->owned[l->nowned++] = p;
  return p;
}

static const char *own_str(tabq_plugin_list *l, const char *s, bool *failed) {
  if (!s)
    return NULL;
  char *p = own(l, strlen(s) + 1);
  if (!p) {
    *failed = true;
    return NULL;
  }
  memcpy(p, s, strlen(s) + 1);
  return p;
}

void tabq_plugin_list_free(tabq_plugin_list *l) {
  if (!l)
    return;
  for (size_t i = 0; i < l->nowned; i++)
    free(l->owned[i]);
  free(l->owned);
  free(l);
}

/* One file reached twice (a symlinked folder or file) is one plugin, as the loader counts. */
static bool same_file(const tabq_plugin_entry *a, const tabq_plugin_entry *b) {
  if (a->exists && b->exists)
    return a->dev == b->dev && a->ino == b->ino;
  return a->dir == b->dir && !strcmp(a->m.file, b->m.file);
}

/* What loading the plugin tells: its descriptor, or the loader's refusal. */
static int describe_loaded(tabq_plugin_list *l, const tabq_plugin_index *ix,
                           const tabq_plugin_entry *e, tabq_plugin_info *info, bool *failed) {
  tabq_loaded *ld = calloc(1, sizeof *ld);
  if (!ld)
    return TABQ_NOMEM;
  tabq_error err;
  tabq__err_clear(&err);
  int rc = tabq__loader_open_entry(ix, e, ld, &err);
  if (rc) {
    info->load_code = rc;
    info->load_error = own_str(l, err.message, failed);
    free(ld);
    return TABQ_OK;
  }
  const tabq_plugin *p = ld->plugin;
  info->loaded = true;
  info->abi = p->abi;
  info->driver_from = own_str(l, p->driver_from, failed);
  info->forms = (p->rowlock ? TABQ_FORM_ROWLOCK : 0) | (p->lease ? TABQ_FORM_LEASE : 0) |
                (p->advisory ? TABQ_FORM_ADVISORY : 0);
  info->notifications = ld->driver && ld->driver->listen && ld->driver->wait_notify;
  const char *names[8];
  size_t k = 0;
  if (p->driver)
    names[k++] = "Driver";
  names[k++] = "Dialect";
  if (p->rowlock)
    names[k++] = "RowLock";
  if (p->lease)
    names[k++] = "Lease";
  if (p->advisory)
    names[k++] = "Advisory";
  if (p->byname)
    names[k++] = "ByName";
  const char **list = own(l, (k + 1) * sizeof *list);
  if (!list)
    *failed = true;
  for (size_t i = 0; list && i < k; i++)
    list[i] = names[i]; /* string literals: they outlive the list */
  info->interfaces = list;
  tabq__loader_close(ld);
  free(ld);
  return TABQ_OK;
}

static int add_plugins(tabq_plugin_list *l, const tabq_plugin_index *ix, unsigned flags,
                       bool *failed) {
  l->plugins = own(l, ix->n * sizeof *l->plugins);
  if (!l->plugins)
    return TABQ_NOMEM;
  for (size_t i = 0; i < ix->n && !*failed; i++) {
    const tabq_plugin_entry *e = &ix->entries[i];
    tabq_plugin_info *info = &l->plugins[l->n++];
    char path[PATH_MAX + TABQ_FILE_NAME_CAP];
    info->name = own_str(l, e->name, failed);
    tabq__plugin_entry_path(ix, e, path, sizeof path);
    info->path = own_str(l, path, failed);
    tabq__plugin_manifest_path(ix, e, path, sizeof path);
    info->manifest = e->has_manifest ? own_str(l, path, failed) : NULL;
    info->folder = own_str(l, ix->dirs[e->dir], failed);
    info->folder_index = e->dir;
    info->manifest_abi = e->has_manifest ? e->m.abi : 0;
    info->exists = e->exists;
    const char **schemes = own(l, (e->m.nschemes + 1) * sizeof *schemes);
    if (!schemes)
      return TABQ_NOMEM;
    for (unsigned s = 0; s < e->m.nschemes; s++)
      schemes[s] = own_str(l, e->m.schemes[s], failed);
    info->schemes = schemes;
    if ((flags & TABQ_PLUGINS_LOAD) && describe_loaded(l, ix, e, info, failed))
      return TABQ_NOMEM;
  }
  return *failed ? TABQ_NOMEM : TABQ_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const tabq_scheme_info *)a)->scheme, ((const tabq_scheme_info *)b)->scheme);
}

/* Each scheme once, with the file the loader chooses for it and the files that choice
 * shadows (plugin_index.c decides; this only reads its answer). */
static int add_schemes(tabq_plugin_list *l, const tabq_plugin_index *ix, bool *failed) {
  size_t total = 0;
  for (size_t i = 0; i < ix->n; i++)
    total += ix->entries[i].m.nschemes;
  l->schemes = own(l, (total ? total : 1) * sizeof *l->schemes);
  if (!l->schemes)
    return TABQ_NOMEM;
  for (size_t i = 0; i < ix->n; i++)
    for (unsigned s = 0; s < ix->entries[i].m.nschemes; s++) {
      const char *scheme = l->plugins[i].schemes[s];
      bool seen = false;
      for (size_t k = 0; k < l->nschemes && !seen; k++)
        seen = !strcmp(l->schemes[k].scheme, scheme);
      if (!seen)
        l->schemes[l->nschemes++].scheme = scheme;
    }
  qsort(l->schemes, l->nschemes, sizeof *l->schemes, by_name);
  for (size_t k = 0; k < l->nschemes && !*failed; k++) {
    tabq_scheme_info *si = &l->schemes[k];
    const tabq_plugin_entry *chosen = NULL;
    tabq_error err;
    if (tabq__plugin_index_by_scheme(ix, si->scheme, &chosen, NULL, 0, &err) || !chosen) {
      si->chosen = -1;
      si->refused = own_str(l, err.message, failed);
      continue;
    }
    si->chosen = (long)(chosen - ix->entries);
    size_t *shadowed = own(l, ix->n * sizeof *shadowed);
    if (!shadowed)
      return TABQ_NOMEM;
    for (size_t i = 0; i < ix->n; i++) {
      const tabq_plugin_entry *e = &ix->entries[i];
      if (e != chosen && tabq__manifest_serves(&e->m, si->scheme) && !same_file(e, chosen))
        shadowed[si->nshadowed++] = i;
    }
    si->shadowed = shadowed;
  }
  return *failed ? TABQ_NOMEM : TABQ_OK;
}

static int add_folders(tabq_plugin_list *l, const tabq_plugin_index *ix, bool *failed) {
  l->folders = own(l, (ix->ndirs + 1) * sizeof *l->folders);
  l->missing = own(l, (ix->ndirs + 1) * sizeof *l->missing);
  if (!l->folders || !l->missing)
    return TABQ_NOMEM;
  for (unsigned d = 0; d < ix->ndirs; d++) {
    l->folders[d] = own_str(l, ix->dirs[d], failed);
    l->missing[d] = ix->missing[d];
  }
  l->nfolders = ix->ndirs;
  return *failed ? TABQ_NOMEM : TABQ_OK;
}

int tabq_plugin_list_read(unsigned flags, tabq_plugin_list **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!out)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_plugin_list_read needs an out");
  *out = NULL;
  tabq_plugin_list *l = calloc(1, sizeof *l);
  tabq_plugin_index *ix = calloc(1, sizeof *ix); /* the folders' paths: too large for a stack */
  if (!l || !ix) {
    free(l);
    free(ix);
    return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate the plugin list");
  }
  bool failed = false;
  int rc = tabq__plugin_index_read(ix, err);
  if (!rc && ((rc = add_folders(l, ix, &failed)) || (rc = add_plugins(l, ix, flags, &failed)) ||
              (rc = add_schemes(l, ix, &failed))))
    tabq__err_set(err, rc, NULL, NULL, "cannot allocate the plugin list");
  tabq__plugin_index_free(ix);
  free(ix);
  if (rc) {
    tabq_plugin_list_free(l);
    return rc;
  }
  *out = l;
  return TABQ_OK;
}

size_t tabq_plugin_list_count(const tabq_plugin_list *l) {
  return l ? l->n : 0;
}

const tabq_plugin_info *tabq_plugin_list_get(const tabq_plugin_list *l, size_t i) {
  return l && i < l->n ? &l->plugins[i] : NULL;
}

size_t tabq_plugin_list_scheme_count(const tabq_plugin_list *l) {
  return l ? l->nschemes : 0;
}

const tabq_scheme_info *tabq_plugin_list_scheme(const tabq_plugin_list *l, size_t i) {
  return l && i < l->nschemes ? &l->schemes[i] : NULL;
}

size_t tabq_plugin_list_folder_count(const tabq_plugin_list *l) {
  return l ? l->nfolders : 0;
}

const char *tabq_plugin_list_folder(const tabq_plugin_list *l, size_t i, bool *missing) {
  if (!l || i >= l->nfolders)
    return NULL;
  if (missing)
    *missing = l->missing[i];
  return l->folders[i];
}
