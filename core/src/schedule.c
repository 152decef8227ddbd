/* Periodic jobs (tabq/schedule.h, docs/schedule.md): one scheduler thread per broker sleeps
 * until the next slot of any of its jobs is due and publishes it with the slot's unique key.
 * The key is the whole of the coordination between processes: the table's unique index lets
 * one publish of a slot write its row, and the others' TABQ_DUPLICATE means "done". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "engine.h"
#include "publishing.h"
#include "error.h"
#include "schedule_int.h"
#include "schedule_slots.h"
#include "sized.h"

#define DEFAULT_LEAD_MS 5000
/* A slot more than this late counts as missed (the process was stalled, or down). */
#define GRACE_US 1000000
/* After a failed publish, the slot is tried again this much later until it is missed. */
#define RETRY_US 1000000
/* The scheduler wakes at least this often, so a change of the host clock is seen soon. */
#define MAX_SLEEP_US 1000000

typedef struct tabq_sched_job {
  char *name;
  tabq_cron cron;
  tabq_zone zone;
  const tabq_table *table; /* the service's description: the publisher's key */
  tabq_missed_policy missed;
  int64_t lead_us;  /* 0 where the table cannot hold a row back */
  tabq_message msg; /* the template, pointing into the copies below */
  char *group, *partition_key;
  void *payload;
  tabq_header *headers;
  tabq_value *data;
  int64_t next_s;   /* the next slot to publish; -1: none ever */
  int64_t retry_us; /* after a failure: not before this (0: no failure) */
  struct tabq_sched_job *next;
} tabq_sched_job;

struct tabq_scheduler {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop, started;
  pthread_t thread;
  tabq_sched_job *jobs;
};

/* ---- The template's copy ------------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *failed) {
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    *failed = true;
  return d;
}

static void *dup_bytes(const void *p, size_t n, bool *failed) {
  if (!p)
    return NULL;
  void *d = malloc(n ? n : 1);
  if (!d)
    *failed = true;
  else if (n)
    memcpy(d, p, n);
  return d;
}

static void job_free(tabq_sched_job *j) {
  if (!j)
    return;
  free(j->name);
  free(j->group);
  free(j->partition_key);
  free(j->payload);
  for (size_t i = 0; j->headers && i < j->msg.nheaders; i++) {
    free((char *)j->headers[i].name);
    free((char *)j->headers[i].value);
  }
  free(j->headers);
  for (size_t i = 0; j->data && i < j->msg.ndata; i++)
    if (tabq__has_buffer(j->data[i].type))
      free((void *)j->data[i].u.buf.ptr);
  free(j->data);
  tabq__zone_close(&j->zone);
  free(j);
}

/* Copies what the template points at, so the service's message need not outlive the call. */
static bool copy_template(tabq_sched_job *j, const tabq_message *m) {
  bool failed = false;
  j->msg = *m;
  j->msg.group = j->group = dup_or_null(m->group, &failed);
  j->msg.partition_key = j->partition_key = dup_or_null(m->partition_key, &failed);
  j->msg.payload = j->payload = dup_bytes(m->payload, m->payload_len, &failed);
  j->msg.headers = NULL;
  j->msg.data = NULL;
  if (m->nheaders && m->headers) {
    j->msg.headers = j->headers = calloc(m->nheaders, sizeof *j->headers);
    failed |= !j->headers;
    for (size_t i = 0; j->headers && i < m->nheaders; i++) {
      j->headers[i].name = dup_or_null(m->headers[i].name, &failed);
      j->headers[i].value = dup_or_null(m->headers[i].value, &failed);
    }
  }
  if (m->ndata && m->data) {
    j->msg.data = j->data = calloc(m->ndata, sizeof *j->data);
    failed |= !j->data;
    for (size_t i = 0; j->data && i < m->ndata; i++) {
      j->data[i] = m->data[i];
      if (tabq__has_buffer(m->data[i].type))
        j->data[i].u.buf.ptr = dup_bytes(m->data[i].u.buf.ptr ? m->data[i].u.buf.ptr : "",
                                         m->data[i].u.buf.len, &failed);
    }
  }
  return !failed;
}

/* ---- The thread ---------------------------------------------------------------------------- */

/* When the job's next publish is due, in microseconds since 1970. */
static int64_t due_us(const tabq_sched_job *j) {
  int64_t at = j->next_s * 1000000 - j->lead_us;
  return j->retry_us > at ? j->retry_us : at;
}

/* The latest slot at or before `t`, -1 when none within 30 years: forward from ever earlier
 * starts, so a frequent job looks back a short way only. */
