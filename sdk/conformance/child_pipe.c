#include "child_pipe.h"

#include <CUnit/CUnit.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void child_spawn(child *c, char *const argv[]) {
  int out[2], in[2];
  CU_ASSERT_FATAL(pipe(out) == 0 && pipe(in) == 0);
  fflush(NULL);
  c->pid = fork();
  CU_ASSERT_FATAL(c->pid >= 0);
  if (c->pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    close(out[0]);
    close(in[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  c->out = out[0];
  c->in = in[1];
}

bool child_line(child *c, char *buf, size_t cap, int timeout_ms) {
  size_t n = 0;
  while (n + 1 < cap) {
    struct pollfd p = {.fd = c->out, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0)
      return false;
    char ch;
    if (read(c->out, &ch, 1) != 1)
      return false;
    if (ch == '\n')
      break;
    buf[n++] = ch;
  }
  buf[n] = '\0';
  return true;
}

void child_say(child *c, const char *line) {
  size_t len = strlen(line);
  CU_ASSERT(write(c->in, line, len) == (ssize_t)len);
  CU_ASSERT(write(c->in, "\n", 1) == 1);
}

int child_reap(child *c) {
  int status = 0;
  waitpid(c->pid, &status, 0);
  close(c->out);
  close(c->in);
  return status;
}
