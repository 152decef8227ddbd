/* tabq — loopback endpoints for connect tests: see loopback.h. */
#include "loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A TCP socket bound to 127.0.0.1 on a port the kernel picks; -1 on failure. */
static int bound_socket(unsigned *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

static void *accept_loop(void *arg) {
  silent_listener *l = arg;
  for (;;) {
    struct pollfd p[2] = {{.fd = l->fd, .events = POLLIN}, {.fd = l->stop[0], .events = POLLIN}};
    if (poll(p, 2, -1) < 0)
      continue; /* EINTR */
    if (p[1].revents)
      return NULL;
    int c = accept(l->fd, NULL, NULL);
    if (c < 0)
      continue;
    if (l->nconns < SILENT_MAX_CONNS)
      l->conns[l->nconns++] = c;
    else
      close(c); /* more than any test opens */
  }
}

bool silent_listener_start(silent_listener *l) {
  memset(l, 0, sizeof *l);
  l->fd = bound_socket(&l->port);
  if (l->fd < 0)
    return false;
  if (listen(l->fd, SILENT_MAX_CONNS) != 0 || pipe(l->stop) != 0) {
    close(l->fd);
    return false;
  }
  if (pthread_create(&l->thread, NULL, accept_loop, l) != 0) {
    close(l->stop[0]);
    close(l->stop[1]);
    close(l->fd);
    return false;
  }
  return true;
}

void silent_listener_stop(silent_listener *l) {
  ssize_t n = write(l->stop[1], "x", 1);
  (void)n;
  pthread_join(l->thread, NULL);
  for (unsigned i = 0; i < l->nconns; i++)
    close(l->conns[i]);
  close(l->stop[0]);
  close(l->stop[1]);
  close(l->fd);
}

int refusing_port(unsigned *port) {
  return bound_socket(port);
}
