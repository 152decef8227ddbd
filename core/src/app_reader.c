/* The reader of a description file's JSON members (app_reader.h). */
#include "app_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* "tables[0].id.column" for the reader's path, and `member` below it when given. */
static void path_text(const reader *r, const char *member, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i <= r->depth && n < cap; i++) {
    const tabq_json_step *s = i < r->depth ? &r->path[i] : NULL;
    if (s && !s->key)
      n += (size_t)snprintf(out + n, cap - n, "[%zu]", s->index);
    else if (s || member)
      n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "." : "", s ? s->key : member);
  }
  if (!out[0])
    snprintf(out, cap, "(the document)");
}

/* Refuses at the reader's path, or at `member` of the object there when the text has it. */
int tabq__rd_fail(reader *r, const char *member, const char *fmt, ...) {
  tabq_json_step at[MAX_DEPTH + 1];
  memcpy(at, r->path, r->depth * sizeof *at);
  size_t depth = r->depth;
  if (member)
    at[depth++] = (tabq_json_step){member, 0};
  int line, column;
  tabq__json_where(r->text, r->len, at, depth, &line, &column);
  char field[160], detail[400];
  path_text(r, member, field, sizeof field);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return tabq__err_set(r->err, TABQ_DECLARATION, r->table, NULL, "%s:%d:%d: %s: %s", r->file, line,
                       column, field, detail);
}

/* Refuses with what the app's rules said (err->message), at the first member of `obj` the
 * refusal names, else at the object. */
int tabq__rd_fail_rule(reader *r, json_t *obj, const char *member) {
  char said[sizeof r->err->message];
  memcpy(said, r->err->message, sizeof said);
  if (!member) { /* the member the rule names first, after the "subscription to table j: " */
    const char *rule = strstr(said, ": "), *first = NULL, *key;
    rule = rule ? rule : said;
    json_t *value;
    json_object_foreach(obj, key, value) {
      const char *hit = strstr(rule, key);
      if (hit && (!first || hit < strstr(rule, first)))
        first = key;
    }
    member = first;
  }
  return tabq__rd_fail(r, member, "%s", said);
}

void tabq__rd_enter(reader *r, const char *key, size_t index) {
  r->path[r->depth++] = (tabq_json_step){key, index};
}
void tabq__rd_leave(reader *r) {
  r->depth--;
}

int tabq__rd_no_memory(reader *r) {
  return tabq__err_set(r->err, TABQ_NOMEM, r->table, NULL, "out of memory reading %s", r->file);
}

/* Edits between two short names, for "did you mean". */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), row[64];
  if (la >= 63 || lb >= 63)
    return 99;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* Every member of `obj` is one the format knows (a misspelt role would otherwise vanish). */
int tabq__rd_members_known(reader *r, json_t *obj, const char *what, const char *const *known) {
  const char *key;
  json_t *value;
  json_object_foreach(obj, key, value) {
    const char *near = NULL;
    size_t near_d = 3;
    bool found = false;
    for (const char *const *k = known; *k && !found; k++) {
      size_t d = distance(key, *k);
      found = d == 0;
      if (d < near_d) {
        near = *k;
        near_d = d;
      }
    }
    if (found)
      continue;
    if (near)
      return tabq__rd_fail(r, key, "%s has no member \"%s\"; did you mean \"%s\"?", what, key,
                           near);
    return tabq__rd_fail(r, key, "%s has no member \"%s\" (docs/description-files.md lists them)",
                         what, key);
  }
  return TABQ_OK;
}

int tabq__rd_need_object(reader *r, json_t *v, const char *member, const char *what) {
  return json_is_object(v) ? TABQ_OK : tabq__rd_fail(r, member, "%s is a JSON object", what);
}

/* A string member: `out` gets the app's copy, NULL when absent and not required. */
int tabq__rd_string(reader *r, json_t *obj, const char *key, bool required, const char **out) {
  json_t *v = json_object_get(obj, key);
  *out = NULL;
  if (!v || json_is_null(v))
    return required ? tabq__rd_fail(r, key, "\"%s\" is required", key) : TABQ_OK;
  if (!json_is_string(v) || !json_string_length(v))
    return tabq__rd_fail(r, key, "\"%s\" is a non-empty string", key);
  if (strlen(json_string_value(v)) != json_string_length(v))
    return tabq__rd_fail(r, key, "\"%s\" holds a NUL character", key);
  return (*out = tabq__app_strdup(r->app, json_string_value(v))) ? TABQ_OK : tabq__rd_no_memory(r);
}

int tabq__rd_bool(reader *r, json_t *obj, const char *key, bool *out) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return TABQ_OK;
  if (!json_is_boolean(v))
    return tabq__rd_fail(r, key, "\"%s\" is true or false", key);
  *out = json_is_true(v);
  return TABQ_OK;
}

int tabq__rd_count(reader *r, json_t *obj, const char *key, unsigned max, unsigned *out) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return TABQ_OK;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
    return tabq__rd_fail(r, key, "\"%s\" is a whole number from 0 to %u", key, max);
  *out = (unsigned)json_integer_value(v);
  return TABQ_OK;
}

int tabq__rd_choice(reader *r, json_t *obj, const char *key, const choice *choices, int *out) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return TABQ_OK;
  char names[256];
  size_t n = 0;
  for (const choice *c = choices; c->name; c++) {
    if (json_is_string(v) && !strcmp(json_string_value(v), c->name)) {
      *out = c->value;
      return TABQ_OK;
    }
    n += (size_t)snprintf(names + n, sizeof names - n, "%s\"%s\"", n ? ", " : "", c->name);
  }
  return tabq__rd_fail(r, key, "\"%s\" is one of %s", key, names);
}
