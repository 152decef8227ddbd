/* tabq pause and tabq resume: a queue paused or resumed for every process through the controls
 * table (tabq_pause, tabq_resume, docs/pause.md). */
#include <stdio.h>
#include <string.h>
#include <tabq/controls.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file of the queue's table", false},
    {"in", "TABLE", "the table, by name, where the file describes several", false},
    {"queue", "QUEUE", "the queue (the table's group); none for a table without a group", false},
    {"controls", "SPEC", "the controls table, NAME[:TABLE_COL,QUEUE_COL,PAUSED_COL[,AT_COL]]",
     false},
    {"show", NULL, "print whether the queue is paused, change nothing", false},
    {NULL, NULL, NULL, false},
};

/* --controls NAME (the columns queue_table, queue, paused, paused_at) or NAME:T,Q,P[,AT]; the
 * text is split in `buf`. */
static int parse_controls(const tabq_args *a, const char *spec, char *buf, size_t cap,
                          tabq_controls *c) {
  if (strlen(spec) >= cap)
    return fail(a, EXIT_USAGE, "--controls %.40s...: too long", spec);
  strcpy(buf, spec);
  char *cols = strchr(buf, ':');
  c->name = buf;
  c->table_column = "queue_table";
  c->queue_column = "queue";
  c->paused_column = "paused";
  c->paused_at_column = "paused_at";
  if (!cols)
    return *buf ? EXIT_DONE : fail(a, EXIT_USAGE, "--controls: give the controls table's name");
  *cols++ = '\0';
  const char **into[] = {&c->table_column, &c->queue_column, &c->paused_column,
                         &c->paused_at_column};
  size_t n = 0;
  for (char *save = NULL, *p = strtok_r(cols, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    if (n == 4)
      return fail(a, EXIT_USAGE, "--controls %s: at most four columns after the name", spec);
    *into[n++] = p;
  }
  if (n < 3 || !*buf)
    return fail(a, EXIT_USAGE,
                "--controls %s: give NAME:TABLE_COL,QUEUE_COL,PAUSED_COL[,PAUSED_AT_COL]", spec);
  if (n == 3)
    c->paused_at_column = NULL;
  return EXIT_DONE;
}

static int run_as(tabq_args *a, bool pause) {
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
  /* The controls: --controls, else the file's "controls". */
  tabq_controls given = TABQ_CONTROLS_INIT;
  char spec[1024];
  const tabq_controls *c = NULL;
  if (!rc && opt(a, "controls") &&
      !(rc = parse_controls(a, opt(a, "controls"), spec, sizeof spec, &given)))
    c = &given;
  else if (!rc && !(c = tabq_app_controls(app)))
    rc = fail(a, EXIT_USAGE,
              "no controls table: give --controls NAME, or a \"controls\" member in the "
              "description file (docs/pause.md)");
  const char *queue = opt(a, "queue");
  if (!rc)
    rc = connect_url(a, &b);
  tabq_error err;
  if (!rc && tabq_set_controls(b, c, &err))
    rc = fail_err(a, EXIT_USAGE, "the controls table", &err);
  bool paused = false;
  if (!rc && !opt(a, "show") &&
      (pause ? tabq_pause(b, t, queue, &err) : tabq_resume(b, t, queue, &err)))
    rc = fail_err(a, EXIT_USAGE, "refused, nothing changed", &err);
  if (!rc && tabq_paused(b, t, queue, &paused, &err))
    rc = fail_err(a, EXIT_USAGE, "reading the pause", &err);
  const char *q = queue && *queue ? queue : NULL;
  if (!rc && a->json)
    print_json(json_pack("{s:s,s:s?,s:b}", "table", t->name, "queue", q, "paused", paused));
  else if (!rc)
    printf("%s%s%stable %s %s\n", q ? "queue " : "", q ? q : "", q ? " of " : "", t->name,
           opt(a, "show") ? (paused ? "is paused" : "is running")
           : paused       ? "paused"
                          : "resumed");
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  return rc;
}

static int run_pause(tabq_args *a) {
  return run_as(a, true);
}

static int run_resume(tabq_args *a) {
  return run_as(a, false);
}

#define WHERE_CONTROLS                                                                             \
  "    The controls table comes from --controls NAME (columns queue_table, queue, paused,\n"       \
  "    paused_at) or NAME:TABLE_COL,QUEUE_COL,PAUSED_COL[,PAUSED_AT_COL], else from the\n"         \
  "    description file's \"controls\" member. --show prints whether the queue is paused and\n"    \
  "    changes nothing. Exit 0 when done, 2 on a usage, description or connection error or a\n"    \
  "    refusal (no controls table, a controls table missing a column, a queue missing where\n"     \
  "    the table has a group column), nothing changed.\n"

const tabq_cmd tabq_cmd_pause = {
    .name = "pause",
    .summary = "pause a queue in every process: claims stop, rows in work finish",
    .synopsis = "tabq pause --url URL --table FILE [--in TABLE] [--queue QUEUE] "
                "[--controls SPEC] [--show]",
    .description =
        "    Writes the queue's row of the controls table paused: every process whose broker\n"
        "    has the controls table stops claiming from the queue within its poll interval (at\n"
        "    once where it listens for notifications, on PostgreSQL); rows in work finish and\n"
        "    settle as usual. `tabq resume` undoes it.\n" WHERE_CONTROLS,
    .opts = opts,
    .max_operands = 0,
    .run = run_pause,
};

const tabq_cmd tabq_cmd_resume = {
    .name = "resume",
    .summary = "resume a paused queue: claims restart in every process",
    .synopsis = "tabq resume --url URL --table FILE [--in TABLE] [--queue QUEUE] "
                "[--controls SPEC] [--show]",
    .description = "    Writes the queue's row of the controls table running: claims restart "
                   "in every\n    process within its poll interval (at once where notified).\n",
    .opts = opts,
    .max_operands = 0,
    .run = run_resume,
};
