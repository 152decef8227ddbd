/* Growable byte buffers: doubled from 64 bytes, never shrunk, so steady use allocates nothing. */
#include "buf.h"

#include <stdlib.h>
#include <tabq/codes.h>

int tabq__buf_reserve(tabq_buf *b, size_t n) {
  if (n <= b->cap)
    return TABQ_OK;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < n)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p)
    return TABQ_NOMEM;
  b->p = p;
  b->cap = cap;
  return TABQ_OK;
}

void tabq__buf_free(tabq_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
