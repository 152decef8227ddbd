/* Connects a broker to the URL given and prints what happened, for the installed-package test:
 *   try_connect URL  ->  "ok <dialect> <file>"  or  "error <CODE> <message>"
 * Built against the installed prefix alone (pkg-config), never against the build tree. */
#include <stdio.h>
#include <tabq/tabq.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: try_connect URL\n");
    return 2;
  }
  if (tabq_version() != TABQ_VERSION_NUMBER) {
    printf("error VERSION headers %s, library %s\n", TABQ_VERSION_STRING, tabq_version_string());
    return 1;
  }
  tabq_error err;
  tabq_broker *b = NULL;
  if (tabq_connect(argv[1], NULL, &b, &err)) {
    printf("error %s %s\n", tabq_code_name(err.code), err.message);
    return 1;
  }
  printf("ok %s %s\n", tabq_dialect_name(b), tabq_dialect_path(b));
  tabq_close(b);
  return 0;
}
