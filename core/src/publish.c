/* Publishing: the insert rendered once per table from its description, then one row per call,
 * and a wake-up for this process's subscriptions of that table and group. */
#include <stdio.h>
#include <string.h>
#include <unistr.h>

#include "clock.h"
#include "catalog.h"
#include "engine.h"
#include "publishing.h"
#include "error.h"
#include "sized.h"

int tabq__publisher_build(tabq_broker *b, const tabq_table *caller, tabq_publisher *p,
                          tabq_error *err) {
  const tabq_table *t = &p->table;
  p->notify = TABQ_NO_STMT;
  int rc = tabq__table_take(caller, &p->table, err);
  if (!rc)
    rc = tabq__table_rules(t, err);
  if (rc)
    return rc;
  tabq_build build = {.table = t, .form = tabq_table_form(t)};
  p->find_unique = TABQ_NO_STMT;
  rc = tabq__form_servable(b, &build, err);
  if (!rc)
    rc = tabq__unique_servable(b, t, err);
  if (!rc)
    rc = tabq__stmt_build(p->reg, b->host, b->plugin.plugin->dialect->insert, &build, "insert",
                          &p->insert, err);
  if (!rc && t->unique_key.name)
    rc = tabq__stmt_build(p->reg, b->host, b->plugin.plugin->dialect->find_unique, &build,
                          "find_unique", &p->find_unique, err);
  if (!rc)
    tabq__rows_init(b, p);
  if (!rc && b->listen_notify && !(rc = tabq__channel_of(b, t, p->channel, sizeof p->channel, err)))
    rc = tabq__stmt_build(p->reg, b->host, b->plugin.plugin->dialect->notify, &build, "notify",
                          &p->notify, err);
  return rc;
}

/* Found by the description's address and its table's name after its first use: a struct on
 * the service's stack, reused for another table, has the address but not the name. */
int tabq__publisher_of(tabq_broker *b, const tabq_table *caller, tabq_pconn *on,
                       tabq_publisher **out, tabq_error *err) {
  for (tabq_publisher *p = b->publishers; p; p = p->next)
    if (p->caller == caller && caller->name && !strcmp(p->name, caller->name)) {
      *out = p;
      return TABQ_OK;
    }
  tabq_publisher *p = calloc(1, sizeof *p);
  if (!p)
    return tabq__err_set(err, TABQ_NOMEM, caller->name, "insert", "cannot allocate a publisher");
  p->reg = &b->stmts;
  int rc = tabq__publisher_build(b, caller, p, err);
  tabq_pconn *c = on;
  if (!rc && !on)
    rc = tabq__pool_acquire(&b->pool, &c, err);
  if (!rc) {
    tabq_prepared *prepared;
    /* The key's index first: without it the database refuses the insert's ON CONFLICT in its
     * own words, which would not name the rule. */
    if (p->find_unique != TABQ_NO_STMT) {
      tabq_build build = {.table = &p->table, .form = tabq_table_form(&p->table)};
      rc = tabq__unique_index_check(b, c, &build, err);
    }
    if (!rc)
      rc = tabq__stmt_prepare(&b->stmts, b->drv, c, p->insert, &prepared, err);
    if (!rc && p->notify != TABQ_NO_STMT)
      rc = tabq__stmt_prepare(&b->stmts, b->drv, c, p->notify, &prepared, err);
    if (!rc && p->find_unique != TABQ_NO_STMT)
      rc = tabq__stmt_prepare(&b->stmts, b->drv, c, p->find_unique, &prepared, err);
    if (!on)
      tabq__pool_release(&b->pool, c);
  }
  if (!rc && !(p->name = strdup(caller->name)))
    rc = tabq__err_set(err, TABQ_NOMEM, caller->name, "insert", "cannot allocate a publisher");
  if (rc) {
    free(p);
    return rc;
  }
  p->caller = caller;
  p->next = b->publishers;
  b->publishers = p;
  *out = p;
  return TABQ_OK;
}

