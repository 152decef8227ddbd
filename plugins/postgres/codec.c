/* tabq — the PostgreSQL driver's binary codec (see codec.h).
 *
 * Every value travels in PostgreSQL's binary format: integers big-endian, text and bytea as their
 * raw bytes, timestamps as int64 microseconds since 2000-01-01, jsonb as a version byte then the
 * text, arrays as a header then length-prefixed elements. So nothing is quoted or escaped. */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "postgres_plugin.h"

/* 2000-01-01 00:00:00 UTC (PostgreSQL's epoch) in microseconds since 1970-01-01. */
#define PG_EPOCH_US INT64_C(946684800000000)
#define JSONB_VERSION 1
#define ARRAY_HEADER 20 /* ndim, has-nulls flag, element OID, then one dimension and its base */

static const tabq_host *host(void) {
  return tabq_pg_host();
}

/* ---- Big-endian integers ------------------------------------------------------------------ */

static void put_u16(char *p, uint16_t v) {
  p[0] = (char)(v >> 8);
  p[1] = (char)v;
}

static void put_u32(char *p, uint32_t v) {
  for (int i = 3; i >= 0; i--, v >>= 8)
    p[i] = (char)(v & 0xffu);
}

static void put_u64(char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (char)(v & 0xffu);
}

static uint64_t get_be(const char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | (unsigned char)p[i];
  return v;
}

/* ---- Names for messages ------------------------------------------------------------------- */

const char *tabq_pg_type_name(Oid type, char buf[24]) {
  switch (type) {
  case TABQ_PG_BOOL:
    return "bool";
  case TABQ_PG_BYTEA:
    return "bytea";
  case TABQ_PG_NAME:
    return "name";
  case TABQ_PG_INT8:
    return "int8";
  case TABQ_PG_INT2:
    return "int2";
  case TABQ_PG_INT4:
    return "int4";
  case TABQ_PG_TEXT:
    return "text";
  case TABQ_PG_OID:
    return "oid";
  case TABQ_PG_JSON:
    return "json";
  case TABQ_PG_FLOAT4:
    return "float4";
  case TABQ_PG_FLOAT8:
    return "float8";
  case TABQ_PG_UNKNOWN:
    return "unknown";
  case TABQ_PG_INT4_ARRAY:
    return "int4[]";
  case TABQ_PG_INT8_ARRAY:
    return "int8[]";
  case TABQ_PG_BPCHAR:
    return "bpchar";
  case TABQ_PG_VARCHAR:
    return "varchar";
  case TABQ_PG_TIMESTAMP:
    return "timestamp";
  case TABQ_PG_TIMESTAMPTZ:
    return "timestamptz";
  case TABQ_PG_JSONB:
    return "jsonb";
  default:
    snprintf(buf, 24, "type OID %u", (unsigned)type);
    return buf;
  }
}

