/* Opening a subscription: the mount's rules, the dialect's refusals, every statement built and
 * prepared once (R-DESC-1, R-DESC-2), then the threads. Nothing is claimed before all of that
 * holds. */
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>

#include "concurrency_int.h"
#include "controls_int.h"
#include "deadline.h"
#include "engine.h"
#include "error.h"
#include "lookahead.h"
#include "mount.h"
#include "sized.h"

#define DEFAULT_BATCH 16

/* The server's version and current database, read once at open for the dialect's floors and
 * names. */
static int read_server(tabq_subscription *s, tabq_error *err) {
  return tabq__pool_server(&s->b->pool, s->t->name, s->server_version_text,
                           sizeof s->server_version_text, &s->server_version, s->database,
                           sizeof s->database, err);
}

int tabq__form_servable(tabq_broker *b, const tabq_build *build, tabq_error *err) {
  const tabq_plugin *p = b->plugin.plugin;
  const char *table = build->table->name;
  int rc = p->dialect->check(build);
  if (rc)
    return tabq__err_from_plugin(err, rc, table, "check");
  const tabq_form_ops *ops = tabq__form_ops_of(build->form);
  if (!ops->served(p))
    return tabq__err_set(err, TABQ_DIALECT, table, NULL,
                         "table %s takes the %s form, which the %s dialect does not serve", table,
                         ops->name, p->name);
  /* A session lock taken in one transaction would be released, or never, on another session. */
  if (build->form == TABQ_FORM_ADVISORY && b->per_transaction)
    return tabq__err_set(err, TABQ_DIALECT, table, NULL,
                         "table %s takes the advisory lock form, whose locks belong to a server "
                         "session, and the URL declares a transaction pooler "
                         "(pooler=transaction): connect directly or through session pooling, or "
                         "describe the table in the lease or row lock form",
                         table);
  return TABQ_OK;
}

static int check_form(tabq_subscription *s, tabq_error *err) {
  const tabq_plugin *p = s->b->plugin.plugin;
  tabq_build build = tabq__sub_build(s);
  int rc = tabq__form_servable(s->b, &build, err);
  if (rc)
    return rc;
  if (s->ops->check && (rc = s->ops->check(s, err)))
    return rc;
  /* route.c refused a plugin without ByName already. */
  if (s->by_name && (rc = p->byname->check(&build)))
    return tabq__err_from_plugin(err, rc, s->t->name, "byname");
  return TABQ_OK;
}

/* The settlements every form shares, and the dead letter the mount declared. */
static int build_settlements(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_dialect_v1 *dl = b->plugin.plugin->dialect;
  tabq_build build = tabq__sub_build(s);
  int rc = tabq__sub_stmt(s, dl->ack, "ack", SQ_ACK, err);
  if (!rc)
    rc = tabq__sub_stmt(s, dl->discard, "discard", SQ_DISCARD, err);
  /* A retry runs no statement where what the delivery holds puts the row back (unless the
   * service gives its own): a commit or a key's release. */
  if (!rc && s->ops->by_statement(ACT_RETRY))
    rc = tabq__sub_stmt(s, dl->retry, "retry", SQ_RETRY, err);
  if (!rc && s->t->retry_after.name)
    rc = tabq__sub_stmt(s, dl->retry_after, "retry_after", SQ_RETRY_AFTER, err);
  /* A batch's acks at once, where the dialect can (and the service has no ack of its own). */
  if (!rc && s->o.batch_handler && !tabq__sub_own(s, SQ_ACK) &&
      TABQ_HAS_MEMBER(dl, tabq_dialect_v1, ack_ids) && dl->ack_ids)
    rc = tabq__stmt_build(s->reg, b->host, dl->ack_ids, &build, "ack_ids", &s->st[SQ_ACK_IDS], err);
  /* The service's own dead letter serves a group and a table alike, in one statement. */
  bool own_dead = tabq__sub_own(s, SQ_DL_GROUP);
  if (!rc && s->dead_letter_group)
    rc = tabq__sub_stmt(s, dl->dead_letter_group, "dead_letter", SQ_DL_GROUP, err);
  if (!rc && s->dead_letter_table && !own_dead) {
    tabq_stmt copy, remove;
    tabq_sql_init(&copy, b->host);
    tabq_sql_init(&remove, b->host);
    rc = dl->dead_letter_table(&build, &copy, &remove);
    if (!rc)
      rc = copy.status ? copy.status : remove.status;
    if (rc) {
      tabq__err_from_plugin(err, rc, s->t->name, "dead_letter");
      tabq_sql_free(&copy);
      tabq_sql_free(&remove);
      return rc;
    }
    rc =
        tabq__stmt_register(s->reg, &copy, "dead_letter_copy", s->t->name, &s->st[SQ_DL_COPY], err);
    if (!rc)
      rc = tabq__stmt_register(s->reg, &remove, "dead_letter_delete", s->t->name,
                               &s->st[SQ_DL_REMOVE], err);
    else
      tabq_sql_free(&remove);
  }
  return rc;
}

