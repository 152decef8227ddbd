/* tabq — what the fuzz targets share (docs/fuzzing.md). Each target is one file defining
 * LLVMFuzzerTestOneInput over one parser of tabq's; libFuzzer drives it under TABQ_FUZZ, and
 * replay_main.c feeds it the seed corpus and the regression inputs in every test build. */
#ifndef TABQ_FUZZ_H
#define TABQ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tabq/sys/dialect.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (malloc'd: free it); bytes after an embedded NUL stay
 * in the copy but a string reader stops before them, as it would in a C caller. */
char *fuzz_cstr(const uint8_t *data, size_t size);

/* A plugin host for the dialects' static objects: plain malloc, a fail that keeps only the
 * code, and a log that drops every line. */
extern const tabq_host fuzz_host;

/* A finding the sanitizers cannot see (a password shown, a round trip that changed): print
 * what broke and abort, which libFuzzer reports as a crash with its input. */
#define FUZZ_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz check failed: %s: ", #cond);                                           \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif
