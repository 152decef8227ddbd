/* tabq — fuzz target: the loader's ELF checks on a plugin file before dlopen maps it
 * (core/src/plugin_file.c, tabq__plugin_file_check). The input is the whole file, held in a
 * memory file the check opens by its /proc path as it would a file in a plugin folder. */
#define _GNU_SOURCE /* memfd_create */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "plugin_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("tabq-fuzz-plugin", MFD_CLOEXEC);
  if (fd < 0)
    abort();
  size_t at = 0;
  while (at < size) {
    ssize_t n = write(fd, data + at, size - at);
    if (n <= 0)
      abort();
    at += (size_t)n;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  tabq_error err = {0};
  int rc = tabq__plugin_file_check(path, &err);
  FUZZ_CHECK(rc == TABQ_OK || rc == TABQ_PLUGIN, "code %d", rc);
  FUZZ_CHECK(rc == TABQ_OK || err.message[0], "a refusal says why");
  close(fd);
  return 0;
}
