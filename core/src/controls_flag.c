/* What a subscription knows of its queue's pause (tabq/controls.h, docs/pause.md): the row of
 * the controls table read before a claim once its last read is a poll interval old, or at once
 * after a notification, and kept meanwhile. A subscription of a broker without controls reads
 * nothing: its workers test one flag. */
#include <string.h>

#include "clock.h"
#include "controls_int.h"
#include "error.h"

int tabq__controls_check(tabq_controls *c, const char *call, tabq_error *err) {
  const char *const names[] = {c->name, c->table_column, c->queue_column, c->paused_column};
  const char *const members[] = {"name", "table_column", "queue_column", "paused_column"};
  const char *table = c->name && *c->name ? c->name : NULL;
  for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
    if (!names[i] || !*names[i])
      return tabq__err_set(err, TABQ_INVALID, table, "controls",
                           "%s: the controls table%s%s has no %s: describe the %s", call,
                           table ? " " : "", table ? table : "", members[i], members[i]);
  if (c->paused_at_column && !*c->paused_at_column)
    c->paused_at_column = NULL;
  return TABQ_OK;
}

void tabq__controls_sub_open(tabq_subscription *s) {
  tabq_broker *b = s->b;
  pthread_mutex_lock(&b->mu);
  s->ctl = b->controls != NULL;
  pthread_mutex_unlock(&b->mu);
  if (!s->ctl)
    return;
  s->ctl_table = tabq_text(s->t->name, strlen(s->t->name));
  const char *queue = s->t->group.name && s->queue ? s->queue : "";
  s->ctl_queue = tabq_text(queue, strlen(queue));
}

/* A paused cell: a nonzero integer or real, or text reading true ("1", "t", "true", "y"...: a
 * boolean column as some drivers read it). */
static bool says_paused(const tabq_value *v) {
  switch (v->type) {
  case TABQ_T_INT:
    return v->u.i != 0;
  case TABQ_T_REAL:
    return v->u.r != 0;
  case TABQ_T_TEXT:
    return v->u.buf.len && strchr("1tTyY", ((const char *)v->u.buf.ptr)[0]);
  default:
    return false;
  }
}

/* Reads the row on a pooled connection, without s->mu: *paused, or a failure. */
static int read_row(tabq_subscription *s, bool *paused, tabq_error *err) {
  tabq_broker *b = s->b;
  tabq_pconn *c;
  int rc = tabq__pool_acquire(&b->pool, &c, err);
  if (rc)
    return rc;
  tabq_bind v = {.key = s->ctl_table, .group = s->ctl_queue};
  bool row = false;
  tabq_value cell = tabq_null();
  rc = tabq__stmt_first(&b->stmts, b->drv, c, b->controls->read, &v, &row, &cell, err);
  *paused = !rc && row && says_paused(&cell);
  tabq__pool_release(&b->pool, c);
  return rc;
}

bool tabq__controls_hold(tabq_subscription *s) {
  int64_t now = tabq__mono_ms();
  if (s->ctl_reading) {
    /* Another worker reads: wait for it (it broadcasts), so no claim runs on a stale flag. */
    struct timespec until = tabq__deadline_ms(now + s->poll_ms);
    pthread_cond_timedwait(&s->cv, &s->mu, &until);
    return true;
  }
  bool fresh = s->ctl_read_ms && now - s->ctl_read_ms < s->poll_ms && s->ctl_seen == s->ctl_notes;
  if (fresh) {
    if (s->ctl_paused)
      s->next_claim_ms = s->ctl_read_ms + s->poll_ms;
    return s->ctl_paused;
  }
  uint64_t notes = s->ctl_notes;
  s->ctl_reading = true;
  pthread_mutex_unlock(&s->mu);
  bool paused = false;
  tabq_error err;
  int rc = read_row(s, &paused, &err);
  pthread_mutex_lock(&s->mu);
  s->ctl_reading = false;
  s->ctl_seen = notes;
  s->ctl_read_ms = tabq__mono_ms();
  if (rc) {
    /* The last value stands until a read succeeds (a poll interval on): a controls table out of
     * reach neither stops nor restarts a queue. */
    if (!s->ctl_failing)
      tabq__logf(&s->b->log, TABQ_LOG_WARN,
                 "table %s: the read of the queue's pause failed (%s): %s; claims go on as "
                 "before (%s) and the read is tried again each poll interval",
                 s->t->name, tabq_code_name(err.code), err.message,
                 s->ctl_paused ? "paused" : "running");
    s->ctl_failing = true;
  } else {
    if (s->ctl_failing)
      tabq__logf(&s->b->log, TABQ_LOG_INFO, "table %s: the queue's pause is read again (%s)",
                 s->t->name, paused ? "paused" : "running");
    s->ctl_failing = false;
    s->ctl_paused = paused;
  }
  if (s->ctl_paused)
    s->next_claim_ms = s->ctl_read_ms + s->poll_ms;
  pthread_cond_broadcast(&s->cv);
  return true; /* the worker looks again at everything that may have changed meanwhile */
}

void tabq__controls_stale(tabq_broker *b, const char *table) {
  pthread_mutex_lock(&b->mu);
  for (tabq_subscription *s = b->subs; s; s = s->next) {
    if (!s->ctl || (table && strcmp(s->t->name, table)))
      continue;
    pthread_mutex_lock(&s->mu);
    s->ctl_notes++;
    pthread_mutex_unlock(&s->mu);
    tabq__sub_wake(s);
  }
  pthread_mutex_unlock(&b->mu);
}

bool tabq__controls_note(tabq_broker *b, const char *channel, const char *payload) {
  pthread_mutex_lock(&b->mu);
  bool ours = b->controls && b->controls->channel[0] && !strcmp(b->controls->channel, channel);
  pthread_mutex_unlock(&b->mu);
  if (ours)
    tabq__controls_stale(b, payload[0] ? payload : NULL);
  return ours;
}

void tabq__controls_free(tabq_broker *b) {
  tabq_controls_state *st = b->controls;
  if (!st)
    return;
  free(st->names);
  free(st);
  b->controls = NULL;
}
