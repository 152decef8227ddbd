/* thumbnails: a queue of image jobs in a service's own table, in the lease form, run by
 * tabq_app_main() (docs/app-main.md), which gives it the standard options of a tabq service.
 *
 *   thumbnails [--url URL] [--workers N] [--log-level LEVEL] [JOBS]
 *
 * Creates the table (SQLite by default: sqlite:thumbnails.db), publishes JOBS jobs (300 by
 * default), and drains them with four workers while a progress line runs. Every seventh image
 * fails once and succeeds on its retry; every fiftieth has no path and fails every time, so
 * after three attempts it moves to the dead letter table. Ends with a summary. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* usleep */
#endif
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/app.h>
#include <time.h>
#include <unistd.h>

/* The seed's table: tabq fills attempt and locked_until; the payload is the job as JSON. Its id
 * is AUTOINCREMENT, never a gone row's again, as the dead letter table keeps the ids it takes
 * (docs/table-description.md). */
static const tabq_table thumbnail_jobs = {
    .size = sizeof(tabq_table),
    .name = "thumbnail_jobs",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS thumbnail_jobs (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS thumbnail_jobs_dead (id INTEGER PRIMARY KEY,"
    " attempt INTEGER NOT NULL, payload BLOB NOT NULL);";

/* What a job looks like, for the AsyncAPI document (--asyncapi). */
static const char *const job_schema =
    "{\"type\": \"object\", \"required\": [\"path\", \"size\"], \"properties\": {"
    "\"path\": {\"type\": \"string\"}, \"size\": {\"type\": \"integer\"}, "
    "\"number\": {\"type\": \"integer\"}}}";

/* Pretend to resize: a few milliseconds of work; an empty path cannot be resized. */
static bool resize(const char *path, int size, long attempt, int number) {
  struct timespec work = {.tv_nsec = (2 + number % 4) * 1000000L};
  nanosleep(&work, NULL);
  if (!path[0])
    return false;
  (void)size;
  return number % 7 != 0 || attempt > 1; /* a flaky store: every seventh fails once */
}

static tabq_outcome thumbnail(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *payload = tabq_delivery_payload(d, &len);
  json_error_t jerr;
  json_t *job = json_loadb(payload, len, 0, &jerr);
  if (!job)
    return tabq_drop(); /* not a job at all: retrying cannot help */
  const char *path = json_string_value(json_object_get(job, "path"));
  int size = (int)json_integer_value(json_object_get(job, "size"));
  int number = (int)json_integer_value(json_object_get(job, "number"));
  bool done = resize(path ? path : "", size, tabq_delivery_attempt(d), number);
  json_decref(job);
  return done ? tabq_ack() : tabq_retry();
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

typedef struct demo {
  int jobs;
  struct timespec t0;
} demo;

/* Once connected: a fresh table, and the jobs published. */
static int set_up(tabq_app_run *run) {
  demo *demo = run->user;
  tabq_error err;
  demo->jobs = run->argc > 1 ? atoi(run->argv[1]) : 300;
  if (tabq_exec(run->broker, schema, &err) ||
      tabq_exec(run->broker, "DELETE FROM thumbnail_jobs; DELETE FROM thumbnail_jobs_dead", &err)) {
    fprintf(stderr, "thumbnails: creating the table failed (%s): %s\n", tabq_code_name(err.code),
            err.message);
    return 2;
  }
  printf("thumbnails: tabq %s, dialect %s from %s\n", tabq_version_string(),
         tabq_dialect_name(run->broker), tabq_dialect_path(run->broker));
  for (int i = 1; i <= demo->jobs; i++) {
    char payload[128];
    int n = snprintf(payload, sizeof payload, "{\"path\":\"%s\",\"size\":%d,\"number\":%d}",
                     i % 50 == 0 ? "" : "images/photo.jpg", 128 + i % 3 * 64, i);
    tabq_message m = TABQ_MESSAGE_INIT;
    m.payload = payload;
    m.payload_len = (size_t)n;
    if (tabq_publish(run->broker, &thumbnail_jobs, &m, &err)) {
      fprintf(stderr, "thumbnails: publishing failed: %s\n", err.message);
      return 2;
    }
  }
  printf("published %d jobs\n", demo->jobs);
  clock_gettime(CLOCK_MONOTONIC, &demo->t0);
  return 0;
}

/* While the subscription drains: a progress line, then the run stopped and a summary. */
static void watch(tabq_app_run *run) {
  demo *demo = run->user;
  tabq_stats st;
  bool tty = isatty(STDOUT_FILENO);
  for (;;) {
    tabq_subscription_stats(run->subscriptions[0], &st, sizeof st);
    bool finished = st.acked + st.dead_lettered >= (uint64_t)demo->jobs;
    if (tty || finished)
      printf("%s  handled %4llu / %d   retried %3llu   dead-lettered %2llu   %.1f s%s",
             tty ? "\r" : "", (unsigned long long)st.acked, demo->jobs,
             (unsigned long long)st.retried, (unsigned long long)st.dead_lettered,
             seconds_since(&demo->t0), finished || !tty ? "\n" : "");
    fflush(stdout);
    if (finished || tabq_app_stopping(run))
      break;
    usleep(100 * 1000);
  }
  tabq_stop(run->broker);
  while (!tabq_app_stopping(run)) /* every delivery in work settled */
    usleep(10 * 1000);
  tabq_subscription_stats(run->subscriptions[0], &st, sizeof st);
  printf("summary: %llu handled, %llu retried, %llu dead-lettered (in thumbnail_jobs_dead), "
         "%.2f s elapsed\n",
         (unsigned long long)st.acked, (unsigned long long)st.retried,
         (unsigned long long)st.dead_lettered, seconds_since(&demo->t0));
}

static int fail(const char *what, const tabq_error *err) {
  fprintf(stderr, "thumbnails: %s failed (%s): %s\n", what, tabq_code_name(err->code),
          err->message);
  return 2;
}

int main(int argc, char **argv) {
  setenv("TABQ_URL", "sqlite:thumbnails.db?synchronous=normal", 0); /* unless set already */
  tabq_error err;
  tabq_app *app;
  if (tabq_app_new("thumbnails", "1.0.0", &app, &err) ||
      tabq_app_set_description(app, "resizes uploaded images", &err) ||
      tabq_app_add_table(app, &thumbnail_jobs, &err) ||
      tabq_app_set_payload_schema(app, "thumbnail_jobs", NULL, job_schema, &err))
    return fail("describing the app", &err);
  tabq_subscription_options options = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  options.queue = "thumbnails";
  options.handler = thumbnail;
  options.workers = 4;
  options.lease_s = 10;
  options.max_attempts = 3;
  options.dead_letter_table = "thumbnail_jobs_dead";
  demo demo = {0};
  tabq_app_hooks hooks = TABQ_APP_HOOKS_INIT;
  hooks.connected = set_up;
  hooks.running = watch;
  hooks.user = &demo;
  if (tabq_app_add_subscription(app, "thumbnail_jobs", &options, &err) ||
      tabq_app_set_hooks(app, &hooks, &err))
    return fail("describing the app", &err);
  int status = tabq_app_main(app, argc, argv);
  tabq_app_free(app);
  return status;
}
