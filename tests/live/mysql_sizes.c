/* The MySQL driver's live suite, on sizes: a value too long for its column, and a statement over
 * the server's max_allowed_packet, each refused with a message that names the limit and what to
 * change (registered with the driver's suite, test_mysql_driver.c). */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_calls.h"
#include "mysql_claims.h"
#include "mysql_plugin.h"

static const tabq_driver_v1 *const drv = &tabq_my_driver;

/* A value too long for its column (strict mode): the message names the column, the table the
 * statement writes (schema and quotes read off), its type's limit and the wider types. */
void test_value_too_long(void) {
  NEED_DB();
  char sql[256];
  snprintf(sql, sizeof sql, "UPDATE `%s`.`types` SET b = ? WHERE id = 1", g_db);
  tabq_prepared *p = prep(g_c1, sql, 1);
  size_t n = 70000;
  char *v = calloc(1, n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v);
  tabq_value val = tabq_bytes(v, n);
  CU_ASSERT_EQUAL(drv->execute(p, &val, 1), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1406); /* ER_DATA_TOO_LONG */
  STATE_IS("22001");
  char want[128];
  snprintf(want, sizeof want, "column b of table %s.types holds at most 65,535 bytes (BLOB)", g_db);
  MSG_HAS(want);
  MSG_HAS("declare it MEDIUMBLOB (16 MiB) or LONGBLOB (4 GiB)");
  MSG_HAS("The server said: Data too long for column 'b'");
  CU_ASSERT(drv->alive(g_c1));
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT LENGTH(b) FROM types WHERE id = 1", NULL, 0), 5);
  drv->finalize(p);
  /* Text: its own family. */
  p = prep(g_c1, "INSERT INTO types (t) VALUES (?)", 1);
  memset(v, 'a', n);
  val = tabq_text(v, n);
  CU_ASSERT_EQUAL(drv->execute(p, &val, 1), TABQ_BACKEND);
  MSG_HAS("column t of table types holds at most 65,535 bytes (TEXT): declare it MEDIUMTEXT");
  drv->finalize(p);
  free(v);
}

/* A statement is refused before it is sent at the very size the server refuses (one of
 * max_allowed_packet bytes or more), a byte less goes in: the driver counts the packet as
 * Connector/C writes it. The connection stays. The same for a text statement. */
void test_max_allowed_packet(void) {
  NEED_DB();
  int64_t max = query_int(g_c1, "SELECT @@max_allowed_packet", NULL, 0);
  if (max > 64 * 1024 * 1024) {
    fprintf(stderr, "note: max_allowed_packet is %" PRId64 ": the limit is not exercised\n", max);
    return;
  }
  exec_ok(g_c1, "CREATE TABLE big (id INT AUTO_INCREMENT PRIMARY KEY, p LONGBLOB NOT NULL)");
  tabq_prepared *p = prep(g_c1, "INSERT INTO big (p) VALUES (?)", 1);
  /* 10 bytes of command, 1 of NULL bitmap, 1 "types follow", 2 of type, the value's length (4
   * bytes under 16 MiB, else 9) and its bytes: max - 1 in all. */
  size_t n = (size_t)max - 1 - 14 - 4;
  if (n >= 16777216)
    n -= 5;
  char *v = malloc((size_t)max);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v);
  memset(v, 'x', (size_t)max);
  tabq_value val = tabq_bytes(v, n);
  run_ok(p, &val, 1);
  CU_ASSERT_EQUAL(drv->affected(p), 1);
  val = tabq_bytes(v, n + 1);
  CU_ASSERT_EQUAL(drv->execute(p, &val, 1), TABQ_BACKEND);
  CU_ASSERT_EQUAL(g_native, 1153); /* ER_NET_PACKET_TOO_LARGE */
  char want[160];
  snprintf(want, sizeof want, "the statement is ");
  MSG_HAS(want);
  MSG_HAS("bytes, over the server's max_allowed_packet of ");
  MSG_HAS("raise max_allowed_packet on the server");
  MSG_HAS("Nothing was sent");
  CU_ASSERT(drv->alive(g_c1));
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT COUNT(*) FROM big", NULL, 0), 1);
  drv->finalize(p);
  /* A text statement: the command byte and the text. */
  memcpy(v, "SELECT '", 8);
  v[max - 2] = '\'';
  v[max - 1] = '\0';
  CU_ASSERT_EQUAL(drv->exec(g_c1, v), TABQ_BACKEND); /* max bytes with the command */
  MSG_HAS("Nothing was sent");
  CU_ASSERT(drv->alive(g_c1));
  free(v);
  exec_ok(g_c1, "DROP TABLE big");
}
