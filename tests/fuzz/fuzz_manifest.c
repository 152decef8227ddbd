/* tabq — fuzz target: the plugin manifest reader (core/src/manifest.c, tabq__manifest_parse),
 * the text of a "<name>.tabq-plugin" file. What it accepts names a file and valid schemes. */
#include <string.h>

#include "fuzz.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tabq_manifest m;
  char why[256];
  memset(&m, 0xa5, sizeof m); /* the parse must set what it reports */
  why[0] = '\0';
  if (tabq__manifest_parse((const char *)data, size, &m, why, sizeof why)) {
    FUZZ_CHECK(m.file[0] && strlen(m.file) < sizeof m.file, "a file is named");
    FUZZ_CHECK(m.nschemes >= 1 && m.nschemes <= TABQ_MANIFEST_MAX_SCHEMES, "%u schemes",
               m.nschemes);
    for (unsigned i = 0; i < m.nschemes; i++) {
      FUZZ_CHECK(tabq__scheme_valid(m.schemes[i], strlen(m.schemes[i])), "scheme '%s'",
                 m.schemes[i]);
      FUZZ_CHECK(tabq__manifest_serves(&m, m.schemes[i]), "serves '%s'", m.schemes[i]);
    }
  } else {
    FUZZ_CHECK(why[0] && memchr(why, '\0', sizeof why), "a refusal says why");
  }
  return 0;
}
