/* Finding plugins without loading them: a library's constructors run inside the host the moment
 * it is loaded, so the folders are read through manifests and file names alone, and only the
 * one file chosen for a scheme is ever opened (loader.c). */
#define _GNU_SOURCE /* dladdr */
#include "plugin_index.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"

static bool ends_with(const char *s, size_t len, const char *suffix) {
  size_t n = strlen(suffix);
  return len > n && !memcmp(s + len - n, suffix, n);
}

static int add_dir(tabq_plugin_index *ix, const char *dir, size_t len, tabq_error *err) {
  if (len >= PATH_MAX)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "the plugin folder '%.*s...' is too long",
                         64, dir);
  for (unsigned i = 0; i < ix->ndirs; i++)
    if (strlen(ix->dirs[i]) == len && !strncmp(ix->dirs[i], dir, len))
      return TABQ_OK;
  if (ix->ndirs == TABQ_MAX_PLUGIN_DIRS)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "TABQ_PLUGIN_PATH lists more than %d folders; shorten it",
                         TABQ_MAX_PLUGIN_DIRS - 1);
  memcpy(ix->dirs[ix->ndirs], dir, len);
  ix->dirs[ix->ndirs++][len] = '\0';
  return TABQ_OK;
}

/* TABQ_PLUGIN_PATH, read at every call so a service may change it between connects. An empty
 * entry is skipped: it never means the working folder. */
static int env_dirs(tabq_plugin_index *ix, tabq_error *err) {
  const char *env = getenv("TABQ_PLUGIN_PATH");
  for (const char *p = env; p && *p;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    if (len && p[0] != '/')
      return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                           "TABQ_PLUGIN_PATH entry '%.*s' is relative: what it finds would depend "
                           "on the working folder; give the folder's absolute path",
                           (int)(len < 256 ? len : 256), p);
    int rc = len ? add_dir(ix, p, len, err) : TABQ_OK;
    if (rc)
      return rc;
    p += len + (colon ? 1 : 0);
  }
  return TABQ_OK;
}

/* tabq-<major>/ beside libtabq: the build tree and an installed tree share this layout. */
static int beside_library(tabq_plugin_index *ix, tabq_error *err) {
  Dl_info self;
  if (!dladdr((void *)&tabq__plugin_index_read, &self) || !self.dli_fname)
    return TABQ_OK;
  const char *slash = strrchr(self.dli_fname, '/');
  if (!slash)
    return TABQ_OK;
  char dir[PATH_MAX];
  int n = snprintf(dir, sizeof dir, "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname,
                   TABQ_PLUGIN_SUBDIR);
  return n > 0 && (size_t)n < sizeof dir ? add_dir(ix, dir, (size_t)n, err) : TABQ_OK;
}

static int add_entry(tabq_plugin_index *ix, const tabq_plugin_entry *e, tabq_error *err) {
  if (ix->n == ix->cap) {
    size_t cap = ix->cap ? ix->cap * 2 : 16;
    tabq_plugin_entry *grown = realloc(ix->entries, cap * sizeof *grown);
    if (!grown)
      return tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot allocate the plugin list");
    ix->entries = grown;
    ix->cap = cap;
  }
  ix->entries[ix->n++] = *e;
  return TABQ_OK;
}

static void note_file(const char *path, tabq_plugin_entry *e) {
  struct stat st;
  e->exists = stat(path, &st) == 0;
  if (e->exists) {
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->mode = st.st_mode;
  }
}

static int add_manifest(tabq_plugin_index *ix, unsigned d, const char *file, tabq_error *err) {
  tabq_plugin_entry e = {.dir = d, .has_manifest = true};
  size_t len = strlen(file) - strlen(TABQ_MANIFEST_SUFFIX);
  memcpy(e.name, file, len);
  e.name[len] = '\0';
  char path[PATH_MAX + TABQ_FILE_NAME_CAP];
  snprintf(path, sizeof path, "%s/%s", ix->dirs[d], file);
  struct stat st;
  if (stat(path, &st) == 0)
    e.manifest_mode = st.st_mode;
  int rc = tabq__manifest_read(path, &e.m, err);
  if (rc)
    return rc;
  snprintf(path, sizeof path, "%s/%s", ix->dirs[d], e.m.file);
  note_file(path, &e);
  return add_entry(ix, &e, err);
}

