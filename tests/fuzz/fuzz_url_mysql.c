/* tabq — fuzz target: the MySQL/MariaDB driver's URL parser (plugins/mysql/url.c) and the URL as
 * messages show it. What it accepts is consistent (a port from 1 to 65535, a timeout up to an
 * hour, an SQL mode of mode names), and the shown URL, parsed again, carries no password but
 * "***". */
#include <string.h>

#include "fuzz.h"
#include "mysql_plugin.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tabq_my_set_host(&fuzz_host);
  char *url = fuzz_cstr(data, size);
  char shown[TABQ_MY_URL_SHOWN];
  tabq_my_shown_url(url, shown);
  tabq_my_url u;
  memset(&u, 0, sizeof u);
  if (tabq_my_parse_url(url, &u, shown) == TABQ_OK) {
    FUZZ_CHECK(u.port >= 1 && u.port <= 65535, "port %u", u.port);
    FUZZ_CHECK(u.connect_timeout <= 3600, "connect_timeout %u", u.connect_timeout);
    FUZZ_CHECK(u.used <= u.cap, "the decoded parts fit their store (%zu of %zu)", u.used, u.cap);
    if (u.sql_mode)
      FUZZ_CHECK(strspn(u.sql_mode, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789_,") == strlen(u.sql_mode),
                 "sql_mode '%s'", u.sql_mode);
    if (strlen(shown) + 1 < sizeof shown) {
      tabq_my_url again;
      memset(&again, 0, sizeof again);
      if (tabq_my_parse_url(shown, &again, shown) == TABQ_OK)
        FUZZ_CHECK(!again.password || !strcmp(again.password, "***"),
                   "the shown URL '%s' carries the password '%s'", shown, again.password);
      fuzz_host.free(again.store);
    }
  }
  fuzz_host.free(u.store);
  free(url);
  return 0;
}
