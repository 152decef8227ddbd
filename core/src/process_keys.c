/* Advisory keys kept in the process (TABQ_ADVISORY_PROCESS_KEYS), for a database without session
 * locks (SQLite): a registry of the keys in work, one per database file, shared by every
 * subscription and broker of the process.
 *
 * A file is known by its (st_dev, st_ino), so two spellings of one path share one registry.
 * While a process serves advisory subscriptions on a file it holds an exclusive flock on a lock
 * file beside it ("<file>-tabq-advisory"), so a second process is refused at subscribe instead
 * of delivering the same rows: the keys of one process are invisible to another. flock, not
 * fcntl: SQLite holds fcntl locks on the database, and fcntl locks of one process on one file
 * are all dropped when any of its descriptors of that file closes. The kernel drops the flock
 * when the process dies, and the keys die with its memory.
 *
 * Each subscription brings one entry per delivery slot, allocated at open; the entry keeps its
 * delivery's key (the buffer grows only for a longer key than it held before). The file's table
 * of held entries is open-addressed (linear probing, deletion by backward shift) and sized at
 * open for every entry of every subscription on the file, so a lock or a release allocates
 * nothing. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "error.h"

#define LOCK_SUFFIX "-tabq-advisory"

typedef struct tabq_pkey {
  char *key;
  size_t len, cap;
  uint64_t hash;
  bool held; /* in the file's table (under the file's mu) */
} tabq_pkey;

typedef struct tabq_keyfile {
  struct tabq_keyfile *next; /* in the process's list */
  dev_t dev;
  ino_t ino;
  unsigned refs; /* subscriptions on the file (files_mu) */
  int lock_fd;
  pthread_mutex_t mu; /* guards the table */
  tabq_pkey **table;
  size_t mask;    /* table size - 1 (a power of two) */
  size_t entries; /* entries of every subscription on the file */
  char path[];    /* the database file, for messages */
} tabq_keyfile;

struct tabq_pkeys {
  tabq_keyfile *file;
  unsigned n;
  tabq_pkey e[];
};

/* Process-wide: every broker's subscriptions share one registry per file. */
static pthread_mutex_t files_mu = PTHREAD_MUTEX_INITIALIZER;
static tabq_keyfile *files;

static uint64_t hash_of(const char *p, size_t n) {
  uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * UINT64_C(1099511628211);
  return h;
}

/* Grows the file's table to hold `entries` at most half full (files_mu and mu held). */
static int table_fit(tabq_keyfile *f, size_t entries) {
  size_t size = 16;
  while (size < 2 * entries)
    size *= 2;
  if (f->table && size <= f->mask + 1)
    return TABQ_OK;
  tabq_pkey **t = calloc(size, sizeof *t);
  if (!t)
    return TABQ_NOMEM;
  for (size_t i = 0; f->table && i <= f->mask; i++) {
    tabq_pkey *e = f->table[i];
    if (!e)
      continue;
    size_t at = e->hash & (size - 1);
    while (t[at])
      at = (at + 1) & (size - 1);
    t[at] = e;
  }
  free(f->table);
  f->table = t;
  f->mask = size - 1;
  return TABQ_OK;
}

static void table_remove(tabq_keyfile *f, tabq_pkey *e) {
  size_t i = e->hash & f->mask;
  while (f->table[i] != e)
    i = (i + 1) & f->mask;
  /* Backward shift: move up each later entry of the run whose home is not between the hole
   * and itself, so every probe still finds its key without tombstones. */
  for (size_t j = i;;) {
    j = (j + 1) & f->mask;
    tabq_pkey *m = f->table[j];
    if (!m)
      break;
    size_t home = m->hash & f->mask;
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      f->table[i] = m;
      i = j;
    }
  }
  f->table[i] = NULL;
  e->held = false;
}

/* Takes the lock file beside the database: no other process may serve advisory subscriptions
 * on it while this one does. */
static int take_lock_file(const tabq_subscription *s, const char *db, int *fd, tabq_error *err) {
  char path[PATH_MAX];
  if (strlen(db) + sizeof LOCK_SUFFIX > sizeof path)
    return tabq__err_set(err, TABQ_INVALID, s->t->name, NULL,
                         "table %s: the database path %s is too long for its advisory lock file",
                         s->t->name, db);
  strcpy(path, db);
  strcat(path, LOCK_SUFFIX);
  *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (*fd < 0)
    return tabq__err_set(err, TABQ_IO, s->t->name, NULL,
                         "table %s: cannot open the advisory lock file %s of database %s: %s",
                         s->t->name, path, db, strerror(errno));
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
    return TABQ_OK;
  int e = errno;
  close(*fd);
  *fd = -1;
  if (e == EWOULDBLOCK)
    return tabq__err_set(err, TABQ_DIALECT, s->t->name, NULL,
                         "table %s: another process serves advisory subscriptions on the SQLite "
                         "database %s (it holds the lock file %s); one process at a time serves "
                         "advisory subscriptions on a SQLite file, since the keys in work live in "
                         "that process",
                         s->t->name, db, path);
  return tabq__err_set(err, TABQ_IO, s->t->name, NULL,
                       "table %s: cannot lock the advisory lock file %s of database %s: %s",
                       s->t->name, path, db, strerror(e));
}

