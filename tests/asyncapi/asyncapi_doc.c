/* Prints the AsyncAPI document of a description file for the URLs given, as the `tabq asyncapi`
 * command would; with --connect, first opens a broker on each URL, so a test shows that the URLs
 * it documents are live ones.
 *   asyncapi_doc [--connect] FILE [URL...]   exit 0: the document on stdout; 1: refused */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/asyncapi.h>

int main(int argc, char **argv) {
  int a = 1;
  int connect = argc > 1 && strcmp(argv[1], "--connect") == 0;
  a += connect;
  if (argc <= a) {
    fprintf(stderr, "usage: asyncapi_doc [--connect] FILE [URL...]\n");
    return 2;
  }
  tabq_error err;
  tabq_app *app;
  if (tabq_app_load(argv[a], &app, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  const char *const *urls = (const char *const *)argv + a + 1;
  size_t nurls = (size_t)(argc - a - 1);
  for (size_t i = 0; connect && i < nurls; i++) {
    tabq_broker *b;
    if (tabq_connect(urls[i], NULL, &b, &err)) {
      fprintf(stderr, "connect to URL %zu: %s\n", i + 1, err.message);
      tabq_app_free(app);
      return 1;
    }
    tabq_close(b);
  }
  char *doc;
  int rc = tabq_asyncapi(app, urls, nurls, &doc, &err);
  tabq_app_free(app);
  if (rc) {
    fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message);
    return 1;
  }
  fputs(doc, stdout);
  free(doc);
  return 0;
}
