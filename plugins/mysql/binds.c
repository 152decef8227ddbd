/* tabq — the MySQL driver's binary protocol codec (see binds.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "binds.h"
#include "mysql_plugin.h"

#define US_PER_SEC INT64_C(1000000)
#define SEC_PER_DAY INT64_C(86400)
#define CHARSET_BINARY 63 /* the charsetnr of binary strings and blobs */
#define MIN_COL_BUF 64    /* room for a TIME's text, whose max_length the library understates */

static const tabq_host *host(void) {
  return tabq_my_host();
}

/* ---- Times ---------------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date, counting in 400-year eras so that the
 * arithmetic stays on non-negative numbers inside an era. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

bool tabq_my_time_from_us(int64_t us, MYSQL_TIME *t) {
  int64_t secs = us / US_PER_SEC, frac = us % US_PER_SEC;
  if (frac < 0) { /* floor, for instants before 1970 */
    frac += US_PER_SEC;
    secs--;
  }
  int64_t days = secs / SEC_PER_DAY, tod = secs % SEC_PER_DAY;
  if (tod < 0) {
    tod += SEC_PER_DAY;
    days--;
  }
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  if (y < 1 || y > 9999) /* DATETIME's range */
    return false;
  memset(t, 0, sizeof *t);
  t->year = (unsigned)y;
  t->month = m;
  t->day = d;
  t->hour = (unsigned)(tod / 3600);
  t->minute = (unsigned)(tod / 60 % 60);
  t->second = (unsigned)(tod % 60);
  t->second_part = (unsigned long)frac;
  t->time_type = MYSQL_TIMESTAMP_DATETIME;
  return true;
}

bool tabq_my_us_from_time(const MYSQL_TIME *t, int64_t *us) {
  /* A zero date ('0000-00-00') or one with a zero part names no instant. */
  if (t->month < 1 || t->month > 12 || t->day < 1 || t->day > 31 || t->year > 9999 ||
      t->hour > 23 || t->minute > 59 || t->second > 59 || t->second_part >= 1000000)
    return false;
  int64_t days = days_from_civil(t->year, t->month, t->day);
  int64_t secs = days * SEC_PER_DAY + t->hour * 3600 + t->minute * 60 + t->second;
  *us = secs * US_PER_SEC + (int64_t)t->second_part;
  return true;
}

/* ---- Parameters ----------------------------------------------------------------------------- */

/* libmariadb sends a parameter whose buffer is NULL as SQL NULL: an empty value points here. */
static char empty_value[1];

int tabq_my_bind_param(const tabq_value *v, MYSQL_BIND *b, tabq_my_param *slot, const char *name,
                       unsigned pos) {
  memset(b, 0, sizeof *b);
  slot->is_null = 0;
  slot->length = 0;
  b->is_null = &slot->is_null;
  b->length = &slot->length;
  switch (v->type) {
  case TABQ_T_NULL:
    b->buffer_type = MYSQL_TYPE_NULL;
    slot->is_null = 1;
    return TABQ_OK;
  case TABQ_T_INT:
    slot->u.i = v->u.i;
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = &slot->u.i;
    return TABQ_OK;
  case TABQ_T_REAL:
    slot->u.d = v->u.r;
    b->buffer_type = MYSQL_TYPE_DOUBLE;
    b->buffer = &slot->u.d;
    return TABQ_OK;
  case TABQ_T_TEXT:
  case TABQ_T_JSON:
  case TABQ_T_BYTES:
    if (v->u.buf.len > 0 && !v->u.buf.ptr)
      return host()->fail(TABQ_INVALID, NULL, 0,
                          "%s statement: parameter %u has a length but no data", name, pos);
    if (v->u.buf.len > ULONG_MAX)
      return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: parameter %u is too long", name,
                          pos);
    /* Bytes go as a blob (the binary character set), text as a string in utf8mb4. */
    b->buffer_type = v->type == TABQ_T_BYTES ? MYSQL_TYPE_BLOB : MYSQL_TYPE_STRING;
    b->buffer = v->u.buf.len > 0 ? (void *)v->u.buf.ptr : empty_value;
    b->buffer_length = (unsigned long)v->u.buf.len;
    slot->length = (unsigned long)v->u.buf.len;
    return TABQ_OK;
  case TABQ_T_TIME:
    /* As given, microseconds included: whole seconds are the dialect's choice. */
    if (!tabq_my_time_from_us(v->u.time_us, &slot->u.t))
      return host()->fail(TABQ_INVALID, NULL, 0,
                          "%s statement: parameter %u (%" PRId64
                          " us since 1970) is outside DATETIME's years 1 to 9999",
                          name, pos, v->u.time_us);
    b->buffer_type = MYSQL_TYPE_DATETIME;
    b->buffer = &slot->u.t;
    return TABQ_OK;
  case TABQ_T_INT_LIST: {
    /* As a JSON array, which the statement reads with JSON_TABLE. 21 characters hold any
     * integer with its separator; the buffer is kept for the next execution. */
    size_t need = 3 + v->u.list.count * 21;
    if (need > slot->list_cap) {
      char *grown = host()->realloc(slot->list, need);
      if (!grown)
        return host()->fail(TABQ_NOMEM, NULL, 0, "%s statement: no memory for parameter %u", name,
                            pos);
      slot->list = grown;
      slot->list_cap = need;
    }
    size_t n = 0;
    slot->list[n++] = '[';
    for (size_t i = 0; i < v->u.list.count; i++)
      n += (size_t)snprintf(slot->list + n, slot->list_cap - n, "%s%" PRId64, i ? "," : "",
                            v->u.list.items[i]);
    slot->list[n++] = ']';
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = slot->list;
    b->buffer_length = (unsigned long)n;
    slot->length = (unsigned long)n;
    return TABQ_OK;
  }
  }
  return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: parameter %u has unknown type %d", name,
                      pos, (int)v->type);
}

