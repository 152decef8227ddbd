/* What the PostgreSQL driver's live suite shares between its files: the server's URL, the
 * connections and channel of test_postgres_driver.c, its helpers, and the tests of bounds
 * (postgres_bounds.c) and of transaction control (postgres_tx_control.c), registered with the
 * driver's suite. */
#ifndef TABQ_TEST_POSTGRES_DRIVER_SUITE_H
#define TABQ_TEST_POSTGRES_DRIVER_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include <tabq/sys/dialect.h>

/* The server (TABQ_TEST_POSTGRES_URL), the suite's connections (g_c2 is set once the run's
 * schema is made) and its channel for LISTEN/NOTIFY. */
extern const char *g_url;
extern tabq_conn *g_c1, *g_c2;
extern char g_channel[48];

#define NEED_DB() CU_ASSERT_PTR_NOT_NULL_FATAL(g_c2)

/* A connection working in the run's schema. */
tabq_conn *connect_test(void);
/* The one cell of a one-row query, which must be text; "" when there is no row. */
void query_text(tabq_conn *c, const char *sql, char *buf, size_t cap);
/* The monotonic clock in milliseconds. */
int64_t now_ms(void);
/* The test URL in libpq's key=value form, after "postgres:". */
void keyword_form(char *buf, size_t cap);

/* postgres_bounds.c */
void test_statement_timeout_setting(void);
void test_statement_timeout_on_the_server(void);
void test_no_reply_is_bounded(void);
void test_keepalives(void);
void test_notify_wait_is_not_bounded(void);

/* postgres_tx_control.c */
void test_transaction_control_prepared(void);

#endif
