/* An app's controls table (tabq/controls.h): kept with the app, read and written with the
 * description file's "controls" member, given to the broker by tabq_app_main before its
 * subscriptions, and read by `tabq pause` and `tabq resume`. */
#include "app_model.h"
#include "concurrency_int.h"
#include "controls_int.h"
#include "error.h"
#include "sized.h"

int tabq_app_set_controls(tabq_app *app, const tabq_controls *controls, tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !controls)
    return tabq__err_set(err, TABQ_INVALID, NULL, "controls",
                         "tabq_app_set_controls needs an app and a controls table");
  tabq_controls c;
  int rc = TABQ_TAKE(controls, &c, TABQ_CONTROLS_SIZE_1_0, NULL, err);
  if (!rc)
    rc = tabq__controls_check(&c, "tabq_app_set_controls", err);
  if (rc)
    return rc;
  tabq_controls *kept = tabq__app_alloc(app, sizeof *kept);
  if (!kept)
    return tabq__err_set(err, TABQ_NOMEM, c.name, "controls", "cannot copy the controls");
  *kept = c;
  const char **names[] = {&kept->name, &kept->table_column, &kept->queue_column,
                          &kept->paused_column, &kept->paused_at_column};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (*names[i] && !(*names[i] = tabq__app_strdup(app, *names[i])))
      return tabq__err_set(err, TABQ_NOMEM, c.name, "controls", "cannot copy the controls");
  app->controls = kept;
  return TABQ_OK;
}

const tabq_controls *tabq_app_controls(const tabq_app *app) {
  return app ? app->controls : NULL;
}

int tabq_app_set_concurrency_slots(tabq_app *app, const tabq_concurrency_slots *slots,
                                   tabq_error *err) {
  tabq__err_clear(err);
  if (!app || !slots)
    return tabq__err_set(err, TABQ_INVALID, NULL, "concurrency_slots",
                         "tabq_app_set_concurrency_slots needs an app and a slots table");
  tabq_concurrency_slots c;
  int rc = TABQ_TAKE(slots, &c, TABQ_CONCURRENCY_SLOTS_SIZE_1_0, NULL, err);
  if (!rc)
    rc = tabq__conc_check(&c, "tabq_app_set_concurrency_slots", err);
  if (rc)
    return rc;
  tabq_concurrency_slots *kept = tabq__app_alloc(app, sizeof *kept);
  if (!kept)
    return tabq__err_set(err, TABQ_NOMEM, c.name, "concurrency_slots", "cannot copy the slots");
  *kept = c;
  const char **names[] = {&kept->name, &kept->key_column, &kept->holder_column,
                          &kept->expires_column};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!(*names[i] = tabq__app_strdup(app, *names[i])))
      return tabq__err_set(err, TABQ_NOMEM, c.name, "concurrency_slots", "cannot copy the slots");
  app->conc_slots = kept;
  return TABQ_OK;
}

const tabq_concurrency_slots *tabq_app_concurrency_slots(const tabq_app *app) {
  return app ? app->conc_slots : NULL;
}
