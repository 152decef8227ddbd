/* The `tabq` command's common part: the table of subcommands, option parsing, --help, --json
 * output, the progress line, connecting and the exit codes (docs/tools.md). A subcommand is one
 * file that defines a tabq_cmd and is listed once in main.c. */
#ifndef TABQ_TOOL_COMMON_H
#define TABQ_TOOL_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <tabq/app.h>
#include <tabq/tabq.h>

/* Exit codes, the same for every subcommand. */
enum {
  EXIT_DONE = 0,  /* done, nothing wrong found */
  EXIT_FOUND = 1, /* done, and a failure found (a check's failing statement, a refused row) */
  EXIT_USAGE = 2, /* a usage, description or connection error, one line on stderr */
};

/* One option a subcommand takes. `arg` names its value ("URL"), NULL for a flag. */
typedef struct tabq_opt {
  const char *name; /* "url": given as --url VALUE or --url=VALUE */
  const char *arg;
  const char *help;
  bool repeat; /* may be given several times (values kept in order) */
} tabq_opt;

#define TABQ_MAX_OPTS 24
#define TABQ_MAX_VALUES 32

/* A parsed command line. */
typedef struct tabq_args {
  const char *cmd;          /* the subcommand's name */
  const struct tabq_cmd *c; /* and its entry */
  bool json;                /* --json: one JSON document on stdout */
  bool tty;                 /* stderr is a terminal: a progress line may be drawn there */
  const char *values[TABQ_MAX_OPTS][TABQ_MAX_VALUES];
  size_t nvalues[TABQ_MAX_OPTS];
  const char *rest[TABQ_MAX_VALUES]; /* operands */
  size_t nrest;
} tabq_args;

typedef struct tabq_cmd {
  const char *name;
  const char *summary;  /* one line for `tabq --help` */
  const char *synopsis; /* "tabq stats --url URL --table FILE [--watch SECONDS]" */
  const char *description;
  const tabq_opt *opts; /* ended by {NULL}; --json and --help are every subcommand's */
  size_t max_operands;
  int (*run)(tabq_args *a);
} tabq_cmd;

/* The subcommands (each in its own file). */
extern const tabq_cmd tabq_cmd_schema, tabq_cmd_check, tabq_cmd_plugins, tabq_cmd_publish,
    tabq_cmd_stats, tabq_cmd_requeue, tabq_cmd_purge, tabq_cmd_asyncapi, tabq_cmd_web,
    tabq_cmd_cancel, tabq_cmd_schedule, tabq_cmd_pause, tabq_cmd_resume;

/* The value of option `name` (the last given), NULL when absent; a flag reads as "". */
const char *opt(const tabq_args *a, const char *name);
size_t opt_all(const tabq_args *a, const char *name, const char ***values);

/* One line on stderr, "tabq CMD: ...", and returns `code`. */
int fail(const tabq_args *a, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same for a library error: "tabq CMD: WHAT: CODE: message". */
int fail_err(const tabq_args *a, int code, const char *what, const tabq_error *err);

/* --url, else TABQ_URL; a missing one is a usage error. */
int need_url(const tabq_args *a, const char **url);
/* Connects (a pool of one connection, a short acquire wait): exit 2 on failure. */
int connect_url(const tabq_args *a, tabq_broker **b);
/* Reads every --table FILE into one app; exit 2 on a refusal. */
int load_tables(const tabq_args *a, tabq_app **app);

/* The progress line: drawn on stderr over itself when it is a terminal and --json is off,
 * nothing otherwise; progress_done() clears it. */
void progress(const tabq_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void progress_done(const tabq_args *a);

/* Prints `doc` on stdout (indented, a final newline) and frees it. */
void print_json(json_t *doc);

/* A duration: "90s", "15m", "12h", "7d", "500ms" (a bare number is seconds), in ms; -1 when bad. */
long long parse_duration_ms(const char *text);
/* Asks "PROMPT [y/N] " on the terminal; true for y or yes. */
bool confirm(const char *prompt);

#endif