int tabq__message_check(const tabq_table *t, const tabq_message *m, tabq_error *err) {
  if (m->nheaders && !t->headers.name)
    return tabq__err_set(err, TABQ_HEADER, t->name, "insert",
                         "table %s has no headers column; the message's %zu headers cannot be "
                         "written",
                         t->name, m->nheaders);
  if (m->partition_key && !t->partition_key.name)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s has no partition_key column; the message's key '%s' cannot be "
                         "written",
                         t->name, m->partition_key);
  if (t->group.name && !m->group)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s has a group column; the message needs a group", t->name);
  /* A subscription reads a named queue: a row in group '' could never be claimed. */
  if (t->group.name && !m->group[0])
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s: the message's group is empty, and no subscription reads the "
                         "queue ''; name the queue",
                         t->name);
  /* Every database compares groups as text: one that is not UTF-8 would be written and then
   * never match a queue name (SQLite stores any bytes). */
  if (m->group && u8_check((const uint8_t *)m->group, strlen(m->group)))
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s: the message's group is not valid UTF-8", t->name);
  if (m->partition_key && u8_check((const uint8_t *)m->partition_key, strlen(m->partition_key)))
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s: the message's partition key is not valid UTF-8", t->name);
  if (!t->id.generated && m->id.type == TABQ_T_NULL)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s's id is not generated; the message needs an id", t->name);
  /* The insert leaves a generated column out, so the delay would be lost without a word. */
  if (m->delay_ms && t->retry_after.generated)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s's retry_after is generated (filled by the database), so a "
                         "publish cannot delay the row by %u ms; describe it as not generated",
                         t->name, m->delay_ms);
  if (m->delay_ms && !t->retry_after.name)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s has no retry_after column, so a publish cannot delay the row",
                         t->name);
  if (m->unique_key && !t->unique_key.name)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s has no unique_key column; the message's key '%s' cannot be "
                         "written",
                         t->name, m->unique_key);
  if (m->unique_key && u8_check((const uint8_t *)m->unique_key, strlen(m->unique_key)))
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s: the message's unique key is not valid UTF-8", t->name);
  if (m->ndata > t->ndata)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "the message has %zu data values; table %s describes %zu data columns",
                         m->ndata, t->name, t->ndata);
  if (m->ndata && !m->data)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "table %s: the message has %zu data values but no data", t->name,
                         m->ndata);
  for (size_t i = 0; i < m->ndata; i++)
    if (!tabq__row_value_fits(t->data[i].type, &m->data[i]))
      return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                           "table %s: data column %s is declared %s; the message's value %zu is "
                           "not one",
                           t->name, t->data[i].name, tabq__type_name(t->data[i].type), i);
  return TABQ_OK;
}

static tabq_value text_or_null(const char *s) {
  return s ? tabq_text(s, strlen(s)) : tabq_null();
}

tabq_type tabq__payload_type(const tabq_table *t) {
  return t->payload.type == TABQ_T_TEXT || t->payload.type == TABQ_T_JSON ? t->payload.type
                                                                          : TABQ_T_BYTES;
}

tabq_bind tabq__message_bind(const tabq_table *t, const tabq_message *m, const char *headers,
                             size_t headers_len, int64_t now) {
  tabq_value payload = tabq_bytes(m->payload ? m->payload : "", m->payload_len);
  payload.type = tabq__payload_type(t);
  tabq_bind v = {.id = m->id,
                 .group = text_or_null(m->group),
                 .priority = m->priority,
                 .partition_key = text_or_null(m->partition_key),
                 .attempt = 1,
                 .payload = payload,
                 .data = m->data,
                 .ndata = m->ndata,
                 .now = now};
  /* unique_key sits after ndata: a message of a program built before 1.9 was taken at full size
   * (TABQ_TAKE), its key NULL. */
  v.unique_key = text_or_null(m->unique_key);
  v.headers = (tabq_value){.type = TABQ_T_JSON, .u.buf = {headers, headers_len}};
  v.retry_at = now + (int64_t)m->delay_ms * 1000;
  return v;
}

/* The id as text for a message, and as an integer where it is one. */
static void id_text(const tabq_value *id, char *out, size_t cap, int64_t *as_int) {
  *as_int = 0;
  if (id->type == TABQ_T_INT) {
    *as_int = id->u.i;
    snprintf(out, cap, "%lld", (long long)id->u.i);
  } else if (tabq__has_buffer(id->type)) {
    snprintf(out, cap, "%.*s", (int)id->u.buf.len, (const char *)id->u.buf.ptr);
  } else {
    snprintf(out, cap, "?");
  }
}

/* The holder of the message's key, read on the same connection right after the insert (inside
 * the caller's transaction, where there is one): its id as text in `id`, as an integer in
 * *as_int where it is one. *row false: no row holds the key now. */
static int find_holder(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const tabq_bind *v,
                       bool *row, char *id, size_t cap, int64_t *as_int, tabq_error *err) {
  tabq_prepared *st = NULL;
  *row = false;
  int rc = tabq__stmt_run(&b->stmts, b->drv, c, p->find_unique, v, &st, err);
  if (rc)
    return rc;
  tabq_value holder = tabq_null();
  rc = b->drv->next(st, row);
  if (!rc && *row)
    rc = b->drv->cell(st, 0, &holder);
  if (!rc && *row)
    id_text(&holder, id, cap, as_int);
  b->drv->reset(st);
  return rc ? tabq__err_from_plugin(err, rc, p->table.name, "find_unique") : TABQ_OK;
}

