/* tabq — the tables the PostgreSQL and MySQL/MariaDB statement tests build for: both dialects
 * take the same declarations, so their expected statements can be read side by side. */
#ifndef TABQ_TEST_SERVER_TABLES_H
#define TABQ_TEST_SERVER_TABLES_H

#include <tabq/sys/dialect.h>

/* Every role but locked_until, and one generated data column: the row lock form. */
extern const tabq_table jobs;
/* The seed's thumbnail table, qualified ("app.thumbs"): a lease and nothing else. */
extern const tabq_table thumbs;
/* plain_jobs: id and payload only. bare: id and a lease (lu). ev: every column generated. */
extern const tabq_table plain, bare, all_generated;
/* adv_jobs: the advisory form keyed on "acct-{account}", with every condition. */
extern const tabq_table advj;
/* k: the advisory form keyed on "k-{id}", with no conditions. */
extern const tabq_table adv_min;

/* jobs with a lease: every role. */
tabq_table leased_jobs(void);

#endif