/* A .so no manifest of its folder names serves the scheme its file name gives. */
static int add_bare(tabq_plugin_index *ix, unsigned d, const char *file, tabq_error *err) {
  for (size_t i = 0; i < ix->n; i++)
    if (ix->entries[i].dir == d && ix->entries[i].has_manifest &&
        !strcmp(ix->entries[i].m.file, file))
      return TABQ_OK;
  tabq_plugin_entry e = {.dir = d};
  size_t len = strlen(file) - 3;
  memcpy(e.name, file, len);
  e.name[len] = '\0';
  snprintf(e.m.file, sizeof e.m.file, "%s", file);
  if (tabq__scheme_valid(e.name, len))
    memcpy(e.m.schemes[e.m.nschemes++], e.name, len + 1);
  char path[PATH_MAX + TABQ_FILE_NAME_CAP];
  snprintf(path, sizeof path, "%s/%s", ix->dirs[d], file);
  note_file(path, &e);
  if (!e.exists || !S_ISREG(e.mode))
    return TABQ_OK; /* a folder or a dangling link named like a plugin is none */
  return add_entry(ix, &e, err);
}

static int read_dir(tabq_plugin_index *ix, unsigned d, tabq_error *err) {
  const char *dir = ix->dirs[d];
  struct stat st;
  if (stat(dir, &st)) {
    ix->missing[d] = true;
    return TABQ_OK;
  }
  if (!S_ISDIR(st.st_mode))
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin folder %s is not a folder; take it off TABQ_PLUGIN_PATH", dir);
  /* Anyone could put a plugin there, the sticky bit notwithstanding. */
  if (st.st_mode & S_IWOTH)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin folder %s is writable by every user (mode %04o), so its plugins "
                         "could be anyone's code; remove that write permission (chmod o-w) or "
                         "keep plugins in a folder only their owner may write",
                         dir, (unsigned)(st.st_mode & 07777));
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort); /* sorted: messages list plugins in one order */
  if (n < 0)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "cannot read plugin folder %s: %s", dir,
                         strerror(errno));
  int rc = TABQ_OK;
  /* The manifests first, so that the files they name are not also taken by their file names. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n && !rc; i++) {
      const char *file = names[i]->d_name;
      size_t len = strlen(file);
      if (file[0] == '.')
        continue;
      if (pass == 0 && ends_with(file, len, TABQ_MANIFEST_SUFFIX))
        rc = add_manifest(ix, d, file, err);
      else if (pass == 1 && ends_with(file, len, ".so"))
        rc = add_bare(ix, d, file, err);
    }
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return rc;
}

int tabq__plugin_index_read(tabq_plugin_index *ix, tabq_error *err) {
  memset(ix, 0, sizeof *ix); /* a caller's index starts empty, whatever its memory held */
  int rc = env_dirs(ix, err);
  if (!rc)
    rc = beside_library(ix, err);
  for (unsigned d = 0; !rc && d < ix->ndirs; d++)
    rc = read_dir(ix, d, err);
  return rc;
}

void tabq__plugin_index_free(tabq_plugin_index *ix) {
  free(ix->entries);
  ix->entries = NULL;
  ix->n = ix->cap = 0;
}

void tabq__plugin_entry_path(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                             size_t cap) {
  snprintf(out, cap, "%s/%s", ix->dirs[e->dir], e->m.file);
}

void tabq__plugin_manifest_path(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                                size_t cap) {
  if (e->has_manifest)
    snprintf(out, cap, "%s/%s%s", ix->dirs[e->dir], e->name, TABQ_MANIFEST_SUFFIX);
  else if (cap)
    out[0] = '\0';
}

static void append(char *buf, size_t cap, const char *text) {
  size_t len = strlen(buf);
  if (len < cap)
    snprintf(buf + len, cap - len, "%s", text);
}

void tabq__plugin_index_folders(const tabq_plugin_index *ix, char *out, size_t cap) {
  out[0] = '\0';
  for (unsigned d = 0; d < ix->ndirs; d++) {
    append(out, cap, d ? ", " : "");
    append(out, cap, ix->dirs[d]);
    append(out, cap, ix->missing[d] ? " (missing)" : "");
  }
  if (!ix->ndirs)
    append(out, cap, "no folder");
}

