/* tabq_admin_requeue: dead letters back into their queue. Each batch is its own transaction, so
 * a long requeue never holds its locks long; every table concerned is checked against its
 * description (tabq_admin_verify) before the first row moves. */
#include <stdlib.h>
#include <string.h>

#include "admin_sql.h"
#include "clock.h"
#include "error.h"

#define DEFAULT_BATCH 500

/* The subscriptions to requeue: those with a dead letter (reading `queue`, when given). */
static int chosen(const tabq_app *app, const char *queue, size_t i) {
  const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
  if (tabq_app_subscription_route(app, i) || (!o->dead_letter_group && !o->dead_letter_table))
    return false;
  return !queue || (o->queue && !strcmp(o->queue, queue));
}

/* A dead letter group two queues of one table share holds rows whose queue is lost. */
static int shared_group(const tabq_app *app, size_t i, tabq_error *err) {
  const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
  if (!o->dead_letter_group)
    return TABQ_OK;
  for (size_t k = 0; k < tabq_app_subscription_count(app); k++) {
    const tabq_subscription_options *p = tabq_app_subscription_options(app, k);
    if (k != i && tabq_app_subscription_table(app, k) == tabq_app_subscription_table(app, i) &&
        p->dead_letter_group && !strcmp(p->dead_letter_group, o->dead_letter_group))
      return tabq__err_set(err, TABQ_INVALID, tabq_app_subscription_table(app, i)->name, "requeue",
                           "queues %s and %s share the dead letter group %s: which queue a "
                           "dead letter came from is not recorded, so tabq will not guess",
                           o->queue ? o->queue : "-", p->queue ? p->queue : "-",
                           o->dead_letter_group);
  }
  return TABQ_OK;
}

/* "UPDATE t SET group = :queue, attempt = 1, retry_after = :now, locked_until = NULL WHERE id
 * IN (a batch of the dead letter group)". The derived table lets MySQL limit a subquery on the
 * table it changes. */
static void group_move(tabq_adm_sql *q, const tabq_table *t) {
  tabq__adm_raw(q, "UPDATE ");
  tabq__adm_name(q, t->name);
  tabq__adm_raw(q, " SET ");
  tabq__adm_name(q, t->group.name);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_GROUP);
  if (t->attempt.name) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->attempt.name);
    tabq__adm_raw(q, " = 1");
  }
  if (t->retry_after.name) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->retry_after.name);
    tabq__adm_raw(q, " = ");
    tabq__adm_param(q, TABQ_P_NOW);
  }
  if (t->locked_until.name) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->locked_until.name);
    tabq__adm_raw(q, " = NULL");
  }
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " IN (SELECT ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " FROM (SELECT ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " FROM ");
  tabq__adm_name(q, t->name);
  tabq__adm_in_group(q, t, TABQ_P_DEST, false);
  tabq__adm_unfinished(q, t);
  tabq__adm_raw(q, " LIMIT ");
  tabq__adm_param(q, TABQ_P_LIMIT);
  tabq__adm_raw(q, ") tabq_batch)");
}

static void dead_count(tabq_adm_sql *q, const tabq_table *t, const tabq_table *in) {
  tabq__adm_raw(q, "SELECT COUNT(*) FROM ");
  tabq__adm_name(q, in->name);
  if (in == t) {
    tabq__adm_in_group(q, t, TABQ_P_DEST, false);
    tabq__adm_unfinished(q, t);
  } else {
    tabq__adm_in_group(q, in, TABQ_P_GROUP, false);
  }
}

/* ---- A dead letter table: a batch of ids, each row copied back and deleted --------------- */

typedef struct {
  tabq_value ids[1000];
  char *texts[1000];
  size_t n;
  bool failed;
} id_batch;

