/* tabq — fuzz target: the SQLite driver's URL parser (plugins/sqlite/driver.c), the text of a
 * sqlite: URL with its query options. */
#include <string.h>

#include "fuzz.h"
#include "sqlite_plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tabq_sqlite_set_host(&fuzz_host);
  char *url = fuzz_cstr(data, size);
  tabq_sqlite_url o;
  if (tabq_sqlite_parse_url(url, &o) == TABQ_OK) {
    FUZZ_CHECK(o.path && *o.path, "an accepted URL names a file");
    FUZZ_CHECK(strstr(url, o.path) != NULL, "the path is a part of the URL");
    FUZZ_CHECK(o.sync >= 0 && o.sync <= 3 && o.busy_ms >= 0, "the options are in range");
    fuzz_host.free(o.path);
  }
  free(url);
  return 0;
}