static const char *value_kind(tabq_type t) {
  static const char *const names[] = {"NULL", "integer", "text",         "bytes",
                                      "time", "JSON",    "integer list", "real"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* ---- Encoding ----------------------------------------------------------------------------- */

void tabq_pg_slot_free(tabq_pg_slot *slot) {
  if (slot->heap)
    host()->free(slot->heap);
  slot->heap = NULL;
  slot->cap = 0;
}

/* Room for `n` bytes; grows in powers of two so a slowly growing value reallocates rarely. */
static int slot_reserve(tabq_pg_slot *slot, size_t n, const char *stmt, unsigned at) {
  if (n <= slot->cap)
    return TABQ_OK;
  size_t cap = slot->cap ? slot->cap : 64;
  while (cap < n)
    cap *= 2;
  char *grown = host()->realloc(slot->heap, cap);
  if (!grown)
    return host()->fail(TABQ_NOMEM, NULL, 0, "%s statement: no memory to encode placeholder $%u",
                        stmt, at);
  slot->heap = grown;
  slot->cap = cap;
  return TABQ_OK;
}

static int mismatch(const tabq_value *v, Oid type, const char *stmt, unsigned at) {
  char buf[24];
  return host()->fail(TABQ_INVALID, NULL, 0,
                      "%s statement: placeholder $%u is %s; a %s value does not fit it", stmt, at,
                      tabq_pg_type_name(type, buf), value_kind(v->type));
}

static int out_of_range(int64_t i, Oid type, const char *stmt, unsigned at) {
  char buf[24];
  return host()->fail(TABQ_INVALID, NULL, 0,
                      "%s statement: placeholder $%u is %s; %" PRId64 " is out of its range", stmt,
                      at, tabq_pg_type_name(type, buf), i);
}

static int too_long(size_t n, const char *what, const char *stmt, unsigned at) {
  return host()->fail(TABQ_INVALID, NULL, 0,
                      "%s statement: placeholder $%u holds %zu %s, more than libpq sends", stmt, at,
                      n, what);
}

/* A buffer value as is: binary text, json and bytea are their bytes. */
static int encode_buf(const tabq_value *v, const char **data, int *len, const char *stmt,
                      unsigned at) {
  if (!v->u.buf.ptr && v->u.buf.len > 0)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: placeholder $%u has no bytes", stmt,
                        at);
  if (v->u.buf.len > INT_MAX)
    return too_long(v->u.buf.len, "bytes", stmt, at);
  /* A NULL pointer would send SQL NULL: empty text and bytes stay empty values. */
  *data = v->u.buf.ptr ? v->u.buf.ptr : "";
  *len = (int)v->u.buf.len;
  return TABQ_OK;
}

static int encode_int(const tabq_value *v, Oid type, tabq_pg_slot *slot, const char **data,
                      int *len, const char *stmt, unsigned at) {
  int64_t i = v->u.i;
  switch (type) {
  case TABQ_PG_INT2:
    if (i < INT16_MIN || i > INT16_MAX)
      return out_of_range(i, type, stmt, at);
    put_u16(slot->fixed, (uint16_t)(int16_t)i);
    *len = 2;
    break;
  case TABQ_PG_INT4:
    if (i < INT32_MIN || i > INT32_MAX)
      return out_of_range(i, type, stmt, at);
    put_u32(slot->fixed, (uint32_t)(int32_t)i);
    *len = 4;
    break;
  case TABQ_PG_OID:
    if (i < 0 || i > UINT32_MAX)
      return out_of_range(i, type, stmt, at);
    put_u32(slot->fixed, (uint32_t)i);
    *len = 4;
    break;
  case TABQ_PG_BOOL:
    if (i != 0 && i != 1)
      return out_of_range(i, type, stmt, at);
    slot->fixed[0] = (char)i;
    *len = 1;
    break;
  default:
    put_u64(slot->fixed, (uint64_t)i);
    *len = 8;
    break;
  }
  *data = slot->fixed;
  return TABQ_OK;
}

/* A real, or an integer, as float4 or float8 in network order. */
static int encode_float(const tabq_value *v, Oid type, tabq_pg_slot *slot, const char **data,
                        int *len) {
  double d = v->type == TABQ_T_REAL ? v->u.r : (double)v->u.i;
  if (type == TABQ_PG_FLOAT4) {
    float f = (float)d;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_u32(slot->fixed, bits);
    *len = 4;
  } else {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put_u64(slot->fixed, bits);
    *len = 8;
  }
  *data = slot->fixed;
  return TABQ_OK;
}

static int encode_time(const tabq_value *v, Oid type, tabq_pg_slot *slot, const char **data,
                       int *len, const char *stmt, unsigned at) {
  int64_t pg;
  if (__builtin_sub_overflow(v->u.time_us, PG_EPOCH_US, &pg)) {
    char buf[24];
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "%s statement: placeholder $%u is %s; time %" PRId64
                        " us is out of its range",
                        stmt, at, tabq_pg_type_name(type, buf), v->u.time_us);
  }
  put_u64(slot->fixed, (uint64_t)pg);
  *data = slot->fixed;
  *len = 8;
  return TABQ_OK;
}

static int encode_jsonb(const tabq_value *v, tabq_pg_slot *slot, const char **data, int *len,
                        const char *stmt, unsigned at) {
  const char *text;
  int n;
  if (v->u.buf.len > (size_t)INT_MAX - 1) /* the version byte must fit too */
    return too_long(v->u.buf.len, "bytes", stmt, at);
  int code = encode_buf(v, &text, &n, stmt, at);
  if (code == TABQ_OK)
    code = slot_reserve(slot, (size_t)n + 1, stmt, at);
  if (code != TABQ_OK)
    return code;
  slot->heap[0] = JSONB_VERSION;
  memcpy(slot->heap + 1, text, (size_t)n);
  *data = slot->heap;
  *len = n + 1;
  return TABQ_OK;
}

