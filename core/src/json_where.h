/* Where a value sits in JSON text: jansson's values carry no position, so a refusal of a
 * description file finds its line and column by walking the text along the value's path. */
#ifndef TABQ_JSON_WHERE_H
#define TABQ_JSON_WHERE_H

#include <stddef.h>

/* One step of a path: an object's member (`key`), or an array's element (`key` NULL). */
typedef struct tabq_json_step {
  const char *key;
  size_t index;
} tabq_json_step;

/* The line and column (from 1; the column counts characters) where the value at `path` begins
 * in `text`, which must be JSON that parsed. A path that goes past what the text holds stops at
 * the deepest value it reached: a missing member points at its object. */
void tabq__json_where(const char *text, size_t len, const tabq_json_step *path, size_t depth,
                      int *line, int *column);

#endif
