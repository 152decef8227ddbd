/* The statement check (tabq/check.h, docs/check.md): a subscription, a publisher or a route's
 * statements built through the very open paths that build them when they run (into a registry
 * of the check's own, subscription.c and publish.c), each prepared on one pooled connection and
 * dropped again, and, where the driver types its placeholders, each value it would bind tried
 * against them. Nothing is executed but the catalog's queries; every statement is reported with
 * the database's answer, and a statement the database refuses does not stop the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tabq/sys/sql.h>

#include "check_report.h"
#include "catalog.h"
#include "engine.h"
#include "publishing.h"
#include "error.h"
#include "sized.h"

/* One check call: where its items go, and the first error for the caller's err. */
typedef struct check_run {
  tabq_broker *b;
  tabq_check_report *report;
  tabq_error *err;
  int first; /* the first error item's code, TABQ_OK until one */
  int fatal; /* out of memory, or no connection: the check stops */
  tabq_registry *reg;
  tabq_pconn *conn;
} check_run;

/* Adds an item: ok without `e`, else of severity `sev` with e's code and details. */
static void add(check_run *r, const char *table, const char *purpose, const char *sql,
                tabq_check_severity sev, const tabq_error *e) {
  tabq_check_item item = {.table = table,
                          .purpose = purpose,
                          .sql = sql,
                          .severity = e ? sev : TABQ_CHECK_OK,
                          .code = e && sev == TABQ_CHECK_ERROR ? e->code : TABQ_OK,
                          .sqlstate = e ? e->sqlstate : "",
                          .native = e ? e->native : 0,
                          .message = e ? e->message : "",
                          .position = e ? e->position : 0};
  if (tabq__report_add(r->report, &item)) {
    r->fatal = tabq__err_set(r->err, TABQ_NOMEM, table, NULL, "cannot grow the check's report");
    return;
  }
  if (e && sev == TABQ_CHECK_ERROR && !r->first) {
    r->first = e->code;
    if (r->err)
      *r->err = *e;
  }
}

/* ---- Binding -------------------------------------------------------------------------------
 * A value like the one the engine binds to each parameter, for Driver.bindable (ABI 1.7). */

static const char sample_text[] = "tabq-check";
static const char sample_json[] = "{}";
static const int64_t sample_ids[] = {1};

/* Whether parameter `param` of table t binds a value the engine knows the type of: *v a sample
 * of it, *what what it is in messages. Data columns of any type bind what the service gives. */
static bool sample_of(const tabq_table *t, uint16_t param, tabq_value *v, char *what, size_t cap) {
  tabq_value text = tabq_text(sample_text, sizeof sample_text - 1);
  tabq_value when = tabq_time(INT64_C(1700000000000000));
  const struct {
    uint16_t param;
    const char *what;
    tabq_value v;
  } known[] = {
      {TABQ_P_ID, "the id", t->id.type == TABQ_T_TEXT ? text : tabq_int(1)},
      {TABQ_P_GROUP, "the queue", text},
      {TABQ_P_NOW, "now", when},
      {TABQ_P_LIMIT, "the claim's limit", tabq_int(1)},
      {TABQ_P_LEASE_UNTIL, "the lease's expiry", when},
      {TABQ_P_TOKEN, "the lease held", when},
      {TABQ_P_RETRY_AT, "a retry's time", when},
      {TABQ_P_DEST, "the dead letter's destination", text},
      {TABQ_P_KEY, "the advisory key", text},
      {TABQ_P_PRIORITY, "the priority", tabq_int(1)},
      {TABQ_P_PARTITION_KEY, "the partition key", text},
      {TABQ_P_HEADERS, "the headers", {.type = TABQ_T_JSON, .u.buf = {sample_json, 2}}},
      {TABQ_P_PAYLOAD, "the payload", {.type = tabq__payload_type(t), .u.buf = {sample_json, 2}}},
      {TABQ_P_ATTEMPT, "the attempt", tabq_int(1)},
      {TABQ_P_CHANNEL, "the channel", text},
  };
  /* A list of ids is bound for integer ids only. */
  if (param == TABQ_P_IDS && t->id.type != TABQ_T_TEXT) {
    *v = (tabq_value){.type = TABQ_T_INT_LIST, .u.list = {sample_ids, 1}};
    snprintf(what, cap, "the claimed ids");
    return true;
  }
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].param == param) {
      *v = known[i].v;
      snprintf(what, cap, "%s", known[i].what);
      return true;
    }
  size_t n = (size_t)param - TABQ_P_DATA;
  if (param < TABQ_P_DATA || n >= t->ndata || t->data[n].type == TABQ_T_NULL)
    return false;
  int ty = t->data[n].type;
  *v = ty == TABQ_T_INT    ? tabq_int(1)
       : ty == TABQ_T_REAL ? tabq_real(1.5)
       : ty == TABQ_T_TIME ? when
                           : (tabq_value){.type = (tabq_type)ty, .u.buf = {sample_json, 2}};
  snprintf(what, cap, "data column %s", t->data[n].name);
  return true;
}

