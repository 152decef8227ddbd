/* tabq_admin_stats_read: counts per queue. Every statement is bounded by the queue's group (the
 * claim-order index's first column) and reads only the columns that index and its included
 * columns hold where the schema has them, so the database answers from the index; the groups
 * themselves are found by seeking that index from one group to the next (a loose index scan),
 * never by reading every row. */
#include <stdlib.h>
#include <string.h>

#include "admin_sql.h"
#include "clock.h"
#include "error.h"

struct tabq_admin_stats {
  tabq_queue_stats *q;
  size_t n, cap;
  int64_t now;
  char **strings; /* every name the entries point to */
  size_t nstrings, capstrings;
};

static char *keep(tabq_admin_stats *s, const char *text, size_t len) {
  if (s->nstrings == s->capstrings) {
    size_t cap = s->capstrings ? s->capstrings * 2 : 32;
    char **grown = realloc(s->strings, cap * sizeof *grown);
    if (!grown)
      return NULL;
    s->strings = grown;
    s->capstrings = cap;
  }
  char *p = malloc(len + 1);
  if (!p)
    return NULL;
  memcpy(p, text, len);
  p[len] = '\0';
  s->strings[s->nstrings++] = p;
  return p;
}

void tabq_admin_stats_free(tabq_admin_stats *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free((void *)s->q[i].attempts);
  for (size_t i = 0; i < s->nstrings; i++)
    free(s->strings[i]);
  free(s->strings);
  free(s->q);
  free(s);
}

size_t tabq_admin_stats_count(const tabq_admin_stats *s) {
  return s ? s->n : 0;
}

const tabq_queue_stats *tabq_admin_stats_get(const tabq_admin_stats *s, size_t i) {
  return s && i < s->n ? &s->q[i] : NULL;
}

int64_t tabq_admin_stats_time(const tabq_admin_stats *s) {
  return s ? s->now : 0;
}

static tabq_queue_stats *add(tabq_admin_stats *s, const char *table, const char *queue,
                             size_t qlen) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->q[i].table, table) &&
        ((!queue && !s->q[i].queue) || (queue && s->q[i].queue && strlen(s->q[i].queue) == qlen &&
                                        !memcmp(s->q[i].queue, queue, qlen))))
      return &s->q[i];
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    tabq_queue_stats *grown = realloc(s->q, cap * sizeof *grown);
    if (!grown)
      return NULL;
    s->q = grown;
    s->cap = cap;
  }
  tabq_queue_stats *q = &s->q[s->n];
  memset(q, 0, sizeof *q);
  q->table = keep(s, table, strlen(table));
  q->queue = queue ? keep(s, queue, qlen) : NULL;
  if (!q->table || (queue && !q->queue))
    return NULL;
  q->dead = -1;
  s->n++;
  return q;
}

/* ---- The groups a table holds: MIN(group) WHERE group > the last, one index seek each ---- */

typedef struct {
  char text[512];
  size_t len;
  bool found;
} group_cell;

static int read_group(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  group_cell *g = user;
  g->found = cells[0].type == TABQ_T_TEXT && cells[0].u.buf.len < sizeof g->text;
  if (g->found) {
    g->len = cells[0].u.buf.len;
    memcpy(g->text, cells[0].u.buf.ptr, g->len);
  }
  return 0;
}

/* Is `group` some subscription's dead letter group on this table? Those count as `dead`. */
static bool dead_group(const tabq_app *app, const tabq_table *t, const char *group) {
  for (size_t i = 0; i < tabq_app_subscription_count(app); i++) {
    const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
    if (tabq_app_subscription_table(app, i) == t && o->dead_letter_group &&
        !strcmp(o->dead_letter_group, group))
      return true;
  }
  return false;
}

/* One walk over the groups of the rows `finished` says (-1: every row; 0: the unfinished; 1:
 * the finished), each group added once. */
