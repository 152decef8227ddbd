/* R-DESC-1: a description that breaks a rule stops the subscription when it opens, naming the
 * table and the rule, before anything is claimed. */
#include "table.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unicase.h>
#include <unistr.h>

#include "deadline.h"
#include "error.h"
#include "sized.h"

#define MAX_DATA_COLUMNS 40 /* keeps every statement within TABQ_STMT_MAX_PARAMS */

static int broken(tabq_error *err, const tabq_table *t, const char *rule, const char *detail) {
  return tabq__err_set(err, TABQ_DECLARATION, t->name, NULL, "table %s breaks R-DESC-1 (%s): %s",
                       t->name ? t->name : "(unnamed)", rule, detail);
}

static bool valid_utf8(const char *s) {
  return u8_check((const uint8_t *)s, strlen(s)) == NULL;
}

/* SQLite and MySQL compare column names without case, so two names equal under case folding
 * would name one column there. */
static bool same_name(const char *a, const char *b) {
  int order = 1;
  if (u8_casecmp((const uint8_t *)a, strlen(a), (const uint8_t *)b, strlen(b), NULL, NULL,
                 &order) != 0)
    return strcmp(a, b) == 0;
  return order == 0;
}

/* The roles a column may play beside the data columns (collect's list). */
#define ROLE_COLUMNS 12

typedef struct named {
  const char *role;
  const tabq_col *col;
} named;

static size_t collect(const tabq_table *t, named *out) {
  const named roles[] = {
      {"id", &t->id},
      {"group", &t->group},
      {"priority", &t->priority},
      {"partition_key", &t->partition_key},
      {"retry_after", &t->retry_after},
      {"attempt", &t->attempt},
      {"processed_at", &t->processed_at},
      {"locked_until", &t->locked_until},
      {"headers", &t->headers},
      {"payload", &t->payload},
      {"unique_key", &t->unique_key},
      {"cancelled_at", &t->cancelled_at},
  };
  size_t n = 0;
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (roles[i].col->name)
      out[n++] = roles[i];
  for (size_t i = 0; i < t->ndata; i++)
    out[n++] = (named){"data", &t->data[i]};
  return n;
}

static int check_name(const tabq_table *t, tabq_error *err) {
  char detail[256];
  if (!t->name || !t->name[0])
    return broken(err, t, "table name", "the description has no table name");
  if (!valid_utf8(t->name))
    return broken(err, t, "names are UTF-8", "the table name is not valid UTF-8");
  const char *dot = strchr(t->name, '.');
  if (dot && (dot == t->name || !dot[1] || strchr(dot + 1, '.'))) {
    snprintf(detail, sizeof detail, "'%s' is not 'table' or 'schema.table'", t->name);
    return broken(err, t, "table name", detail);
  }
  return TABQ_OK;
}

static int check_columns(const tabq_table *t, tabq_error *err) {
  char detail[256];
  if (!t->id.name)
    return broken(err, t, "id required", "no column plays the id role");
  if (t->ndata && !t->data)
    return broken(err, t, "data columns", "ndata is set but data is NULL");
  if (t->ndata > MAX_DATA_COLUMNS) {
    snprintf(detail, sizeof detail, "%zu data columns, at most %d", t->ndata, MAX_DATA_COLUMNS);
    return broken(err, t, "data columns", detail);
  }
  for (size_t i = 0; i < t->ndata; i++) {
    int ty = t->data[i].type;
    if (ty == TABQ_T_NULL || ty == TABQ_T_INT || ty == TABQ_T_REAL || ty == TABQ_T_TEXT ||
        ty == TABQ_T_BYTES || ty == TABQ_T_TIME || ty == TABQ_T_JSON)
      continue;
    snprintf(detail, sizeof detail,
             "data column '%s' declares type %d; a column reads as TABQ_T_INT, _REAL, _TEXT, "
             "_BYTES, _TIME or _JSON (TABQ_T_NULL: any)",
             t->data[i].name ? t->data[i].name : "", ty);
    return broken(err, t, "data column types", detail);
  }
  int id = t->id.type, payload = t->payload.type;
  if (id != TABQ_T_NULL && id != TABQ_T_INT && id != TABQ_T_TEXT) {
    snprintf(detail, sizeof detail,
             "the id declares type %d; an id is TABQ_T_INT (the default) or TABQ_T_TEXT", id);
    return broken(err, t, "id and payload types", detail);
  }
  if (t->payload.name && payload != TABQ_T_NULL && payload != TABQ_T_BYTES &&
      payload != TABQ_T_TEXT && payload != TABQ_T_JSON) {
    snprintf(detail, sizeof detail,
             "the payload declares type %d; a payload is TABQ_T_BYTES (the default), "
             "TABQ_T_TEXT or TABQ_T_JSON",
             payload);
    return broken(err, t, "id and payload types", detail);
  }
  named cols[ROLE_COLUMNS + MAX_DATA_COLUMNS];
  size_t n = collect(t, cols);
  for (size_t i = 0; i < n; i++) {
    const char *name = cols[i].col->name;
    if (!name || !name[0]) {
      snprintf(detail, sizeof detail, "a %s column has an empty name", cols[i].role);
      return broken(err, t, "column names", detail);
    }
    if (!valid_utf8(name)) {
      snprintf(detail, sizeof detail, "the %s column's name is not valid UTF-8", cols[i].role);
      return broken(err, t, "names are UTF-8", detail);
    }
    for (size_t j = 0; j < i; j++)
      if (same_name(name, cols[j].col->name)) {
        snprintf(detail, sizeof detail, "column '%s' plays both %s and %s", name, cols[j].role,
                 cols[i].role);
        return broken(err, t, "a column named twice", detail);
      }
  }
  return TABQ_OK;
}

