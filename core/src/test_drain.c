/* tabq_test_open, tabq_test_close and tabq_test_drain (tabq/testing.h): a broker on a throwaway
 * SQLite file, and a queue run to empty on the calling thread, for a service's tests. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/schema.h>
#include <tabq/testing.h>
#include <unistd.h>

#include "engine.h"
#include "error.h"

int tabq_test_drain(tabq_broker *b, const tabq_table *table,
                    const tabq_subscription_options *options, tabq_stats *stats, size_t size,
                    tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_test_drain needs a broker, a table and options");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  tabq_subscription *s;
  int rc = tabq__sub_open_drain(b, table, options, &s, err);
  if (!rc) {
    rc = tabq__drain(s, err);
    tabq__workers_stop(s); /* the lease extender; nothing is left in work */
    if (stats)
      tabq_subscription_stats(s, stats, size);
    tabq__sub_free(s);
  }
  tabq__log_leave(outer);
  return rc;
}

/* Removes the folder's files (the database, its journal), then the folder. */
static void remove_folder(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
        continue;
      char path[PATH_MAX];
      if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
        unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

int tabq_test_open(const tabq_table *const *tables, size_t n, const tabq_broker_options *options,
                   tabq_broker **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!out || (n && !tables))
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_test_open needs the tables and a place for the broker");
  *out = NULL;
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX - 32];
  if (snprintf(dir, sizeof dir, "%s/tabq-test.XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
          (int)sizeof dir ||
      !mkdtemp(dir))
    return tabq__err_set(err, TABQ_IO, NULL, NULL, "cannot make a folder for the test database");
  char url[PATH_MAX + 16];
  snprintf(url, sizeof url, "sqlite:%s/queue.db", dir);
  tabq_broker *b = NULL;
  int rc = tabq_connect(url, options, &b, err);
  for (size_t i = 0; !rc && i < n; i++)
    rc = tabq_schema_apply(b, tables[i], NULL, err);
  if (!rc && !(b->test_dir = strdup(dir)))
    rc = tabq__err_set(err, TABQ_NOMEM, NULL, NULL, "cannot keep the test folder's name");
  if (rc) {
    tabq_close(b);
    remove_folder(dir);
    return rc;
  }
  *out = b;
  return TABQ_OK;
}

void tabq_test_close(tabq_broker *b) {
  if (!b)
    return;
  char *dir = b->test_dir;
  b->test_dir = NULL;
  tabq_close(b);
  if (dir)
    remove_folder(dir);
  free(dir);
}

const char *tabq_test_folder(const tabq_broker *b) {
  return b ? b->test_dir : NULL;
}
