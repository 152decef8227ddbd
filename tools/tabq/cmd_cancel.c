/* tabq cancel: one row cancelled by its id (tabq_cancel, docs/cancel.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/cancel.h>

#include "common.h"

/* Exit 3: no unfinished row has the id, so a script can tell "gone already" from a refusal. */
#define EXIT_NOT_FOUND 3

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file of the row's table", false},
    {"in", "TABLE", "the table, by name, where the file describes several", false},
    {NULL, NULL, NULL, false},
};

/* The id as the table's id column holds it: an integer where it holds integers. */
static int id_of(const tabq_args *a, const tabq_table *t, const char *text, tabq_value *out) {
  if (t->id.type == TABQ_T_TEXT) {
    *out = tabq_text(text, strlen(text));
    return EXIT_DONE;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (!*text || *end || errno)
    return fail(a, EXIT_USAGE, "table %s: id %s is not an integer, as its id column holds", t->name,
                text);
  *out = tabq_int(v);
  return EXIT_DONE;
}

static int run(tabq_args *a) {
  if (a->nrest != 1)
    return fail(a, EXIT_USAGE, "give the id of the row to cancel (try --help)");
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  int rc = load_tables(a, &app);
  const tabq_table *t = NULL;
  if (!rc && opt(a, "in") && !(t = tabq_app_table_named(app, opt(a, "in"))))
    rc = fail(a, EXIT_USAGE, "--in %s: the description file has no such table", opt(a, "in"));
  else if (!rc && !opt(a, "in") && tabq_app_table_count(app) != 1)
    rc = fail(a, EXIT_USAGE, "the description file has %zu tables: name one with --in TABLE",
              tabq_app_table_count(app));
  else if (!rc && !t)
    t = tabq_app_table(app, 0);
  tabq_value id = tabq_null();
  if (!rc)
    rc = id_of(a, t, a->rest[0], &id);
  if (!rc)
    rc = connect_url(a, &b);
  tabq_error err;
  if (!rc && tabq_cancel(b, t, id, &err))
    rc = fail_err(a,
                  err.code == TABQ_NOT_FOUND                                  ? EXIT_NOT_FOUND
                  : err.code == TABQ_BACKEND || err.code == TABQ_POOL_TIMEOUT ? EXIT_USAGE
                                                                              : EXIT_FOUND,
                  err.code == TABQ_NOT_FOUND ? "not found" : "refused, nothing changed", &err);
  else if (!rc && a->json)
    print_json(json_pack("{s:s,s:s,s:b}", "table", t->name, "id", a->rest[0], "cancelled", 1));
  else if (!rc)
    printf("cancelled row %s of table %s\n", a->rest[0], t->name);
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_cancel = {
    .name = "cancel",
    .summary = "cancel one row by its id: finished if queued, marked if in work",
    .synopsis = "tabq cancel --url URL --table FILE [--in TABLE] ID",
    .description =
        "    Cancels row ID of the table the description file describes (name it with --in\n"
        "    where the file describes several). A row not in work is finished at once: deleted,\n"
        "    or given its processed_at (and cancelled_at), so no claim takes it again. A row in\n"
        "    work is marked in its cancelled_at column, its handler told, and its settlement\n"
        "    made a drop; a form that cannot reach it (a row lock held by another process, a\n"
        "    lease table without cancelled_at) refuses, nothing changed. Exit 0 when cancelled,\n"
        "    1 when refused, 3 when no unfinished row has the id (finished already or never\n"
        "    there), 2 on a usage, description or connection error.\n",
    .opts = opts,
    .max_operands = 1,
    .run = run,
};
