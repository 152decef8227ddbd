/* tabq — the PostgreSQL driver's connection, shared by its files (driver.c, roundtrip.c). */
#ifndef TABQ_POSTGRES_CONN_H
#define TABQ_POSTGRES_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <tabq/sys/dialect.h>

/* Transaction control texts a connection keeps prepared: BEGIN with each isolation level,
 * COMMIT, ROLLBACK, and room to spare; longer texts and any past these go as text. */
#define TABQ_PG_CONTROLS_KEPT 8
#define TABQ_PG_CONTROL_MAX 48

struct tabq_conn {
  PGconn *pg;
  const tabq_host *log_host; /* its broker's (Driver.connect_host, ABI 1.6), else NULL */
  uint64_t stmt_seq;         /* the last statement number handed out */
  bool broken;          /* left in a state the driver cannot use (COPY): the pool replaces it */
  bool per_transaction; /* the URL declares a transaction pooler: nothing prepared by name */
  bool timed_out;       /* a reply did not come within reply_ms: given up (broken too) */
  bool timeout_told;    /* and that was reported: later calls say they were refused */
  unsigned statement_s; /* the URL's statement_timeout (0: none) */
  int64_t reply_ms;     /* the most a reply is waited for (0: no bound) */
  tabq_prepared *stmts; /* still prepared; close frees them */
  /* Transaction control prepared by name (tabq_tx0, tabq_tx1, ...), in that order. */
  char controls[TABQ_PG_CONTROLS_KEPT][TABQ_PG_CONTROL_MAX];
  unsigned ncontrols;
};

/* roundtrip.c. The monotonic clock in milliseconds. */
int64_t tabq_pg_mono_ms(void);
/* Waits for `events` on c's socket until `deadline` (tabq_pg_mono_ms; -1: no bound): the events
 * that came, 0 once the deadline passed, -1 on failure. */
int tabq_pg_wait_socket(tabq_conn *c, short events, int64_t deadline);
/* The reply to the command a PQsend* call (which returned `sent`) queued, as PQexec returns it;
 * NULL when it could not be sent, the connection failed, or no reply came within c->reply_ms
 * (then c->timed_out and c->broken are set). */
PGresult *tabq_pg_await_reply(tabq_conn *c, int sent);
/* SQL text in one round trip (the simple query protocol: it may hold several statements). */
PGresult *tabq_pg_exec_text(tabq_conn *c, const char *sql);

#endif
