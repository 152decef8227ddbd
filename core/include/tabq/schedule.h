/* tabq — periodic jobs (docs/schedule.md).
 *
 * tabq_schedule() has the broker publish a message at every slot of a cron expression or an
 * interval. Any number of processes may schedule the same job: each slot's row carries the
 * unique key "NAME:2026-12-04T12:00Z" (the slot in UTC, whatever the zone), so the table's
 * unique index lets exactly one publish of a slot write a row and the others learn
 * TABQ_DUPLICATE. No process leads; a process that stops leaves the others publishing.
 *
 *   tabq_message tick = TABQ_MESSAGE_INIT;
 *   tick.payload = "{\"report\": \"daily\"}";
 *   tick.payload_len = 19;
 *   tabq_schedule_options o = TABQ_SCHEDULE_OPTIONS_INIT;
 *   o.name = "daily-report";
 *   o.spec = "30 6 * * mon-fri";
 *   o.zone = "Europe/Berlin";
 *   o.message = &tick;
 *   tabq_schedule(b, &jobs, &o, &err);
 *
 * Specs: five cron fields (minute hour day-of-month month day-of-week) with lists, ranges,
 * steps and the names jan-dec and sun-sat, the day fields joined as crontab(5) joins them; the
 * macros @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly; or an interval,
 * "every 30s" or "@every 1h30m" (units s, m, h, d), its slots counted from 1970-01-01 UTC. */
#ifndef TABQ_SCHEDULE_H
#define TABQ_SCHEDULE_H

#include <tabq/app.h>
#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What happens to the slots that passed while no process of the job ran (or while its process
 * was stalled for more than a second past a slot). */
typedef enum tabq_missed_policy {
  TABQ_MISSED_SKIP = 0, /* the default: they are gone; publishing resumes at the next slot */
  TABQ_MISSED_CATCH_UP, /* the latest of them is published once, then the next slots */
} tabq_missed_policy;

typedef struct tabq_schedule_options {
  uint32_t size;    /* sizeof(tabq_schedule_options): TABQ_SCHEDULE_OPTIONS_INIT sets it */
  const char *name; /* the job's name, the first part of each slot's key: no ':' and not empty */
  const char *spec; /* "0,30 9-17 * * mon-fri", "@hourly", "every 30s", "@every 5m" */
  /* A cron expression's zone, an IANA name ("Europe/Berlin"); NULL or "UTC": UTC. Read through
   * ICU's calendar, never through the process's TZ. Not for an interval. */
  const char *zone;
  tabq_missed_policy missed;
  /* What each slot publishes, copied by tabq_schedule (it need not outlive the call). Its
   * unique_key and delay_ms are tabq's to set: a template that sets either is refused. NULL:
   * an empty message (a table with a group column needs one naming the group). */
  const tabq_message *message;
  /* How long before its slot each row is written, hidden until the slot by its retry_after
   * (default 5000 ms; needs a retry_after column the insert writes, else rows are written at
   * their slot). Written ahead, no row of a slot can be finished, and its key freed by a
   * unique index over unfinished rows, before a slower process publishes the slot too. */
  unsigned lead_ms;
} tabq_schedule_options;

#define TABQ_SCHEDULE_OPTIONS_INIT TABQ_SIZED_INIT(tabq_schedule_options)
#define TABQ_SCHEDULE_OPTIONS_SIZE_1_0 (offsetof(tabq_schedule_options, lead_ms) + sizeof(unsigned))

/* Registers a periodic job on the broker's scheduler thread (started by the first call,
 * stopped and joined by tabq_shutdown). The table must describe a unique_key column
 * (TABQ_DECLARATION otherwise); the spec, the zone, the name and the template are checked
 * here (TABQ_INVALID naming the rule; a spec's refusal names the field and the character,
 * also set in err->position), and so is the insert, prepared at once. The description must
 * stay valid as long as the broker, as for tabq_publish. A name already scheduled on this
 * broker is refused. Publishing failures are logged and retried until the slot is missed. */
TABQ_API int tabq_schedule(tabq_broker *b, const tabq_table *table,
                           const tabq_schedule_options *options, tabq_error *err);

/* The first slot of `spec` in `zone` strictly after `after_us` (microseconds since 1970 UTC),
 * into *next_us; no database. TABQ_INVALID for a spec or zone tabq_schedule refuses. */
TABQ_API int tabq_schedule_next(const char *spec, const char *zone, int64_t after_us,
                                int64_t *next_us, tabq_error *err);

/* The unique key of slot `slot_us` of job `name` with `spec`: "NAME:2026-12-04T12:00Z", or
 * "NAME:2026-12-04T12:00:05Z" for an interval that is not whole minutes. Returns the key's
 * length (a longer key than cap - 1 is cut, as snprintf cuts), or -1 for a refused spec. */
TABQ_API int tabq_schedule_key(const char *name, const char *spec, int64_t slot_us, char *buf,
                               size_t cap);

/* ---- Schedules of an app (docs/description-files.md, "schedules") ------------------------
 * A description file's "schedules" become these; tabq_app_main schedules each on its broker.
 * Adding one checks it as tabq_schedule does, against the app's table of that name, and copies
 * the options and the template (its group, payload, priority, partition key and headers; a
 * template with data values or an id is refused). Names are unique within the app. */
TABQ_API int tabq_app_add_schedule(tabq_app *app, const char *table,
                                   const tabq_schedule_options *options, tabq_error *err);
TABQ_API size_t tabq_app_schedule_count(const tabq_app *app);
/* The app's copy of the i-th schedule's table and options (options->message its template);
 * NULL past the end. */
TABQ_API const tabq_table *tabq_app_schedule_table(const tabq_app *app, size_t i);
TABQ_API const tabq_schedule_options *tabq_app_schedule_options(const tabq_app *app, size_t i);

#ifdef __cplusplus
}
#endif

#endif
