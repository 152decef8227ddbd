/* What the tests share: brokers closed at the test's end, a recording handler, child processes
 * (this executable again, with the hidden --child argument), and exactly-once counting. */
#include <CUnit/CUnit.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

#define MAX_BROKERS 8
#define MAX_CHILDREN 4

static tabq_broker *brokers[MAX_BROKERS];
static child *children[MAX_CHILDREN];

tabq_broker *connect_broker_with(const tabq_broker_options *o) {
  tabq_broker *b = NULL;
  tabq_error err;
  int rc = tabq_connect(kit.url, o, &b, &err);
  if (rc)
    fprintf(stderr, "connect: %s\n", err.message);
  CU_ASSERT_FATAL(rc == TABQ_OK);
  for (int i = 0; i < MAX_BROKERS; i++)
    if (!brokers[i]) {
      brokers[i] = b;
      return b;
    }
  CU_FAIL_FATAL("more brokers than the kit tracks");
  return b;
}

tabq_broker *connect_broker(unsigned poll_ms) {
  tabq_broker_options o = broker_options(poll_ms, 6);
  return connect_broker_with(&o);
}

void close_broker(tabq_broker *b) {
  for (int i = 0; i < MAX_BROKERS; i++)
    if (brokers[i] == b)
      brokers[i] = NULL;
  tabq_close(b);
}

void support_end_test(void) {
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (children[i]) {
      kill(children[i]->pid, SIGKILL);
      child_wait(children[i]);
    }
  for (int i = 0; i < MAX_BROKERS; i++)
    if (brokers[i]) {
      tabq_close(brokers[i]);
      brokers[i] = NULL;
    }
}

void publish_n(tabq_broker *b, const char *queue, int n) {
  for (int i = 0; i < n; i++) {
    char payload[32];
    int len = snprintf(payload, sizeof payload, "job-%d", i);
    tabq_message m = message(queue, payload, (size_t)len);
    tabq_error err;
    int rc = tabq_publish(b, jobs_table(), &m, &err);
    if (rc)
      fprintf(stderr, "publish: %s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, TABQ_OK);
  }
}

void recorder_init(recorder *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
}

void recorder_free(recorder *r) {
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

tabq_outcome recorder_handler(tabq_delivery *d, void *user) {
  recorder *r = user;
  pthread_mutex_lock(&r->mu);
  unsigned call = r->calls;
  if (call < 64) {
    r->ids[call] = tabq_delivery_id(d);
    r->attempts[call] = tabq_delivery_attempt(d);
    size_t len = 0;
    const char *p = tabq_delivery_payload(d, &len);
    snprintf(r->payloads[call], sizeof r->payloads[call], "%.*s", (int)len, p ? p : "");
  }
  pthread_mutex_unlock(&r->mu);
  tabq_outcome o = r->script ? r->script(r, d, call) : tabq_ack();
  pthread_mutex_lock(&r->mu);
  r->calls++;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return o;
}

unsigned recorder_calls(recorder *r) {
  pthread_mutex_lock(&r->mu);
  unsigned n = r->calls;
  pthread_mutex_unlock(&r->mu);
  return n;
}

void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

bool recorder_wait(recorder *r, unsigned calls, int timeout_ms) {
  for (int waited = 0;; waited += 10) {
    if (recorder_calls(r) >= calls)
      return true;
    if (waited >= timeout_ms)
      return false;
    sleep_ms(10);
  }
}

void child_start(child *c, const char *mode) {
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
    execl("/proc/self/exe", "tabq-conformance", "--child", mode, "--url", kit.url, "--form",
          form_name(kit.form), "--table", jobs_name(), (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  c->out = out[0];
  c->in = in[1];
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (!children[i]) {
      children[i] = c;
      break;
    }
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

int child_wait(child *c) {
  int status = 0;
  waitpid(c->pid, &status, 0);
  close(c->out);
  close(c->in);
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (children[i] == c)
      children[i] = NULL;
  return status;
}

static atomic_int once_seen[ONCE_MAX + 1];
static int once_n;

void once_reset(int n) {
  once_n = n;
  for (int i = 0; i <= ONCE_MAX; i++)
    atomic_store(&once_seen[i], 0);
}

tabq_outcome once_handler(tabq_delivery *d, void *user) {
  (void)user;
  int64_t id = tabq_delivery_id(d);
  if (id >= 1 && id <= once_n)
    atomic_fetch_add(&once_seen[id], 1);
  return tabq_ack();
}

void once_check(void) {
  int twice = 0, never = 0;
  for (int i = 1; i <= once_n; i++) {
    twice += atomic_load(&once_seen[i]) > 1;
    never += atomic_load(&once_seen[i]) == 0;
  }
  CU_ASSERT_EQUAL(twice, 0);
  CU_ASSERT_EQUAL(never, 0);
}

const char *needs_custom_events(void) {
  static char why[96];
  if (kit.plugin.placeholder)
    return NULL;
  snprintf(why, sizeof why, "custom events: plugin ABI %u.%u (they need 1.1)",
           TABQ_ABI_MAJOR_OF(kit.plugin.desc->abi), TABQ_ABI_MINOR_OF(kit.plugin.desc->abi));
  return why;
}

const char *needs_listen(void) {
  return kit.plugin.listen
             ? NULL
             : "LISTEN/NOTIFY: the plugin has no Driver.listen/wait_notify or no Dialect.channel";
}
