/* Crashes and concurrency in every form, checked in the database: a child SIGKILLed inside its
 * handler, two processes of four workers draining one table exactly once, a claim held for a
 * handler leaving other groups free (row lock), and a NOTIFY from another process waking a
 * subscription (drivers with listen). */
#include <CUnit/CUnit.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit.h"

static tabq_error err;

static void killed_child_row_returns(void) {
  child c;
  tabq_broker *b = child_claims_one_row(&c, "crash");
  kill(c.pid, SIGKILL);
  int status = child_wait(&c);
  CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  if (kit.form == TABQ_FORM_LEASE) {
    /* the attempt is spent and the lease still stands: the row waits for it to end */
    CU_ASSERT_EQUAL(db_int("SELECT attempt FROM {jobs}"), 2);
    CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs} WHERE locked_until IS NOT NULL"), 1);
  }
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, NULL, &err), TABQ_OK);
  /* Row lock and advisory: the server ended the dead client's session, so its row lock or key
   * lock is gone and the row is claimed at once. */
  CU_ASSERT(recorder_wait(&r, 1, 10000));
  /* Row lock: the crash rolled the claim back, attempt and all. Lease and advisory: the claim
   * had committed the attempt, so the crash spent one. */
  CU_ASSERT_EQUAL(r.attempts[0], kit.form == TABQ_FORM_ROWLOCK ? 1 : 2);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 10000));
  close_broker(b);
  recorder_free(&r);
}

#define DRAIN 20000

/* Advisory keys kept in the process: the second process is refused at subscribe, so one drains
 * every row. */
static bool one_process_serves(void) {
  return kit.form == TABQ_FORM_ADVISORY && kit.plugin.process_keys;
}

static void two_processes_drain_exactly_once(void) {
  fresh_db();
  db_fill("q", DRAIN);
  static unsigned char seen[DRAIN + 1];
  memset(seen, 0, sizeof seen);
  child c[2];
  child_start(&c[0], "drain");
  child_start(&c[1], "drain");
  unsigned total = 0, twice = 0, strange = 0;
  char buf[2][32];
  size_t len[2] = {0, 0};
  int idle_ms = 0;
  bool open_out[2] = {true, true};
  while (total < DRAIN && idle_ms < 60000) {
    struct pollfd p[2] = {{.fd = open_out[0] ? c[0].out : -1, .events = POLLIN},
                          {.fd = open_out[1] ? c[1].out : -1, .events = POLLIN}};
    if (poll(p, 2, 100) <= 0) {
      idle_ms += 100;
      continue;
    }
    idle_ms = 0;
    for (int k = 0; k < 2; k++) {
      if (!(p[k].revents & (POLLIN | POLLHUP)))
        continue;
      char chunk[4096];
      ssize_t n = read(c[k].out, chunk, sizeof chunk);
      open_out[k] = n > 0; /* a child that exited (refused) has nothing more to say */
      for (ssize_t i = 0; i < n; i++) {
        if (chunk[i] != '\n') {
          if (len[k] + 1 < sizeof buf[k])
            buf[k][len[k]++] = chunk[i];
          continue;
        }
        buf[k][len[k]] = '\0';
        len[k] = 0;
        long id = atol(buf[k]);
        if (id < 1 || id > DRAIN) {
          strange++;
          continue;
        }
        twice += seen[id]++ > 0;
        total++;
      }
    }
  }
  /* A handler reports its row before its ack commits: stop once the last acks are in, or an
   * advisory shutdown releases a lock under a settlement still running (it then fails CLOSED
   * and the row stays, as designed). */
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 20000));
  int s[2];
  if (one_process_serves()) {
    /* The refused child exited at subscribe (status 4); the other stops on its line. */
    int refused = -1;
    for (int k = 0; k < 2 && refused < 0; k++)
      if (waitpid(c[k].pid, &s[k], WNOHANG) == c[k].pid)
        refused = k;
    CU_ASSERT_FATAL(refused >= 0);
    CU_ASSERT(WIFEXITED(s[refused]) && WEXITSTATUS(s[refused]) == 4);
    child_say(&c[1 - refused], "stop");
    s[1 - refused] = child_wait(&c[1 - refused]);
    child_wait(&c[refused]); /* reaped already: closes its pipes */
    CU_ASSERT(WIFEXITED(s[1 - refused]) && WEXITSTATUS(s[1 - refused]) == 0);
  } else {
    child_say(&c[0], "stop");
    child_say(&c[1], "stop");
    s[0] = child_wait(&c[0]);
    s[1] = child_wait(&c[1]);
    CU_ASSERT(WIFEXITED(s[0]) && WEXITSTATUS(s[0]) == 0);
    CU_ASSERT(WIFEXITED(s[1]) && WEXITSTATUS(s[1]) == 0);
  }
  CU_ASSERT_EQUAL(total, DRAIN);
  CU_ASSERT_EQUAL(twice, 0);
  CU_ASSERT_EQUAL(strange, 0);
  CU_ASSERT_EQUAL(db_int("SELECT count(*) FROM {jobs}"), 0);
}