static int walk_groups(tabq_broker *b, tabq_tx *tx, const tabq_app *app, const tabq_table *t,
                       int finished, tabq_admin_stats *s, tabq_error *err) {
  group_cell g = {.found = true};
  bool first = true;
  int rc = TABQ_OK;
  while (!rc && g.found) {
    tabq_adm_sql q;
    tabq__adm_init(&q, b);
    tabq__adm_raw(&q, "SELECT MIN(");
    tabq__adm_name(&q, t->group.name);
    tabq__adm_raw(&q, ") FROM ");
    tabq__adm_name(&q, t->name);
    tabq__adm_raw(&q, " WHERE 1 = 1");
    if (finished >= 0) {
      tabq__adm_raw(&q, " AND ");
      tabq__adm_name(&q, t->processed_at.name);
      tabq__adm_raw(&q, finished ? " IS NOT NULL" : " IS NULL");
    }
    if (!first) {
      tabq__adm_raw(&q, " AND ");
      tabq__adm_name(&q, t->group.name);
      tabq__adm_raw(&q, " > ");
      tabq__adm_param(&q, TABQ_P_GROUP);
    }
    char last[sizeof g.text];
    memcpy(last, g.text, g.len);
    tabq_adm_vals v = {.group = tabq_text(last, g.len)};
    g.found = false;
    rc = tabq__adm_query(tx, &q, &v, 1, read_group, &g, err);
    tabq__adm_free(&q);
    first = false;
    if (!rc && g.found) {
      g.text[g.len] = '\0';
      if (!dead_group(app, t, g.text) && !add(s, t->name, g.text, g.len))
        rc = TABQ_NOMEM;
    }
  }
  return rc;
}

/* The groups of a processed_at table are walked in its unfinished rows, then in its finished
 * ones: the claim-order index holds the first and, where it is partial, the finished index
 * the others (docs/schema.md), while no index holds every row's group. */
static int table_groups(tabq_broker *b, tabq_tx *tx, const tabq_app *app, const tabq_table *t,
                        tabq_admin_stats *s, tabq_error *err) {
  if (!t->group.name)
    return add(s, t->name, NULL, 0) ? TABQ_OK : TABQ_NOMEM;
  if (!t->processed_at.name)
    return walk_groups(b, tx, app, t, -1, s, err);
  int rc = walk_groups(b, tx, app, t, 0, s, err);
  return rc ? rc : walk_groups(b, tx, app, t, 1, s, err);
}

/* A table that only receives dead letters (a subscription's dead_letter_table, read by none)
 * is counted as its queues' `dead`, not as queues of its own. */
static bool dead_letter_only(const tabq_app *app, const tabq_table *t) {
  bool dead = false;
  for (size_t i = 0; i < tabq_app_subscription_count(app); i++) {
    const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
    if (tabq_app_subscription_table(app, i) == t)
      return false;
    dead |= o->dead_letter_table && !strcmp(o->dead_letter_table, t->name);
  }
  return dead;
}

/* ---- One queue's counts ---------------------------------------------------------------- */

typedef struct {
  tabq_queue_stats *q;
  bool leased;
} state_row;

static int read_state(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  state_row *r = user;
  int64_t all = 0, delayed = 0, held = 0, oldest;
  tabq__adm_int(&cells[0], &all);
  tabq__adm_int(&cells[1], &delayed);
  tabq__adm_int(&cells[2], &held);
  r->q->delayed = delayed;
  r->q->in_work = r->leased ? held : -1;
  r->q->due = all - delayed - held;
  r->q->oldest_due_ms = -1;
  if (cells[3].type != TABQ_T_NULL && tabq__adm_time(&cells[3], &oldest))
    r->q->oldest_due_ms = oldest;
  return 0;
}

/* "col > :now" */
static void later(tabq_adm_sql *q, const char *col) {
  tabq__adm_name(q, col);
  tabq__adm_raw(q, " > ");
  tabq__adm_param(q, TABQ_P_NOW);
}

/* Unfinished rows: all, delayed (retry_after ahead, not held), held (a lease ahead), and the
 * earliest retry_after of the due ones, in one pass over the group's index range. */