/* R-DESC-2: every statement prepared on the server now, so a missing table or column stops the
 * subscription here with the statement's name. */
static int prepare_all(tabq_subscription *s, tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  for (int i = 0; i < SQ_COUNT && !rc; i++) {
    tabq_prepared *p;
    if (s->st[i] != TABQ_NO_STMT)
      rc = tabq__stmt_prepare(&b->stmts, b->drv, c, s->st[i], &p, err);
  }
  tabq__pool_release(&b->pool, c);
  return rc;
}

static char *copy_or_null(const char *s, bool *failed) {
  if (!s)
    return NULL;
  char *c = strdup(s);
  *failed |= !c;
  return c;
}

/* Acks gather by default where the database has one writer (the Lease table's claims are
 * serial) and several workers of a lease subscription ack one delivery each: there concurrent
 * commits queue on the writer anyway, one after another, where one commit can carry them all
 * (docs/coalesced-acks.md). Elsewhere the server folds concurrent commits itself. */
static bool acks_gather_by_default(const tabq_subscription *s) {
  return s->o.acks == TABQ_ACKS_DEFAULT && s->form == TABQ_FORM_LEASE && s->workers > 1 &&
         !s->o.batch_handler && !s->o.transactional && (s->claim_flags & TABQ_CLAIM_SERIAL);
}

static int allocate(tabq_subscription *s, tabq_error *err) {
  int rc;
  s->slots = calloc(s->nslots, sizeof *s->slots);
  s->free_slots = calloc(s->nslots, sizeof *s->free_slots);
  s->ready = calloc(s->nslots, sizeof *s->ready);
  if (!s->slots || !s->free_slots || !s->ready)
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the deliveries");
  for (unsigned i = 0; i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    d->sub = s;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (!(d->cells = calloc(s->proj.ncols, sizeof *d->cells)))
      return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the deliveries");
    s->free_slots[s->nfree++] = d;
  }
  if ((s->o.coalesce_acks || acks_gather_by_default(s)) &&
      tabq__coalescer_init(&s->coalescer, s->nslots, s->o.coalesce_window_us))
    return tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the ack coalescer");
  if (s->o.workers_by_key && (rc = tabq__bykey_open(s, err)))
    return rc;
  /* A look-ahead: one claimer fills the shared ring the other workers pop. */
  if (s->o.prefetch || s->ahead_max)
    s->serial = true;
  if (s->o.transactional)
    return tabq__delivery_txs_init(s, err);
  return TABQ_OK;
}

const tabq_form_ops *tabq__form_ops_of(tabq_form form) {
  switch (form) {
  case TABQ_FORM_LEASE:
    return &tabq_lease_ops;
  case TABQ_FORM_ADVISORY:
    return &tabq_advisory_ops;
  case TABQ_FORM_ROWLOCK:
    break;
  }
  return &tabq_rowlock_ops;
}

static tabq_subscription *new_subscription(tabq_broker *b, const tabq_table *t,
                                           const tabq_subscription_options *o) {
  tabq_subscription *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->b = b;
  s->reg = &b->stmts;
  s->table = *t;
  s->t = &s->table;
  t = s->t;
  s->o = *o;
  s->form = tabq_table_form(t);
  s->ops = tabq__form_ops_of(s->form);
  s->claim = s->ops->claim;
  for (int i = 0; i < SQ_COUNT; i++)
    s->st[i] = TABQ_NO_STMT;
  s->workers = o->workers_by_key ? o->workers_by_key : o->workers ? o->workers : 1;
  s->batch = o->batch_handler ? (o->batch ? o->batch : DEFAULT_BATCH) : 1;
  if (t->fifo)
    s->batch = 1;
  s->nslots = s->workers * s->batch;
  /* workers_by_key: rows of a key wait behind that key's row in work while the other workers
   * take other keys' rows: room for as many waiting as working. */
  if (o->workers_by_key)
    s->nslots = 2 * s->workers;
  s->lease_s = o->lease_s ? o->lease_s : b->lease_s;
  tabq__lookahead_open(s); /* a slot for each row that may wait its turn */
  s->poll_ms = o->poll_interval_ms ? o->poll_interval_ms : b->poll_interval_ms;
  tabq__projection_init(&s->proj, t, false); /* the due time: tabq__due_open */
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &attr);
  pthread_cond_init(&s->ext_cv, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&s->ext_mu, NULL);
  return s;
}

