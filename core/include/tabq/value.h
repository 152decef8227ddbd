/* tabq — typed values, as bound to statement parameters and read from result cells.
 *
 * A value never owns memory: text and bytes point into a buffer that belongs to whoever made the
 * value (the caller for parameters, the driver for cells, valid until the statement's next step
 * or reset). */
#ifndef TABQ_VALUE_H
#define TABQ_VALUE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tabq_type {
  TABQ_T_NULL = 0,
  TABQ_T_INT,      /* u.i */
  TABQ_T_TEXT,     /* u.buf: UTF-8, not NUL-terminated */
  TABQ_T_BYTES,    /* u.buf */
  TABQ_T_TIME,     /* u.time_us: microseconds since 1970-01-01 00:00:00 UTC */
  TABQ_T_JSON,     /* u.buf: JSON text */
  TABQ_T_INT_LIST, /* u.list: a list of integers (ids: a fetch, ack_ids, stamp_ids) */
  /* ---- ABI 1.5 ---- */
  TABQ_T_REAL, /* u.r: a double; plugins before ABI 1.5 read floats as their text instead */
} tabq_type;

typedef struct tabq_value {
  tabq_type type;
  union {
    int64_t i;
    int64_t time_us;
    double r;
    struct {
      const void *ptr;
      size_t len;
    } buf;
    struct {
      const int64_t *items;
      size_t count;
    } list;
  } u;
} tabq_value;

/* Constructors, written with assignments so the header compiles as C and as C++. */
static inline tabq_value tabq_null(void) {
  tabq_value v;
  v.type = TABQ_T_NULL;
  v.u.i = 0;
  return v;
}
static inline tabq_value tabq_int(int64_t i) {
  tabq_value v;
  v.type = TABQ_T_INT;
  v.u.i = i;
  return v;
}
static inline tabq_value tabq_real(double r) {
  tabq_value v;
  v.type = TABQ_T_REAL;
  v.u.r = r;
  return v;
}
static inline tabq_value tabq_time(int64_t time_us) {
  tabq_value v;
  v.type = TABQ_T_TIME;
  v.u.time_us = time_us;
  return v;
}
static inline tabq_value tabq_text(const char *p, size_t len) {
  tabq_value v;
  v.type = TABQ_T_TEXT;
  v.u.buf.ptr = p;
  v.u.buf.len = len;
  return v;
}
static inline tabq_value tabq_bytes(const void *p, size_t len) {
  tabq_value v;
  v.type = TABQ_T_BYTES;
  v.u.buf.ptr = p;
  v.u.buf.len = len;
  return v;
}

#ifdef __cplusplus
}
#endif

#endif