static int state(tabq_broker *b, tabq_tx *tx, const tabq_table *t, tabq_queue_stats *qs,
                 const tabq_adm_vals *v, tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  const char *ra = t->retry_after.name, *lu = t->locked_until.name;
  tabq__adm_raw(&q, "SELECT COUNT(*), COUNT(CASE WHEN ");
  if (ra) {
    later(&q, ra);
    if (lu) {
      tabq__adm_raw(&q, " AND NOT (");
      tabq__adm_name(&q, lu);
      tabq__adm_raw(&q, " IS NOT NULL AND ");
      later(&q, lu);
      tabq__adm_raw(&q, ")");
    }
  } else {
    tabq__adm_raw(&q, "1 = 0");
  }
  tabq__adm_raw(&q, " THEN 1 END), COUNT(CASE WHEN ");
  if (lu)
    later(&q, lu);
  else
    tabq__adm_raw(&q, "1 = 0");
  tabq__adm_raw(&q, " THEN 1 END), ");
  if (ra) {
    tabq__adm_raw(&q, "MIN(CASE WHEN ");
    tabq__adm_name(&q, ra);
    tabq__adm_raw(&q, " <= ");
    tabq__adm_param(&q, TABQ_P_NOW);
    if (lu) {
      tabq__adm_raw(&q, " AND (");
      tabq__adm_name(&q, lu);
      tabq__adm_raw(&q, " IS NULL OR ");
      tabq__adm_name(&q, lu);
      tabq__adm_raw(&q, " <= ");
      tabq__adm_param(&q, TABQ_P_NOW);
      tabq__adm_raw(&q, ")");
    }
    tabq__adm_raw(&q, " THEN ");
    tabq__adm_name(&q, ra);
    tabq__adm_raw(&q, " END)");
  } else {
    tabq__adm_raw(&q, "NULL");
  }
  tabq__adm_raw(&q, " FROM ");
  tabq__adm_name(&q, t->name);
  tabq__adm_raw(&q, " WHERE 1 = 1");
  tabq__adm_in_group(&q, t, TABQ_P_GROUP, true);
  tabq__adm_unfinished(&q, t);
  state_row r = {qs, lu != NULL};
  int rc = tabq__adm_query(tx, &q, v, 4, read_state, &r, err);
  tabq__adm_free(&q);
  if (!rc && qs->oldest_due_ms >= 0)
    qs->oldest_due_ms = qs->oldest_due_ms > v->now ? 0 : (v->now - qs->oldest_due_ms) / 1000;
  return rc;
}

typedef struct {
  tabq_attempt_rows *rows;
  size_t n, cap;
  bool failed;
} histogram;

static int read_attempt(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  histogram *h = user;
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 8;
    tabq_attempt_rows *grown = realloc(h->rows, cap * sizeof *grown);
    if (!grown) {
      h->failed = true;
      return 1;
    }
    h->rows = grown;
    h->cap = cap;
  }
  tabq_attempt_rows *r = &h->rows[h->n++];
  r->attempt = r->rows = 0;
  tabq__adm_int(&cells[0], &r->attempt);
  tabq__adm_int(&cells[1], &r->rows);
  return 0;
}

static int attempts(tabq_broker *b, tabq_tx *tx, const tabq_table *t, tabq_queue_stats *qs,
                    const tabq_adm_vals *v, tabq_error *err) {
  if (!t->attempt.name)
    return TABQ_OK;
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  tabq__adm_raw(&q, "SELECT ");
  tabq__adm_name(&q, t->attempt.name);
  tabq__adm_raw(&q, ", COUNT(*) FROM ");
  tabq__adm_name(&q, t->name);
  tabq__adm_raw(&q, " WHERE 1 = 1");
  tabq__adm_in_group(&q, t, TABQ_P_GROUP, true);
  tabq__adm_unfinished(&q, t);
  tabq__adm_raw(&q, " GROUP BY ");
  tabq__adm_name(&q, t->attempt.name);
  tabq__adm_raw(&q, " ORDER BY ");
  tabq__adm_name(&q, t->attempt.name);
  histogram h = {0};
  int rc = tabq__adm_query(tx, &q, v, 2, read_attempt, &h, err);
  tabq__adm_free(&q);
  if (h.failed && !rc)
    rc = tabq__err_set(err, TABQ_NOMEM, t->name, "stats", "cannot allocate the histogram");
  qs->attempts = h.rows;
  qs->nattempts = h.n;
  return rc;
}

static int processed(tabq_broker *b, tabq_tx *tx, const tabq_table *t, tabq_queue_stats *qs,
                     const tabq_adm_vals *v, tabq_error *err) {
  qs->processed = -1;
  if (!t->processed_at.name)
    return TABQ_OK;
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  /* In the finished index's order: a planner that would read the heap for a queue holding
   * most of the table (PostgreSQL: a parallel scan, 3-4x the time) walks the index alone, as
   * no sort of the rows could be cheaper. */
  tabq__adm_raw(&q, "SELECT COUNT(*) FROM (SELECT ");
  tabq__adm_name(&q, t->processed_at.name);
  tabq__adm_raw(&q, " FROM ");
  tabq__adm_name(&q, t->name);
  tabq__adm_raw(&q, " WHERE ");
  tabq__adm_name(&q, t->processed_at.name);
  tabq__adm_raw(&q, " IS NOT NULL");
  tabq__adm_in_group(&q, t, TABQ_P_GROUP, true);
  tabq__adm_raw(&q, " ORDER BY ");
  tabq__adm_name(&q, t->processed_at.name);
  tabq__adm_raw(&q, ") AS finished");
  int rc = tabq__adm_count(tx, &q, v, &qs->processed, err);
  tabq__adm_free(&q);
  return rc;
}

