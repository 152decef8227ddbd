/* The PostgreSQL driver's live suite, on bounds: statement_timeout in the URL and on the server,
 * a statement on a server that stops answering (through a loopback proxy that stalls), TCP
 * keepalives, and a wait for notifications that is not cut (registered with the driver's suite,
 * test_postgres_driver.c). */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <tabq/sys/dialect.h>

#include "driver_calls.h"
#include "loopback.h"
#include "postgres_driver_suite.h"
#include "postgres_plugin.h"
#include "stall_proxy.h"

static const tabq_driver_v1 *const drv = &tabq_pg_driver;

/* The test URL with `setting` ("statement_timeout=1") added to its query. */
static void url_with(char *url, size_t cap, const char *base, const char *setting) {
  snprintf(url, cap, "%s%s%s", base, strchr(base, '?') ? "&" : "?", setting);
}

static void expect_session_timeout(const char *url, const char *want) {
  tabq_conn *c = connect_url(url);
  char shown[32];
  query_text(c, "SHOW statement_timeout", shown, sizeof shown);
  CU_ASSERT_STRING_EQUAL(shown, want);
  drv->close(c);
}

/* The URL's statement_timeout is the session's on the server (30 s without one, none with 0), in
 * either URL form; a value that is not whole seconds is refused before connecting. */
void test_statement_timeout_setting(void) {
  NEED_DB();
  char url[1100], form[1024];
  expect_session_timeout(g_url, "30s");
  url_with(url, sizeof url, g_url, "statement_timeout=7");
  expect_session_timeout(url, "7s");
  keyword_form(form, sizeof form);
  snprintf(url, sizeof url, "%s statement_timeout=2", form);
  expect_session_timeout(url, "2s");
  url_with(url, sizeof url, g_url, "statement_timeout=0");
  tabq_conn *c = connect_url(url);
  int64_t server_default = query_int(
      c, "SELECT setting::int8 FROM pg_settings WHERE name = 'statement_timeout'", NULL, 0);
  CU_ASSERT_EQUAL(server_default, 0); /* the server's own: tabq set nothing */
  drv->close(c);
  const char *bad[] = {"statement_timeout=abc", "statement_timeout=", "statement_timeout=-1",
                       "statement_timeout=86401", "statement_timeout=1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    url_with(url, sizeof url, g_url, bad[i]);
    connect_fails(url, TABQ_INVALID);
    MSG_HAS(bad[i]);
    MSG_HAS("whole seconds");
  }
}

/* A statement the server runs past statement_timeout is cancelled by the server: 57014, and
 * the connection goes on. */
void test_statement_timeout_on_the_server(void) {
  NEED_DB();
  char url[1024];
  url_with(url, sizeof url, g_url, "statement_timeout=1");
  tabq_conn *c = connect_url(url);
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(drv->exec(c, "SELECT pg_sleep(5)"), TABQ_BACKEND);
  int64_t took = now_ms() - start;
  STATE_IS("57014");
  CU_ASSERT(took >= 900 && took < 2900); /* before the driver's own bound, 3 s */
  CU_ASSERT(drv->alive(c));
  CU_ASSERT_EQUAL(query_int(c, "SELECT 1", NULL, 0), 1);
  drv->close(c);
}

/* Runs `p` on a server that no longer answers (the proxy stalled): BACKEND (08006) after the
 * reply bound of statement_timeout=1, 3 s, and the connection is given up at once. */
static void expect_no_reply(tabq_conn *c, tabq_prepared *p, const tabq_value *v, unsigned n) {
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(drv->execute(p, v, n), TABQ_BACKEND);
  int64_t took = now_ms() - start;
  if (took < 2900 || took > 4500)
    fprintf(stderr, "\nno reply: the execute failed after %lld ms, bound 3000\n", (long long)took);
  CU_ASSERT(took >= 2900 && took <= 4500);
  STATE_IS("08006");
  MSG_HAS("no reply from the server within 3 s");
  MSG_HAS("statement_timeout=1");
  CU_ASSERT_FALSE(drv->alive(c));
  start = now_ms();
  CU_ASSERT_EQUAL(drv->exec(c, "SELECT 1"), TABQ_BACKEND); /* refused without a round trip */
  STATE_IS("08006");
  MSG_HAS("exec: the connection was given up (an earlier statement got no reply within 3 s)");
  CU_ASSERT_EQUAL(drv->rollback(c), TABQ_BACKEND);
  drv->close(c); /* frees p; does not wait for the server either */
  CU_ASSERT(now_ms() - start < 1000);
}

