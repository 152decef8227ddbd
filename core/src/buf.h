/* A growable byte buffer, reused from one use to the next: the core's one copy of a row, keys,
 * rendered headers. */
#ifndef TABQ_BUF_H
#define TABQ_BUF_H

#include <stddef.h>

typedef struct tabq_buf {
  char *p;
  size_t len, cap;
} tabq_buf;

/* Room for n bytes (len unchanged): TABQ_OK, or TABQ_NOMEM with the buffer as it was. */
int tabq__buf_reserve(tabq_buf *b, size_t n);
void tabq__buf_free(tabq_buf *b);

#endif