static void wait_claims(tabq_subscription *s, uint64_t at_least) {
  tabq_stats st = {0};
  for (int i = 0; i < 1000 && st.claims < at_least; i++) {
    stats_of(s, &st);
    sleep_ms(10);
  }
  CU_ASSERT(st.claims >= at_least);
}

static void notify_from_another_process_wakes(void) {
  fresh_db();
  tabq_broker_options bo = broker_options(60000, 6);
  bo.listen_notify = true;
  tabq_broker *b = connect_broker_with(&bo);
  recorder r;
  recorder_init(&r);
  tabq_subscription_options o = sub_options("q", recorder_handler, &r);
  tabq_subscription *s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &o, &s, &err), TABQ_OK);
  wait_claims(s, 1); /* the first claim found nothing: the next poll is a minute away */
  child c;
  child_start(&c, "publish");
  int status = child_wait(&c);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* Only the notification can bring the row within this bound. */
  CU_ASSERT(recorder_wait(&r, 1, 10000));
  CU_ASSERT_STRING_EQUAL(r.payloads[0], "from-child");
  close_broker(b);
  recorder_free(&r);
}

static void held_claim_leaves_other_groups_free(void) {
  fresh_db();
  tabq_broker *b = connect_broker(20);
  publish_n(b, "slow", 3);
  publish_n(b, "fast", 5);
  static gate g;
  gate_init(&g);
  tabq_subscription_options slow = sub_options("slow", wait_at_gate, &g);
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, jobs_table(), &slow, NULL, &err), TABQ_OK);
  gate_wait_in(&g);
  /* The slow group's claim holds its row (and, on MySQL, the index range it read) while its
   * handler waits: the other group's rows go on all the same. */
  recorder r;
  recorder_init(&r);
  tabq_subscription_options fast = sub_options("fast", recorder_handler, &r);
  CU_ASSERT_EQUAL(tabq_subscribe(b, jobs_table(), &fast, NULL, &err), TABQ_OK);
  CU_ASSERT(recorder_wait(&r, 5, 15000));
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs} WHERE queue = 'fast'", 0, 10000));
  gate_open(&g);
  CU_ASSERT(wait_count("SELECT count(*) FROM {jobs}", 0, 15000));
  close_broker(b);
  recorder_free(&r);
}

const kit_test crash_tests[] = {
    {"a SIGKILLed child's row returns", killed_child_row_returns, ALL_FORMS, NULL, NULL},
    {"two processes of four workers drain 20,000 rows exactly once",
     two_processes_drain_exactly_once, ALL_FORMS, NULL, "workers and processes: each row once"},
    {"NOTIFY from another process wakes a 60 s poller", notify_from_another_process_wakes,
     ALL_FORMS, needs_listen, "wake-ups (in process, LISTEN/NOTIFY)"},
    {"a claim held for a handler leaves other groups free", held_claim_leaves_other_groups_free,
     TABQ_FORM_ROWLOCK, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