int tabq__insert_row(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const tabq_message *m,
                     const tabq_bind *v, tabq_error *err) {
  const tabq_table *t = &p->table;
  /* Twice at most: a holder finished and deleted between the insert and the query frees the
   * key, and the second insert then writes the row. */
  for (int round = 0; round < 2; round++) {
    uint64_t changed = 0;
    int rc = tabq__stmt_change(&b->stmts, b->drv, c, p->insert, v, &changed, err);
    if (rc || changed || p->find_unique == TABQ_NO_STMT)
      return rc;
    bool row = false;
    char id[64];
    int64_t as_int = 0;
    if (m->unique_key && (rc = find_holder(b, p, c, v, &row, id, sizeof id, &as_int, err)))
      return rc;
    if (row) {
      tabq__err_set(err, TABQ_DUPLICATE, t->name, "insert",
                    "table %s: unique key '%s' is held by row %s; nothing was written", t->name,
                    m->unique_key, id);
      if (err)
        err->duplicate_id = as_int;
      return TABQ_DUPLICATE;
    }
    if (!m->unique_key)
      break;
  }
  return tabq__err_set(err, TABQ_BACKEND, t->name, "insert",
                       "table %s: the insert wrote no row, and no row holds its unique key: "
                       "another unique column (the id?) holds one of the message's values",
                       t->name);
}

/* NOTIFY the row just written, on the connection that wrote it; a failure only warns. */
static void announce(tabq_broker *b, const tabq_table *t, tabq_publisher *p, tabq_pconn *c,
                     const char *group) {
  tabq_bind v = {.channel = tabq_text(p->channel, strlen(p->channel)),
                 .group = tabq_text(group ? group : "", group ? strlen(group) : 0)};
  tabq_error err;
  tabq_prepared *st = NULL;
  if (tabq__stmt_run(&b->stmts, b->drv, c, p->notify, &v, &st, &err))
    tabq__logf(&b->log, TABQ_LOG_WARN, "table %s: the row is written, but its notify failed: %s",
               t->name, err.message);
  else
    b->drv->reset(st);
}

int tabq__publish_on(tabq_broker *b, tabq_publisher *p, tabq_pconn *c, const tabq_message *m,
                     tabq_buf *headers, tabq_error *err) {
  const tabq_table *t = &p->table;
  int rc = tabq__message_check(t, m, err);
  if (!rc)
    rc = tabq__values_bindable(&b->plugin, m->data, m->ndata, t->name, "insert", err);
  headers->len = 0;
  if (!rc && t->headers.name)
    rc = tabq__headers_render(m->headers, m->nheaders, headers, err, t->name);
  if (rc)
    return rc;
  tabq_bind v = tabq__message_bind(t, m, headers->p, headers->len, tabq__now_us());
  rc = tabq__insert_row(b, p, c, m, &v, err);
  if (!rc && p->notify != TABQ_NO_STMT)
    announce(b, t, p, c, m->group);
  return rc;
}

static int publish(tabq_broker *b, const tabq_table *table, const tabq_message *message,
                   tabq_error *err) {
  if (!b || !table || !message)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert",
                         "tabq_publish needs a broker, a table and a message");
  tabq_publisher *p;
  pthread_mutex_lock(&b->mu);
  int rc = tabq__publisher_of(b, table, NULL, &p, err);
  pthread_mutex_unlock(&b->mu);
  if (rc)
    return rc;
  const tabq_table *t = &p->table;
  tabq_message m;
  if ((rc = TABQ_TAKE(message, &m, TABQ_MESSAGE_SIZE_1_0, t->name, err)))
    return rc;
  tabq_buf headers = {0};
  tabq_pconn *c;
  if (!(rc = tabq__pool_acquire(&b->pool, &c, err))) {
    rc = tabq__publish_on(b, p, c, &m, &headers, err);
    tabq__pool_release(&b->pool, c);
  }
  tabq__buf_free(&headers);
  if (!rc)
    tabq__publish_wake(b, t, m.group);
  return rc;
}

int tabq_publish(tabq_broker *b, const tabq_table *table, const tabq_message *message,
                 tabq_error *err) {
  tabq__err_clear(err);
  if (!b)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert", "tabq_publish needs a broker");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = publish(b, table, message, err);
  tabq__log_leave(outer);
  return rc;
}

int tabq_insert_sql(tabq_broker *b, const tabq_table *table, char *buf, size_t cap,
                    tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table || !buf)
    return tabq__err_set(err, TABQ_INVALID, NULL, "insert",
                         "tabq_insert_sql needs a broker, a table and a buffer");
  tabq_publisher *p;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  pthread_mutex_lock(&b->mu);
  int rc = tabq__publisher_of(b, table, NULL, &p, err);
  pthread_mutex_unlock(&b->mu);
  tabq__log_leave(outer);
  if (rc)
    return rc;
  const tabq_table *t = &p->table;
  const char *sql = b->stmts.defs[p->insert].sql;
  if ((size_t)snprintf(buf, cap, "%s", sql) >= cap)
    return tabq__err_set(err, TABQ_INVALID, t->name, "insert",
                         "the insert is %zu bytes; the buffer holds %zu", strlen(sql) + 1, cap);
  return TABQ_OK;
}