static int64_t latest_slot(tabq_sched_job *j, int64_t t) {
  if (j->cron.interval_s)
    return t >= 0 ? t / j->cron.interval_s * j->cron.interval_s : -1;
  static const int64_t back[] = {120, 3600, 86400, 35 * 86400, 367 * 86400, 31 * 367 * 86400LL};
  for (size_t i = 0; i < sizeof back / sizeof back[0]; i++) {
    int64_t s = tabq__slot_next(&j->cron, &j->zone, t - back[i]), latest = -1;
    for (unsigned n = 0; s >= 0 && s <= t && n < 100000; n++) {
      latest = s;
      s = tabq__slot_next(&j->cron, &j->zone, s);
    }
    if (latest >= 0)
      return latest;
  }
  return -1;
}

/* The slot to publish first when `now` finds the job's slots missed (at its start, or after a
 * stall): by the policy, the latest one missed, else the next to come. */
static int64_t first_slot(tabq_sched_job *j, int64_t now_us) {
  int64_t now_s = now_us / 1000000;
  if (j->missed == TABQ_MISSED_CATCH_UP) {
    int64_t latest = latest_slot(j, now_s);
    if (latest >= 0)
      return latest;
  }
  return tabq__slot_next(&j->cron, &j->zone, now_s);
}

/* Publishes one slot (without the scheduler's lock) and, under it again, moves the job on: to
 * the next slot once the slot's row exists (written here or by another process), or to a retry
 * a second later. */
static void publish_slot(tabq_broker *b, tabq_sched_job *j, int64_t slot_s) {
  char key[256];
  tabq__slot_key(j->name, &j->cron, slot_s, key, sizeof key);
  tabq_message m = j->msg;
  m.unique_key = key;
  int64_t ahead = slot_s * 1000000 - tabq__now_us();
  m.delay_ms = j->lead_us && ahead > 0 ? (uint32_t)((ahead + 999) / 1000) : 0;
  tabq_error err;
  int rc = tabq_publish(b, j->table, &m, &err);
  if (rc == TABQ_OK || rc == TABQ_DUPLICATE)
    tabq__logf(&b->log, TABQ_LOG_DEBUG, "schedule %s: slot %s %s", j->name, key,
               rc ? "published by another process" : "published");
  else
    tabq__logf(&b->log, TABQ_LOG_WARN, "schedule %s: slot %s: %s: %s (tried again in a second)",
               j->name, key, tabq_code_name(rc), err.message);
  pthread_mutex_lock(&b->scheduler->mu);
  if (rc == TABQ_OK || rc == TABQ_DUPLICATE) {
    j->next_s = tabq__slot_next(&j->cron, &j->zone, slot_s);
    j->retry_us = 0;
  } else {
    j->retry_us = tabq__now_us() + RETRY_US;
  }
}

static struct timespec realtime_at(int64_t us) {
  struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000};
  return ts;
}

static void *scheduler_main(void *arg) {
  tabq_broker *b = arg;
  tabq_scheduler *s = b->scheduler;
  const tabq_logger *outer = tabq__log_enter(&b->log);
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    int64_t now = tabq__now_us();
    tabq_sched_job *first = NULL;
    for (tabq_sched_job *j = s->jobs; j; j = j->next)
      if (j->next_s >= 0 && (!first || due_us(j) < due_us(first)))
        first = j;
    if (!first) {
      pthread_cond_wait(&s->cv, &s->mu);
      continue;
    }
    int64_t due = due_us(first);
    if (due > now) {
      int64_t until = due < now + MAX_SLEEP_US ? due : now + MAX_SLEEP_US;
      struct timespec ts = realtime_at(until);
      pthread_cond_timedwait(&s->cv, &s->mu, &ts);
      continue;
    }
    if (now > first->next_s * 1000000 + GRACE_US) {
      /* Missed: the process was stalled (or publishing failed) past the slot. */
      int64_t slot = first_slot(first, now);
      if (slot != first->next_s)
        tabq__logf(&b->log, TABQ_LOG_WARN, "schedule %s: slots missed; %s", first->name,
                   first->missed == TABQ_MISSED_CATCH_UP ? "the latest is published once"
                                                         : "skipped to the next");
      first->next_s = slot;
      first->retry_us = 0;
      if (slot < 0 || (first->missed == TABQ_MISSED_SKIP && slot * 1000000 - first->lead_us > now))
        continue;
    }
    int64_t slot = first->next_s;
    pthread_mutex_unlock(&s->mu);
    publish_slot(b, first, slot); /* returns with s->mu held */
  }
  pthread_mutex_unlock(&s->mu);
  tabq__log_leave(outer);
  return NULL;
}

/* ---- Registration -------------------------------------------------------------------------- */

