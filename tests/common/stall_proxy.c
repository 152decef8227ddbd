/* tabq — a loopback proxy that can stall: see stall_proxy.h. */
#include "stall_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int loopback_socket(unsigned port, bool listening, unsigned *bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                          .sin_port = htons((uint16_t)port)};
  socklen_t len = sizeof a;
  /* A small receive buffer (inherited by what the listener accepts, and fixed: no autotuning),
   * so a stalled proxy takes in little of a large command. */
  int rcvbuf = 64 * 1024;
  if (listening)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  bool ok = listening ? bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 8) == 0 &&
                            getsockname(fd, (struct sockaddr *)&a, &len) == 0
                      : connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (!ok) {
    close(fd);
    return -1;
  }
  if (bound)
    *bound = ntohs(a.sin_port);
  return fd;
}

static void close_pair(int pair[2]) {
  close(pair[0]);
  close(pair[1]);
  pair[0] = pair[1] = -1;
}

static void add_pair(stall_proxy *p, int client) {
  int server = loopback_socket(p->target_port, false, NULL);
  for (int i = 0; server >= 0 && i < STALL_MAX_PAIRS; i++)
    if (p->pairs[i][0] < 0) {
      p->pairs[i][0] = client;
      p->pairs[i][1] = server;
      return;
    }
  close(client); /* the server is down, or more connections than any test opens */
  if (server >= 0)
    close(server);
}

/* Moves what one side sent to the other; false when that side closed or failed. */
static bool forward(int from, int to) {
  char buf[65536];
  ssize_t n = read(from, buf, sizeof buf);
  if (n <= 0)
    return false;
  for (ssize_t off = 0; off < n;) {
    ssize_t w = write(to, buf + off, (size_t)(n - off));
    if (w <= 0)
      return false;
    off += w;
  }
  return true;
}

/* Polls the listener, the stop pipe and, unless stalled, both ends of every pair; a stall takes
 * effect within one poll's timeout. */
static void *forward_loop(void *arg) {
  stall_proxy *p = arg;
  for (;;) {
    struct pollfd fds[2 + 2 * STALL_MAX_PAIRS];
    int where[2 + 2 * STALL_MAX_PAIRS];
    nfds_t n = 0;
    fds[n++] = (struct pollfd){.fd = p->stop[0], .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = p->fd, .events = POLLIN};
    bool stalled = atomic_load(&p->stalled);
    for (int i = 0; !stalled && i < STALL_MAX_PAIRS; i++)
      for (int side = 0; side < 2 && p->pairs[i][0] >= 0; side++) {
        where[n] = i * 2 + side;
        fds[n++] = (struct pollfd){.fd = p->pairs[i][side], .events = POLLIN};
      }
    if (poll(fds, n, 20) <= 0)
      continue; /* the timeout (a stall may have changed), or EINTR */
    if (fds[0].revents)
      return NULL;
    if (fds[1].revents) {
      int c = accept(p->fd, NULL, NULL);
      if (c >= 0)
        add_pair(p, c);
    }
    for (nfds_t k = 2; k < n; k++) {
      int i = where[k] / 2, side = where[k] % 2;
      if (fds[k].revents && p->pairs[i][0] >= 0 &&
          !forward(p->pairs[i][side], p->pairs[i][1 - side]))
        close_pair(p->pairs[i]);
    }
  }
}

bool stall_proxy_start(stall_proxy *p, unsigned target_port) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < STALL_MAX_PAIRS; i++)
    p->pairs[i][0] = p->pairs[i][1] = -1;
  p->target_port = target_port;
  p->fd = loopback_socket(0, true, &p->port);
  if (p->fd < 0)
    return false;
  if (pipe(p->stop) != 0) {
    close(p->fd);
    return false;
  }
  if (pthread_create(&p->thread, NULL, forward_loop, p) != 0) {
    close(p->stop[0]);
    close(p->stop[1]);
    close(p->fd);
    return false;
  }
  return true;
}

void stall_proxy_stall(stall_proxy *p, bool stalled) {
  atomic_store(&p->stalled, stalled);
}

void stall_proxy_stop(stall_proxy *p) {
  ssize_t n = write(p->stop[1], "x", 1);
  (void)n;
  pthread_join(p->thread, NULL);
  for (int i = 0; i < STALL_MAX_PAIRS; i++)
    if (p->pairs[i][0] >= 0)
      close_pair(p->pairs[i]);
  close(p->stop[0]);
  close(p->stop[1]);
  close(p->fd);
}

bool stall_proxy_url(const char *url, unsigned proxy_port, char *out, size_t cap,
                     unsigned *target_port) {
  const char *auth = strstr(url, "://");
  if (!auth)
    return false;
  auth += 3;
  const char *end = auth + strcspn(auth, "/?");
  const char *host = auth;
  for (const char *s = auth; s < end; s++)
    if (*s == '@')
      host = s + 1;
  const char *colon = memchr(host, ':', (size_t)(end - host));
  if (!colon)
    return false;
  *target_port = (unsigned)strtoul(colon + 1, NULL, 10);
  int n = snprintf(out, cap, "%.*s:%u%s", (int)(colon - url), url, proxy_port, end);
  return *target_port > 0 && n > 0 && (size_t)n < cap;
}
