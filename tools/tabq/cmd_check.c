/* tabq check: every statement of the description files' apps prepared on the database,
 * nothing run (tabq_check_app); the deploy gate, exit 1 when one fails. */
#include <stdio.h>
#include <stdlib.h>
#include <tabq/check.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "a description file; give several to check them all", true},
    {"all", NULL, "list the statements that prepared too, not only warnings and errors", false},
    {NULL, NULL, NULL, false},
};

static const char *severity_name(tabq_check_severity s) {
  return s == TABQ_CHECK_OK ? "ok" : s == TABQ_CHECK_WARNING ? "warning" : "error";
}

static json_t *report_json(const tabq_check_report *r) {
  json_t *items = json_array();
  for (size_t i = 0; i < tabq_check_report_count(r); i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    json_array_append_new(items,
                          json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:I}", "severity",
                                    severity_name(it->severity), "table", it->table, "purpose",
                                    it->purpose, "sql", it->sql, "code", tabq_code_name(it->code),
                                    "sqlstate", it->sqlstate, "native", (json_int_t)it->native,
                                    "message", it->message, "position", (json_int_t)it->position));
  }
  return json_pack("{s:s,s:o}", "worst", severity_name(tabq_check_report_worst(r)), "items", items);
}

/* One description file's app checked into `report`; exit 2 when it could not be. */
static int check_file(tabq_args *a, tabq_broker *b, const char *file, tabq_check_report *report) {
  tabq_app *app;
  tabq_error err;
  if (tabq_app_load(file, &app, &err))
    return fail(a, EXIT_USAGE, "%s", err.message);
  progress(a, "checking %s", file);
  size_t before = tabq_check_report_count(report);
  int rc = EXIT_DONE;
  if (tabq_check_app(b, app, report, &err) && tabq_check_report_count(report) == before)
    rc = fail_err(a, EXIT_USAGE, "checking", &err); /* it could not run */
  tabq_app_free(app);
  return rc;
}

static int run(tabq_args *a) {
  const char **files;
  size_t nfiles = opt_all(a, "table", &files);
  if (!nfiles)
    return fail(a, EXIT_USAGE, "give --table FILE, a description file (try --help)");
  tabq_broker *b = NULL;
  int rc = connect_url(a, &b);
  tabq_check_report *report = rc ? NULL : tabq_check_report_new();
  if (!rc && !report)
    rc = fail(a, EXIT_USAGE, "out of memory");
  for (size_t i = 0; !rc && i < nfiles; i++)
    rc = check_file(a, b, files[i], report);
  progress_done(a);
  if (!rc) {
    if (a->json)
      print_json(report_json(report));
    else
      tabq_check_report_print(report, stdout, opt(a, "all") != NULL);
    if (tabq_check_report_worst(report) == TABQ_CHECK_ERROR)
      rc = EXIT_FOUND;
  }
  tabq_check_report_free(report);
  if (b)
    tabq_close(b);
  return rc;
}

const tabq_cmd tabq_cmd_check = {
    .name = "check",
    .summary = "prepare every statement the described apps would run, and report",
    .synopsis = "tabq check --url URL --table FILE... [--all]",
    .description =
        "    Builds every statement the subscriptions, routes and publishes of each\n"
        "    description file would use - claims, settlements, extensions, dead letters, the\n"
        "    service's own statements, inserts - as they build them, and prepares each on the\n"
        "    database, then drops it: nothing is claimed or written (docs/check.md). Prints\n"
        "    each warning (a missing claim-order index, with the statement that creates it)\n"
        "    and error (the database's message, SQLSTATE and position), then the counts.\n"
        "    Exit 1 when a statement failed; warnings pass.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