static int read_id(void *user, const tabq_value *cells, unsigned ncols) {
  (void)ncols;
  id_batch *ib = user;
  tabq_value v = cells[0];
  if (v.type == TABQ_T_TEXT || v.type == TABQ_T_BYTES) { /* the cell lives for this call only */
    char *copy = malloc(v.u.buf.len + 1);
    if (!copy) {
      ib->failed = true;
      return 1;
    }
    memcpy(copy, v.u.buf.ptr, v.u.buf.len);
    ib->texts[ib->n] = copy;
    v.u.buf.ptr = copy;
  }
  ib->ids[ib->n++] = v;
  return 0;
}

static void copy_back(tabq_adm_sql *q, const tabq_table *t, const tabq_table *dead) {
  const tabq_col *kept[] = {&t->id,      &t->group,  &t->priority, &t->partition_key,
                            &t->headers, &t->payload};
  tabq__adm_raw(q, "INSERT INTO ");
  tabq__adm_name(q, t->name);
  tabq__adm_raw(q, " (");
  bool first = true;
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    if (kept[i]->name) {
      tabq__adm_raw(q, first ? "" : ", ");
      tabq__adm_name(q, kept[i]->name);
      first = false;
    }
  for (size_t i = 0; i < t->ndata; i++) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->data[i].name);
  }
  if (t->attempt.name) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->attempt.name);
  }
  if (t->retry_after.name) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->retry_after.name);
  }
  tabq__adm_raw(q, ") SELECT ");
  first = true;
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    if (kept[i]->name) {
      tabq__adm_raw(q, first ? "" : ", ");
      tabq__adm_name(q, kept[i]->name);
      first = false;
    }
  for (size_t i = 0; i < t->ndata; i++) {
    tabq__adm_raw(q, ", ");
    tabq__adm_name(q, t->data[i].name);
  }
  if (t->attempt.name)
    tabq__adm_raw(q, ", 1");
  if (t->retry_after.name) {
    tabq__adm_raw(q, ", ");
    tabq__adm_param(q, TABQ_P_NOW);
  }
  tabq__adm_raw(q, " FROM ");
  tabq__adm_name(q, dead->name);
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " = ");
  tabq__adm_param(q, TABQ_P_ID);
}

static int table_batch(tabq_broker *b, const tabq_table *t, const tabq_table *dead,
                       tabq_adm_vals *v, uint64_t *moved, bool *more, tabq_error *err) {
  tabq_adm_sql pick, copy, drop;
  tabq__adm_init(&pick, b);
  tabq__adm_init(&copy, b);
  tabq__adm_init(&drop, b);
  tabq__adm_raw(&pick, "SELECT ");
  tabq__adm_name(&pick, dead->id.name);
  tabq__adm_raw(&pick, " FROM ");
  tabq__adm_name(&pick, dead->name);
  tabq__adm_in_group(&pick, dead, TABQ_P_GROUP, false);
  tabq__adm_raw(&pick, " LIMIT ");
  tabq__adm_param(&pick, TABQ_P_LIMIT);
  copy_back(&copy, t, dead);
  tabq__adm_raw(&drop, "DELETE FROM ");
  tabq__adm_name(&drop, dead->name);
  tabq__adm_raw(&drop, " WHERE ");
  tabq__adm_name(&drop, dead->id.name);
  tabq__adm_raw(&drop, " = ");
  tabq__adm_param(&drop, TABQ_P_ID);
  id_batch *ib = calloc(1, sizeof *ib);
  tabq_tx *tx = NULL;
  int rc = ib ? tabq_begin(b, &tx, err)
              : tabq__err_set(err, TABQ_NOMEM, t->name, "requeue", "cannot allocate a batch");
  if (!rc)
    rc = tabq__adm_query(tx, &pick, v, 1, read_id, ib, err);
  if (!rc && ib->failed)
    rc = tabq__err_set(err, TABQ_NOMEM, t->name, "requeue", "cannot allocate a batch");
  for (size_t i = 0; !rc && i < ib->n; i++) {
    v->id = ib->ids[i];
    uint64_t copied = 0;
    rc = tabq__adm_exec(tx, &copy, v, &copied, err);
    if (!rc)
      rc = tabq__adm_exec(tx, &drop, v, NULL, err);
  }
  if (tx) {
    tabq_error ignored;
    if (rc)
      tabq_rollback(tx, &ignored);
    else
      rc = tabq_commit(tx, err);
  }
  if (!rc) {
    *moved += ib->n;
    *more = ib->n == (size_t)v->limit;
  }
  for (size_t i = 0; ib && i < ib->n; i++)
    free(ib->texts[i]);
  free(ib);
  tabq__adm_free(&pick);
  tabq__adm_free(&copy);
  tabq__adm_free(&drop);
  return rc;
}