/* A one-dimensional array without NULLs: header, then each element's length and value. */
static int encode_list(const tabq_value *v, Oid type, tabq_pg_slot *slot, const char **data,
                       int *len, const char *stmt, unsigned at) {
  bool wide = type == TABQ_PG_INT8_ARRAY;
  size_t count = v->u.list.count;
  size_t each = 4 + (wide ? 8u : 4u);
  if (count > 0 && !v->u.list.items)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: placeholder $%u has no items", stmt,
                        at);
  if (count > (size_t)(INT_MAX - ARRAY_HEADER) / each)
    return too_long(count, "items", stmt, at);
  size_t n = ARRAY_HEADER + count * each;
  int code = slot_reserve(slot, n, stmt, at);
  if (code != TABQ_OK)
    return code;
  char *p = slot->heap;
  /* An empty array has no dimensions at all. */
  put_u32(p, count ? 1u : 0u);
  put_u32(p + 4, 0);
  put_u32(p + 8, wide ? TABQ_PG_INT8 : TABQ_PG_INT4);
  put_u32(p + 12, (uint32_t)count);
  put_u32(p + 16, 1);
  p += count ? ARRAY_HEADER : 12;
  for (size_t k = 0; k < count; k++) {
    int64_t i = v->u.list.items[k];
    if (wide) {
      put_u32(p, 8);
      put_u64(p + 4, (uint64_t)i);
      p += 12;
    } else {
      if (i < INT32_MIN || i > INT32_MAX)
        return out_of_range(i, TABQ_PG_INT4, stmt, at);
      put_u32(p, 4);
      put_u32(p + 4, (uint32_t)(int32_t)i);
      p += 8;
    }
  }
  *data = slot->heap;
  *len = (int)(p - slot->heap);
  return TABQ_OK;
}

int tabq_pg_encode(const tabq_value *v, Oid type, tabq_pg_slot *slot, const char **data, int *len,
                   const char *stmt, unsigned at) {
  *data = NULL;
  *len = 0;
  if (v->type == TABQ_T_NULL)
    return TABQ_OK;
  switch (type) {
  case TABQ_PG_INT2:
  case TABQ_PG_INT4:
  case TABQ_PG_INT8:
  case TABQ_PG_OID:
  case TABQ_PG_BOOL:
    if (v->type != TABQ_T_INT)
      break;
    return encode_int(v, type, slot, data, len, stmt, at);
  case TABQ_PG_TEXT:
  case TABQ_PG_VARCHAR:
  case TABQ_PG_BPCHAR:
  case TABQ_PG_NAME:
  case TABQ_PG_UNKNOWN:
  case TABQ_PG_JSON:
    if (v->type != TABQ_T_TEXT && v->type != TABQ_T_JSON)
      break;
    return encode_buf(v, data, len, stmt, at);
  case TABQ_PG_BYTEA:
    if (v->type != TABQ_T_BYTES && v->type != TABQ_T_TEXT)
      break;
    return encode_buf(v, data, len, stmt, at);
  case TABQ_PG_TIMESTAMP:
  case TABQ_PG_TIMESTAMPTZ:
    if (v->type != TABQ_T_TIME)
      break;
    return encode_time(v, type, slot, data, len, stmt, at);
  case TABQ_PG_FLOAT4:
  case TABQ_PG_FLOAT8:
    if (v->type != TABQ_T_REAL && v->type != TABQ_T_INT)
      break;
    return encode_float(v, type, slot, data, len);
  case TABQ_PG_JSONB:
    if (v->type != TABQ_T_TEXT && v->type != TABQ_T_JSON)
      break;
    return encode_jsonb(v, slot, data, len, stmt, at);
  case TABQ_PG_INT4_ARRAY:
  case TABQ_PG_INT8_ARRAY:
    if (v->type != TABQ_T_INT_LIST)
      break;
    return encode_list(v, type, slot, data, len, stmt, at);
  default: {
    char buf[24];
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "%s statement: placeholder $%u is %s, which the postgres driver cannot "
                        "bind",
                        stmt, at, tabq_pg_type_name(type, buf));
  }
  }
  return mismatch(v, type, stmt, at);
}

