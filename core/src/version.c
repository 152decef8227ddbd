/* The version of the library that runs, fixed when it was built. */
#include <tabq/tabq.h>

uint32_t tabq_version(void) {
  return TABQ_VERSION_NUMBER;
}

const char *tabq_version_string(void) {
  return TABQ_VERSION_STRING;
}
