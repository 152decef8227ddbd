/* The service's own statements (SPEC 8): rendered from tabq_events with the dialect's
 * placeholders, registered in the slots the forms would fill, and checked against what each
 * form and dialect can run. Everything here happens once, when a subscription opens. */
#include <stdlib.h>
#include <string.h>
#include <tabq/sys/sql.h>
#include <tabq/sys/sql_named.h>

#include "engine.h"
#include "error.h"

/* Names every settlement may bind; the lease form adds :held, the lease it holds. */
#define SETTLE_NAMES (TABQ_N_ID | TABQ_N_QUEUE | TABQ_N_NOW)

typedef struct event {
  const char *name;
  tabq_sq slot;
  uint32_t names;
} event;

/* The slot, and the names, of each event in a form. */
static int describe(const tabq_subscription *s, size_t i, const char **sql, event *out) {
  const tabq_events *e = &s->t->events;
  tabq_sq claim_slot;
  uint32_t held; /* what the form's settlements bind besides every form's */
  s->ops->events(&claim_slot, &held);
  const struct {
    const char *sql;
    event ev;
  } all[] = {
      {e->claim, {"claim", claim_slot, TABQ_N_QUEUE | TABQ_N_LIMIT | TABQ_N_NOW}},
      {e->fetch, {"fetch", SQ_FETCH, TABQ_N_ID | TABQ_N_IDS | TABQ_N_QUEUE | TABQ_N_NOW}},
      {e->ack, {"ack", SQ_ACK, SETTLE_NAMES | held}},
      {e->retry, {"retry", SQ_RETRY, SETTLE_NAMES | held}},
      {e->retry_after, {"retry_after", SQ_RETRY_AFTER, SETTLE_NAMES | held | TABQ_N_RETRY_AT}},
      {e->discard, {"discard", SQ_DISCARD, SETTLE_NAMES | held}},
      {e->dead_letter, {"dead_letter", SQ_DL_GROUP, SETTLE_NAMES | held | TABQ_N_DESTINATION}},
      {e->extend, {"extend", SQ_EXTEND, TABQ_N_ID | TABQ_N_HELD | TABQ_N_UNTIL | TABQ_N_NOW}},
      {e->lock, {"lock", SQ_LOCK, TABQ_N_KEY}},
      {e->unlock, {"unlock", SQ_UNLOCK, TABQ_N_KEY}},
  };
  if (i >= sizeof all / sizeof all[0])
    return 0;
  *sql = all[i].sql;
  *out = all[i].ev;
  return 1;
}

static int render(tabq_subscription *s, const char *sql, const event *ev, uint32_t *used,
                  tabq_error *err) {
  tabq_broker *b = s->b;
  const tabq_dialect_v1 *dl = b->plugin.plugin->dialect;
  tabq_stmt st;
  tabq_sql_init(&st, b->host);
  char why[256] = "";
  int rc = tabq_sql_render_named(&st, sql, dl->placeholder, ev->names, used, why, sizeof why);
  if (rc == TABQ_DECLARATION)
    rc = tabq__err_set(err, rc, s->t->name, ev->name, "table %s, events.%s: %s", s->t->name,
                       ev->name, why);
  else if (rc)
    rc = tabq__err_set(err, rc, s->t->name, ev->name, "table %s, events.%s: cannot build it",
                       s->t->name, ev->name);
  if (rc) {
    tabq_sql_free(&st);
    return rc;
  }
  return tabq__stmt_register(s->reg, &st, ev->name, s->t->name, &s->st[ev->slot], err);
}

/* The fetch: the service's own (one run an id, or one run with the list where the database
 * binds lists), or the dialect's by a list; a claim of the service's own needs one of them. */
