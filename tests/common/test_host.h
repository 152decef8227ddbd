/* tabq — the plugin host every dialect and driver test hands its plugin (through the plugin's
 * own set_host): plain malloc/realloc/free, counted, and a fail that keeps the last failure
 * where the tests can read it. */
#ifndef TABQ_TEST_HOST_H
#define TABQ_TEST_HOST_H

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <tabq/sys/dialect.h>

/* The last failure reported through the host. Per thread: a test that runs a driver on a second
 * thread reads that thread's failure apart from its own. */
extern _Thread_local char g_msg[1024];
extern _Thread_local char g_state[8]; /* its SQLSTATE, "" when none was given */
extern _Thread_local long g_native;   /* the driver's own error number, or 0 */
extern _Thread_local int g_code;
/* The last error or warning the plugin logged. */
extern _Thread_local char g_warning[1024];

/* Allocations made through the host, so a test can see that a loop makes none. Atomic: the
 * live tests allocate on several threads. */
extern atomic_ulong g_allocs;

extern const tabq_host test_host;
/* test_host with a realloc that always fails, for the out-of-memory paths. */
extern const tabq_host starved_host;

/* The host's fail: records the failure (see g_msg) and returns `code`. */
int test_fail(int code, const char *sqlstate, long native, const char *fmt, ...) TABQ_PRINTF_(4, 5);

/* Forgets the calling thread's last failure, so a check reads only what follows. */
void test_host_reset(void);

/* Prints the message on a mismatch: the assertion alone shows only the macro's text. */
#define MSG_HAS(text)                                                                              \
  do {                                                                                             \
    CU_ASSERT_PTR_NOT_NULL(strstr(g_msg, (text)));                                                 \
    if (!strstr(g_msg, (text)))                                                                    \
      fprintf(stderr, "\nmessage \"%s\" lacks \"%s\"\n", g_msg, (text));                           \
  } while (0)
#define MSG_LACKS(text) CU_ASSERT_PTR_NULL(strstr(g_msg, (text)))
#define STATE_IS(s) CU_ASSERT_STRING_EQUAL(g_state, (s))

#endif
