/* tabq — fuzz target: the named-parameter renderer of a service's own SQL (sdk/src/sql_named.c,
 * tabq_sql_render_named), in each dialect's placeholder style. The first two bytes are the
 * names the statement takes (a mask), the rest its SQL. What it renders binds only the names
 * the statement takes, as many placeholders as it lists. */
#include <string.h>

#include <tabq/sys/sql.h>
#include <tabq/sys/sql_named.h>

#include "fuzz.h"
#include "mysql_plugin.h"
#include "postgres_plugin.h"
#include "sqlite_plugin.h"

static void render(const tabq_dialect_v1 *dialect, const char *sql, uint32_t allowed) {
  tabq_stmt st;
  tabq_sql_init(&st, &fuzz_host);
  uint32_t used = 0;
  char why[256];
  why[0] = '\0';
  int rc = tabq_sql_render_named(&st, sql, dialect->placeholder, allowed, &used, why, sizeof why);
  if (rc == TABQ_OK) {
    FUZZ_CHECK((used & ~allowed) == 0, "used %#x outside allowed %#x", used, allowed);
    FUZZ_CHECK(st.sql && strlen(st.sql) == st.len, "the text is whole");
  } else if (rc == TABQ_DECLARATION) {
    FUZZ_CHECK(why[0] && strlen(why) < sizeof why, "a refusal says why");
  }
  tabq_sql_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  tabq_sqlite_set_host(&fuzz_host);
  tabq_pg_set_host(&fuzz_host);
  tabq_my_set_host(&fuzz_host);
  uint32_t allowed = ((uint32_t)data[0] | (uint32_t)data[1] << 8) & 0x3ffu;
  char *sql = fuzz_cstr(data + 2, size - 2);
  render(&tabq_sqlite_dialect, sql, allowed);
  render(&tabq_pg_dialect, sql, allowed);
  render(&tabq_my_dialect, sql, allowed);
  free(sql);
  return 0;
}