static int check_options(const tabq_schedule_options *o, const tabq_table *t, tabq_error *err) {
  if (!o->name || !o->name[0])
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "table %s: a schedule needs a name, the first part of its slots' keys",
                         t->name);
  if (strchr(o->name, ':'))
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "table %s: schedule name '%.100s' holds a ':', which separates the name "
                         "from the slot in its keys",
                         t->name, o->name);
  if (strlen(o->name) > 160)
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "table %s: schedule name '%.40s...' is longer than 160 bytes", t->name,
                         o->name);
  if (o->missed != TABQ_MISSED_SKIP && o->missed != TABQ_MISSED_CATCH_UP)
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "schedule %s: missed policy %d is neither skip nor catch-up", o->name,
                         (int)o->missed);
  if (o->lead_ms > 3600000)
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "schedule %s: lead_ms %u is more than an hour", o->name, o->lead_ms);
  if (!t->unique_key.name)
    return tabq__err_set(err, TABQ_DECLARATION, t->name, "schedule",
                         "table %s has no unique_key column: a schedule publishes each slot "
                         "exactly once across processes by its unique key",
                         t->name);
  if (!t->id.generated)
    return tabq__err_set(err, TABQ_DECLARATION, t->name, "schedule",
                         "table %s's id is not generated: every slot of schedule %s writes a new "
                         "row, so the database must give its id",
                         t->name, o->name);
  if (o->missed == TABQ_MISSED_CATCH_UP && !t->processed_at.name)
    return tabq__err_set(err, TABQ_DECLARATION, t->name, "schedule",
                         "schedule %s: catch-up needs table %s to keep finished rows "
                         "(processed_at): a row deleted at its ack frees its slot's key, and "
                         "every start would publish the latest slot again",
                         o->name, t->name);
  return TABQ_OK;
}

static int check_template(const tabq_schedule_options *o, const tabq_table *t,
                          const tabq_message *m, tabq_error *err) {
  if (m->unique_key)
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "schedule %s: the template sets unique_key '%.80s'; each slot's key is "
                         "the schedule's to set",
                         o->name, m->unique_key);
  if (m->delay_ms)
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "schedule %s: the template sets delay_ms; a slot's row falls due at its "
                         "slot",
                         o->name);
  if (m->nheaders && !m->headers)
    return tabq__err_set(err, TABQ_INVALID, t->name, "schedule",
                         "schedule %s: the template has %zu headers but no array of them", o->name,
                         m->nheaders);
  for (size_t i = 0; i < m->nheaders; i++)
    if (!m->headers[i].name || !m->headers[i].value)
      return tabq__err_set(err, TABQ_HEADER, t->name, "schedule",
                           "schedule %s: the template's header %zu has no name or no value",
                           o->name, i);
  return tabq__message_check(t, m, err);
}

int tabq__schedule_check(const tabq_table *t, const tabq_schedule_options *o, const tabq_message *m,
                         tabq_error *err) {
  tabq_cron cron;
  tabq_zone zone;
  int rc = check_options(o, t, err);
  if (!rc)
    rc = tabq__spec_parse(o->spec, o->zone, &cron, err);
  if (!rc && !(rc = tabq__zone_open(o->zone, &zone, err)))
    tabq__zone_close(&zone);
  if (!rc && m)
    rc = check_template(o, t, m, err);
  if (rc && err && !err->table[0])
    snprintf(err->table, sizeof err->table, "%s", t->name);
  return rc;
}

static int start_thread(tabq_broker *b, tabq_scheduler *s, tabq_error *err) {
  if (s->started)
    return TABQ_OK;
  if (pthread_create(&s->thread, NULL, scheduler_main, b))
    return tabq__err_set(err, TABQ_IO, NULL, "schedule", "cannot start the scheduler thread");
  s->started = true;
  return TABQ_OK;
}

/* The broker's scheduler, made on first use. The pointer is read and written under the
 * broker's mu only, so a schedule racing a shutdown on another thread reads it safely. */
static tabq_scheduler *scheduler_get(tabq_broker *b) {
  pthread_mutex_lock(&b->mu);
  tabq_scheduler *s = b->scheduler;
  pthread_mutex_unlock(&b->mu);
  return s;
}

static int scheduler_of(tabq_broker *b, tabq_scheduler **out, tabq_error *err) {
  pthread_mutex_lock(&b->mu);
  if (!b->scheduler) {
    tabq_scheduler *s = calloc(1, sizeof *s);
    if (s) {
      pthread_mutex_init(&s->mu, NULL);
      pthread_cond_init(&s->cv, NULL);
    }
    b->scheduler = s;
  }
  *out = b->scheduler;
  pthread_mutex_unlock(&b->mu);
  return *out ? TABQ_OK
              : tabq__err_set(err, TABQ_NOMEM, NULL, "schedule", "cannot allocate the scheduler");
}

