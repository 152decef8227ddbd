/* What the MySQL driver's live suite shares between its files: the connections and database of
 * test_mysql_driver.c, and the tests of the dialect's claims (mysql_claims.c) and of sizes
 * (mysql_sizes.c), registered with the driver's suite. */
#ifndef TABQ_TEST_MYSQL_CLAIMS_H
#define TABQ_TEST_MYSQL_CLAIMS_H

#include <tabq/sys/dialect.h>

/* The suite's connections (g_c2 is set once the run's database is made) and that database. */
extern tabq_conn *g_c1, *g_c2;
extern char g_db[32];

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

#endif