/* Each placeholder of a prepared statement with the value the engine would bind there. */
static int check_binds(check_run *r, tabq_prepared *p, const tabq_sdef *d, const tabq_table *t,
                       tabq_error *e) {
  const tabq_driver_v1 *drv = r->b->drv;
  if (!TABQ_HAS_MEMBER(drv, tabq_driver_v1, bindable))
    return TABQ_OK;
  for (unsigned i = 0; i < d->nparams; i++) {
    tabq_value v;
    char what[160];
    if (!sample_of(t, d->params[i], &v, what, sizeof what))
      continue;
    int rc = drv->bindable(p, i, &v);
    if (rc) {
      tabq__err_from_plugin(e, rc, t->name, d->name);
      char said[sizeof e->message];
      snprintf(said, sizeof said, "%s", e->message);
      snprintf(e->message, sizeof e->message,
               "it prepares, but %.120s (%.16s) cannot be bound: %.300s", what,
               tabq__type_name(v.type), said);
      return rc;
    }
  }
  return TABQ_OK;
}

/* ---- Preparing ----------------------------------------------------------------------------- */

/* The pooled connection the statements are prepared on, held only while they are: the open
 * and the catalog's queries take one of their own. */
static int take_conn(check_run *r) {
  if (r->conn)
    return TABQ_OK;
  int rc = tabq__pool_acquire(&r->b->pool, &r->conn, r->err);
  if (rc) {
    r->conn = NULL;
    r->fatal = rc;
  }
  return rc;
}

static void give_conn(check_run *r) {
  if (r->conn)
    tabq__pool_release(&r->b->pool, r->conn);
  r->conn = NULL;
}

/* Prepares registered statement `id` on the run's connection and drops it again. */
static int prepare_def(check_run *r, unsigned id, const tabq_table *t, tabq_error *e) {
  const tabq_sdef *d = &r->reg->defs[id];
  const tabq_driver_v1 *drv = r->b->drv;
  tabq_prepared *p = NULL;
  int rc = tabq__pconn_check(
      r->conn, drv->prepare(r->conn->conn, d->sql, d->nparams * d->rows, d->name, &p));
  if (rc)
    tabq__err_from_plugin(e, rc, t->name, d->name);
  else
    rc = check_binds(r, p, d, t, e);
  if (p)
    drv->finalize(p);
  return rc;
}

static void check_def(check_run *r, unsigned id, const tabq_table *t, const char *purpose) {
  tabq_error e;
  int rc = prepare_def(r, id, t, &e);
  add(r, t->name, purpose, r->reg->defs[id].sql, TABQ_CHECK_ERROR, rc ? &e : NULL);
}

/* A failure before any statement could be prepared: the description, the mount or the
 * dialect refused it. A connection that could not be had stops the check. */
static void refused(check_run *r, const char *table, const char *prefix, const tabq_error *e) {
  if (e->code == TABQ_NOMEM || e->code == TABQ_POOL_TIMEOUT ||
      !strcmp(e->statement, "server_version")) {
    r->fatal = e->code;
    if (r->err)
      *r->err = *e;
    return;
  }
  char purpose[160];
  snprintf(purpose, sizeof purpose, "%s: %s", prefix, e->statement[0] ? e->statement : "open");
  add(r, table, purpose, "", TABQ_CHECK_ERROR, e);
}

/* ---- Subscriptions ------------------------------------------------------------------------- */

static tabq_outcome never_called(tabq_delivery *d, void *user) {
  (void)d;
  (void)user;
  return tabq_no_outcome();
}

static bool errors_since(const tabq_check_report *report, size_t from) {
  for (size_t i = from; i < tabq_check_report_count(report); i++)
    if (tabq_check_report_item(report, i)->severity == TABQ_CHECK_ERROR)
      return true;
  return false;
}

/* The claim-order index, where the claim is tabq's own: found, missing (a warning with the
 * statement that creates it), or not looked for (a warning saying why). */