/* The file's registry, opened (and its lock file taken) by its first subscription. */
static int file_join(tabq_subscription *s, const char *db, unsigned entries, tabq_keyfile **out,
                     tabq_error *err) {
  struct stat st;
  if (stat(db, &st))
    return tabq__err_set(err, TABQ_IO, s->t->name, NULL,
                         "table %s: cannot read the database file %s for its advisory keys: %s",
                         s->t->name, db, strerror(errno));
  pthread_mutex_lock(&files_mu);
  tabq_keyfile *f = files;
  while (f && (f->dev != st.st_dev || f->ino != st.st_ino))
    f = f->next;
  int rc = TABQ_OK;
  if (!f) {
    int fd = -1;
    size_t len = strlen(db);
    if (!(rc = take_lock_file(s, db, &fd, err)) && !(f = calloc(1, sizeof *f + len + 1))) {
      close(fd);
      rc = tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the advisory keys");
    }
    if (!rc) {
      f->dev = st.st_dev;
      f->ino = st.st_ino;
      f->lock_fd = fd;
      memcpy(f->path, db, len + 1);
      pthread_mutex_init(&f->mu, NULL);
      f->next = files;
      files = f;
    }
  }
  if (!rc) {
    pthread_mutex_lock(&f->mu);
    if (table_fit(f, f->entries + entries))
      rc = tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the advisory keys");
    else
      f->entries += entries;
    pthread_mutex_unlock(&f->mu);
    f->refs += !rc;
  }
  tabq_keyfile *drop = NULL;
  if (rc && f && !f->refs) { /* opened for this subscription alone */
    for (tabq_keyfile **p = &files; *p; p = &(*p)->next)
      if (*p == f) {
        *p = f->next;
        break;
      }
    drop = f;
  }
  pthread_mutex_unlock(&files_mu);
  if (drop) {
    close(drop->lock_fd);
    pthread_mutex_destroy(&drop->mu);
    free(drop->table);
    free(drop);
  }
  *out = rc ? NULL : f;
  return rc;
}

int tabq__pkeys_open(tabq_subscription *s, tabq_error *err) {
  if (!s->database[0])
    return tabq__err_set(err, TABQ_DIALECT, s->t->name, NULL,
                         "table %s: the %s dialect keeps advisory keys by database file, and its "
                         "driver names no file for this database (in memory?); name a file",
                         s->t->name, s->b->plugin.plugin->name);
  tabq_pkeys *k = calloc(1, sizeof *k + s->nslots * sizeof k->e[0]);
  if (!k)
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the advisory keys");
  k->n = s->nslots;
  char real[PATH_MAX];
  /* The lock file sits beside the file itself, not beside a link to it. */
  const char *db = realpath(s->database, real) ? real : s->database;
  int rc = file_join(s, db, k->n, &k->file, err);
  if (rc) {
    free(k);
    return rc;
  }
  s->pkeys = k;
  return TABQ_OK;
}

void tabq__pkeys_close(tabq_subscription *s) {
  tabq_pkeys *k = s->pkeys;
  if (!k)
    return;
  s->pkeys = NULL;
  tabq_keyfile *f = k->file;
  pthread_mutex_lock(&files_mu);
  pthread_mutex_lock(&f->mu);
  for (unsigned i = 0; i < k->n; i++)
    if (k->e[i].held) /* not reached after shutdown released them; never left behind */
      table_remove(f, &k->e[i]);
  f->entries -= k->n;
  pthread_mutex_unlock(&f->mu);
  bool last = --f->refs == 0;
  if (last)
    for (tabq_keyfile **p = &files; *p; p = &(*p)->next)
      if (*p == f) {
        *p = f->next;
        break;
      }
  pthread_mutex_unlock(&files_mu);
  for (unsigned i = 0; i < k->n; i++)
    free(k->e[i].key);
  free(k);
  if (last) {
    close(f->lock_fd); /* ends the flock: another process may serve the file now */
    pthread_mutex_destroy(&f->mu);
    free(f->table);
    free(f);
  }
}

int tabq__pkeys_lock(tabq_subscription *s, const tabq_delivery *d, const char *key, size_t n,
                     bool *locked) {
  tabq_pkeys *k = s->pkeys;
  tabq_pkey *e = &k->e[d - s->slots];
  tabq_keyfile *f = k->file;
  *locked = false;
  if (n + 1 > e->cap) { /* a longer key than this delivery held before */
    char *p = realloc(e->key, n + 1);
    if (!p)
      return TABQ_NOMEM;
    e->key = p;
    e->cap = n + 1;
  }
  memcpy(e->key, key, n);
  e->key[n] = '\0';
  e->len = n;
  e->hash = hash_of(e->key, n);
  pthread_mutex_lock(&f->mu);
  size_t i = e->hash & f->mask;
  for (tabq_pkey *m; (m = f->table[i]); i = (i + 1) & f->mask)
    if (m->hash == e->hash && m->len == n && !memcmp(m->key, e->key, n))
      break;
  if (!f->table[i]) {
    f->table[i] = e;
    e->held = *locked = true;
  }
  pthread_mutex_unlock(&f->mu);
  return TABQ_OK;
}

void tabq__pkeys_release(tabq_subscription *s, const tabq_delivery *d) {
  tabq_pkeys *k = s->pkeys;
  if (!k)
    return;
  tabq_pkey *e = &k->e[d - s->slots];
  pthread_mutex_lock(&k->file->mu);
  if (e->held)
    table_remove(k->file, e);
  pthread_mutex_unlock(&k->file->mu);
}
