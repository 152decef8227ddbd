/* tabq — fuzz target: the PostgreSQL driver's URLs (plugins/postgres/driver.c): which text
 * goes to libpq (a URI whole, the conninfo after "postgres:"), libpq's own parse of it as the
 * driver hands it over, and the URL as messages show it. Where libpq reads the URL, it reads
 * the shown URL too, and finds no password in it but "***". The pooler setting (pooler.c) is
 * taken out of the conninfo into a buffer of its length, never more. */
#include <libpq-fe.h>
#include <string.h>

#include "fuzz.h"
#include "postgres_plugin.h"

/* Whether libpq reads `conninfo`; *password: the password it reads there, copied (NULL: none). */
static bool parses(const char *conninfo, char **password) {
  *password = NULL;
  PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
  if (!opts)
    return false;
  for (PQconninfoOption *o = opts; o->keyword; o++)
    if (!strcmp(o->keyword, "password") && o->val)
      *password = strdup(o->val);
  PQconninfoFree(opts);
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tabq_pg_set_host(&fuzz_host);
  char *url = fuzz_cstr(data, size);
  char shown[TABQ_PG_URL_SHOWN];
  tabq_pg_shown_url(url, shown);
  FUZZ_CHECK(strlen(shown) < sizeof shown, "the shown URL fits its buffer");
  const char *conninfo = tabq_pg_conninfo_of(url);
  char *password = NULL, *shown_password = NULL;
  /* A cut URL may end in half a password: only a whole one is read back. */
  if (conninfo && parses(conninfo, &password) && strlen(shown) + 1 < sizeof shown) {
    const char *shown_info = tabq_pg_conninfo_of(shown);
    FUZZ_CHECK(shown_info && parses(shown_info, &shown_password),
               "libpq reads '%s' but not its shown '%s'", url, shown);
    FUZZ_CHECK(!shown_password || !strcmp(shown_password, "***"),
               "the shown URL '%s' of '%s' carries the password '%s'", shown, url, shown_password);
  }
  if (conninfo) {
    size_t cap = strlen(conninfo) + 1;
    char *taken = malloc(cap);
    bool uri = !strncmp(conninfo, "postgres://", 11) || !strncmp(conninfo, "postgresql://", 13);
    bool per_transaction = false;
    unsigned statement_s = 0;
    if (taken && tabq_pg_take_pooler(conninfo, uri, taken, cap, &per_transaction) == TABQ_OK) {
      FUZZ_CHECK(strlen(taken) <= strlen(conninfo), "'%s' grew to '%s' without its pooler",
                 conninfo, taken);
      if (tabq_pg_take_statement_timeout(taken, uri, &statement_s) == TABQ_OK)
        FUZZ_CHECK(statement_s <= TABQ_PG_MAX_STATEMENT_TIMEOUT_S, "'%s' took %u s", conninfo,
                   statement_s);
    }
    free(taken);
  }
  free(shown_password);
  free(password);
  free(url);
  return 0;
}
