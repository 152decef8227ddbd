/* tabq requeue: dead letters back into their queue (tabq_admin_requeue). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <tabq/admin.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file: its subscriptions say where dead letters are", false},
    {"queue", "QUEUE", "only this queue's dead letters", false},
    {"dry-run", NULL, "count what would move, move nothing", false},
    {"yes", NULL, "do not ask for a confirmation on a terminal", false},
    {"batch", "N", "rows moved a transaction (default 500)", false},
    {NULL, NULL, NULL, false},
};

static int run(tabq_args *a) {
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  tabq_error err;
  uint64_t count = 0, moved = 0;
  const char *queue = opt(a, "queue");
  long batch = opt(a, "batch") ? atol(opt(a, "batch")) : 0;
  if (opt(a, "batch") && (batch < 1 || batch > 100000))
    return fail(a, EXIT_USAGE, "--batch %s: write a count from 1 to 100000", opt(a, "batch"));
  int rc = load_tables(a, &app);
  if (!rc)
    rc = connect_url(a, &b);
  /* The count first (which also checks the tables): what a person confirms, and a dry run's
   * whole answer. */
  if (!rc) {
    progress(a, "counting dead letters");
    if (tabq_admin_requeue(b, app, queue, true, 0, &count, &err))
      rc = fail_err(a, err.code == TABQ_POOL_TIMEOUT ? EXIT_USAGE : EXIT_FOUND,
                    "refused, nothing moved", &err);
  }
  bool dry = opt(a, "dry-run") != NULL;
  if (!rc && !dry && count && a->tty && isatty(STDIN_FILENO) && !opt(a, "yes") && !a->json) {
    progress_done(a);
    char prompt[200];
    snprintf(prompt, sizeof prompt, "move %llu dead letter%s back into %s?",
             (unsigned long long)count, count == 1 ? "" : "s", queue ? queue : "their queues");
    if (!confirm(prompt)) {
      fprintf(stderr, "tabq requeue: not confirmed, nothing moved\n");
      rc = EXIT_FOUND;
      dry = true;
      count = 0;
    }
  }
  if (!rc && !dry && count) {
    progress(a, "moving %llu dead letters", (unsigned long long)count);
    if (tabq_admin_requeue(b, app, queue, false, (unsigned)batch, &moved, &err))
      rc = fail_err(a, EXIT_FOUND, "requeue", &err);
  }
  if (!rc) {
    progress_done(a);
    uint64_t n = dry ? count : moved;
    if (a->json)
      print_json(json_pack("{s:s?,s:b,s:I}", "queue", queue, "dry_run", dry,
                           dry ? "would_move" : "moved", (json_int_t)n));
    else if (!rc)
      printf("%s %llu dead letter%s back into %s\n", dry ? "would move" : "moved",
             (unsigned long long)n, n == 1 ? "" : "s", queue ? queue : "their queues");
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_requeue = {
    .name = "requeue",
    .summary = "move dead letters back into their queue",
    .synopsis = "tabq requeue --url URL --table FILE [--queue QUEUE] [--dry-run] [--yes]\n"
                "               [--batch N] [--json]",
    .description =
        "    Moves the dead letters of every subscription the description file gives a dead\n"
        "    letter (only QUEUE's with --queue) back into their queue: due now, attempt 1,\n"
        "    no lease. Rows in a dead letter group get their queue's group back; rows in a\n"
        "    dead letter table are copied back and deleted there. Each batch is its own\n"
        "    transaction. First every table is checked against its description: a column the\n"
        "    description names and the table lacks refuses the whole run, nothing moved.\n"
        "    On a terminal it says the count and asks before moving (--yes does not ask).\n"
        "    Exit 1 when refused or not confirmed.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
