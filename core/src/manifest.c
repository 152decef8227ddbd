/* Plugin manifests, parsed strictly: a typo must be refused, not read as "serves nothing". */
#include "manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

bool tabq__scheme_valid(const char *s, size_t len) {
  if (!len || len >= TABQ_SCHEME_CAP || s[0] < 'a' || s[0] > 'z')
    return false;
  for (size_t i = 1; i < len; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || strchr("+-.", s[i])))
      return false;
  return true;
}

bool tabq__manifest_serves(const tabq_manifest *m, const char *scheme) {
  for (unsigned i = 0; i < m->nschemes; i++)
    if (!strcmp(m->schemes[i], scheme))
      return true;
  return false;
}

static bool fail(char *why, size_t cap, unsigned line, const char *fmt, ...) TABQ_PRINTF_(4, 5);
static bool fail(char *why, size_t cap, unsigned line, const char *fmt, ...) {
  int n = line ? snprintf(why, cap, "line %u: ", line) : 0;
  if (n < 0 || (size_t)n >= cap)
    n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + n, cap - (size_t)n, fmt, ap);
  va_end(ap);
  return false;
}

static bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

/* A plain file name ending in ".so": no folder, nothing hidden, nothing to quote. */
static bool file_valid(const char *s, size_t len) {
  if (len <= 3 || len >= TABQ_FILE_NAME_CAP || s[0] == '.' || memcmp(s + len - 3, ".so", 3))
    return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || strchr("+-._", s[i])))
      return false;
  return true;
}

static bool parse_file(const char *v, size_t len, tabq_manifest *m, char *why, size_t cap,
                       unsigned line) {
  if (!file_valid(v, len))
    return fail(why, cap, line,
                "file must be a file name ending in .so in the manifest's folder, not '%.*s'",
                (int)len, v);
  memcpy(m->file, v, len);
  m->file[len] = '\0';
  return true;
}

static bool parse_schemes(const char *v, size_t len, tabq_manifest *m, char *why, size_t cap,
                          unsigned line) {
  for (size_t i = 0; i < len;) {
    size_t start = i;
    while (i < len && !is_blank(v[i]))
      i++;
    size_t n = i - start;
    if (!tabq__scheme_valid(v + start, n))
      return fail(why, cap, line,
                  "'%.*s' is no URL scheme (a lowercase letter, then lowercase letters, digits, "
                  "'+', '-' or '.', at most %d characters)",
                  (int)n, v + start, TABQ_SCHEME_CAP - 1);
    char scheme[TABQ_SCHEME_CAP];
    memcpy(scheme, v + start, n);
    scheme[n] = '\0';
    if (tabq__manifest_serves(m, scheme))
      return fail(why, cap, line, "the scheme '%s' is listed twice", scheme);
    if (m->nschemes == TABQ_MANIFEST_MAX_SCHEMES)
      return fail(why, cap, line, "more than %d schemes", TABQ_MANIFEST_MAX_SCHEMES);
    memcpy(m->schemes[m->nschemes++], scheme, n + 1);
    while (i < len && is_blank(v[i]))
      i++;
  }
  return true;
}

static bool parse_number(const char **p, const char *end, unsigned long *out) {
  const char *s = *p;
  unsigned long v = 0;
  while (*p < end && **p >= '0' && **p <= '9' && *p - s < 5)
    v = v * 10 + (unsigned long)(*(*p)++ - '0');
  *out = v;
  return *p > s && v <= 0xffff;
}

static bool parse_abi(const char *v, size_t len, tabq_manifest *m, char *why, size_t cap,
                      unsigned line) {
  const char *p = v, *end = v + len;
  unsigned long major, minor;
  if (!parse_number(&p, end, &major) || p == end || *p++ != '.' || !parse_number(&p, end, &minor) ||
      p != end || !major)
    return fail(why, cap, line, "abi must be MAJOR.MINOR (like 1.1), not '%.*s'", (int)len, v);
  m->abi = (uint32_t)(major << 16 | minor);
  return true;
}