/* ---- Columns -------------------------------------------------------------------------------- */

static int grow(tabq_my_col *col, size_t need, const char *name, unsigned index) {
  if (need <= col->cap)
    return TABQ_OK;
  size_t cap = col->cap * 2 > need ? col->cap * 2 : need;
  char *buf = host()->realloc(col->buf, cap);
  if (!buf)
    return host()->fail(TABQ_NOMEM, NULL, 0, "%s statement: no memory for column %u (%zu bytes)",
                        name, index, cap);
  col->buf = buf;
  col->cap = cap;
  return TABQ_OK;
}

/* MySQL 8 names JSON by type; MariaDB sends JSON as LONGTEXT, marked with the format "json"
 * in its extended metadata. */
static bool is_json(const MYSQL_FIELD *f) {
  if (f->type == MYSQL_TYPE_JSON)
    return true;
  MARIADB_CONST_STRING attr = {0};
  return mariadb_field_attr(&attr, f, MARIADB_FIELD_ATTR_FORMAT_NAME) == 0 && attr.str &&
         attr.length == 4 && strncmp(attr.str, "json", 4) == 0;
}

static tabq_my_reader string_reader(const MYSQL_FIELD *f) {
  switch (f->type) {
  case MYSQL_TYPE_DECIMAL:
  case MYSQL_TYPE_NEWDECIMAL:
  case MYSQL_TYPE_TIME: /* a duration, as the library formats it */
    return TABQ_MY_R_TEXT;
  default:
    break;
  }
  if (is_json(f))
    return TABQ_MY_R_JSON;
  return f->charsetnr == CHARSET_BINARY ? TABQ_MY_R_BYTES : TABQ_MY_R_TEXT;
}