static bool described(const tabq_table *t, const char *name, size_t len) {
  named cols[ROLE_COLUMNS + MAX_DATA_COLUMNS];
  size_t n = collect(t, cols);
  for (size_t i = 0; i < n; i++)
    if (strlen(cols[i].col->name) == len && !strncmp(cols[i].col->name, name, len))
      return true;
  return false;
}

/* "jobs-{id}": text with {column} placeholders, each naming a described column. */
static int check_key_template(const tabq_table *t, tabq_error *err) {
  char detail[256];
  const char *k = t->advisory_lock;
  if (!k[0] || !valid_utf8(k))
    return broken(err, t, "advisory key", "the advisory_lock template is empty or not UTF-8");
  size_t placeholders = 0;
  for (const char *p = k; *p; p++) {
    if (*p == '}') {
      snprintf(detail, sizeof detail, "'}' without '{' in template '%s'", k);
      return broken(err, t, "advisory key", detail);
    }
    if (*p != '{')
      continue;
    const char *end = strchr(p, '}');
    if (!end || end == p + 1) {
      snprintf(detail, sizeof detail, "unclosed or empty placeholder in template '%s'", k);
      return broken(err, t, "advisory key", detail);
    }
    if (!described(t, p + 1, (size_t)(end - p - 1))) {
      snprintf(detail, sizeof detail, "template '%s' names '%.*s', which is no described column", k,
               (int)(end - p - 1), p + 1);
      return broken(err, t, "advisory key", detail);
    }
    placeholders++;
    p = end;
  }
  if (!placeholders)
    return broken(err, t, "advisory key", "the advisory_lock template names no {column}");
  return TABQ_OK;
}

static int check_form(const tabq_table *t, tabq_error *err) {
  if (t->locked_until.name && t->advisory_lock)
    return broken(err, t, "one form",
                  "locked_until (lease form) and advisory_lock (advisory form) are both set");
  if (t->fifo && !t->group.name)
    return broken(err, t, "fifo needs group", "fifo is set but no column plays the group role");
  if (t->fifo && t->advisory_lock)
    return broken(err, t, "fifo with an advisory key",
                  "FIFO groups take the row lock or lease form; put the group column in the "
                  "advisory key instead");
  if (t->locked_until.name && t->clock == TABQ_CLOCK_DATABASE)
    return broken(err, t, "a lease on the database clock",
                  "a lease's expiry is computed on the host; use the host clock");
  if (t->isolation != TABQ_ISOLATION_DEFAULT && t->mode != TABQ_SQLITE_MODE_DEFAULT)
    return broken(err, t, "isolation or mode",
                  "isolation (PostgreSQL, MySQL) and mode (SQLite) are both set");
  if (t->locked_until.name && t->locked_until.generated)
    return broken(err, t, "locked_until is written by tabq",
                  "the locked_until column cannot be generated");
  if (t->unique_key.name && t->unique_key.generated)
    return broken(err, t, "unique_key is written by the publish",
                  "the unique_key column cannot be generated: each message brings its key");
  if (t->advisory_lock)
    return check_key_template(t, err);
  return TABQ_OK;
}

