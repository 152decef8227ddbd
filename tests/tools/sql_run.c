/* The tabq command's test helper: runs SQL on a database by its tabq URL, so the test script
 * needs no database client. `sql_run URL SQL` runs statements (tabq_exec); `sql_run URL -q N SQL`
 * prints the first N cells of each row of a query, tab-separated. Exit 1 with the error on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/tabq.h>

static int print_row(void *user, const tabq_value *cells, unsigned ncols) {
  (void)user;
  for (unsigned i = 0; i < ncols; i++) {
    const tabq_value *c = &cells[i];
    if (i)
      putchar('\t');
    switch (c->type) {
    case TABQ_T_INT:
      printf("%" PRId64, c->u.i);
      break;
    case TABQ_T_TEXT:
    case TABQ_T_BYTES:
    case TABQ_T_JSON:
      printf("%.*s", (int)c->u.buf.len, (const char *)c->u.buf.ptr);
      break;
    case TABQ_T_TIME:
      printf("@%" PRId64, c->u.time_us);
      break;
    case TABQ_T_REAL:
      printf("%g", c->u.r);
      break;
    default:
      printf("NULL");
    }
  }
  putchar('\n');
  return 0;
}

int main(int argc, char **argv) {
  bool query = argc == 5 && !strcmp(argv[2], "-q");
  if (argc != 3 && !query) {
    fprintf(stderr, "usage: sql_run URL SQL | sql_run URL -q NCOLS SQL\n");
    return 2;
  }
  tabq_broker *b;
  tabq_error err;
  tabq_broker_options o = TABQ_BROKER_OPTIONS_INIT;
  o.pool_size = 1;
  if (tabq_connect(argv[1], &o, &b, &err)) {
    fprintf(stderr, "sql_run: %s\n", err.message);
    return 1;
  }
  int rc;
  if (query) {
    tabq_tx *tx;
    rc = tabq_begin(b, &tx, &err);
    if (!rc)
      rc = tabq_tx_query(tx, argv[4], NULL, 0, (unsigned)atoi(argv[3]), print_row, NULL, &err);
    if (!rc)
      rc = tabq_commit(tx, &err);
  } else {
    rc = tabq_exec(b, argv[2], &err);
  }
  if (rc)
    fprintf(stderr, "sql_run: %s\n", err.message);
  tabq_close(b);
  return rc ? 1 : 0;
}
