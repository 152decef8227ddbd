/* tabq schema: the tables' schema, printed or applied (tabq_app_schema_sql/_apply). */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database whose dialect renders the schema (else TABQ_URL)", false},
    {"table", "FILE", "the description file: its tables and dead letter tables", false},
    {"apply", NULL, "create what is printed, table by table, each in one transaction", false},
    {"if-not-exists", NULL, "CREATE ... IF NOT EXISTS: what exists stays as it is", false},
    {NULL, NULL, NULL, false},
};

static int run(tabq_args *a) {
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  tabq_error err;
  char *sql = NULL;
  bool apply = opt(a, "apply") != NULL, if_not_exists = opt(a, "if-not-exists") != NULL;
  int rc = load_tables(a, &app);
  if (!rc)
    rc = connect_url(a, &b);
  if (!rc && tabq_app_schema_sql(b, app, if_not_exists, &sql, &err))
    rc = fail_err(a, EXIT_USAGE, "rendering the schema", &err);
  if (!rc && apply) {
    progress(a, "creating the tables");
    if (tabq_app_schema_apply(b, app, if_not_exists, &err))
      rc = fail_err(a, EXIT_FOUND, err.statement[0] ? err.statement : "applying", &err);
    progress_done(a);
  }
  if (!rc) {
    size_t n = tabq_app_table_count(app);
    if (a->json)
      print_json(json_pack("{s:s,s:s,s:b,s:I}", "dialect", tabq_dialect_name(b), "sql", sql,
                           "applied", apply, "tables", (json_int_t)n));
    else if (apply)
      printf("applied the schema of %zu table%s\n", n, n == 1 ? "" : "s");
    else
      fputs(sql, stdout);
  }
  free(sql);
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_schema = {
    .name = "schema",
    .summary = "print or create the tables' schema, as the database's dialect renders it",
    .synopsis = "tabq schema --url URL --table FILE [--apply] [--if-not-exists]",
    .description =
        "    Prints, for every table of the description file, the CREATE TABLE with a column of\n"
        "    a fitting type for each role, the claim-order index for exactly the roles the\n"
        "    table has, the per-table settings where the database has them (PostgreSQL's\n"
        "    autovacuum) and the dead letter table a subscription names (docs/schema.md).\n"
        "    The URL's dialect renders it: nothing is written without --apply. With --apply\n"
        "    each table's statements run in one transaction (all or nothing on PostgreSQL\n"
        "    and SQLite; MySQL/MariaDB commit each CREATE). Exit 1 when the database refused\n"
        "    a statement, naming it.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
