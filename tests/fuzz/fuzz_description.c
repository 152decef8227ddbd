/* tabq — fuzz target: the JSON description parser (core/src/app_read.c, tabq_app_parse), the
 * text of a description file as `tabq` and tabq_app_load read it. A description it accepts
 * writes out (tabq_app_to_json) as text it accepts again, which writes out the same. */
#include <string.h>

#include <tabq/app.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tabq_app *app = NULL;
  tabq_error err = {0};
  if (tabq_app_parse((const char *)data, size, "fuzz.tabq.json", &app, &err)) {
    FUZZ_CHECK(err.message[0], "a refusal says why");
    return 0;
  }
  char *first = NULL;
  if (tabq_app_to_json(app, &first, &err) == TABQ_OK) {
    tabq_app *again = NULL;
    FUZZ_CHECK(tabq_app_parse(first, strlen(first), "again.tabq.json", &again, &err) == TABQ_OK,
               "its own output is refused: %s\n%s", err.message, first);
    char *second = NULL;
    if (tabq_app_to_json(again, &second, &err) == TABQ_OK)
      FUZZ_CHECK(!strcmp(first, second), "a second round trip changed it:\n%s\n%s", first, second);
    free(second);
    tabq_app_free(again);
  }
  free(first);
  tabq_app_free(app);
  return 0;
}
