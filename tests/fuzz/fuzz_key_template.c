/* tabq — fuzz target: advisory key templates ("jobs-{id}"). The input is a table's
 * advisory_lock: the description rules check it (core/src/table.c), and each dialect renders
 * the key expression of its candidates statement from it (tabq_sqlb_key_template in the SDK
 * and the dialects' key parts). A template the rules accept renders on every dialect. */
#include <string.h>

#include <tabq/sys/sql.h>

#include "fuzz.h"
#include "mysql_plugin.h"
#include "postgres_plugin.h"
#include "sqlite_plugin.h"
#include "table.h"

static const tabq_col data_cols[] = {{.name = "account"}, {.name = "tenant id"}, {.name = "ré"}};

static int render(tabq_build_fn candidates, const tabq_build *b) {
  tabq_stmt st;
  tabq_sql_init(&st, &fuzz_host);
  int rc = candidates(b, &st);
  tabq_sql_free(&st);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tabq_sqlite_set_host(&fuzz_host);
  tabq_pg_set_host(&fuzz_host);
  tabq_my_set_host(&fuzz_host);
  char *key = fuzz_cstr(data, size);
  tabq_table t = {.size = sizeof t,
                  .name = "app.adv_jobs",
                  .id = {.name = "id"},
                  .group = {.name = "queue"},
                  .retry_after = {.name = "retry_after"},
                  .attempt = {.name = "attempt"},
                  .processed_at = {.name = "processed_at"},
                  .payload = {.name = "payload"},
                  .data = data_cols,
                  .ndata = sizeof data_cols / sizeof data_cols[0],
                  .advisory_lock = key};
  tabq_error err = {0};
  bool accepted = tabq__table_rules(&t, &err) == TABQ_OK;
  tabq_build b = {.table = &t, .form = TABQ_FORM_ADVISORY, .database = "app"};
  int sqlite_rc = render(tabq_sqlite_advisory.candidates, &b);
  int pg_rc = render(tabq_pg_advisory.candidates, &b);
  int my_rc = render(tabq_my_advisory.candidates, &b);
  if (accepted)
    FUZZ_CHECK(sqlite_rc == TABQ_OK && pg_rc == TABQ_OK && my_rc == TABQ_OK,
               "template '%s' passes the rules but a dialect refuses it (%d %d %d)", key, sqlite_rc,
               pg_rc, my_rc);
  free(key);
  return 0;
}
