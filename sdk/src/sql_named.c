/* Named parameters in a service's own SQL, rendered into the database's placeholders. */
#include <tabq/sys/sql.h>
#include <tabq/sys/sql_named.h>

static const struct {
  const char *name;
  uint32_t bit;
  tabq_param param;
} names[] = {
    {"id", TABQ_N_ID, TABQ_P_ID},
    {"ids", TABQ_N_IDS, TABQ_P_IDS},
    {"queue", TABQ_N_QUEUE, TABQ_P_GROUP},
    {"limit", TABQ_N_LIMIT, TABQ_P_LIMIT},
    {"now", TABQ_N_NOW, TABQ_P_NOW},
    {"until", TABQ_N_UNTIL, TABQ_P_LEASE_UNTIL},
    {"held", TABQ_N_HELD, TABQ_P_TOKEN},
    {"retry_at", TABQ_N_RETRY_AT, TABQ_P_RETRY_AT},
    {"destination", TABQ_N_DESTINATION, TABQ_P_DEST},
    {"key", TABQ_N_KEY, TABQ_P_KEY},
};
#define NNAMES (sizeof names / sizeof names[0])

void tabq_sql_named_list(uint32_t mask, char *buf, size_t cap) {
  size_t at = 0;
  if (cap)
    buf[0] = '\0';
  for (size_t i = 0; i < NNAMES; i++)
    if (mask & names[i].bit) {
      int n = snprintf(buf + at, cap > at ? cap - at : 0, "%s:%s", at ? ", " : "", names[i].name);
      if (n > 0)
        at += (size_t)n;
    }
  if (!at && cap)
    snprintf(buf, cap, "no parameter");
}

static bool name_start(char c) {
  return c >= 'a' && c <= 'z';
}

static bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9') || c == '_';
}

/* The end of a quoted run opened at p ('...', "..." or `...`; a doubled quote stays inside). */
static const char *quoted_end(const char *p) {
  char q = *p++;
  for (; *p; p++)
    if (*p == q) {
      if (p[1] != q)
        return p + 1;
      p++;
    }
  return p;
}

/* The end of a comment opened at p, or p itself when none opens there. */
static const char *comment_end(const char *p) {
  if (p[0] == '-' && p[1] == '-') {
    while (*p && *p != '\n')
      p++;
    return p;
  }
  if (p[0] == '/' && p[1] == '*') {
    const char *end = strstr(p + 2, "*/");
    return end ? end + 2 : p + strlen(p);
  }
  return p;
}

static int refuse(char *why, size_t cap, const char *fmt, ...) TABQ_PRINTF_(3, 4);
static int refuse(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return TABQ_DECLARATION;
}

int tabq_sql_render_named(tabq_stmt *out, const char *sql, tabq_placeholder_fn placeholder,
                          uint32_t allowed, uint32_t *used, char *why, size_t cap) {
  *used = 0;
  const char *p = sql, *run = sql; /* run: text not yet appended */
  while (*p && !out->status) {
    const char *skip = p;
    if (*p == '\'' || *p == '"' || *p == '`')
      skip = quoted_end(p);
    else
      skip = comment_end(p);
    if (skip != p) {
      p = skip;
      continue;
    }
    if (*p == '?' || (*p == '$' && p[1] >= '0' && p[1] <= '9')) {
      char allowed_names[160];
      tabq_sql_named_list(allowed, allowed_names, sizeof allowed_names);
      return refuse(why, cap,
                    "'%c' at offset %zu is a database placeholder; write tabq's named "
                    "parameters instead (%s)",
                    *p, (size_t)(p - sql), allowed_names);
    }
    if (*p == ':' && p[1] == ':') {
      p += 2; /* a cast */
      continue;
    }
    if (*p != ':' || !name_start(p[1])) {
      p++;
      continue;
    }
    const char *start = p + 1, *end = start;
    while (name_char(*end))
      end++;
    size_t len = (size_t)(end - start);
    size_t i = 0;
    while (i < NNAMES && (strlen(names[i].name) != len || strncmp(names[i].name, start, len)))
      i++;
    if (i == NNAMES || !(allowed & names[i].bit)) {
      char allowed_names[160];
      tabq_sql_named_list(allowed, allowed_names, sizeof allowed_names);
      return refuse(why, cap, "':%.*s' is %s; this statement takes %s", (int)len, start,
                    i == NNAMES ? "no parameter tabq knows" : "not a parameter of this statement",
                    allowed_names);
    }
    tabq_sql_append(out, run, (size_t)(p - run));
    int rc = placeholder(out, names[i].param);
    if (rc)
      return rc;
    *used |= names[i].bit;
    p = run = end;
  }
  tabq_sql_append(out, run, strlen(run));
  return out->status;
}
