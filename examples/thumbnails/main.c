/* thumbnails: a queue of image jobs in a service's own SQLite table, in the lease form.
 *
 *   thumbnails [DATABASE_FILE] [JOBS]
 *
 * Creates the table, publishes JOBS jobs (300 by default), and drains them with four workers
 * while a progress line runs. Every seventh image fails once and succeeds on its retry; every
 * fiftieth has no path and fails every time, so after three attempts it moves to the dead
 * letter table. Ends with a summary. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* usleep */
#endif
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>
#include <time.h>
#include <unistd.h>

/* The seed's table: tabq fills attempt and locked_until; the payload is the job as JSON. */
static const tabq_table thumbnail_jobs = {
    .size = sizeof(tabq_table),
    .name = "thumbnail_jobs",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS thumbnail_jobs (id INTEGER PRIMARY KEY,"
    " attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS thumbnail_jobs_dead (id INTEGER PRIMARY KEY,"
    " attempt INTEGER NOT NULL, payload BLOB NOT NULL);";

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

static int fail(const char *what, const tabq_error *err) {
  fprintf(stderr, "thumbnails: %s failed (%s): %s\n", what, tabq_code_name(err->code),
          err->message);
  return 1;
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "thumbnails.db";
  int jobs = argc > 2 ? atoi(argv[2]) : 300;
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", file);
  unlink(file); /* a fresh demo each run */

  tabq_error err;
  tabq_broker *broker;
  if (tabq_connect(url, NULL, &broker, &err))
    return fail("connect", &err);
  if (tabq_exec(broker, schema, &err))
    return fail("creating the table", &err);
  printf("thumbnails: %s (tabq %s, dialect %s from %s)\n", file, tabq_version_string(),
         tabq_dialect_name(broker), tabq_dialect_path(broker));

  for (int i = 1; i <= jobs; i++) {
    char payload[128];
    int n = snprintf(payload, sizeof payload, "{\"path\":\"%s\",\"size\":%d,\"number\":%d}",
                     i % 50 == 0 ? "" : "images/photo.jpg", 128 + i % 3 * 64, i);
    tabq_message m = TABQ_MESSAGE_INIT;
    m.payload = payload;
    m.payload_len = (size_t)n;
    if (tabq_publish(broker, &thumbnail_jobs, &m, &err))
      return fail("publishing", &err);
  }
  printf("published %d jobs\n", jobs);

  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tabq_subscription_options options = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  options.queue = "thumbnails";
  options.handler = thumbnail;
  options.workers = 4;
  options.lease_s = 10;
  options.max_attempts = 3;
  options.dead_letter_table = "thumbnail_jobs_dead";
  tabq_subscription *sub;
  if (tabq_subscribe(broker, &thumbnail_jobs, &options, &sub, &err))
    return fail("subscribing", &err);

  tabq_stats st;
  bool tty = isatty(STDOUT_FILENO);
  for (;;) {
    tabq_subscription_stats(sub, &st, sizeof st);
    bool finished = st.acked + st.dead_lettered >= (uint64_t)jobs;
    if (tty || finished)
      printf("%s  handled %4llu / %d   retried %3llu   dead-lettered %2llu   %.1f s%s",
             tty ? "\r" : "", (unsigned long long)st.acked, jobs, (unsigned long long)st.retried,
             (unsigned long long)st.dead_lettered, seconds_since(&t0),
             finished || !tty ? "\n" : "");
    fflush(stdout);
    if (finished)
      break;
    usleep(100 * 1000);
  }
  tabq_shutdown(broker);
  tabq_subscription_stats(sub, &st, sizeof st);
  printf("summary: %llu handled, %llu retried, %llu dead-lettered (in thumbnail_jobs_dead), "
         "%.2f s elapsed\n",
         (unsigned long long)st.acked, (unsigned long long)st.retried,
         (unsigned long long)st.dead_lettered, seconds_since(&t0));
  tabq_close(broker);
  return 0;
}