static int group_batches(tabq_broker *b, const tabq_table *t, tabq_adm_vals *v, uint64_t *moved,
                         tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  group_move(&q, t);
  int rc = TABQ_OK;
  for (bool more = true; more && !rc;) {
    tabq_tx *tx;
    uint64_t changed = 0;
    if ((rc = tabq_begin(b, &tx, err)))
      break;
    rc = tabq__adm_exec(tx, &q, v, &changed, err);
    if (rc) {
      tabq_error ignored;
      tabq_rollback(tx, &ignored);
    } else if (!(rc = tabq_commit(tx, err))) {
      *moved += changed;
      more = changed == (uint64_t)v->limit;
    }
  }
  tabq__adm_free(&q);
  return rc;
}

int tabq_admin_requeue(tabq_broker *b, const tabq_app *app, const char *queue, bool dry_run,
                       unsigned batch, uint64_t *moved, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app || !moved)
    return tabq__err_set(err, TABQ_INVALID, NULL, "requeue",
                         "tabq_admin_requeue needs a broker, an app and moved");
  *moved = 0;
  size_t n = tabq_app_subscription_count(app), found = 0;
  int rc = TABQ_OK;
  /* Every refusal and every table check before the first change. */
  for (size_t i = 0; !rc && i < n; i++) {
    if (!chosen(app, queue, i))
      continue;
    found++;
    const tabq_table *t = tabq_app_subscription_table(app, i);
    tabq_table dt;
    const tabq_table *dead = tabq__adm_dead_table(b, app, i, &dt);
    if (!(rc = shared_group(app, i, err)) && !(rc = tabq_admin_verify(b, t, NULL, err)) && dead)
      rc = tabq_admin_verify(b, t, dead->name, err);
  }
  if (!rc && !found)
    return tabq__err_set(err, TABQ_INVALID, NULL, "requeue",
                         queue ? "no subscription of the app reads queue %s with a dead letter"
                               : "no subscription of the app has a dead letter%s",
                         queue ? queue : "");
  for (size_t i = 0; !rc && i < n; i++) {
    if (!chosen(app, queue, i))
      continue;
    const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
    const tabq_table *t = tabq_app_subscription_table(app, i);
    tabq_table dt;
    const tabq_table *dead = tabq__adm_dead_table(b, app, i, &dt);
    tabq_adm_vals v = {.now = tabq__now_us(), .limit = batch ? batch : DEFAULT_BATCH};
    if (o->queue)
      v.group = tabq_text(o->queue, strlen(o->queue));
    if (o->dead_letter_group)
      v.dest = tabq_text(o->dead_letter_group, strlen(o->dead_letter_group));
    if (dry_run) {
      tabq_adm_sql q;
      tabq__adm_init(&q, b);
      dead_count(&q, t, dead ? dead : t);
      tabq_tx *tx;
      int64_t count = 0;
      if (!(rc = tabq_begin(b, &tx, err))) {
        rc = tabq__adm_count(tx, &q, &v, &count, err);
        tabq_error ignored;
        tabq_rollback(tx, &ignored);
      }
      tabq__adm_free(&q);
      *moved += count > 0 ? (uint64_t)count : 0;
    } else if (dead) {
      if (v.limit > 1000)
        v.limit = 1000;
      for (bool more = true; more && !rc;)
        rc = table_batch(b, t, dead, &v, moved, &more, err);
    } else {
      rc = group_batches(b, t, &v, moved, err);
    }
  }
  return rc;
}
