/* tabq — one writer at a time per database file, within this process.
 *
 * SQLite lets one connection write at a time and makes the others retry in its busy handler,
 * which sleeps and polls. Connections of one process instead queue here, on a lock per database
 * file (keyed by its canonical path), and reach SQLite's write lock without spinning; the busy
 * timeout still covers writers in other processes.
 *
 * The lock is a flag under a mutex with a condition variable rather than a bare mutex, because
 * it belongs to a connection, not to a thread: a transaction may begin on one thread and commit
 * on another, and a pthread mutex must be unlocked by the thread that locked it. The wait is
 * bounded by the connection's busy timeout, as SQLite's own would be, so a thread that writes
 * through a second connection while its first holds a transaction gets an error, not a hang. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqlite_plugin.h"

struct tabq_sqlite_writer {
  tabq_sqlite_writer *next; /* in the registry */
  unsigned refs;            /* connections open on the file (registry_mu) */
  pthread_mutex_t mu;
  pthread_cond_t freed;
  bool held; /* (mu) */
  char path[];
};

/* Process-wide and shared by every connection, so plain malloc, not one host's allocator. */
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static tabq_sqlite_writer *registry;

static tabq_sqlite_writer *writer_new(const char *path) {
  size_t len = strlen(path);
  tabq_sqlite_writer *w = malloc(sizeof *w + len + 1);
  if (!w)
    return NULL;
  memset(w, 0, sizeof *w);
  memcpy(w->path, path, len + 1);
  pthread_condattr_t attr;
  if (pthread_condattr_init(&attr) != 0) {
    free(w);
    return NULL;
  }
  /* Deadlines on the monotonic clock: a wall clock step must not stretch or cut a wait. */
  int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(&w->freed, &attr);
  pthread_condattr_destroy(&attr);
  if (rc != 0) {
    free(w);
    return NULL;
  }
  if (pthread_mutex_init(&w->mu, NULL) != 0) {
    pthread_cond_destroy(&w->freed);
    free(w);
    return NULL;
  }
  return w;
}

int tabq_sqlite_writer_open(const char *canonical_path, tabq_sqlite_writer **out) {
  pthread_mutex_lock(&registry_mu);
  tabq_sqlite_writer *w = registry;
  while (w && strcmp(w->path, canonical_path) != 0)
    w = w->next;
  if (!w) {
    w = writer_new(canonical_path);
    if (!w) {
      pthread_mutex_unlock(&registry_mu);
      *out = NULL;
      return tabq_sqlite_host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the writer lock of %s",
                                      canonical_path);
    }
    w->next = registry;
    registry = w;
  }
  w->refs++;
  pthread_mutex_unlock(&registry_mu);
  *out = w;
  return TABQ_OK;
}

void tabq_sqlite_writer_close(tabq_sqlite_writer *w) {
  if (!w)
    return;
  pthread_mutex_lock(&registry_mu);
  if (--w->refs > 0) {
    pthread_mutex_unlock(&registry_mu);
    return;
  }
  tabq_sqlite_writer **at = &registry;
  while (*at != w)
    at = &(*at)->next;
  *at = w->next;
  pthread_mutex_unlock(&registry_mu);
  pthread_cond_destroy(&w->freed);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

bool tabq_sqlite_writer_lock(tabq_sqlite_writer *w, int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&w->mu);
  int rc = 0;
  while (w->held && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&w->freed, &w->mu, &deadline);
  bool taken = !w->held;
  if (taken)
    w->held = true;
  pthread_mutex_unlock(&w->mu);
  return taken;
}

void tabq_sqlite_writer_unlock(tabq_sqlite_writer *w) {
  pthread_mutex_lock(&w->mu);
  w->held = false;
  pthread_mutex_unlock(&w->mu);
  pthread_cond_signal(&w->freed);
}

const char *tabq_sqlite_writer_path(const tabq_sqlite_writer *w) {
  return w->path;
}