static int schedule(tabq_broker *b, const tabq_table *table, const tabq_schedule_options *options,
                    tabq_error *err) {
  tabq_schedule_options o;
  tabq_table t;
  int rc = tabq__table_take(table, &t, err);
  if (!rc)
    rc = TABQ_TAKE(options, &o, TABQ_SCHEDULE_OPTIONS_SIZE_1_0, t.name, err);
  if (!rc)
    rc = tabq__table_rules(&t, err);
  if (!rc)
    rc = check_options(&o, &t, err);
  if (rc)
    return rc;
  tabq_message m = TABQ_MESSAGE_INIT;
  if (o.message && (rc = TABQ_TAKE(o.message, &m, TABQ_MESSAGE_SIZE_1_0, t.name, err)))
    return rc;
  tabq_sched_job *j = calloc(1, sizeof *j);
  if (!j)
    return tabq__err_set(err, TABQ_NOMEM, t.name, "schedule", "cannot allocate a schedule");
  if ((rc = tabq__spec_parse(o.spec, o.zone, &j->cron, err)) ||
      (rc = tabq__zone_open(o.zone, &j->zone, err)) || (rc = check_template(&o, &t, &m, err))) {
    if (err && !err->table[0])
      snprintf(err->table, sizeof err->table, "%s", t.name);
    job_free(j);
    return rc;
  }
  if (!(j->name = strdup(o.name)) || !copy_template(j, &m)) {
    job_free(j);
    return tabq__err_set(err, TABQ_NOMEM, t.name, "schedule", "cannot copy the template");
  }
  j->table = table;
  j->missed = o.missed;
  /* A row can wait for its slot where the insert writes retry_after. */
  if (t.retry_after.name && !t.retry_after.generated)
    j->lead_us = (int64_t)(o.lead_ms ? o.lead_ms : DEFAULT_LEAD_MS) * 1000;
  /* The insert is built and prepared now, so a table the database lacks is told here. */
  tabq_publisher *p;
  pthread_mutex_lock(&b->mu);
  rc = tabq__publisher_of(b, table, NULL, &p, err);
  pthread_mutex_unlock(&b->mu);
  tabq_scheduler *s = NULL;
  if (!rc)
    rc = scheduler_of(b, &s, err);
  if (rc) {
    job_free(j);
    return rc;
  }
  pthread_mutex_lock(&s->mu);
  for (tabq_sched_job *k = s->jobs; k && !rc; k = k->next)
    if (!strcmp(k->name, j->name))
      rc = tabq__err_set(err, TABQ_INVALID, t.name, "schedule",
                         "schedule %s is already registered on this broker", j->name);
  if (!rc && (s->stop || atomic_load(&b->shut)))
    rc = tabq__err_set(err, TABQ_CLOSED, t.name, "schedule",
                       "the broker is shut down: schedule %s is not started", j->name);
  if (!rc)
    rc = start_thread(b, s, err);
  if (rc) {
    pthread_mutex_unlock(&s->mu);
    job_free(j);
    return rc;
  }
  j->next_s = first_slot(j, tabq__now_us());
  j->next = s->jobs;
  s->jobs = j;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  tabq__logf(&b->log, TABQ_LOG_INFO, "schedule %s: '%s' on table %s", j->name, o.spec, t.name);
  return TABQ_OK;
}

int tabq_schedule(tabq_broker *b, const tabq_table *table, const tabq_schedule_options *options,
                  tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !table || !options)
    return tabq__err_set(err, TABQ_INVALID, NULL, "schedule",
                         "tabq_schedule needs a broker, a table and options");
  const tabq_logger *outer = tabq__log_enter(&b->log);
  int rc = schedule(b, table, options, err);
  tabq__log_leave(outer);
  return rc;
}

void tabq__scheduler_stop(tabq_broker *b) {
  tabq_scheduler *s = scheduler_get(b);
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  bool started = s->started;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  if (started)
    pthread_join(s->thread, NULL);
  s->started = false;
}

void tabq__scheduler_free(tabq_broker *b) {
  tabq_scheduler *s = scheduler_get(b);
  if (!s)
    return;
  tabq__scheduler_stop(b);
  for (tabq_sched_job *j = s->jobs, *next; j; j = next) {
    next = j->next;
    job_free(j);
  }
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
  pthread_mutex_lock(&b->mu);
  b->scheduler = NULL;
  pthread_mutex_unlock(&b->mu);
}
