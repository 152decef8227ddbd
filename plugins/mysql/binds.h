/* tabq — the MySQL driver's binary protocol codec: tabq values to MYSQL_BIND parameters, result
 * columns to tabq values, and times between microseconds since 1970 and MYSQL_TIME (UTC).
 *
 * Every buffer lives in the statement object: parameters keep their integer or time in a slot
 * and point at the caller's text and bytes; columns own grow-only buffers sized from the
 * field's max_length, so a statement executed again allocates nothing once its buffers are big
 * enough. */
#ifndef TABQ_MYSQL_BINDS_H
#define TABQ_MYSQL_BINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mysql.h>
#include <tabq/value.h>

/* One parameter's storage, for values MYSQL_BIND cannot point at in the caller's memory. */
typedef struct tabq_my_param {
  union {
    int64_t i;
    double d;
    MYSQL_TIME t;
  } u;
  unsigned long length;
  my_bool is_null;
  char *list; /* a list of ids as JSON text ("[1,2,3]"), grown as needed, freed with the slot */
  size_t list_cap;
} tabq_my_param;

/* How a column's cell reads, decided from its field at every execute (a `SELECT ?` column can
 * change type between executions). */
typedef enum tabq_my_reader {
  TABQ_MY_R_NULL = 0,
  TABQ_MY_R_INT,
  TABQ_MY_R_UINT,
  TABQ_MY_R_BIT,
  TABQ_MY_R_TIME,
  TABQ_MY_R_FLOAT,
  TABQ_MY_R_DOUBLE,
  TABQ_MY_R_TEXT,
  TABQ_MY_R_BYTES,
  TABQ_MY_R_JSON,
} tabq_my_reader;

/* One result column: the fetch target and the cell's scratch. */
typedef struct tabq_my_col {
  tabq_my_reader reader;
  unsigned field_type; /* enum_field_types, for messages */
  char *buf;           /* text, bytes and BIT: grow-only, host allocated */
  size_t cap;
  union {
    int64_t i;
    double d;
    float f;
    MYSQL_TIME t;
  } u;
  unsigned long length;
  my_bool is_null, error;
} tabq_my_col;

/* Binds value `v` as placeholder `pos` (1-based) of statement `name`. Text and bytes point at
 * the caller's memory, which must stay put until mysql_stmt_execute returns. */
int tabq_my_bind_param(const tabq_value *v, MYSQL_BIND *b, tabq_my_param *slot, const char *name,
                       unsigned pos);

/* Prepares column `col` to receive field `f` after mysql_stmt_store_result (which set the
 * field's max_length), growing its buffer through the host when needed. */
int tabq_my_bind_col(const MYSQL_FIELD *f, MYSQL_BIND *b, tabq_my_col *col, const char *name,
                     unsigned index);

/* The current row's value of a column bound by tabq_my_bind_col and filled by a fetch. */
int tabq_my_cell(tabq_my_col *col, tabq_value *out, const char *name, unsigned index);

void tabq_my_col_free(tabq_my_col *col);

/* Microseconds since 1970 UTC to a DATETIME (years 1 to 9999), and back; false when out of
 * range or not a date. */
bool tabq_my_time_from_us(int64_t us, MYSQL_TIME *t);
bool tabq_my_us_from_time(const MYSQL_TIME *t, int64_t *us);

#endif
