/* tabq purge: processed rows and old dead letters deleted in small batches
 * (tabq_admin_purge). */
#include <stdio.h>
#include <stdlib.h>
#include <tabq/admin.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file: its tables and dead letters", false},
    {"older-than", "AGE", "required: delete what finished before AGE ago (30d, 12h, 90m)", false},
    {"dry-run", NULL, "count what would be deleted, delete nothing", false},
    {"batch", "N", "rows a statement and a transaction (default 1000)", false},
    {NULL, NULL, NULL, false},
};

static int run(tabq_args *a) {
  long long age = parse_duration_ms(opt(a, "older-than"));
  if (!opt(a, "older-than"))
    return fail(a, EXIT_USAGE, "give --older-than AGE, such as 30d (try --help)");
  if (age < 0)
    return fail(a, EXIT_USAGE, "--older-than %s: write an age such as 30d, 12h or 90m",
                opt(a, "older-than"));
  long batch = opt(a, "batch") ? atol(opt(a, "batch")) : 0;
  if (opt(a, "batch") && (batch < 1 || batch > 100000))
    return fail(a, EXIT_USAGE, "--batch %s: write a count from 1 to 100000", opt(a, "batch"));
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  tabq_error err;
  uint64_t processed = 0, dead = 0;
  bool dry = opt(a, "dry-run") != NULL;
  int rc = load_tables(a, &app);
  if (!rc)
    rc = connect_url(a, &b);
  if (!rc) {
    progress(a, "%s rows finished before %s ago", dry ? "counting" : "deleting",
             opt(a, "older-than"));
    if (tabq_admin_purge(b, app, age, dry, (unsigned)batch, &processed, &dead, &err))
      rc = fail_err(a, err.code == TABQ_POOL_TIMEOUT ? EXIT_USAGE : EXIT_FOUND,
                    processed || dead ? "purge stopped" : "refused, nothing deleted", &err);
  }
  if (!rc) {
    progress_done(a);
    if (a->json)
      print_json(json_pack("{s:b,s:I,s:I}", "dry_run", dry, "processed", (json_int_t)processed,
                           "dead_letters", (json_int_t)dead));
    else
      printf("%s %llu processed row%s and %llu dead letter%s older than %s\n",
             dry ? "would delete" : "deleted", (unsigned long long)processed,
             processed == 1 ? "" : "s", (unsigned long long)dead, dead == 1 ? "" : "s",
             opt(a, "older-than"));
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_purge = {
    .name = "purge",
    .summary = "delete processed rows and dead letters older than an age",
    .synopsis = "tabq purge --url URL --table FILE --older-than AGE [--dry-run] [--batch N]",
    .description =
        "    Deletes, from every table the description file describes, the rows whose\n"
        "    processed_at is older than AGE, and the dead letters (in a subscription's dead\n"
        "    letter group or table) whose retry_after is. Rows without such a time are kept.\n"
        "    It deletes N rows a statement, each statement its own short transaction, so no\n"
        "    lock is held long and a claim waits at most one batch. First every table is\n"
        "    checked against its description: a column the description names and the table\n"
        "    lacks refuses the whole run, nothing deleted. Exit 1 when refused.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
