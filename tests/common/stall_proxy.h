/* tabq — a loopback TCP proxy in front of a test server that can stop forwarding on command, for
 * the drivers' tests of a server that stops answering: while it is stalled the connections stay
 * open and the kernel keeps acknowledging what the client sends (as a paused server's does), but
 * nothing reaches the server and no reply comes back. Binds 127.0.0.1 on a port the kernel picks.
 */
#ifndef TABQ_TEST_STALL_PROXY_H
#define TABQ_TEST_STALL_PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define STALL_MAX_PAIRS 8

typedef struct stall_proxy {
  int fd;
  int stop[2]; /* a pipe: a byte written ends the forwarding thread */
  unsigned port, target_port;
  atomic_bool stalled;
  pthread_t thread;
  int pairs[STALL_MAX_PAIRS][2]; /* client, server; -1 when free */
} stall_proxy;

/* Starts forwarding from a port of its own to 127.0.0.1:target_port; false on failure. */
bool stall_proxy_start(stall_proxy *p, unsigned target_port);
/* Stops (true) or resumes (false) forwarding in both directions, connections left open. */
void stall_proxy_stall(stall_proxy *p, bool stalled);
/* Closes the listener and every connection. */
void stall_proxy_stop(stall_proxy *p);

/* `url` (scheme://[user[:password]@]127.0.0.1:PORT/...) with its port replaced by the proxy's,
 * into out (cap bytes), and its port into *target_port: false when the URL has no port. */
bool stall_proxy_url(const char *url, unsigned proxy_port, char *out, size_t cap,
                     unsigned *target_port);

#endif