/* The events of the service's own: each a statement, in the form it belongs to, lock and
 * unlock together. */
const char *const tabq__event_names[] = {"claim",       "fetch",   "ack",         "retry",
                                         "retry_after", "discard", "dead_letter", "extend",
                                         "lock",        "unlock",  NULL};
/* tabq_events is its events' statements, one const char * each in name order, then room. */
_Static_assert(offsetof(tabq_events, unlock) == (TABQ__EVENT_COUNT - 1) * sizeof(const char *),
               "tabq__event_names follows tabq_events' members");

static int check_events(const tabq_table *t, tabq_error *err) {
  const tabq_events *e = &t->events;
  const char *const *sql = tabq__event_sql(e);
  char detail[256];
  for (size_t i = 0; tabq__event_names[i]; i++)
    if (sql[i] && (!sql[i][0] || !valid_utf8(sql[i]))) {
      snprintf(detail, sizeof detail, "the %s event's statement is empty or not UTF-8",
               tabq__event_names[i]);
      return broken(err, t, "custom events", detail);
    }
  if (!e->lock != !e->unlock)
    return broken(err, t, "custom lock without custom unlock",
                  e->lock ? "events.lock is set without events.unlock: a lock of the service's own "
                            "is released by its own unlock, so give both"
                          : "events.unlock is set without events.lock: give both");
  if (e->lock && !t->advisory_lock)
    return broken(err, t, "lock and unlock are advisory events",
                  "events.lock and events.unlock belong to the advisory lock form: set "
                  "advisory_lock or drop them");
  if (e->extend && !t->locked_until.name)
    return broken(err, t, "extend is a lease event",
                  "events.extend belongs to the lease form: set locked_until or drop it");
  return TABQ_OK;
}

int tabq__table_rules(const tabq_table *t, tabq_error *err) {
  if (!t)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "no table description given");
  int rc = check_name(t, err);
  if (!rc)
    rc = check_columns(t, err);
  if (!rc)
    rc = check_form(t, err);
  if (!rc)
    rc = check_events(t, err);
  if (!rc)
    rc = tabq__deadline_table_rule(t, err);
  return rc;
}

int tabq_table_check(const tabq_table *table, tabq_error *err) {
  tabq__err_clear(err);
  if (!table)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "tabq_table_check needs a table");
  tabq_table t;
  int rc = tabq__table_take(table, &t, err);
  return rc ? rc : tabq__table_rules(&t, err);
}

void tabq__projection_init(tabq_projection *p, const tabq_table *t, bool due) {
  int col = 0;
  p->id = col++;
  p->attempt = t->attempt.name ? col++ : -1;
  p->group = t->group.name ? col++ : -1;
  p->partition_key = t->partition_key.name ? col++ : -1;
  p->headers = t->headers.name ? col++ : -1;
  p->payload = t->payload.name ? col++ : -1;
  p->data0 = col;
  col += (int)t->ndata;
  p->due = due && t->retry_after.name ? col++ : -1;
  p->ncols = (unsigned)col;
}

/* The member of a description file that each rule's refusal points at (docs/description-files.md),
 * read back from the refusal's "(rule)"; NULL: the table as a whole. */
const char *tabq__table_rule_member(const tabq_error *err) {
  static const struct {
    const char *rule, *member;
  } members[] = {
      {"(table name)", "name"},
      {"(data columns)", "data"},
      {"(data column types)", "data"},
      {"(advisory key)", "advisory_lock"},
      {"(one form)", "advisory_lock"},
      {"(fifo needs group)", "fifo"},
      {"(fifo with an advisory key)", "fifo"},
      {"(a lease on the database clock)", "clock"},
      {"(isolation or mode)", "sqlite_mode"},
      {"(locked_until is written by tabq)", "locked_until"},
      {"(unique_key is written by the publish)", "unique_key"},
      {"(custom events)", "events"},
      {"(custom lock without custom unlock)", "events"},
      {"(lock and unlock are advisory events)", "events"},
      {"(extend is a lease event)", "events"},
      {"(deadline column)", "deadline_column"},
  };
  for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
    if (strstr(err->message, members[i].rule))
      return members[i].member;
  return NULL;
}
