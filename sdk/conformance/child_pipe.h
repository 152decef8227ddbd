/* A child process on pipes: its stdout read line by line, its stdin written, its exit waited
 * for. Shared by the conformance kit and tabq's own live tests (which build this file too). */
#ifndef TABQ_KIT_CHILD_PIPE_H
#define TABQ_KIT_CHILD_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct child {
  pid_t pid;
  int out; /* read the child's lines */
  int in;  /* write to the child */
} child;

/* Runs argv[0] (a path) with argv, its stdout and stdin as pipes (a CUnit fatal failure when
 * the pipes or the fork fail). */
void child_spawn(child *c, char *const argv[]);
/* Reads one line from the child into buf (without the newline); false at EOF or timeout. */
bool child_line(child *c, char *buf, size_t cap, int timeout_ms);
void child_say(child *c, const char *line);
/* Waits for the child's exit and closes its pipes; returns its status as waitpid gives it. */
int child_reap(child *c);

#endif
