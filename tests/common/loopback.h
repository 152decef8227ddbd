/* tabq — loopback endpoints for the drivers' connect tests: a listener that accepts and never
 * says a word (a server hung after TCP accept), and a port where a connect is refused at once.
 * Both bind 127.0.0.1 only, on a port the kernel picks. */
#ifndef TABQ_TEST_LOOPBACK_H
#define TABQ_TEST_LOOPBACK_H

#include <pthread.h>
#include <stdbool.h>

#define SILENT_MAX_CONNS 16

typedef struct silent_listener {
  int fd;
  int stop[2]; /* a pipe: a byte written ends the accepting thread */
  unsigned port;
  pthread_t thread;
  int conns[SILENT_MAX_CONNS]; /* accepted and held open, never read or written */
  unsigned nconns;
} silent_listener;

/* Starts listening on 127.0.0.1 and accepting on a thread of its own; false on failure. */
bool silent_listener_start(silent_listener *l);
/* Stops accepting and closes the listener and every connection it accepted. */
void silent_listener_stop(silent_listener *l);

/* A socket bound to a loopback port without listening, so a connect to *port is refused until
 * the socket is closed (and nobody else can take the port meanwhile). -1 on failure. */
int refusing_port(unsigned *port);

#endif
