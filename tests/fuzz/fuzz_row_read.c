/* tabq — fuzz target: the row mode decoder (core/src/row_read.c through tabq__decode_gate): each
 * data column read as the type its description declares, from the cells a driver gives.
 *
 * The input is lines. The first declares the data columns, a letter each (at most 6): i integer,
 * r real, t text, b bytes, m time, j JSON, n any. Each line after it is one cell as the driver
 * reads it, the id's first, then the data columns': its type letter (n: NULL), then its value
 * (i: decimal, r: a C double, m: microseconds; t, b, j: the bytes). A missing cell is NULL. A
 * row the gate lets through holds its declared types. */
#include <string.h>

#include "fuzz_delivery.h"

static int type_of(char c) {
  switch (c) {
  case 'i':
    return TABQ_T_INT;
  case 'r':
    return TABQ_T_REAL;
  case 't':
    return TABQ_T_TEXT;
  case 'b':
    return TABQ_T_BYTES;
  case 'm':
    return TABQ_T_TIME;
  case 'j':
    return TABQ_T_JSON;
  default:
    return TABQ_T_NULL;
  }
}

/* One cell from its line (a NUL-terminated copy, kept alive until the fill copies it). */
static tabq_value cell_of(const char *line, size_t len) {
  if (!len)
    return tabq_null();
  int type = type_of(line[0]);
  const char *v = line + 1;
  switch (type) {
  case TABQ_T_INT:
    return tabq_int(strtoll(v, NULL, 10));
  case TABQ_T_REAL:
    return tabq_real(strtod(v, NULL));
  case TABQ_T_TIME:
    return tabq_time(strtoll(v, NULL, 10));
  case TABQ_T_NULL:
    return tabq_null();
  default: {
    tabq_value c;
    c.type = (tabq_type)type;
    c.u.buf.ptr = v;
    c.u.buf.len = len - 1;
    return c;
  }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  const char *end = text + size;
  const char *nl = memchr(text, '\n', size);
  size_t decl = nl ? (size_t)(nl - text) : size;
  tabq_col cols[6];
  char names[6][8];
  size_t ndata = 0;
  for (size_t i = 0; i < decl && ndata < 6; i++) {
    snprintf(names[ndata], sizeof names[ndata], "c%zu", ndata);
    cols[ndata] = (tabq_col){.name = names[ndata], .type = type_of(text[i])};
    ndata++;
  }
  if (!ndata) {
    free(text);
    return 0;
  }
  tabq_table t = {.size = sizeof t,
                  .name = "rows",
                  .id = {.name = "id"},
                  .attempt = {.name = "attempt"},
                  .retry_after = {.name = "retry_after"},
                  .data = cols,
                  .ndata = ndata};
  tabq_subscription_options o = {.size = sizeof o};
  fuzz_delivery f;
  if (!fuzz_delivery_open(&f, &t, &o))
    abort();
  /* The cells: the id, the attempt, then the data columns, a line each. */
  const char *p = nl ? nl + 1 : end;
  for (unsigned col = 0; col < f.s->proj.ncols; col++) {
    if (col == (unsigned)f.s->proj.attempt) {
      f.cells[col] = tabq_int(1);
      continue;
    }
    const char *e = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    size_t len = p < end ? (e ? (size_t)(e - p) : (size_t)(end - p)) : 0;
    if (p < end)
      text[(p - text) + len] = '\0'; /* the line's value as a C string, for strtoll */
    f.cells[col] = cell_of(p, len);
    p = e ? e + 1 : end;
  }
  if (f.cells[f.s->proj.id].type == TABQ_T_NULL)
    f.cells[f.s->proj.id] = tabq_int(7);
  fuzz_delivery_fill(&f);
  tabq_outcome policy;
  if (tabq__decode_gate(&f.d, &policy)) {
    for (size_t i = 0; i < ndata; i++) {
      const tabq_value *v = &f.d.cells[f.s->proj.data0 + (int)i];
      const tabq_value *given = &f.cells[f.s->proj.data0 + (int)i];
      FUZZ_CHECK(v->type == TABQ_T_NULL || cols[i].type == TABQ_T_NULL ||
                     (int)v->type == cols[i].type,
                 "column %zu declared %d holds %d", i, cols[i].type, (int)v->type);
      /* A time read from text had the format's digits: "YYYY-MM-DD HH:MM:SS". */
      if (cols[i].type == TABQ_T_TIME && given->type == TABQ_T_TEXT) {
        const char *g = given->u.buf.ptr;
        for (size_t k = 0; k < 19; k++)
          FUZZ_CHECK(k == 4 || k == 7 || k == 10 || k == 13 || k == 16 ||
                         (g[k] >= '0' && g[k] <= '9'),
                     "the time '%.*s' was read", (int)given->u.buf.len, g);
      }
    }
  }
  fuzz_delivery_end(&f);
  fuzz_delivery_close(&f);
  free(text);
  return 0;
}
