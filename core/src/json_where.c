#include "json_where.h"

#include <stdbool.h>
#include <string.h>

typedef struct scan {
  const char *s;
  size_t len;
} scan;

static size_t skip_space(const scan *t, size_t i) {
  while (i < t->len && strchr(" \t\r\n", t->s[i]) && t->s[i])
    i++;
  return i;
}

/* At the opening quote: past the closing one. */
static size_t skip_string(const scan *t, size_t i) {
  for (i++; i < t->len && t->s[i] != '"'; i++)
    if (t->s[i] == '\\')
      i++;
  return i + 1;
}

static size_t skip_value(const scan *t, size_t i) {
  if (i >= t->len)
    return i;
  if (t->s[i] == '"')
    return skip_string(t, i);
  if (t->s[i] != '{' && t->s[i] != '[') {
    while (i < t->len && !strchr(",}] \t\r\n", t->s[i]))
      i++;
    return i;
  }
  int depth = 0;
  for (; i < t->len; i++) {
    char c = t->s[i];
    if (c == '"')
      i = skip_string(t, i) - 1;
    else if (c == '{' || c == '[')
      depth++;
    else if ((c == '}' || c == ']') && --depth == 0)
      return i + 1;
  }
  return i;
}

/* The key at `i` (its opening quote) equals `key`, compared as written (keys with escapes do
 * not match; a description's members have none). */
static bool key_is(const scan *t, size_t i, const char *key) {
  size_t n = strlen(key);
  return i + n + 1 < t->len && !memcmp(t->s + i + 1, key, n) && t->s[i + 1 + n] == '"';
}

/* The start of the member or element `step` of the container at `at`, or `at` itself. */
static size_t child(const scan *t, size_t at, const tabq_json_step *step) {
  if (at >= t->len || (t->s[at] != '{' && t->s[at] != '[') || (t->s[at] == '{') != !!step->key)
    return at;
  size_t i = skip_space(t, at + 1);
  for (size_t n = 0; i < t->len && t->s[i] != '}' && t->s[i] != ']'; n++) {
    size_t value = i;
    bool found = step->key ? key_is(t, i, step->key) : n == step->index;
    if (step->key) {
      i = skip_space(t, skip_string(t, i));
      value = skip_space(t, i + 1); /* past the ':' */
    }
    if (found)
      return value;
    i = skip_space(t, skip_value(t, value));
    if (i < t->len && t->s[i] == ',')
      i = skip_space(t, i + 1);
  }
  return at;
}

void tabq__json_where(const char *text, size_t len, const tabq_json_step *path, size_t depth,
                      int *line, int *column) {
  scan t = {text, len};
  size_t at = skip_space(&t, 0);
  for (size_t d = 0; d < depth; d++) {
    size_t next = child(&t, at, &path[d]);
    if (next == at)
      break;
    at = next;
  }
  *line = 1;
  *column = 1;
  for (size_t i = 0; i < at && i < len; i++) {
    if (text[i] == '\n') {
      ++*line;
      *column = 1;
    } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
      ++*column;
    }
  }
}
