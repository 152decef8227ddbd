/* tabq — the MySQL/MariaDB statement tests' own table and build (mysql_fixture.h). */
#include "mysql_fixture.h"

const tabq_table weird = {.size = sizeof(tabq_table),
                          .name = "a`pp.we`ird",
                          .id = {"i`d"},
                          .attempt = {"att`empt"},
                          .payload = {"payload"}};

tabq_build on(const tabq_table *t) {
  tabq_build b = {.table = t, .form = tabq_table_form(t), .database = "tabq_test"};
  return b;
}
