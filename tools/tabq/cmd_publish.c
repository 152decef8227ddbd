/* tabq publish: writes one row into a queue table, as tabq_publish writes it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "the database (else TABQ_URL)", false},
    {"table", "FILE", "the description file (an app's or one table's)", false},
    {"table-name", "NAME", "the table of the file to write (needed when it has several)", false},
    {"queue", "QUEUE", "the row's group (required when the table has a group column)", false},
    {"file", "FILE", "read the payload from FILE ('-': stdin)", false},
    {"header", "NAME=VALUE", "a header (repeatable)", true},
    {"delay", "DURATION", "due after DURATION (90s, 15m, 2h; needs retry_after)", false},
    {"priority", "N", "the priority (smaller claimed first; needs a priority column)", false},
    {"partition-key", "KEY", "the partition key (needs a partition_key column)", false},
    {"unique-key", "KEY", "the job's unique key (needs a unique_key column)", false},
    {NULL, NULL, NULL, false},
};

/* Reads all of `f` into a malloc'd buffer. */
static char *slurp(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    char *grown = realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      return NULL;
    }
    buf = grown;
    cap *= 2;
  }
  if (buf && ferror(f)) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

/* The table to write: --table-name, else the file's only table. */
static int pick_table(tabq_args *a, const tabq_app *app, const tabq_table **t) {
  const char *name = opt(a, "table-name");
  if (name) {
    *t = tabq_app_table_named(app, name);
    if (!*t)
      return fail(a, EXIT_USAGE, "%s describes no table %s", opt(a, "table"), name);
    return EXIT_DONE;
  }
  if (tabq_app_table_count(app) != 1)
    return fail(a, EXIT_USAGE, "%s describes %zu tables: name one with --table-name",
                opt(a, "table"), tabq_app_table_count(app));
  *t = tabq_app_table(app, 0);
  return EXIT_DONE;
}

static int payload_of(tabq_args *a, char **payload, size_t *len) {
  const char *file = opt(a, "file");
  if (a->nrest && file)
    return fail(a, EXIT_USAGE, "give the payload as an argument or with --file, not both");
  if (a->nrest) {
    *len = strlen(a->rest[0]);
    *payload = malloc(*len + 1);
    if (*payload)
      memcpy(*payload, a->rest[0], *len + 1);
    return *payload ? EXIT_DONE : fail(a, EXIT_USAGE, "out of memory");
  }
  if (!file) {
    if (isatty(STDIN_FILENO))
      return fail(a, EXIT_USAGE, "no payload: give it as an argument, --file FILE or on stdin");
    file = "-";
  }
  FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
  if (!f)
    return fail(a, EXIT_USAGE, "cannot read %s: %s", file, strerror(errno));
  *payload = slurp(f, len);
  if (f != stdin)
    fclose(f);
  if (!*payload)
    return fail(a, EXIT_USAGE, "cannot read %s", file);
  return EXIT_DONE;
}

static int run(tabq_args *a) {
  tabq_app *app = NULL;
  tabq_broker *b = NULL;
  char *payload = NULL;
  size_t len = 0;
  const tabq_table *t;
  tabq_header headers[TABQ_MAX_VALUES];
  tabq_message m = TABQ_MESSAGE_INIT;
  int rc = load_tables(a, &app);
  if (!rc)
    rc = pick_table(a, app, &t);
  if (!rc)
    rc = payload_of(a, &payload, &len);
  const char **hv;
  size_t nh = opt_all(a, "header", &hv);
  for (size_t i = 0; !rc && i < nh; i++) {
    char *eq = strchr(hv[i], '=');
    if (!eq || eq == hv[i])
      rc = fail(a, EXIT_USAGE, "--header %s: write NAME=VALUE", hv[i]);
    else
      *eq = '\0', headers[i].name = hv[i], headers[i].value = eq + 1;
  }
  if (!rc && opt(a, "delay")) {
    long long ms = parse_duration_ms(opt(a, "delay"));
    if (ms < 0 || ms > UINT32_MAX)
      rc = fail(a, EXIT_USAGE, "--delay %s: write a duration such as 90s, 15m or 2h",
                opt(a, "delay"));
    m.delay_ms = (uint32_t)ms;
  }
  if (!rc && opt(a, "priority")) {
    char *end;
    errno = 0;
    m.priority = strtoll(opt(a, "priority"), &end, 10);
    if (errno || *end || end == opt(a, "priority"))
      rc = fail(a, EXIT_USAGE, "--priority %s: write an integer", opt(a, "priority"));
  }
  if (!rc)
    rc = connect_url(a, &b);
  if (!rc) {
    m.group = opt(a, "queue");
    m.partition_key = opt(a, "partition-key");
    m.unique_key = opt(a, "unique-key");
    m.payload = payload;
    m.payload_len = len;
    m.headers = headers;
    m.nheaders = nh;
    tabq_error err;
    progress(a, "publishing into %s", t->name);
    int code = tabq_publish(b, t, &m, &err);
    if (code == TABQ_DUPLICATE) {
      /* Nothing written, and nothing wrong with the command: the key's job is there. */
      progress_done(a);
      if (a->json)
        print_json(json_pack("{s:s,s:s?,s:s,s:I,s:i}", "table", t->name, "queue", m.group,
                             "unique_key", m.unique_key, "duplicate_of",
                             (json_int_t)err.duplicate_id, "published", 0));
      else
        printf("not published: %s\n", err.message);
      rc = EXIT_FOUND;
    } else if (code)
      rc =
          fail_err(a, err.code == TABQ_BACKEND || err.code == TABQ_SCHEMA ? EXIT_FOUND : EXIT_USAGE,
                   "publishing", &err);
  }
  if (!rc) {
    progress_done(a);
    if (a->json)
      print_json(json_pack("{s:s,s:s?,s:I,s:i}", "table", t->name, "queue", m.group,
                           "payload_bytes", (json_int_t)len, "published", 1));
    else
      printf("published 1 row into %s%s%s (%zu bytes)\n", t->name, m.group ? ", queue " : "",
             m.group ? m.group : "", len);
  }
  if (b)
    tabq_close(b);
  tabq_app_free(app);
  free(payload);
  return rc;
}

const tabq_cmd tabq_cmd_publish = {
    .name = "publish",
    .summary = "write one row into a queue table",
    .synopsis = "tabq publish --url URL --table FILE [--queue QUEUE] [--header NAME=VALUE]...\n"
                "               [--delay DURATION] [--priority N] [--partition-key KEY]\n"
                "               [--unique-key KEY]\n"
                "               [PAYLOAD | --file FILE | < FILE]",
    .description =
        "    Writes one row into the table the description file describes, as tabq_publish()\n"
        "    does: the payload from the argument, from --file, or from stdin when neither is\n"
        "    given and stdin is not a terminal. A table with a group column needs --queue.\n"
        "    The library's rules apply: --delay needs a retry_after column, --priority a\n"
        "    priority column; a refusal names the table and the rule. With --unique-key, a\n"
        "    key a row holds already writes nothing: the command says which row holds it\n"
        "    and exits 1.\n",
    .opts = opts,
    .max_operands = 1,
    .run = run,
};