/* One file reached twice (a symlink, a folder listed twice) is one plugin, not two. */
static bool same_file(const tabq_plugin_entry *a, const tabq_plugin_entry *b) {
  if (a->exists && b->exists)
    return a->dev == b->dev && a->ino == b->ino;
  return a->dir == b->dir && !strcmp(a->m.file, b->m.file);
}

/* "/dir/x.so (manifest x.tabq-plugin)" or "/dir/x.so (by its file name)". */
static void describe(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                     size_t cap) {
  char path[PATH_MAX + TABQ_FILE_NAME_CAP];
  tabq__plugin_entry_path(ix, e, path, sizeof path);
  if (e->has_manifest)
    snprintf(out, cap, "%s (manifest %s%s)", path, e->name, TABQ_MANIFEST_SUFFIX);
  else
    snprintf(out, cap, "%s (by its file name)", path);
}

static int conflict(const tabq_plugin_index *ix, const char *what, const char *value,
                    const tabq_plugin_entry *a, const tabq_plugin_entry *b, tabq_error *err) {
  char da[PATH_MAX + 3 * TABQ_FILE_NAME_CAP], db[sizeof da];
  describe(ix, a, da, sizeof da);
  describe(ix, b, db, sizeof db);
  return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                       "two plugins in one folder claim the %s '%s': %s and %s; remove one", what,
                       value, da, db);
}

/* The search order decides, as PATH does: the first folder's claimant wins and shadows those of
 * later folders (named in `shadowed`, cap bytes, when given); two different files of one folder
 * claiming the same are refused, since nothing orders them. */
static int choose(const tabq_plugin_index *ix, const char *what, const char *value,
                  bool (*claims)(const tabq_plugin_entry *, const char *),
                  const tabq_plugin_entry **out, char *shadowed, size_t cap, tabq_error *err) {
  *out = NULL;
  if (shadowed && cap)
    shadowed[0] = '\0';
  for (size_t i = 0; i < ix->n; i++) {
    const tabq_plugin_entry *e = &ix->entries[i];
    if (!claims(e, value) || (*out && same_file(*out, e)))
      continue;
    if (!*out) {
      *out = e;
    } else if (e->dir == (*out)->dir) {
      return conflict(ix, what, value, *out, e, err);
    } else if (shadowed && cap) {
      char d[PATH_MAX + 3 * TABQ_FILE_NAME_CAP];
      describe(ix, e, d, sizeof d);
      append(shadowed, cap, shadowed[0] ? ", " : "");
      append(shadowed, cap, d);
    }
  }
  return TABQ_OK;
}

static bool claims_scheme(const tabq_plugin_entry *e, const char *scheme) {
  return tabq__manifest_serves(&e->m, scheme);
}

static bool claims_name(const tabq_plugin_entry *e, const char *name) {
  return !strcmp(e->name, name);
}

int tabq__plugin_index_by_scheme(const tabq_plugin_index *ix, const char *scheme,
                                 const tabq_plugin_entry **out, char *shadowed, size_t cap,
                                 tabq_error *err) {
  int rc = choose(ix, "URL scheme", scheme, claims_scheme, out, shadowed, cap, err);
  if (rc || *out)
    return rc;
  char installed[256] = "", searched[256];
  for (size_t i = 0; i < ix->n; i++)
    for (unsigned s = 0; s < ix->entries[i].m.nschemes; s++) {
      const char *sc = ix->entries[i].m.schemes[s];
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++)
        seen = tabq__manifest_serves(&ix->entries[j].m, sc);
      if (seen)
        continue;
      append(installed, sizeof installed, installed[0] ? ", " : "");
      append(installed, sizeof installed, sc);
    }
  tabq__plugin_index_folders(ix, searched, sizeof searched);
  return tabq__err_set(err, TABQ_BACKEND, NULL, NULL,
                       "no installed dialect serves the URL scheme '%s'; installed schemes: %s "
                       "(searched %s)",
                       scheme, installed[0] ? installed : "none", searched);
}

int tabq__plugin_index_by_name(const tabq_plugin_index *ix, const char *name,
                               const tabq_plugin_entry **out, tabq_error *err) {
  return choose(ix, "plugin name", name, claims_name, out, NULL, 0, err);
}

void tabq__plugin_index_describe(const tabq_plugin_index *ix, const tabq_plugin_entry *e, char *out,
                                 size_t cap) {
  describe(ix, e, out, cap);
}