static void check_index(check_run *r, tabq_subscription *s, const char *prefix) {
  const tabq_table *t = s->t;
  tabq_build build = tabq__sub_build(s);
  bool found;
  char name[256], purpose[160];
  tabq_error e;
  snprintf(purpose, sizeof purpose, "%s: claim-order index", prefix);
  int rc = tabq__claim_index_find(r->b, &build, &found, name, sizeof name, &e);
  if (rc) {
    add(r, t->name, purpose, "", TABQ_CHECK_WARNING, &e);
    return;
  }
  if (found) {
    add(r, t->name, purpose, "", TABQ_CHECK_OK, NULL);
    return;
  }
  char index[256];
  tabq_stmt st;
  tabq__schema_index_name(t, index, sizeof index);
  tabq_error why;
  bool rendered =
      !tabq__schema_part(r->b, &build, TABQ_SCHEMA_INDEX, TABQ_SCHEMA_ALONE, index, &st, &why) &&
      st.sql;
  tabq__err_set(&e, TABQ_SCHEMA, t->name, "indexes",
                "no index of table %s serves its claims, so each claim reads and sorts the "
                "queue's due rows%s; create the claim-order index%s%s",
                t->name, t->processed_at.name ? " or steps over its finished rows" : "",
                rendered ? ": " : " (docs/table-description.md)", rendered ? st.sql : "");
  add(r, t->name, purpose, rendered ? st.sql : "", TABQ_CHECK_WARNING, &e);
  tabq_sql_free(&st);
}

/* The label of a subscription's statement: its name, and the event it comes from when it is
 * the service's own. */
static void purpose_of(const tabq_subscription *s, unsigned slot, const char *prefix,
                       const char *name, char *out, size_t cap) {
  bool own = s->custom & (1u << slot);
  snprintf(out, cap, "%s: %s%s%s%s", prefix, name, own ? " (events." : "", own ? name : "",
           own ? ")" : "");
}

static void check_sub(check_run *r, const tabq_table *table, const tabq_subscription_options *in,
                      bool by_name, const char *prefix) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  tabq_error e;
  if (in && TABQ_TAKE(in, &o, TABQ_SUBSCRIPTION_OPTIONS_SIZE_1_0, table->name, &e)) {
    refused(r, table->name, prefix, &e);
    return;
  }
  if (!o.handler && !o.batch_handler)
    o.handler = never_called; /* the statements do not depend on it */
  tabq_subscription *s = NULL;
  int rc = tabq__sub_open_for_check(r->b, table, &o, by_name, r->reg, &s, &e);
  if (rc)
    refused(r, table->name, prefix, &e);
  else
    rc = take_conn(r);
  size_t before = tabq_check_report_count(r->report);
  for (unsigned i = 0; !rc && !r->fatal && i < SQ_COUNT; i++) {
    if (s->st[i] == TABQ_NO_STMT)
      continue;
    char purpose[160];
    purpose_of(s, i, prefix, r->reg->defs[s->st[i]].name, purpose, sizeof purpose);
    check_def(r, s->st[i], s->t, purpose);
  }
  give_conn(r);
  /* The index is looked for once the statements prepare: a table or a column the database
   * lacks is what to mend first, and a missing table has no index either. */
  if (!rc && !r->fatal && !s->t->events.claim && !errors_since(r->report, before))
    check_index(r, s, prefix);
  if (s)
    tabq__sub_free(s);
}

/* ---- Publishing ---------------------------------------------------------------------------- */

/* The unique key's index (docs/unique-jobs.md): found, or an error with the statement that
 * creates it, where the dialect renders one. */
static void check_unique(check_run *r, const tabq_publisher *p, const char *prefix) {
  char purpose[160], index[256];
  snprintf(purpose, sizeof purpose, "%s: unique key's index", prefix);
  tabq_build build = {.table = &p->table, .form = tabq_table_form(&p->table)};
  tabq_error e;
  if (!tabq__unique_index_check(r->b, r->conn, &build, &e)) {
    add(r, p->table.name, purpose, "", TABQ_CHECK_OK, NULL);
    return;
  }
  size_t schema_len;
  snprintf(index, sizeof index, "%s_unique", tabq_sql_table_part(p->table.name, &schema_len));
  tabq_stmt st;
  tabq_error why;
  bool rendered = e.code == TABQ_SCHEMA &&
                  !tabq__schema_part(r->b, &build, TABQ_SCHEMA_UNIQUE_INDEX, TABQ_SCHEMA_ALONE,
                                     index, &st, &why) &&
                  st.sql;
  add(r, p->table.name, purpose, rendered ? st.sql : "", TABQ_CHECK_ERROR, &e);
  if (rendered)
    tabq_sql_free(&st);
}

