/* A plugin's manifest: the small text file beside it that names the file, the URL schemes it
 * serves and its plugin ABI, so the loader chooses a plugin without loading any (docs/plugins.md).
 *
 *   # comment
 *   file = mysql.so
 *   schemes = mysql mariadb
 *   abi = 1.1
 */
#ifndef TABQ_MANIFEST_H
#define TABQ_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tabq/tabq.h>

#define TABQ_MANIFEST_SUFFIX ".tabq-plugin"
#define TABQ_MANIFEST_MAX_BYTES 4096
#define TABQ_MANIFEST_MAX_SCHEMES 16
#define TABQ_SCHEME_CAP 32 /* a scheme and its NUL, as the broker reads it from a URL */
#define TABQ_FILE_NAME_CAP 256

typedef struct tabq_manifest {
  char file[TABQ_FILE_NAME_CAP]; /* a file name in the manifest's own folder */
  char schemes[TABQ_MANIFEST_MAX_SCHEMES][TABQ_SCHEME_CAP];
  unsigned nschemes;
  uint32_t abi; /* as TABQ_ABI_VERSION; 0 where unknown (a plugin found by its file name) */
} tabq_manifest;

/* A URL scheme as a manifest or a file name may claim it: a lowercase letter, then lowercase
 * letters, digits, '+', '-' or '.', shorter than TABQ_SCHEME_CAP. */
bool tabq__scheme_valid(const char *s, size_t len);

/* Parses a manifest's text. On failure writes why, with the line, into `why`. */
bool tabq__manifest_parse(const char *text, size_t len, tabq_manifest *m, char *why, size_t cap);

/* Reads and parses the manifest at `path`; TABQ_PLUGIN naming it when it cannot. */
int tabq__manifest_read(const char *path, tabq_manifest *m, tabq_error *err);

bool tabq__manifest_serves(const tabq_manifest *m, const char *scheme);

#endif
