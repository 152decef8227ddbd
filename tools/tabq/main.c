/* tabq: operate a tabq queue without writing C (docs/tools.md). This file holds the table of
 * subcommands, the command line's parsing and the --help pages; each subcommand is a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* Every subcommand, in the order `tabq --help` lists them: a new one is a file and a line. */
static const tabq_cmd *const commands[] = {
    &tabq_cmd_schema,   &tabq_cmd_check, &tabq_cmd_plugins, &tabq_cmd_publish,  &tabq_cmd_stats,
    &tabq_cmd_requeue,  &tabq_cmd_purge, &tabq_cmd_cancel,  &tabq_cmd_asyncapi, &tabq_cmd_web,
    &tabq_cmd_schedule, &tabq_cmd_pause, &tabq_cmd_resume,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char exit_codes[] =
    "EXIT STATUS\n"
    "    0  done\n"
    "    1  done, and a failure found: a statement check failed, a row or a plugin\n"
    "       was refused (said on stdout or stderr)\n"
    "    2  a usage, description or connection error, one line on "
    "stderr\n"
    "    3  cancel: no unfinished row has the id\n";

static void usage(FILE *f) {
  fprintf(f, "NAME\n    tabq - operate tabq queues: their tables, rows and plugins\n\n"
             "SYNOPSIS\n    tabq COMMAND [OPTIONS]\n    tabq COMMAND --help\n\n"
             "COMMANDS\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "    %-9s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f, "\nThe database comes from --url URL, else the environment's TABQ_URL.\n\n%s",
          exit_codes);
}

static void help(const tabq_cmd *c) {
  printf("NAME\n    tabq %s - %s\n\nSYNOPSIS\n    %s\n\nDESCRIPTION\n%s\nOPTIONS\n", c->name,
         c->summary, c->synopsis, c->description);
  for (size_t i = 0; c->opts[i].name; i++) {
    char head[64];
    snprintf(head, sizeof head, "--%s%s%s", c->opts[i].name, c->opts[i].arg ? " " : "",
             c->opts[i].arg ? c->opts[i].arg : "");
    printf("    %-22s %s\n", head, c->opts[i].help);
  }
  printf("    %-22s %s\n    %-22s %s\n\n%s", "--json", "print one JSON document on stdout",
         "--help", "print this page", exit_codes);
}

static int parse(tabq_args *a, int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    if (strncmp(arg, "--", 2) || !arg[2]) {
      if (a->nrest == a->c->max_operands || a->nrest == TABQ_MAX_VALUES)
        return fail(a, EXIT_USAGE, "unexpected argument '%s' (try --help)", arg);
      a->rest[a->nrest++] = arg;
      continue;
    }
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    if (len == 4 && !strncmp(name, "json", 4) && !eq) {
      a->json = true;
      continue;
    }
    size_t k = 0;
    while (a->c->opts[k].name &&
           (strlen(a->c->opts[k].name) != len || strncmp(a->c->opts[k].name, name, len)))
      k++;
    const tabq_opt *o = &a->c->opts[k];
    if (!o->name)
      return fail(a, EXIT_USAGE, "unknown option '--%.*s' (try --help)", (int)len, name);
    const char *value = "";
    if (o->arg) {
      if (eq)
        value = eq + 1;
      else if (i + 1 < argc)
        value = argv[++i];
      else
        return fail(a, EXIT_USAGE, "--%s needs a value, %s (try --help)", o->name, o->arg);
    } else if (eq) {
      return fail(a, EXIT_USAGE, "--%s takes no value (try --help)", o->name);
    }
    if (a->nvalues[k] && !o->repeat)
      return fail(a, EXIT_USAGE, "--%s given twice (try --help)", o->name);
    if (a->nvalues[k] == TABQ_MAX_VALUES)
      return fail(a, EXIT_USAGE, "--%s given too many times", o->name);
    a->values[k][a->nvalues[k]++] = value;
  }
  return EXIT_DONE;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return EXIT_DONE;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("tabq %s\n", tabq_version_string());
    return EXIT_DONE;
  }
  const tabq_cmd *c = NULL;
  for (size_t i = 0; i < NCOMMANDS && !c; i++)
    if (!strcmp(commands[i]->name, argv[1]))
      c = commands[i];
  if (!c) {
    fprintf(stderr, "tabq: no command '%s' (try tabq --help)\n", argv[1]);
    return EXIT_USAGE;
  }
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help")) {
      help(c);
      return EXIT_DONE;
    }
  static tabq_args a; /* large: its option values */
  a.cmd = c->name;
  a.c = c;
  a.tty = isatty(STDERR_FILENO);
  int rc = parse(&a, argc, argv);
  if (rc)
    return rc;
  rc = c->run(&a);
  progress_done(&a);
  return rc;
}