static void check_pub(check_run *r, const tabq_table *table, const char *prefix) {
  tabq_publisher p = {.reg = r->reg};
  tabq_error e;
  char purpose[160];
  if (tabq__publisher_build(r->b, table, &p, &e) || tabq__rows_build_every(r->b, &p, &e)) {
    refused(r, table->name, prefix, &e);
    return;
  }
  if (take_conn(r))
    return;
  if (p.find_unique != TABQ_NO_STMT)
    check_unique(r, &p, prefix);
  snprintf(purpose, sizeof purpose, "%s: insert", prefix);
  check_def(r, p.insert, &p.table, purpose);
  if (p.find_unique != TABQ_NO_STMT && !r->fatal) {
    snprintf(purpose, sizeof purpose, "%s: find_unique", prefix);
    check_def(r, p.find_unique, &p.table, purpose);
  }
  /* Every size a batch writes at once, one item: the first size the database refuses, or the
   * largest. */
  unsigned failed = TABQ_NO_STMT, last = TABQ_NO_STMT, most = 0;
  for (unsigned k = 1; k < TABQ_ROWS_STEPS && !r->fatal; k++) {
    if (p.rows[k] >= TABQ_NO_STMT - 1) /* not built, or declined */
      continue;
    last = p.rows[k];
    most = 1u << k;
    if (failed == TABQ_NO_STMT && prepare_def(r, p.rows[k], &p.table, &e))
      failed = p.rows[k];
  }
  if (last != TABQ_NO_STMT && !r->fatal) {
    unsigned shown = failed != TABQ_NO_STMT ? failed : last;
    snprintf(purpose, sizeof purpose, "%s: insert of 2 to %u rows (publish_many)", prefix, most);
    add(r, p.table.name, purpose, r->reg->defs[shown].sql, TABQ_CHECK_ERROR,
        failed != TABQ_NO_STMT ? &e : NULL);
  }
  if (p.notify != TABQ_NO_STMT && !r->fatal) {
    snprintf(purpose, sizeof purpose, "%s: notify", prefix);
    check_def(r, p.notify, &p.table, purpose);
  }
  give_conn(r);
}

/* ---- The calls ----------------------------------------------------------------------------- */

typedef enum check_kind { CHECK_SUBSCRIPTION, CHECK_PUBLISH, CHECK_ROUTE } check_kind;

static void check_route(check_run *r, const char *name, const tabq_table *table) {
  char prefix[160];
  snprintf(prefix, sizeof prefix, "route %s", name);
  tabq_table t;
  tabq_error e;
  int rc = tabq__table_take(table, &t, &e);
  if (!rc)
    rc = tabq__table_rules(&t, &e);
  if (!rc)
    rc = tabq__route_check(name, &t, &e);
  if (!rc)
    rc = tabq__byname_served(r->b, name, t.name, &e);
  if (rc) {
    if (!e.statement[0])
      snprintf(e.statement, sizeof e.statement, "route");
    refused(r, table->name, prefix, &e);
    return;
  }
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = name;
  check_sub(r, table, &o, true, prefix);
  if (!r->fatal)
    check_pub(r, table, prefix);
}

static int run(tabq_broker *b, check_kind kind, const char *name, const tabq_table *table,
               const tabq_subscription_options *o, tabq_check_report *report, tabq_error *err) {
  check_run r = {.b = b, .report = report, .err = err};
  if (!(r.reg = malloc(sizeof *r.reg)))
    return tabq__err_set(err, TABQ_NOMEM, table->name, NULL, "cannot allocate the check");
  tabq__registry_init(r.reg);
  char prefix[160];
  if (kind == CHECK_SUBSCRIPTION) {
    const char *q = o && o->size > offsetof(tabq_subscription_options, queue) ? o->queue : NULL;
    snprintf(prefix, sizeof prefix, "subscription %s", q ? q : table->name);
    check_sub(&r, table, o, false, prefix);
  } else if (kind == CHECK_PUBLISH) {
    check_pub(&r, table, "publish");
  } else {
    check_route(&r, name, table);
  }
  give_conn(&r);
  int rc = r.fatal ? r.fatal : r.first;
  tabq__registry_destroy(r.reg, b->host);
  free(r.reg);
  return rc;
}

static int checked(tabq_broker *b, check_kind kind, const char *name, const tabq_table *table,
                   const tabq_subscription_options *o, tabq_check_report *report, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table || !report || (kind == CHECK_ROUTE && !name))
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "a check needs a broker, a table, a report%s",
                         kind == CHECK_ROUTE ? " and a route's name" : "");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = run(b, kind, name, table, o, report, err);
  tabq__log_leave(outer);
  return rc;
}

int tabq_check_subscription(tabq_broker *b, const tabq_table *table,
                            const tabq_subscription_options *options, tabq_check_report *report,
                            tabq_error *err) {
  return checked(b, CHECK_SUBSCRIPTION, NULL, table, options, report, err);
}

int tabq_check_publish(tabq_broker *b, const tabq_table *table, tabq_check_report *report,
                       tabq_error *err) {
  return checked(b, CHECK_PUBLISH, NULL, table, NULL, report, err);
}

int tabq_check_route(tabq_broker *b, const char *name, const tabq_table *table,
                     tabq_check_report *report, tabq_error *err) {
  return checked(b, CHECK_ROUTE, name, table, NULL, report, err);
}