/* ---- Decoding ----------------------------------------------------------------------------- */

static int malformed(Oid type, int len, const char *stmt, unsigned col) {
  char buf[24];
  return host()->fail(TABQ_BACKEND, NULL, 0,
                      "%s statement: column %u (%s) came back with %d bytes, which is no valid "
                      "binary value of its type",
                      stmt, col, tabq_pg_type_name(type, buf), len);
}

static int decode_time(const char *data, int len, Oid type, tabq_value *out, const char *stmt,
                       unsigned col) {
  if (len != 8)
    return malformed(type, len, stmt, col);
  int64_t pg = (int64_t)get_be(data, 8);
  int64_t us;
  /* 'infinity' and '-infinity' are the int64 extremes; keep them there. */
  if (pg == INT64_MAX || pg == INT64_MIN)
    us = pg;
  else if (__builtin_add_overflow(pg, PG_EPOCH_US, &us)) {
    char buf[24];
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "%s statement: column %u (%s) holds a time past what microseconds since "
                        "1970 can hold",
                        stmt, col, tabq_pg_type_name(type, buf));
  }
  *out = tabq_time(us);
  return TABQ_OK;
}

static int decode_float(const char *data, int len, Oid type, tabq_value *out, const char *stmt,
                        unsigned col) {
  if (type == TABQ_PG_FLOAT4 && len == 4) {
    uint32_t bits = (uint32_t)get_be(data, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    *out = tabq_real(f);
  } else if (type == TABQ_PG_FLOAT8 && len == 8) {
    uint64_t bits = get_be(data, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    *out = tabq_real(d);
  } else {
    return malformed(type, len, stmt, col);
  }
  return TABQ_OK;
}

int tabq_pg_decode(const char *data, int len, Oid type, tabq_value *out, const char *stmt,
                   unsigned col) {
  if (!data) {
    *out = tabq_null();
    return TABQ_OK;
  }
  switch (type) {
  case TABQ_PG_INT2:
    if (len != 2)
      return malformed(type, len, stmt, col);
    *out = tabq_int((int16_t)get_be(data, 2));
    return TABQ_OK;
  case TABQ_PG_INT4:
    if (len != 4)
      return malformed(type, len, stmt, col);
    *out = tabq_int((int32_t)get_be(data, 4));
    return TABQ_OK;
  case TABQ_PG_OID:
    if (len != 4)
      return malformed(type, len, stmt, col);
    *out = tabq_int((int64_t)get_be(data, 4));
    return TABQ_OK;
  case TABQ_PG_INT8:
    if (len != 8)
      return malformed(type, len, stmt, col);
    *out = tabq_int((int64_t)get_be(data, 8));
    return TABQ_OK;
  case TABQ_PG_BOOL:
    if (len != 1)
      return malformed(type, len, stmt, col);
    *out = tabq_int(data[0] != 0);
    return TABQ_OK;
  case TABQ_PG_TEXT:
  case TABQ_PG_VARCHAR:
  case TABQ_PG_BPCHAR:
  case TABQ_PG_NAME:
  case TABQ_PG_UNKNOWN:
    *out = tabq_text(data, (size_t)len);
    return TABQ_OK;
  case TABQ_PG_BYTEA:
    *out = tabq_bytes(data, (size_t)len);
    return TABQ_OK;
  case TABQ_PG_JSON:
    *out = (tabq_value){.type = TABQ_T_JSON, .u.buf = {data, (size_t)len}};
    return TABQ_OK;
  case TABQ_PG_JSONB:
    if (len < 1 || data[0] != JSONB_VERSION)
      return malformed(type, len, stmt, col);
    *out = (tabq_value){.type = TABQ_T_JSON, .u.buf = {data + 1, (size_t)len - 1}};
    return TABQ_OK;
  case TABQ_PG_TIMESTAMP:
  case TABQ_PG_TIMESTAMPTZ:
    return decode_time(data, len, type, out, stmt, col);
  case TABQ_PG_FLOAT4:
  case TABQ_PG_FLOAT8:
    return decode_float(data, len, type, out, stmt, col);
  default: {
    char buf[24];
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "%s statement: column %u has %s, which the postgres driver cannot read "
                        "(cast it in the SQL)",
                        stmt, col, tabq_pg_type_name(type, buf));
  }
  }
}
