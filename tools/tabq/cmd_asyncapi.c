/* tabq asyncapi: the AsyncAPI 3.0 document of a description file's app (tabq_asyncapi). */
#include <stdio.h>
#include <stdlib.h>
#include <tabq/asyncapi.h>

#include "common.h"

static const tabq_opt opts[] = {
    {"url", "URL", "a server of the document; give several for several (else TABQ_URL, if set)",
     true},
    {"table", "FILE", "the description file of the app", false},
    {NULL, NULL, NULL, false},
};

static int run(tabq_args *a) {
  const char **urls;
  size_t nurls = opt_all(a, "url", &urls);
  const char *env_url = getenv("TABQ_URL");
  if (!nurls && env_url && env_url[0]) {
    urls = &env_url;
    nurls = 1;
  }
  tabq_app *app = NULL;
  int rc = load_tables(a, &app);
  char *doc = NULL;
  tabq_error err;
  if (!rc && tabq_asyncapi(app, urls, nurls, &doc, &err))
    rc = fail_err(a, EXIT_USAGE, "writing the document", &err);
  if (!rc)
    fputs(doc, stdout); /* JSON already: --json changes nothing */
  free(doc);
  tabq_app_free(app);
  return rc;
}

const tabq_cmd tabq_cmd_asyncapi = {
    .name = "asyncapi",
    .summary = "print the AsyncAPI 3.0 document of a description file's app",
    .synopsis = "tabq asyncapi --table FILE [--url URL]...",
    .description =
        "    Prints the app's AsyncAPI 3.0 document as JSON (docs/asyncapi.md): its name and\n"
        "    version, a server per URL by its protocol (postgresql, mysql, sqlite) with the\n"
        "    host and port and the database's name - never a user, a password, a query\n"
        "    option or a file's path -, a channel per queue, a receive operation per\n"
        "    subscription, a send operation per route, and the payload schemas the\n"
        "    description gives. Nothing is connected: it runs in a build with no database.\n",
    .opts = opts,
    .max_operands = 0,
    .run = run,
};