/* The subscription a mount asks for, its rules checked and its statements built into `reg`;
 * *out is set once it exists, so the caller frees it whatever failed after. */
static int open_built(tabq_broker *b, const tabq_table *table,
                      const tabq_subscription_options *options, bool by_name, tabq_registry *reg,
                      bool checking, tabq_subscription **out, tabq_error *err) {
  *out = NULL;
  tabq_table taken_table;
  tabq_subscription_options taken;
  int rc = tabq__table_take(table, &taken_table, err);
  if (!rc)
    rc = tabq__options_take(options, &taken, table->name, err);
  if (rc)
    return rc;
  const tabq_table *t = &taken_table;
  const tabq_subscription_options *o = &taken;
  rc = tabq__table_rules(t, err);
  if (!rc)
    rc = tabq__mount_check(t, o, err);
  if (rc)
    return rc;
  /* A check prepares what a subscription would, which a shut broker still may. */
  if (!checking && atomic_load(&b->shut))
    return tabq__err_set(err, TABQ_CLOSED, t->name, NULL, "the broker is shut down");
  tabq_subscription *s = new_subscription(b, t, o);
  if (!s)
    return tabq__err_set(err, TABQ_NOMEM, t->name, NULL, "cannot allocate a subscription");
  *out = s;
  t = s->t;
  s->by_name = by_name;
  s->reg = reg;
  s->checking = checking;
  bool failed = false;
  s->queue = copy_or_null(o->queue, &failed);
  s->dead_letter_group = copy_or_null(o->dead_letter_group, &failed);
  s->dead_letter_table = copy_or_null(o->dead_letter_table, &failed);
  const char *dest = s->dead_letter_group ? s->dead_letter_group : s->dead_letter_table;
  s->queue_value = s->queue ? tabq_text(s->queue, strlen(s->queue)) : tabq_null();
  s->dest_value = dest ? tabq_text(dest, strlen(dest)) : tabq_null();
  rc = failed ? tabq__err_set(err, TABQ_NOMEM, t->name, NULL, "cannot copy the options")
              : read_server(s, err);
  if (!rc)
    rc = check_form(s, err);
  if (!rc)
    tabq__due_open(s); /* before any statement is built: the claims' projection */
  if (!rc)
    rc = tabq__decode_open(s, o, err);
  if (!rc)
    rc = tabq__deadline_open(s, err);
  if (!rc)
    rc = tabq__check_attempt_default(s, err);
  if (!rc && s->lease_s < 1)
    rc = tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                       "subscription to table %s: a lease lasts one second or more", t->name);
  if (!rc)
    rc = tabq__custom_open(s, err);
  if (!rc)
    rc = s->ops->open(s, err);
  if (!rc)
    rc = tabq__cancel_open(s, err);
  if (!rc)
    rc = tabq__custom_after_open(s, err);
  if (!rc)
    rc = build_settlements(s, err);
  if (!rc)
    rc = tabq__conc_sub_open(s, err); /* concurrency limits: nothing without one */
  return rc;
}

int tabq__sub_open_for_check(tabq_broker *b, const tabq_table *table,
                             const tabq_subscription_options *options, bool by_name,
                             tabq_registry *reg, tabq_subscription **out, tabq_error *err) {
  return open_built(b, table, options, by_name, reg, true, out, err);
}

int tabq__sub_open_synthetic(tabq_broker *b, const tabq_table *table,
                             const tabq_subscription_options *options, const tabq_form_ops *ops,
                             tabq_subscription **out, tabq_error *err) {
  *out = NULL;
  tabq_table taken_table;
  tabq_subscription_options o;
  int rc = tabq__table_take(table, &taken_table, err);
  if (!rc)
    rc = tabq__options_take(options, &o, table->name, err);
  if (!rc)
    rc = tabq__table_rules(&taken_table, err);
  if (!rc)
    rc = tabq__mount_check(&taken_table, &o, err);
  if (rc)
    return rc;
  o.workers = 1;
  o.workers_by_key = 0;
  o.prefetch = 0;
  o.lookahead = TABQ_LOOKAHEAD_OFF;
  tabq_subscription *s = new_subscription(b, &taken_table, &o);
  if (!s)
    return tabq__err_set(err, TABQ_NOMEM, table->name, NULL, "cannot allocate a subscription");
  *out = s;
  s->ops = ops;
  s->claim = NULL;
  bool failed = false;
  s->queue = copy_or_null(o.queue, &failed);
  s->dead_letter_group = copy_or_null(o.dead_letter_group, &failed);
  s->dead_letter_table = copy_or_null(o.dead_letter_table, &failed);
  if (failed)
    return tabq__err_set(err, TABQ_NOMEM, table->name, NULL, "cannot copy the options");
  /* A retry after a delay is one where the table can hold the delay, as at subscribe. */
  if (s->t->retry_after.name)
    s->st[SQ_RETRY_AFTER] = 0;
  rc = tabq__decode_open(s, &o, err);
  return rc ? rc : allocate(s, err);
}

