/* The MySQL driver's live suite, on bounds: statement_timeout in the URL and on the server, and a
 * statement on a server that stops answering, through a loopback proxy that stalls (registered
 * with the driver's suite, test_mysql_driver.c). */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tabq/sys/dialect.h>

#include "driver_calls.h"
#include "mysql_claims.h"
#include "mysql_plugin.h"
#include "stall_proxy.h"

static const tabq_driver_v1 *const drv = &tabq_my_driver;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void expect_statement_time(const char *url, int64_t want) {
  tabq_conn *c = connect_url(url);
  CU_ASSERT_EQUAL(query_int(c, "SELECT CAST(@@max_statement_time AS SIGNED)", NULL, 0), want);
  drv->close(c);
}

/* The URL's statement_timeout is the session's max_statement_time on MariaDB (30 s without
 * one; the server's own with 0); a value that is not whole seconds is refused before
 * connecting. */
void test_statement_timeout_setting(void) {
  NEED_DB();
  char url[1200];
  expect_statement_time(g_db_url, 30);
  url_with("statement_timeout=7", url, sizeof url);
  expect_statement_time(url, 7);
  url_with("statement_timeout=0", url, sizeof url);
  tabq_conn *c = connect_url(url);
  CU_ASSERT_EQUAL(
      query_int(c,
                "SELECT CAST(@@session.max_statement_time = @@global.max_statement_time "
                "AS SIGNED)",
                NULL, 0),
      1); /* the server's own: tabq set nothing */
  drv->close(c);
  const char *bad[] = {"statement_timeout=abc", "statement_timeout=", "statement_timeout=-1",
                       "statement_timeout=86401", "statement_timeout=1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    url_with(bad[i], url, sizeof url);
    connect_fails(url, TABQ_INVALID);
    MSG_HAS(bad[i]);
    MSG_HAS("whole seconds");
  }
}

/* A statement the server runs past statement_timeout ends on the server: a lock wait longer
 * than it fails with the server's timeout (1969), and the connection goes on. */
void test_statement_timeout_on_the_server(void) {
  NEED_DB();
  char url[1200];
  url_with("statement_timeout=1", url, sizeof url);
  tabq_conn *c = connect_url(url);
  exec_ok(c, "SET SESSION innodb_lock_wait_timeout = 20");
  CU_ASSERT_EQUAL_FATAL(drv->begin(g_c1, read_committed), TABQ_OK);
  CU_ASSERT_EQUAL(query_int(g_c1, "SELECT id FROM q WHERE id = 1 FOR UPDATE", NULL, 0), 1);
  tabq_prepared *p = prep(c, "UPDATE q SET queue = 'x' WHERE id = ?", 1);
  tabq_value id = tabq_int(1);
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(drv->execute(p, &id, 1), TABQ_BACKEND);
  int64_t took = now_ms() - start;
  CU_ASSERT_EQUAL(g_native, 1969);       /* ER_STATEMENT_TIMEOUT */
  CU_ASSERT(took >= 900 && took < 2900); /* before the driver's own bound, 3 s */
  CU_ASSERT_EQUAL(drv->rollback(g_c1), TABQ_OK);
  CU_ASSERT(drv->alive(c));
  run_ok(p, &id, 1);
  drv->finalize(p);
  exec_ok(c, "UPDATE q SET queue = 'a' WHERE id = 1");
  drv->close(c);
}

/* Runs `p` on a server that no longer answers (the proxy stalled): BACKEND, the connection lost,
 * after the reply bound of statement_timeout=1, 3 s. */
static void expect_no_reply(tabq_conn *c, tabq_prepared *p, const tabq_value *v, unsigned n) {
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(drv->execute(p, v, n), TABQ_BACKEND);
  int64_t took = now_ms() - start;
  if (took < 2900 || took > 4500)
    fprintf(stderr, "\nno reply: the execute failed after %lld ms, bound 3000: %s\n",
            (long long)took, g_msg);
  CU_ASSERT(took >= 2900 && took <= 4500);
  CU_ASSERT(g_native == 2013 || g_native == 2006); /* CR_SERVER_LOST, CR_SERVER_GONE_ERROR */
  MSG_HAS("no reply from the server within 3 s");
  MSG_HAS("statement_timeout=1");
  CU_ASSERT_FALSE(drv->alive(c));
  start = now_ms();
  CU_ASSERT_EQUAL(drv->exec(c, "SELECT 1"), TABQ_BACKEND);
  drv->close(c); /* frees p; does not wait for the server either */
  CU_ASSERT(now_ms() - start < 1000);
}

/* A server that accepts what is sent and never answers (as a paused server's kernel does):
 * each read and write waits at most statement_timeout plus 2 s, a small statement waiting for
 * its reply and a large one waiting for room in the sockets' buffers alike. */
void test_no_reply_is_bounded(void) {
  NEED_DB();
  stall_proxy proxy;
  unsigned port;
  char direct[1200], url[1200];
  url_with("statement_timeout=1", direct, sizeof direct);
  CU_ASSERT_FATAL(stall_proxy_url(g_db_url, 0, url, sizeof url, &port));
  CU_ASSERT_FATAL(stall_proxy_start(&proxy, port));
  CU_ASSERT_FATAL(stall_proxy_url(direct, proxy.port, url, sizeof url, &port));

  tabq_conn *c = connect_url(url);
  tabq_prepared *p = prep(c, "SELECT 1", 0);
  run_ok(p, NULL, 0);
  drv->reset(p);
  stall_proxy_stall(&proxy, true);
  usleep(100 * 1000); /* the proxy notices within 20 ms */
  expect_no_reply(c, p, NULL, 0);

  /* 12 MiB: more than the client's and the proxy's socket buffers hold, less than the
   * server's max_allowed_packet (16 MiB). */
  stall_proxy_stall(&proxy, false);
  c = connect_url(url);
  p = prep(c, "SELECT LENGTH(?)", 1);
  size_t big = 12u << 20;
  char *bytes = calloc(1, big);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
  tabq_value v = tabq_bytes(bytes, 16);
  run_ok(p, &v, 1);
  drv->reset(p);
  stall_proxy_stall(&proxy, true);
  usleep(100 * 1000);
  v = tabq_bytes(bytes, big);
  expect_no_reply(c, p, &v, 1);
  free(bytes);
  stall_proxy_stop(&proxy);
}