typedef bool (*value_fn)(const char *v, size_t len, tabq_manifest *m, char *why, size_t cap,
                         unsigned line);
static const struct {
  const char *key;
  value_fn parse;
} keys[] = {{"file", parse_file}, {"schemes", parse_schemes}, {"abi", parse_abi}};
#define NKEYS (sizeof keys / sizeof keys[0])

/* One "key = value" line; `seen` marks the keys read so far. */
static bool parse_line(const char *s, size_t len, unsigned line, tabq_manifest *m, bool *seen,
                       char *why, size_t cap) {
  size_t k = 0;
  while (k < len && ((s[k] >= 'a' && s[k] <= 'z') || s[k] == '_'))
    k++;
  size_t eq = k;
  while (eq < len && is_blank(s[eq]))
    eq++;
  if (!k || eq == len || s[eq] != '=')
    return fail(why, cap, line, "expected 'key = value', found '%.*s'", (int)len, s);
  size_t v = eq + 1, end = len;
  while (v < end && is_blank(s[v]))
    v++;
  while (end > v && is_blank(s[end - 1]))
    end--;
  for (size_t i = 0; i < NKEYS; i++) {
    if (strlen(keys[i].key) != k || memcmp(keys[i].key, s, k))
      continue;
    if (seen[i])
      return fail(why, cap, line, "'%s' is given twice", keys[i].key);
    if (v == end)
      return fail(why, cap, line, "'%s' has no value", keys[i].key);
    seen[i] = true;
    return keys[i].parse(s + v, end - v, m, why, cap, line);
  }
  return fail(why, cap, line, "unknown key '%.*s' (the keys are file, schemes and abi)", (int)k, s);
}

bool tabq__manifest_parse(const char *text, size_t len, tabq_manifest *m, char *why, size_t cap) {
  memset(m, 0, sizeof *m);
  bool seen[NKEYS] = {false};
  unsigned line = 0;
  for (size_t i = 0; i < len;) {
    line++;
    const char *nl = memchr(text + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
    const char *s = text + i;
    i += n + (nl ? 1 : 0);
    for (size_t j = 0; j < n; j++)
      if ((unsigned char)s[j] < 0x20 && s[j] != '\t')
        return fail(why, cap, line, "control character 0x%02x", (unsigned char)s[j]);
    size_t lead = 0;
    while (lead < n && is_blank(s[lead]))
      lead++;
    if (lead == n || s[lead] == '#')
      continue;
    if (lead)
      return fail(why, cap, line, "a line must not begin with blanks");
    if (!parse_line(s, n, line, m, seen, why, cap))
      return false;
  }
  for (size_t i = 0; i < NKEYS; i++)
    if (!seen[i])
      return fail(why, cap, 0, "'%s' is missing", keys[i].key);
  return true;
}

int tabq__manifest_read(const char *path, tabq_manifest *m, tabq_error *err) {
  /* Not blocking: a FIFO named like a manifest must not hang the connect. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "cannot read plugin manifest %s: %s", path,
                         strerror(errno));
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin manifest %s is not a regular file; remove it", path);
  }
  char text[TABQ_MANIFEST_MAX_BYTES + 1];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof text && (n = read(fd, text + len, sizeof text - len)) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "cannot read plugin manifest %s: %s", path,
                           strerror(e));
    }
    len += (size_t)n;
  }
  close(fd);
  if (len > TABQ_MANIFEST_MAX_BYTES)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin manifest %s is larger than %d bytes; it is no manifest", path,
                         TABQ_MANIFEST_MAX_BYTES);
  char why[256];
  if (!tabq__manifest_parse(text, len, m, why, sizeof why))
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "plugin manifest %s: %s; fix or remove it",
                         path, why);
  return TABQ_OK;
}
