/* tabq — a main for a fuzz target without libFuzzer: feeds it every file of the folders (or the
 * files) given, once each, so the test suite replays the seed corpus and the regression inputs
 * with any compiler (docs/fuzzing.md). A missing folder is skipped; no input at all fails. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t len = 0, cap = 4096;
  uint8_t *data = malloc(cap);
  size_t n;
  while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *grown = realloc(data, cap *= 2);
      if (!grown)
        free(data);
      data = grown;
    }
  }
  fclose(f);
  if (!data) {
    fprintf(stderr, "replay: out of memory reading %s\n", path);
    return -1;
  }
  /* libFuzzer hands a buffer of exactly the input's size: so does this, for ASan's sake. */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(data);
    return -1;
  }
  memcpy(exact, data, len);
  free(data);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay_dir(const char *dir) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, by_name);
  if (n < 0)
    return 0; /* no regressions yet */
  int count = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      int rc = replay_file(path);
      if (rc < 0)
        count = -1;
      else if (count >= 0)
        count += rc;
    }
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  int total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    int got =
        stat(argv[i], &st) == 0 && S_ISREG(st.st_mode) ? replay_file(argv[i]) : replay_dir(argv[i]);
    if (got < 0)
      return 1;
    total += got;
  }
  printf("replayed %d inputs\n", total);
  return total > 0 ? 0 : 1;
}