int tabq__sub_open_drain(tabq_broker *b, const tabq_table *table,
                         const tabq_subscription_options *options, tabq_subscription **out,
                         tabq_error *err) {
  tabq_subscription_options one;
  int rc = tabq__options_take(options, &one, table->name, err);
  if (rc)
    return rc;
  one.workers = 1; /* one row at a time, on the caller's thread */
  one.workers_by_key = 0;
  one.prefetch = 0;
  one.lookahead = TABQ_LOOKAHEAD_OFF;
  tabq_subscription *s;
  rc = open_built(b, table, &one, false, &b->stmts, false, &s, err);
  if (!rc)
    rc = prepare_all(s, err);
  if (!rc)
    rc = allocate(s, err);
  if (!rc)
    rc = tabq__workers_start(s, false, err);
  if (rc && s)
    tabq__sub_free(s);
  *out = rc ? NULL : s;
  return rc;
}

int tabq__sub_open(tabq_broker *b, const tabq_table *table,
                   const tabq_subscription_options *options, bool by_name, tabq_subscription **out,
                   tabq_error *err) {
  tabq_subscription *s;
  int rc = open_built(b, table, options, by_name, &b->stmts, false, &s, err);
  if (!rc)
    rc = prepare_all(s, err);
  const tabq_table *t = s ? s->t : NULL;
  if (!rc && b->listen_notify && !(rc = tabq__channel_of(b, t, s->channel, sizeof s->channel, err)))
    rc = tabq__listener_add(b, s->channel, t->name, err);
  if (!rc)
    rc = allocate(s, err);
  if (!rc)
    tabq__controls_sub_open(s); /* before its first claim */
  if (!rc)
    rc = tabq__workers_start(s, true, err);
  if (rc) {
    if (s)
      tabq__sub_free(s); /* never listed, no thread running */
    return rc;
  }
  pthread_mutex_lock(&b->mu);
  s->next = b->subs;
  b->subs = s;
  if (s->ops->conns_held(s, 1))
    atomic_fetch_add(&b->conn_subs, 1);
  pthread_mutex_unlock(&b->mu);
  if (out)
    *out = s;
  return TABQ_OK;
}

int tabq_subscribe(tabq_broker *b, const tabq_table *table,
                   const tabq_subscription_options *options, tabq_subscription **out,
                   tabq_error *err) {
  tabq__err_clear(err);
  if (out)
    *out = NULL;
  if (!b || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "tabq_subscribe needs a broker, a table and options");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = tabq__sub_open(b, table, options, false, out, err);
  tabq__log_leave(outer);
  return rc;
}

void tabq_subscription_stats(const tabq_subscription *s, tabq_stats *caller, size_t size) {
  uint64_t sums[TABQ__N_COUNT] = {0};
  tabq__count_sum_into(&s->counts, sums);
  for (unsigned i = 0; i < s->nslots; i++)
    tabq__count_sum_into(&s->slots[i].counts, sums);
  tabq_stats all;
  tabq__count_to_stats(sums, &all);
  memcpy(caller, &all, size < sizeof all ? size : sizeof all);
}

void tabq_subscription_handler_durations(const tabq_subscription *s, tabq_histogram *caller,
                                         size_t size) {
  tabq__slots_histogram(s, offsetof(tabq_delivery, handler_time), caller, size);
}

void tabq__sub_free(tabq_subscription *s) {
  tabq__pkeys_close(s);
  for (unsigned i = 0; s->slots && i < s->nslots; i++) {
    tabq_delivery *d = &s->slots[i];
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    tabq__buf_free(&d->row);
    tabq__buf_free(&d->key);
    free(d->cells);
    if (d->headers)
      json_decref(d->headers);
  }
  tabq__delivery_txs_free(s);
  tabq__deadline_free(s);
  tabq__conc_sub_free(s);
  free(s->slots);
  tabq__coalescer_free(&s->coalescer);
  tabq__claim_spaces_free(s);
  free(s->id_list);
  free(s->refetch);
  tabq__buf_free(&s->refetch_buf);
  free(s->free_slots);
  free(s->ready);
  tabq__bykey_free(s);
  free(s->threads);
  free(s->queue);
  free(s->dead_letter_group);
  free(s->dead_letter_table);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->ext_mu);
  pthread_cond_destroy(&s->ext_cv);
  free(s);
}