/* A server that accepts what is sent and never answers (as a paused server's kernel does):
 * each round trip waits at most statement_timeout plus 2 s, a small statement waiting for its
 * reply and a large one waiting for room in the sockets' buffers alike. */
void test_no_reply_is_bounded(void) {
  NEED_DB();
  stall_proxy proxy;
  unsigned port;
  char direct[1024], url[1024];
  url_with(direct, sizeof direct, g_url, "statement_timeout=1");
  CU_ASSERT_FATAL(stall_proxy_url(g_url, 0, url, sizeof url, &port));
  CU_ASSERT_FATAL(stall_proxy_start(&proxy, port));
  CU_ASSERT_FATAL(stall_proxy_url(direct, proxy.port, url, sizeof url, &port));

  tabq_conn *c = connect_url(url);
  tabq_prepared *p = prep(c, "SELECT 1", 0);
  run_ok(p, NULL, 0);
  drv->reset(p);
  stall_proxy_stall(&proxy, true);
  usleep(100 * 1000); /* the proxy notices within 20 ms */
  expect_no_reply(c, p, NULL, 0);

  /* 16 MiB: more than the client's and the proxy's socket buffers hold. */
  stall_proxy_stall(&proxy, false);
  c = connect_url(url);
  p = prep(c, "SELECT length($1::bytea)", 1);
  size_t big = 16u << 20;
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

/* The TCP sockets of this process connected to `port` on loopback: a bit per descriptor. */
static void sockets_to(unsigned port, bool found[1024]) {
  for (int fd = 0; fd < 1024; fd++) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    found[fd] = getpeername(fd, (struct sockaddr *)&a, &len) == 0 && a.sin_family == AF_INET &&
                ntohs(a.sin_port) == port;
  }
}

/* The keepalive idle time of the connection `url` opens (-1: keepalives off). */
static int keepalive_idle_of(const char *url) {
  unsigned port;
  char copy[1024];
  CU_ASSERT_FATAL(stall_proxy_url(g_url, 0, copy, sizeof copy, &port));
  static bool before[1024], after[1024];
  sockets_to(port, before);
  tabq_conn *c = connect_url(url);
  sockets_to(port, after);
  int idle = -2, on = 0;
  for (int fd = 0; fd < 1024; fd++)
    if (after[fd] && !before[fd]) {
      socklen_t len = sizeof on;
      CU_ASSERT(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, &len) == 0);
      len = sizeof idle;
      CU_ASSERT(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len) == 0);
    }
  drv->close(c);
  return on ? idle : -1;
}

/* Keepalives find an idle connection whose peer is gone within a minute by default; the URL's
 * libpq parameters win. */
void test_keepalives(void) {
  NEED_DB();
  char url[1024];
  CU_ASSERT_EQUAL(keepalive_idle_of(g_url), 30);
  url_with(url, sizeof url, g_url, "keepalives_idle=45");
  CU_ASSERT_EQUAL(keepalive_idle_of(url), 45);
  url_with(url, sizeof url, g_url, "keepalives=0");
  CU_ASSERT_EQUAL(keepalive_idle_of(url), -1);
}

/* A wait for notifications is not a statement: it waits as long as asked, past the reply bound. */
void test_notify_wait_is_not_bounded(void) {
  NEED_DB();
  char url[1024], channel[64], payload[64];
  url_with(url, sizeof url, g_url, "statement_timeout=1");
  tabq_conn *c = connect_url(url);
  CU_ASSERT_EQUAL_FATAL(drv->listen(c, g_channel), TABQ_OK);
  bool got = true;
  int64_t start = now_ms();
  CU_ASSERT_EQUAL(drv->wait_notify(c, 3500, channel, sizeof channel, payload, sizeof payload, &got),
                  TABQ_OK);
  CU_ASSERT_FALSE(got);
  CU_ASSERT(now_ms() - start >= 3400);
  CU_ASSERT(drv->alive(c));
  CU_ASSERT_EQUAL(query_int(c, "SELECT 1", NULL, 0), 1);
  drv->close(c);
}
