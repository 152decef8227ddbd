/* Row mode: each data column read as the type its description declares (SPEC 7). Drivers read a
 * cell by the database's own type, so a declared type accepts the cells that hold it: the text of
 * a number or of a time (SQLite keeps times as text; a driver before ABI 1.5 reads floats as
 * text), an integer for a real, text for bytes and bytes of UTF-8 for text, and text that parses
 * as JSON for JSON. Conversions write into the delivery's cells, so a handler reads the declared
 * type; nothing is allocated but the JSON check's parse. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistr.h>

#include "engine.h"

const char *tabq__type_name(int t) {
  switch (t) {
  case TABQ_T_NULL:
    return "NULL";
  case TABQ_T_INT:
    return "integer";
  case TABQ_T_REAL:
    return "real";
  case TABQ_T_TEXT:
    return "text";
  case TABQ_T_BYTES:
    return "bytes";
  case TABQ_T_TIME:
    return "time";
  case TABQ_T_JSON:
    return "JSON";
  default:
    return "a list";
  }
}

const char *tabq__id_shown(const tabq_value *id, char buf[TABQ__ID_SHOWN]) {
  if (id->type == TABQ_T_INT)
    snprintf(buf, TABQ__ID_SHOWN, "%lld", (long long)id->u.i);
  else if (id->type == TABQ_T_TEXT)
    snprintf(buf, TABQ__ID_SHOWN, "'%.*s'", (int)(id->u.buf.len > 64 ? 64 : id->u.buf.len),
             (const char *)id->u.buf.ptr);
  else
    snprintf(buf, TABQ__ID_SHOWN, "(an id of type %s)", tabq__type_name(id->type));
  return buf;
}

/* The cell's bytes as a NUL-terminated string: delivery cells are (tabq__delivery_fill). */
static const char *cell_str(const tabq_value *v) {
  return (const char *)v->u.buf.ptr;
}

static bool whole_text(const tabq_value *v) {
  return strlen(cell_str(v)) == v->u.buf.len && v->u.buf.len > 0;
}

static bool read_int(tabq_value *v) {
  if (v->type != TABQ_T_TEXT || !whole_text(v))
    return false;
  char *end;
  errno = 0;
  long long i = strtoll(cell_str(v), &end, 10);
  if (errno || *end)
    return false;
  *v = tabq_int(i);
  return true;
}

static bool read_real(tabq_value *v) {
  if (v->type == TABQ_T_INT) {
    *v = tabq_real((double)v->u.i);
    return true;
  }
  if (v->type != TABQ_T_TEXT || !whole_text(v))
    return false;
  char *end;
  errno = 0;
  double r = strtod(cell_str(v), &end);
  if (*end || (errno == ERANGE && isinf(r)))
    return false;
  *v = tabq_real(r);
  return true;
}

/* "YYYY-MM-DD HH:MM:SS[.ffffff]", a 'T' for the space, a trailing 'Z' or "+00:00": UTC, as
 * the SQLite dialect writes times and ISO 8601 tools do. */
static bool read_time(tabq_value *v) {
  if (v->type != TABQ_T_TEXT || !whole_text(v))
    return false;
  const char *p = cell_str(v);
  /* Digits where the format has them: sscanf's %d alone would take a sign or a space there. */
  static const char shape[] = "dddd-dd-dd?dd:dd:dd";
  for (size_t i = 0; i < sizeof shape - 1; i++)
    if (shape[i] == 'd' ? !(p[i] >= '0' && p[i] <= '9') : shape[i] != '?' && p[i] != shape[i])
      return false;
  struct tm tm = {0};
  int used = 0;
  char sep;
  if (sscanf(p, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 7 ||
      (sep != ' ' && sep != 'T') || used != 19)
    return false;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60)
    return false;
  p += used;
  int64_t us = 0;
  if (*p == '.') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
      if (digits < 6)
        us = us * 10 + (*p - '0');
    if (!digits)
      return false;
    for (; digits < 6; digits++)
      us *= 10;
  }
  if (*p == 'Z')
    p++;
  else if (!strcmp(p, "+00:00"))
    p += 6;
  if (*p)
    return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  time_t secs = timegm(&tm);
  *v = tabq_time((int64_t)secs * 1000000 + us);
  return true;
}

static bool is_utf8(const tabq_value *v) {
  return !u8_check((const uint8_t *)v->u.buf.ptr, v->u.buf.len);
}

static bool read_json(tabq_value *v) {
  if (v->type != TABQ_T_TEXT && v->type != TABQ_T_BYTES)
    return false;
  json_t *j = json_loadb(v->u.buf.ptr, v->u.buf.len, JSON_DECODE_ANY, NULL);
  if (!j)
    return false;
  json_decref(j);
  v->type = TABQ_T_JSON;
  return true;
}

/* Whether cell v reads as `declared`, converting it in place where it holds that type. */
static bool read_as(int declared, tabq_value *v) {
  if (v->type == TABQ_T_NULL || declared == TABQ_T_NULL)
    return true;
  if ((int)v->type == declared)
    return declared != TABQ_T_TEXT || is_utf8(v);
  switch (declared) {
  case TABQ_T_INT:
    return read_int(v);
  case TABQ_T_REAL:
    return read_real(v);
  case TABQ_T_TIME:
    return read_time(v);
  case TABQ_T_JSON:
    return read_json(v);
  case TABQ_T_TEXT:
    if ((v->type != TABQ_T_BYTES && v->type != TABQ_T_JSON) || !is_utf8(v))
      return false;
    v->type = TABQ_T_TEXT;
    return true;
  case TABQ_T_BYTES:
    if (v->type != TABQ_T_TEXT && v->type != TABQ_T_JSON)
      return false;
    v->type = TABQ_T_BYTES;
    return true;
  default:
    return false;
  }
}

bool tabq__row_read(tabq_delivery *d, char *why, size_t cap) {
  const tabq_subscription *s = d->sub;
  for (size_t i = 0; i < s->t->ndata; i++) {
    const tabq_col *col = &s->t->data[i];
    tabq_value *v = &d->cells[s->proj.data0 + (int)i];
    int was = (int)v->type;
    if (read_as(col->type, v))
      continue;
    if (was == TABQ_T_TEXT || was == TABQ_T_JSON)
      snprintf(why, cap, "column %s holds %s '%.40s', which does not read as %s", col->name,
               tabq__type_name(was), cell_str(v), tabq__type_name(col->type));
    else
      snprintf(why, cap, "column %s holds %s, which does not read as %s", col->name,
               tabq__type_name(was), tabq__type_name(col->type));
    return false;
  }
  return true;
}

bool tabq__cell_time(const tabq_value *v, int64_t *us) {
  tabq_value t = *v;
  if (t.type != TABQ_T_TIME && !(t.type == TABQ_T_TEXT && read_time(&t)))
    return false;
  *us = t.u.time_us;
  return true;
}

bool tabq__row_value_fits(int declared, const tabq_value *v) {
  if (declared == TABQ_T_NULL || v->type == TABQ_T_NULL || (int)v->type == declared)
    return true;
  switch (declared) {
  case TABQ_T_REAL:
    return v->type == TABQ_T_INT;
  case TABQ_T_JSON:
  case TABQ_T_BYTES:
    return v->type == TABQ_T_TEXT;
  case TABQ_T_TEXT:
    return v->type == TABQ_T_JSON;
  default:
    return false;
  }
}