/* The queue's dead letters: the group or table its subscription names. */
static int dead(tabq_broker *b, tabq_tx *tx, tabq_admin_stats *s, const tabq_app *app,
                const tabq_table *t, tabq_queue_stats *qs, const tabq_adm_vals *v,
                tabq_error *err) {
  for (size_t i = 0; i < tabq_app_subscription_count(app); i++) {
    const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
    if (tabq_app_subscription_table(app, i) != t || tabq_app_subscription_route(app, i) ||
        (qs->queue && (!o->queue || strcmp(o->queue, qs->queue))))
      continue;
    if (!o->dead_letter_group && !o->dead_letter_table)
      continue;
    tabq_adm_sql q;
    tabq__adm_init(&q, b);
    tabq_table dt;
    const tabq_table *in = t;
    tabq_adm_vals dv = *v;
    char where[300];
    tabq__adm_raw(&q, "SELECT COUNT(*) FROM ");
    if (o->dead_letter_group) {
      snprintf(where, sizeof where, "group %s", o->dead_letter_group);
      dv.dest = tabq_text(o->dead_letter_group, strlen(o->dead_letter_group));
      tabq__adm_name(&q, t->name);
      tabq__adm_in_group(&q, t, TABQ_P_DEST, false);
    } else {
      snprintf(where, sizeof where, "table %s", o->dead_letter_table);
      in = tabq__adm_dead_table(b, app, i, &dt);
      tabq__adm_name(&q, in->name);
      tabq__adm_in_group(&q, in, TABQ_P_GROUP, false);
    }
    qs->dead_in = keep(s, where, strlen(where));
    int rc = qs->dead_in ? tabq__adm_count(tx, &q, &dv, &qs->dead, err) : TABQ_NOMEM;
    tabq__adm_free(&q);
    return rc;
  }
  return TABQ_OK;
}

int tabq_admin_stats_read(tabq_broker *b, const tabq_app *app, tabq_admin_stats **out,
                          tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app || !out)
    return tabq__err_set(err, TABQ_INVALID, NULL, "stats",
                         "tabq_admin_stats_read needs a broker, an app and out");
  *out = NULL;
  tabq_admin_stats *s = calloc(1, sizeof *s);
  if (!s)
    return tabq__err_set(err, TABQ_NOMEM, NULL, "stats", "cannot allocate the stats");
  s->now = tabq__now_us();
  int rc = TABQ_OK;
  /* The subscriptions' queues first, in the app's order, so a queue with no row is listed. */
  for (size_t i = 0; !rc && i < tabq_app_subscription_count(app); i++) {
    const tabq_table *t = tabq_app_subscription_table(app, i);
    const char *queue = tabq_app_subscription_route(app, i)
                            ? tabq_app_subscription_route(app, i)
                            : tabq_app_subscription_options(app, i)->queue;
    if (t->group.name && queue && !add(s, t->name, queue, strlen(queue)))
      rc = TABQ_NOMEM;
  }
  /* A short read transaction for the groups of each table and for each queue, rather than one
   * for all: on SQLite a transaction of the broker's takes the write lock, which claims and
   * publishes then wait for. */
  for (size_t k = 0; !rc && k < tabq_app_table_count(app); k++) {
    const tabq_table *t = tabq_app_table(app, k);
    tabq_tx *tx;
    if (dead_letter_only(app, t) || (rc = tabq_begin(b, &tx, err)))
      continue;
    rc = table_groups(b, tx, app, t, s, err);
    tabq_error ignored;
    tabq_rollback(tx, &ignored); /* it wrote nothing */
  }
  for (size_t i = 0; !rc && i < s->n; i++) {
    const tabq_table *t = tabq_app_table_named(app, s->q[i].table);
    tabq_adm_vals v = {.now = s->now};
    if (s->q[i].queue)
      v.group = tabq_text(s->q[i].queue, strlen(s->q[i].queue));
    tabq_tx *tx;
    if ((rc = tabq_begin(b, &tx, err)))
      break;
    if (!(rc = state(b, tx, t, &s->q[i], &v, err)) &&
        !(rc = attempts(b, tx, t, &s->q[i], &v, err)) &&
        !(rc = processed(b, tx, t, &s->q[i], &v, err)))
      rc = dead(b, tx, s, app, t, &s->q[i], &v, err);
    tabq_error ignored;
    tabq_rollback(tx, &ignored);
  }
  if (rc == TABQ_NOMEM && err && !err->message[0])
    tabq__err_set(err, rc, NULL, "stats", "cannot allocate the stats");
  if (rc) {
    tabq_admin_stats_free(s);
    return rc;
  }
  *out = s;
  return TABQ_OK;
}
