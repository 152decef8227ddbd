/* tabq — small helpers to build SQL text in a tabq_stmt (the whole statements most databases
 * share are in tabq/sql_build.h).
 *
 * Header-only, so a dialect needs nothing but the SDK headers. Every helper is a no-op once the
 * statement has failed (st->status != TABQ_OK): a builder appends freely and checks the status
 * once at its end. */
#ifndef TABQ_SQL_H
#define TABQ_SQL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tabq/sys/dialect.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a dialect writes placeholders. */
typedef enum tabq_placeholder {
  TABQ_PH_DOLLAR,   /* $1, $2 ... (PostgreSQL); a repeated id reuses its number */
  TABQ_PH_QUESTION, /* ? ? ... (MySQL); a repeated id is bound again */
  TABQ_PH_QNUMBER,  /* ?1, ?2 ... (SQLite); a repeated id reuses its number */
} tabq_placeholder;

static inline void tabq_sql_init(tabq_stmt *st, const tabq_host *host) {
  memset(st, 0, sizeof *st);
  st->host = host;
}

static inline void tabq_sql_free(tabq_stmt *st) {
  if (st->sql)
    st->host->free(st->sql);
  st->sql = NULL;
  st->len = st->cap = 0;
  st->nparams = 0;
}

static inline void tabq_sql_append(tabq_stmt *st, const char *text, size_t n) {
  if (st->status)
    return;
  if (st->len + n + 1 > st->cap) {
    size_t cap = st->cap ? st->cap : 256;
    while (cap < st->len + n + 1)
      cap *= 2;
    char *grown = (char *)st->host->realloc(st->sql, cap);
    if (!grown) {
      st->status = TABQ_NOMEM;
      return;
    }
    st->sql = grown;
    st->cap = cap;
  }
  memcpy(st->sql + st->len, text, n);
  st->len += n;
  st->sql[st->len] = '\0';
}

static inline void tabq_sql_raw(tabq_stmt *st, const char *text) {
  tabq_sql_append(st, text, strlen(text));
}

static inline void tabq_sql_printf(tabq_stmt *st, const char *fmt, ...) TABQ_PRINTF_(2, 3);
static inline void tabq_sql_printf(tabq_stmt *st, const char *fmt, ...) {
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof small) {
    st->status = st->status ? st->status : TABQ_INVALID;
    return;
  }
  tabq_sql_append(st, small, (size_t)n);
}

/* Appends `name` between `q` quotes, doubling any quote inside. A dot separates a schema from a
 * table when `dotted` is true, and each part is quoted on its own. */
static inline void tabq_sql_quoted(tabq_stmt *st, const char *name, char q, int dotted) {
  const char *dot = dotted ? strchr(name, '.') : NULL;
  const char *end = dot ? dot : name + strlen(name);
  tabq_sql_append(st, &q, 1);
  for (const char *p = name; p < end; p++) {
    tabq_sql_append(st, p, 1);
    if (*p == q)
      tabq_sql_append(st, &q, 1);
  }
  tabq_sql_append(st, &q, 1);
  if (dot) {
    tabq_sql_append(st, ".", 1);
    tabq_sql_quoted(st, dot + 1, q, 0);
  }
}

/* Appends a placeholder for parameter `id` in the dialect's style. */
/* The table part of "schema.table" (or "table"); *schema_len is the schema's length, 0 without. */
static inline const char *tabq_sql_table_part(const char *name, size_t *schema_len) {
  const char *dot = strchr(name, '.');
  *schema_len = dot ? (size_t)(dot - name) : 0;
  return dot ? dot + 1 : name;
}

static inline void tabq_sql_param(tabq_stmt *st, tabq_param id, tabq_placeholder style) {
  if (st->status)
    return;
  unsigned pos = st->nparams;
  if (style != TABQ_PH_QUESTION) {
    for (unsigned i = 0; i < st->nparams; i++)
      if (st->params[i] == (uint16_t)id) {
        pos = i;
        break;
      }
  }
  if (pos == st->nparams) {
    if (st->nparams == TABQ_STMT_MAX_PARAMS) {
      st->status = TABQ_INVALID;
      return;
    }
    st->params[st->nparams++] = (uint16_t)id;
  }
  if (style == TABQ_PH_QUESTION)
    tabq_sql_raw(st, "?");
  else
    tabq_sql_printf(st, style == TABQ_PH_DOLLAR ? "$%u" : "?%u", pos + 1);
}

/* The placeholder of parameter `id` in row `row` of a statement that repeats one row's list
 * (Dialect.insert_rows). Row 0 is written and listed as tabq_sql_param does; a later row lists
 * nothing and writes its own copy's placeholder: number row * nparams + the id's place in the
 * list + 1 in the numbered styles, "?" in TABQ_PH_QUESTION. Row 0 is complete before row 1
 * begins, and a later row names only ids row 0 named (else TABQ_INVALID). */
static inline void tabq_sql_param_row(tabq_stmt *st, tabq_param id, tabq_placeholder style,
                                      unsigned row) {
  if (row == 0) {
    tabq_sql_param(st, id, style);
    return;
  }
  if (st->status)
    return;
  unsigned pos = 0;
  while (pos < st->nparams && st->params[pos] != (uint16_t)id)
    pos++;
  if (pos == st->nparams) {
    st->status = TABQ_INVALID;
    return;
  }
  if (style == TABQ_PH_QUESTION)
    tabq_sql_raw(st, "?");
  else
    tabq_sql_printf(st, style == TABQ_PH_DOLLAR ? "$%u" : "?%u", row * st->nparams + pos + 1);
}

/* Calls `each(st, column, ctx)` for the projection's columns, in projection order. */
typedef void (*tabq_sql_column_fn)(tabq_stmt *st, const tabq_col *col, int is_attempt, void *ctx);
static inline void tabq_sql_each_projected(tabq_stmt *st, const tabq_table *t,
                                           tabq_sql_column_fn each, void *ctx) {
  each(st, &t->id, 0, ctx);
  if (t->attempt.name)
    each(st, &t->attempt, 1, ctx);
  if (t->group.name)
    each(st, &t->group, 0, ctx);
  if (t->partition_key.name)
    each(st, &t->partition_key, 0, ctx);
  if (t->headers.name)
    each(st, &t->headers, 0, ctx);
  if (t->payload.name)
    each(st, &t->payload, 0, ctx);
  for (size_t i = 0; i < t->ndata; i++)
    each(st, &t->data[i], 0, ctx);
}

#ifdef __cplusplus
}
#endif

#endif
