/* tabq — the PostgreSQL driver's binary codec: tabq values to and from the binary wire format of
 * the types the statements use, chosen by the type OID the server inferred or returned. */
#ifndef TABQ_POSTGRES_CODEC_H
#define TABQ_POSTGRES_CODEC_H

#include <stddef.h>

#include <libpq-fe.h>
#include <tabq/value.h>

/* Built-in type OIDs (src/include/catalog/pg_type.dat); fixed for as long as PostgreSQL has had
 * them, and not installed with libpq's client headers. */
enum {
  TABQ_PG_BOOL = 16,
  TABQ_PG_BYTEA = 17,
  TABQ_PG_NAME = 19,
  TABQ_PG_INT8 = 20,
  TABQ_PG_INT2 = 21,
  TABQ_PG_INT4 = 23,
  TABQ_PG_TEXT = 25,
  TABQ_PG_OID = 26,
  TABQ_PG_JSON = 114,
  TABQ_PG_FLOAT4 = 700,
  TABQ_PG_FLOAT8 = 701,
  TABQ_PG_UNKNOWN = 705,
  TABQ_PG_INT4_ARRAY = 1007,
  TABQ_PG_INT8_ARRAY = 1016,
  TABQ_PG_BPCHAR = 1042,
  TABQ_PG_VARCHAR = 1043,
  TABQ_PG_TIMESTAMP = 1114,
  TABQ_PG_TIMESTAMPTZ = 1184,
  TABQ_PG_JSONB = 3802,
};

/* What one parameter encodes into: small fixed-size values in `fixed`, the rest (jsonb, arrays)
 * in `heap`, grown through the host allocator only when a value is bigger than any before. */
typedef struct tabq_pg_slot {
  char fixed[8];
  char *heap;
  size_t cap;
} tabq_pg_slot;

void tabq_pg_slot_free(tabq_pg_slot *slot);

/* Encodes `v` for placeholder `at` (1-based) of type `type`. *data is NULL for SQL NULL, else
 * points into `slot` or into the value itself. Fails with TABQ_INVALID naming the placeholder and
 * the type when the value does not fit, TABQ_NOMEM when the slot cannot grow. `stmt` names the
 * statement in messages. */
int tabq_pg_encode(const tabq_value *v, Oid type, tabq_pg_slot *slot, const char **data, int *len,
                   const char *stmt, unsigned at);

/* Decodes column `col` (0-based) of type `type`, `len` bytes at `data` (NULL for SQL NULL).
 * Text and bytes point into `data`; float4 and float8 read as reals. */
int tabq_pg_decode(const char *data, int len, Oid type, tabq_value *out, const char *stmt,
                   unsigned col);

/* "int4", "text", ... or "type OID <n>", in `buf` when the type has no name here. */
const char *tabq_pg_type_name(Oid type, char buf[24]);

#endif
