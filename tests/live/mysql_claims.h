/* What the MySQL driver's live suite shares between its files: the connections and database of
 * test_mysql_driver.c, and the tests of the dialect's claims (mysql_claims.c) and of sizes
 * (mysql_sizes.c) and of bounds (mysql_bounds.c), registered with the driver's suite. */
#ifndef TABQ_TEST_MYSQL_CLAIMS_H
#define TABQ_TEST_MYSQL_CLAIMS_H

#include <tabq/sys/dialect.h>

/* The suite's connections (g_c2 is set once the run's database is made), that database and its
 * URL. */
extern tabq_conn *g_c1, *g_c2;
extern char g_db[32];
extern char g_db_url[1024];
/* The run's database URL with `param` added to its query. */
void url_with(const char *param, char *buf, size_t cap);

#define NEED_DB() CU_ASSERT_PTR_NOT_NULL_FATAL(g_c2)

/* The begin of a transaction at READ COMMITTED, as the dialect renders it. */
extern const char read_committed[];

/* EXPLAIN of every claim: none reads the whole queue table (type ALL). */
void test_claims_use_the_index(void);
/* Claims of many rows return them in claim order, claim_one the first of them. */
void test_claims_in_claim_order(void);
/* stamp_ids and ack_ids read each listed row by the primary key. */
void test_listed_rows_by_key(void);

/* mysql_sizes.c: a value too long for its column; a statement over max_allowed_packet. */
void test_value_too_long(void);
void test_max_allowed_packet(void);

/* mysql_bounds.c: statement_timeout in the URL and on the server; a statement without a reply. */
void test_statement_timeout_setting(void);
void test_statement_timeout_on_the_server(void);
void test_no_reply_is_bounded(void);

#endif
