/* tabq — the MySQL driver's result codec on fields as each server describes them: MySQL 8 names
 * a JSON column by its type (MYSQL_TYPE_JSON, in the binary character set), which MariaDB never
 * sends (its JSON is LONGTEXT marked json in extended metadata). No server here is MySQL: the
 * field is the one MySQL 8 sends, built by hand. */
#include <string.h>

#include "binds.h"
#include "mysql_fixture.h"
#include "test_host.h"

#define CHARSET_BINARY 63
#define CHARSET_UTF8MB4 45

/* The cell a column of field type `type` and character set `charset` reads `bytes` as. */
static tabq_value read_as(enum enum_field_types type, unsigned charset, const char *bytes) {
  MYSQL_FIELD f;
  memset(&f, 0, sizeof f);
  f.type = type;
  f.charsetnr = charset;
  f.max_length = (unsigned long)strlen(bytes);
  MYSQL_BIND b;
  tabq_my_col col;
  memset(&col, 0, sizeof col);
  CU_ASSERT_EQUAL_FATAL(tabq_my_bind_col(&f, &b, &col, "test", 0), TABQ_OK);
  CU_ASSERT_EQUAL(b.buffer_type, MYSQL_TYPE_BLOB); /* fetched as raw bytes */
  CU_ASSERT_FATAL(b.buffer_length > strlen(bytes));
  memcpy(col.buf, bytes, strlen(bytes)); /* as the fetch would */
  col.length = (unsigned long)strlen(bytes);
  tabq_value v;
  CU_ASSERT_EQUAL_FATAL(tabq_my_cell(&col, &v, "test", 0), TABQ_OK);
  static char copy[64];
  memcpy(copy, v.u.buf.ptr, v.u.buf.len);
  v.u.buf.ptr = copy;
  tabq_my_col_free(&col);
  return v;
}

static void mysql8_json_reads_as_json(void) {
  tabq_value v = read_as(MYSQL_TYPE_JSON, CHARSET_BINARY, "{\"a\": [1, 2]}");
  CU_ASSERT_EQUAL(v.type, TABQ_T_JSON);
  CU_ASSERT(v.u.buf.len == 13 && !memcmp(v.u.buf.ptr, "{\"a\": [1, 2]}", 13));
  /* The binary character set alone is bytes, a text one text: JSON goes by its type first. */
  CU_ASSERT_EQUAL(read_as(MYSQL_TYPE_BLOB, CHARSET_BINARY, "{}").type, TABQ_T_BYTES);
  CU_ASSERT_EQUAL(read_as(MYSQL_TYPE_BLOB, CHARSET_UTF8MB4, "{}").type, TABQ_T_TEXT);
}

CU_TestInfo tabq_my_bind_tests[] = {
    {"MySQL 8's JSON field type reads as JSON", mysql8_json_reads_as_json},
    CU_TEST_INFO_NULL,
};
