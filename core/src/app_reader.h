/* Reading a description file's JSON members (app_read.c): a reader that knows where it is in
 * the document, and refusals that name the file, the line and column, the member's path
 * ("tables[0].locked_until") and the rule. */
#ifndef TABQ_APP_READER_H
#define TABQ_APP_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "app_model.h"
#include "error.h"
#include "json_where.h"

#define MAX_DEPTH 8

typedef struct reader {
  const char *text, *file;
  size_t len;
  tabq_json_step path[MAX_DEPTH];
  size_t depth;
  const char *table; /* the table concerned, for err->table */
  tabq_app *app;
  tabq_error *err;
} reader;

/* A name a member may take, and the value it reads as. */
typedef struct choice {
  const char *name;
  int value;
} choice;

/* Refuses at the reader's path, or at `member` of the object there when the text has it. */
TABQ_PRINTF_(3, 4)
int tabq__rd_fail(reader *r, const char *member, const char *fmt, ...);
/* Refuses with what the app's rules said (err->message), at the first member of `obj` the
 * refusal names, else at the object. */
int tabq__rd_fail_rule(reader *r, json_t *obj, const char *member);
/* Into the member `key` (or the element `index` of an array when key is NULL), and out again. */
void tabq__rd_enter(reader *r, const char *key, size_t index);
void tabq__rd_leave(reader *r);
int tabq__rd_no_memory(reader *r);
/* Every member of `obj` is one the format knows, else a refusal with "did you mean". */
int tabq__rd_members_known(reader *r, json_t *obj, const char *what, const char *const *known);
int tabq__rd_need_object(reader *r, json_t *v, const char *member, const char *what);
/* Optional members, left as they are when absent (a required string refused): a string (the
 * app's copy), a boolean, a whole number from 0 to max, one of `choices`' names. */
int tabq__rd_string(reader *r, json_t *obj, const char *key, bool required, const char **out);
int tabq__rd_bool(reader *r, json_t *obj, const char *key, bool *out);
int tabq__rd_count(reader *r, json_t *obj, const char *key, unsigned max, unsigned *out);
int tabq__rd_choice(reader *r, json_t *obj, const char *key, const choice *choices, int *out);

#endif
