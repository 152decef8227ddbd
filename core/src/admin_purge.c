/* tabq_admin_purge: finished rows and old dead letters deleted, a batch a statement and a
 * transaction, so no lock is held longer than one batch takes. */
#include <string.h>

#include "admin_sql.h"
#include "clock.h"
#include "error.h"

#define DEFAULT_BATCH 1000

/* "DELETE FROM t WHERE id IN (SELECT id FROM (SELECT id FROM t WHERE time < :cutoff [AND group =
 * :dest] LIMIT :limit) tabq_batch)": the derived table lets MySQL limit a subquery on the table
 * it deletes from. */
static void delete_batch(tabq_adm_sql *q, const tabq_table *t, const char *name,
                         const char *time_col, bool in_group) {
  tabq__adm_raw(q, "DELETE FROM ");
  tabq__adm_name(q, name);
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " IN (SELECT ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " FROM (SELECT ");
  tabq__adm_name(q, t->id.name);
  tabq__adm_raw(q, " FROM ");
  tabq__adm_name(q, name);
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, time_col);
  tabq__adm_raw(q, " < ");
  tabq__adm_param(q, TABQ_P_RETRY_AT);
  if (in_group)
    tabq__adm_in_group(q, t, TABQ_P_DEST, true);
  tabq__adm_raw(q, " LIMIT ");
  tabq__adm_param(q, TABQ_P_LIMIT);
  tabq__adm_raw(q, ") tabq_batch)");
}

static void count_old(tabq_adm_sql *q, const tabq_table *t, const char *name, const char *time_col,
                      bool in_group) {
  tabq__adm_raw(q, "SELECT COUNT(*) FROM ");
  tabq__adm_name(q, name);
  tabq__adm_raw(q, " WHERE ");
  tabq__adm_name(q, time_col);
  tabq__adm_raw(q, " < ");
  tabq__adm_param(q, TABQ_P_RETRY_AT);
  if (in_group)
    tabq__adm_in_group(q, t, TABQ_P_DEST, true);
}

/* Deletes (or counts) the rows of `name` whose `time_col` is before the cutoff. */
static int purge(tabq_broker *b, const tabq_table *t, const char *name, const char *time_col,
                 const char *group, bool dry_run, tabq_adm_vals *v, uint64_t *total,
                 tabq_error *err) {
  tabq_adm_sql q;
  tabq__adm_init(&q, b);
  if (group)
    v->dest = tabq_text(group, strlen(group));
  if (dry_run)
    count_old(&q, t, name, time_col, group != NULL);
  else
    delete_batch(&q, t, name, time_col, group != NULL);
  int rc = TABQ_OK;
  for (bool more = true; more && !rc;) {
    tabq_tx *tx;
    if ((rc = tabq_begin(b, &tx, err)))
      break;
    uint64_t changed = 0;
    if (dry_run) {
      int64_t count = 0;
      rc = tabq__adm_count(tx, &q, v, &count, err);
      changed = count > 0 ? (uint64_t)count : 0;
      more = false;
    } else {
      rc = tabq__adm_exec(tx, &q, v, &changed, err);
      more = changed == (uint64_t)v->limit;
    }
    tabq_error ignored;
    if (rc || dry_run)
      tabq_rollback(tx, &ignored);
    else
      rc = tabq_commit(tx, err);
    if (!rc)
      *total += changed;
  }
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