static int check_fetch(tabq_subscription *s, uint32_t fetch_names, tabq_error *err) {
  const tabq_plugin *p = s->b->plugin.plugin;
  const tabq_table *t = s->t;
  if (t->events.fetch) {
    bool by_id = fetch_names & TABQ_N_ID, by_list = fetch_names & TABQ_N_IDS;
    if (by_id == by_list)
      return tabq__err_set(err, TABQ_DECLARATION, t->name, "fetch",
                           "table %s, events.fetch: bind exactly one of :id (one row a run) and "
                           ":ids (every claimed id at once)",
                           t->name);
    if (by_list && !p->dialect->fetch)
      return tabq__err_set(err, TABQ_DIALECT, t->name, "fetch",
                           "table %s, events.fetch binds :ids, a list, which the %s dialect "
                           "cannot bind; read one row a run by :id",
                           t->name, p->name);
    s->fetch_by_list = by_list;
    return TABQ_OK;
  }
  if (!t->events.claim || !s->ops->own_claim)
    return TABQ_OK; /* the form's own claim reads the row (the advisory take) */
  if (!p->dialect->fetch)
    return tabq__err_set(err, TABQ_DIALECT, t->name, "fetch",
                         "table %s has a claim of its own (events.claim) and no fetch of its own: "
                         "the %s dialect has no fetch by a list of ids, so give events.fetch too "
                         "(it reads a claimed row by :id)",
                         t->name, p->name);
  s->fetch_by_list = true;
  tabq_build build = tabq__sub_build(s);
  return tabq__stmt_build(s->reg, s->b->host, p->dialect->fetch, &build, "fetch", &s->st[SQ_FETCH],
                          err);
}

int tabq__custom_open(tabq_subscription *s, tabq_error *err) {
  const tabq_plugin *p = s->b->plugin.plugin;
  const char *sql;
  event ev;
  bool any = false;
  for (size_t i = 0; describe(s, i, &sql, &ev); i++)
    any |= sql != NULL;
  if (!any)
    return TABQ_OK;
  if (!TABQ_HAS_MEMBER(p->dialect, tabq_dialect_v1, placeholder))
    return tabq__err_set(err, TABQ_DIALECT, s->t->name, NULL,
                         "table %s declares events of its own, but the %s plugin (%s) renders no "
                         "statements of a service's own: it needs ABI 1.1's Dialect.placeholder",
                         s->t->name, p->name, s->b->plugin.path);
  uint32_t fetch_names = 0;
  int rc = TABQ_OK;
  for (size_t i = 0; !rc && describe(s, i, &sql, &ev); i++) {
    if (!sql)
      continue;
    uint32_t used = 0;
    rc = render(s, sql, &ev, &used, err);
    s->custom |= 1u << ev.slot;
    if (ev.slot == SQ_FETCH)
      fetch_names = used;
  }
  if (!rc)
    rc = check_fetch(s, fetch_names, err);
  return rc;
}

int tabq__custom_after_open(tabq_subscription *s, tabq_error *err) {
  bool own_claim = tabq__sub_own(s, SQ_CLAIM), own_fetch = tabq__sub_own(s, SQ_FETCH);
  if (!own_claim && !own_fetch)
    return TABQ_OK;
  /* A form whose own claim reads the row (the advisory take) has no own_claim. */
  bool by_ids = own_claim && s->ops->own_claim;
  int rc = by_ids ? s->ops->own_claim(s, err) : TABQ_OK;
  /* The ids live in the subscription's scratch space: one claim at a time. */
  s->serial = true;
  if (!rc)
    rc = tabq__claim_spaces(s, 1, 2 * s->nslots, err);
  if (!rc && s->fetch_by_list && !(s->id_list = calloc(2 * s->nslots, sizeof *s->id_list)))
    rc = tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the claimed ids");
  if (!rc && own_fetch && !by_ids && !(s->refetch = calloc(s->nslots, sizeof *s->refetch)))
    rc = tabq__err_set(err, TABQ_NOMEM, s->t->name, NULL, "cannot allocate the claimed ids");
  return rc;
}
