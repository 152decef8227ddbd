/* tabq_admin_purge: finished rows and old dead letters deleted, a batch a statement and a
 * transaction, so no lock is held longer than one batch takes. */
#include <string.h>

#include "admin_sql.h"
#include "clock.h"
#include "engine.h"
#include "error.h"
#include "prune.h"

#define DEFAULT_BATCH 1000

/* Deletes (or counts) the rows of `name` whose `time_col` is before the cutoff: the batches
 * prune.c runs, the retention pruner's too, on one pooled connection. */
static int purge(tabq_broker *b, const tabq_table *t, const char *name, const char *time_col,
                 const char *group, bool dry_run, tabq_adm_vals *v, uint64_t *total,
                 tabq_error *err) {
  tabq_adm_sql q = {.d = b->plugin.plugin->dialect}; /* its text is prune.c's */
  tabq_prune_vals pv = {.cutoff = v->cutoff, .limit = v->limit};
  if (group)
    v->dest = pv.dest = tabq_text(group, strlen(group));
  int rc = tabq__prune_sql(b, t, name, time_col, group != NULL, dry_run, &q.st, err);
  if (rc)
    return rc;
  if (dry_run) {
    tabq_tx *tx;
    int64_t count = 0;
    if (!(rc = tabq_begin(b, &tx, err))) {
      rc = tabq__adm_count(tx, &q, v, &count, err);
      tabq_error ignored;
      tabq_rollback(tx, &ignored);
    }
    if (!rc)
      *total += count > 0 ? (uint64_t)count : 0;
    tabq__adm_free(&q);
    return rc;
  }
  char begin_sql[128];
  tabq_pconn *c = NULL;
  if (!(rc = tabq__prune_begin_sql(b, t, begin_sql, sizeof begin_sql, err)))
    rc = tabq__pool_acquire(&b->pool, &c, err);
  for (bool more = true; more && !rc;) {
    uint64_t changed = 0;
    rc = tabq__prune_batch(b, c, begin_sql, &q.st, &pv, name, &changed, err);
    more = changed == (uint64_t)v->limit;
    *total += changed;
  }
  if (c)
    tabq__pool_release(&b->pool, c);
  tabq__adm_free(&q);
  return rc;
}

/* Was dead letter group `g` of table `t` purged already (two queues may share it)? */
static bool seen_group(const tabq_app *app, size_t upto, const tabq_table *t, const char *g) {
  for (size_t k = 0; k < upto; k++)
    if (tabq_app_subscription_table(app, k) == t &&
        tabq_app_subscription_options(app, k)->dead_letter_group &&
        !strcmp(tabq_app_subscription_options(app, k)->dead_letter_group, g))
      return true;
  return false;
}

static bool seen_table(const tabq_app *app, size_t upto, const char *name) {
  for (size_t k = 0; k < upto; k++)
    if (tabq_app_subscription_options(app, k)->dead_letter_table &&
        !strcmp(tabq_app_subscription_options(app, k)->dead_letter_table, name))
      return true;
  return false;
}

int tabq_admin_purge(tabq_broker *b, const tabq_app *app, int64_t older_than_ms, bool dry_run,
                     unsigned batch, uint64_t *processed, uint64_t *dead, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !app || !processed || !dead || older_than_ms < 0)
    return tabq__err_set(err, TABQ_INVALID, NULL, "purge",
                         "tabq_admin_purge needs a broker, an app, an age of 0 or more and "
                         "processed and dead");
  *processed = *dead = 0;
  tabq_adm_vals v = {.now = tabq__now_us(), .limit = batch ? batch : DEFAULT_BATCH};
  v.cutoff = v.now - older_than_ms * 1000;
  int rc = TABQ_OK;
  size_t nt = tabq_app_table_count(app), ns = tabq_app_subscription_count(app);
  /* Every table checked before the first delete. */
  for (size_t k = 0; !rc && k < nt; k++)
    rc = tabq_admin_verify(b, tabq_app_table(app, k), NULL, err);
  for (size_t i = 0; !rc && i < ns; i++) {
    tabq_table dt;
    const tabq_table *d = tabq__adm_dead_table(b, app, i, &dt);
    if (d && !tabq_app_table_named(app, d->name))
      rc = tabq_admin_verify(b, tabq_app_subscription_table(app, i), d->name, err);
  }
  for (size_t k = 0; !rc && k < nt; k++) {
    const tabq_table *t = tabq_app_table(app, k);
    if (t->processed_at.name)
      rc = purge(b, t, t->name, t->processed_at.name, NULL, dry_run, &v, processed, err);
  }
  for (size_t i = 0; !rc && i < ns; i++) {
    const tabq_table *t = tabq_app_subscription_table(app, i);
    const tabq_subscription_options *o = tabq_app_subscription_options(app, i);
    if (!t->retry_after.name) /* a dead letter's age is its retry_after: without it, kept */
      continue;
    if (o->dead_letter_group && !seen_group(app, i, t, o->dead_letter_group))
      rc = purge(b, t, t->name, t->retry_after.name, o->dead_letter_group, dry_run, &v, dead, err);
    else if (o->dead_letter_table && !seen_table(app, i, o->dead_letter_table))
      rc = purge(b, t, o->dead_letter_table, t->retry_after.name, NULL, dry_run, &v, dead, err);
  }
  return rc;
}
