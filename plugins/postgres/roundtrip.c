/* tabq — the PostgreSQL driver's round trips: a command sent with a PQsend* call and its reply
 * awaited with poll(), bounded by the connection's reply_ms (the URL's statement_timeout plus
 * TABQ_PG_REPLY_GRACE_S; settings.c). libpq runs in nonblocking mode, so the output waits for
 * room in the socket within the same bound. A reply that does not come in time gives the
 * connection up: the command stays in flight, so the pool must close it. */
#include <errno.h>
#include <poll.h>
#include <time.h>

#include "conn.h"

int64_t tabq_pg_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on the connection's socket until `deadline` (mono_ms; -1: no bound): the
 * events that came, 0 once the deadline passed, -1 on failure. */
int tabq_pg_wait_socket(tabq_conn *c, short events, int64_t deadline) {
  for (;;) {
    struct pollfd pfd = {.fd = PQsocket(c->pg), .events = events};
    if (pfd.fd < 0)
      return -1;
    int64_t left = deadline < 0 ? -1 : deadline - tabq_pg_mono_ms();
    int rc = poll(&pfd, 1, deadline < 0 ? -1 : left > 0 ? (int)left : 0);
    if (rc > 0)
      return pfd.revents;
    if (rc == 0)
      return 0;
    if (errno != EINTR)
      return -1;
  }
}

/* No reply within the bound: the command stays in flight, so the connection is of no more use
 * (the pool closes it, and the server's session ends once it reads the close). */
static PGresult *give_up(tabq_conn *c, PGresult *partial) {
  PQclear(partial);
  c->timed_out = c->broken = true;
  return NULL;
}

/* The reply to the command a PQsend* call (which returned `sent`) queued, as PQexec returns it:
 * its last result, or the COPY result that stops it. NULL when it could not be sent, the
 * connection failed, or no reply came within the bound (fail_pg tells which). The output goes
 * first: in nonblocking mode a large command may wait for room in the socket's buffer. */
PGresult *tabq_pg_await_reply(tabq_conn *c, int sent) {
  if (!sent)
    return NULL;
  int64_t deadline = c->reply_ms > 0 ? tabq_pg_mono_ms() + c->reply_ms : -1;
  while (PQflush(c->pg) > 0) {
    int ev = tabq_pg_wait_socket(c, POLLOUT | POLLIN, deadline);
    if (ev == 0)
      return give_up(c, NULL);
    if (ev < 0 || ((ev & POLLIN) && !PQconsumeInput(c->pg)))
      break; /* the results below say what failed */
  }
  PGresult *last = NULL;
  for (;;) {
    /* A connection found lost makes PQgetResult return its error without waiting. */
    while (PQisBusy(c->pg) && PQstatus(c->pg) != CONNECTION_BAD) {
      int ev = tabq_pg_wait_socket(c, POLLIN, deadline);
      if (ev == 0)
        return give_up(c, last);
      if (ev < 0 || !PQconsumeInput(c->pg)) {
        if (PQstatus(c->pg) == CONNECTION_BAD)
          break;
        c->broken = true; /* a result may still come: the connection cannot be trusted */
        PQclear(last);
        return NULL;
      }
    }
    PGresult *r = PQgetResult(c->pg);
    if (!r)
      break;
    PQclear(last);
    last = r;
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH ||
        PQstatus(c->pg) == CONNECTION_BAD)
      break;
  }
  return last;
}

/* SQL text in one round trip (the simple query protocol: it may hold several statements). */
PGresult *tabq_pg_exec_text(tabq_conn *c, const char *sql) {
  return tabq_pg_await_reply(c, !c->broken && PQsendQuery(c->pg, sql));
}
