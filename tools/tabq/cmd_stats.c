/* tabq stats: per queue, what waits, what is in work, what is done and dead (tabq/admin.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tabq/admin.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file: its tables, and its subscriptions' dead letters",
     false},
    {"watch", "SECONDS", "read again every SECONDS until interrupted", false},
    {"rounds", "N", "with --watch: stop after N readings", false},
    {NULL, NULL, NULL, false},
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

/* The library's document of the counts (tabq_admin_stats_json), to print or to add to. */
static json_t *as_json(const tabq_admin_stats *s) {
  char *text = tabq_admin_stats_json(s);
  json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  return doc ? doc : json_null();
}

static void cell(int64_t n) {
  if (n < 0)
    printf(" %9s", "-");
  else
    printf(" %9lld", (long long)n);
}

static void age(int64_t ms) {
  char buf[32];
  if (ms < 0)
    snprintf(buf, sizeof buf, "-");
  else if (ms < 120000)
    snprintf(buf, sizeof buf, "%llds", (long long)(ms / 1000));
  else if (ms < 7200000)
    snprintf(buf, sizeof buf, "%lldm", (long long)(ms / 60000));
  else if (ms < 172800000)
    snprintf(buf, sizeof buf, "%lldh", (long long)(ms / 3600000));
  else
    snprintf(buf, sizeof buf, "%lldd", (long long)(ms / 86400000));
  printf(" %10s", buf);
}

static void as_text(const tabq_admin_stats *s) {
  time_t now = (time_t)(tabq_admin_stats_time(s) / 1000000);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  printf("%-20s %9s %9s %9s %9s %9s %10s  %s\n", when, "due", "delayed", "in work", "processed",
         "dead", "oldest due", "attempts (attempt:rows)");
  const char *table = NULL;
  for (size_t i = 0; i < tabq_admin_stats_count(s); i++) {
    const tabq_queue_stats *q = tabq_admin_stats_get(s, i);
    if (!table || strcmp(table, q->table))
      printf("%s\n", table = q->table);
    printf("  %-18.18s", q->queue ? q->queue : "(all)");
    cell(q->due), cell(q->delayed), cell(q->in_work), cell(q->processed), cell(q->dead);
    age(q->oldest_due_ms);
    printf(" ");
    for (size_t k = 0; k < q->nattempts; k++)
      printf(" %lld:%lld", (long long)q->attempts[k].attempt, (long long)q->attempts[k].rows);
    printf("%s\n", q->nattempts ? "" : " -");
  }
  for (size_t i = 0; i < tabq_admin_stats_count(s); i++)
    if (tabq_admin_stats_get(s, i)->dead_in) {
      printf("dead letters:");
      for (size_t k = i; k < tabq_admin_stats_count(s); k++) {
        const tabq_queue_stats *q = tabq_admin_stats_get(s, k);
        if (q->dead_in)
          printf(" %s -> %s;", q->queue ? q->queue : q->table, q->dead_in);
      }
      printf("\n");
      break;
    }
}

static int run(tabq_args *a) {
  long long every = 0, rounds = 0;
  if (opt(a, "watch") && (every = parse_duration_ms(opt(a, "watch"))) <= 0)
    return fail(a, EXIT_USAGE, "--watch %s: write a period such as 2 or 5s", opt(a, "watch"));
  if (opt(a, "rounds") && (!opt(a, "watch") || (rounds = atoll(opt(a, "rounds"))) <= 0))
    return fail(a, EXIT_USAGE, "--rounds N needs --watch and a count of 1 or more");
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  int rc = load_tables(a, &app);
  if (!rc)
    rc = connect_url(a, &b);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  bool screen = every && a->tty && isatty(STDOUT_FILENO) && !a->json;
  for (long long round = 1; !rc && !stop; round++) {
    tabq_admin_stats *s;
    tabq_error err;
    progress(a, "counting");
    if (tabq_admin_stats_read(b, app, &s, &err)) {
      rc = fail_err(
          a, err.code == TABQ_POOL_TIMEOUT || err.code == TABQ_BACKEND ? EXIT_USAGE : EXIT_FOUND,
          "reading the counts", &err);
      break;
    }
    progress_done(a);
    if (screen)
      printf("\033[H\033[2J");
    if (a->json && every) { /* one document a line, so a reader takes them as they come */
      json_t *doc = as_json(s);
      char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
      puts(text ? text : "null");
      free(text);
      json_decref(doc);
    } else if (a->json) {
      print_json(as_json(s));
    } else {
      if (every && !screen && round > 1)
        printf("\n");
      as_text(s);
    }
    fflush(stdout);
    tabq_admin_stats_free(s);
    if (!every || (rounds && round >= rounds))
      break;
    for (long long waited = 0; waited < every && !stop; waited += 100)
      usleep(100000);
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_stats = {
    .name = "stats",
    .summary = "count each queue's due, delayed, in work, processed and dead rows",
    .synopsis = "tabq stats --url URL --table FILE [--watch SECONDS [--rounds N]] [--json]",
    .description =
        "    For every queue of every table the description file describes (the queues its\n"
        "    subscriptions read, and every other group the table holds), counts the rows\n"
        "    due now, delayed (retry_after ahead), in work (a lease not yet expired; '-' in\n"
        "    the row lock and advisory forms, whose holds no query sees without taking them),\n"
        "    processed (processed_at set; '-' where acks delete), dead (in the dead letter\n"
        "    group or table its subscription names), how long the oldest due row has waited\n"
        "    since its retry_after, and the unfinished rows by attempt. Each count is a query\n"
        "    bounded by the queue's group, so the database answers from the claim-order\n"
        "    index (docs/tools.md); nothing is written.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