int tabq_my_bind_col(const MYSQL_FIELD *f, MYSQL_BIND *b, tabq_my_col *col, const char *name,
                     unsigned index) {
  memset(b, 0, sizeof *b);
  b->is_null = &col->is_null;
  b->length = &col->length;
  b->error = &col->error;
  col->field_type = (unsigned)f->type;
  switch (f->type) {
  case MYSQL_TYPE_NULL:
    col->reader = TABQ_MY_R_NULL;
    b->buffer_type = MYSQL_TYPE_NULL;
    return TABQ_OK;
  case MYSQL_TYPE_TINY:
  case MYSQL_TYPE_SHORT:
  case MYSQL_TYPE_INT24:
  case MYSQL_TYPE_LONG:
  case MYSQL_TYPE_LONGLONG:
  case MYSQL_TYPE_YEAR:
    /* The library widens every integer into a 64-bit buffer of the field's signedness. */
    col->reader = f->flags & UNSIGNED_FLAG ? TABQ_MY_R_UINT : TABQ_MY_R_INT;
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->is_unsigned = (f->flags & UNSIGNED_FLAG) != 0;
    b->buffer = &col->u.i;
    b->buffer_length = sizeof col->u.i;
    return TABQ_OK;
  case MYSQL_TYPE_FLOAT:
    col->reader = TABQ_MY_R_FLOAT;
    b->buffer_type = MYSQL_TYPE_FLOAT;
    b->buffer = &col->u.f;
    b->buffer_length = sizeof col->u.f;
    return TABQ_OK;
  case MYSQL_TYPE_DOUBLE:
    col->reader = TABQ_MY_R_DOUBLE;
    b->buffer_type = MYSQL_TYPE_DOUBLE;
    b->buffer = &col->u.d;
    b->buffer_length = sizeof col->u.d;
    return TABQ_OK;
  case MYSQL_TYPE_DATE:
  case MYSQL_TYPE_DATETIME:
  case MYSQL_TYPE_TIMESTAMP:
    col->reader = TABQ_MY_R_TIME;
    b->buffer_type = MYSQL_TYPE_DATETIME;
    b->buffer = &col->u.t;
    b->buffer_length = sizeof col->u.t;
    return TABQ_OK;
  case MYSQL_TYPE_BIT:
    col->reader = TABQ_MY_R_BIT;
    break;
  default:
    col->reader = string_reader(f);
    break;
  }
  /* Strings, blobs, decimals and bits: raw bytes into a buffer as long as the longest value. */
  size_t need = (size_t)f->max_length + 1;
  int rc = grow(col, need < MIN_COL_BUF ? MIN_COL_BUF : need, name, index);
  if (rc != TABQ_OK)
    return rc;
  b->buffer_type = MYSQL_TYPE_BLOB;
  b->buffer = col->buf;
  b->buffer_length = (unsigned long)col->cap;
  return TABQ_OK;
}

int tabq_my_cell(tabq_my_col *col, tabq_value *out, const char *name, unsigned index) {
  if (col->is_null || col->reader == TABQ_MY_R_NULL) {
    *out = tabq_null();
    return TABQ_OK;
  }
  switch (col->reader) {
  case TABQ_MY_R_INT:
    *out = tabq_int(col->u.i);
    return TABQ_OK;
  case TABQ_MY_R_UINT:
    if ((uint64_t)col->u.i > (uint64_t)INT64_MAX)
      return host()->fail(TABQ_INVALID, NULL, 0,
                          "%s statement: column %u holds %" PRIu64
                          ", beyond a signed 64-bit integer",
                          name, index, (uint64_t)col->u.i);
    *out = tabq_int(col->u.i);
    return TABQ_OK;
  case TABQ_MY_R_BIT: {
    /* BIT(n) comes as big-endian bytes. */
    uint64_t v = 0;
    for (unsigned long i = 0; i < col->length && i < col->cap; i++)
      v = v << 8 | (unsigned char)col->buf[i];
    if (col->length > 8 || v > (uint64_t)INT64_MAX)
      return host()->fail(TABQ_INVALID, NULL, 0,
                          "%s statement: column %u is a BIT value beyond a signed 64-bit integer",
                          name, index);
    *out = tabq_int((int64_t)v);
    return TABQ_OK;
  }
  case TABQ_MY_R_TIME: {
    int64_t us;
    if (!tabq_my_us_from_time(&col->u.t, &us))
      return host()->fail(TABQ_INVALID, NULL, 0,
                          "%s statement: column %u holds %04u-%02u-%02u, which names no instant",
                          name, index, col->u.t.year, col->u.t.month, col->u.t.day);
    *out = tabq_time(us);
    return TABQ_OK;
  }
  case TABQ_MY_R_FLOAT:
    *out = tabq_real(col->u.f);
    return TABQ_OK;
  case TABQ_MY_R_DOUBLE:
    *out = tabq_real(col->u.d);
    return TABQ_OK;
  case TABQ_MY_R_TEXT:
  case TABQ_MY_R_BYTES:
  case TABQ_MY_R_JSON:
    if (col->length > col->cap)
      return host()->fail(TABQ_BACKEND, NULL, 0,
                          "%s statement: column %u was cut short (%lu bytes into %zu)", name, index,
                          col->length, col->cap);
    out->type = col->reader == TABQ_MY_R_TEXT    ? TABQ_T_TEXT
                : col->reader == TABQ_MY_R_BYTES ? TABQ_T_BYTES
                                                 : TABQ_T_JSON;
    out->u.buf.ptr = col->buf;
    out->u.buf.len = col->length;
    return TABQ_OK;
  case TABQ_MY_R_NULL:
    break;
  }
  return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: column %u has field type %u, not read",
                      name, index, col->field_type);
}

void tabq_my_col_free(tabq_my_col *col) {
  if (col->buf)
    host()->free(col->buf);
  col->buf = NULL;
  col->cap = 0;
}
