/* A worker process of the kill suite (test_kills.py): one broker on one table, two
 * subscriptions of two workers each, and a habit of SIGKILLing itself at chosen points.
 *
 *   kill_worker URL TABLE FORM LOG BOARD KILL_EVERY STOP_FILE [LEASE_S]
 *
 * TABLE (id, queue, retry_after, attempt, processed_at, payload; locked_until in the lease form,
 * the key "TABLE-{id}" in the advisory form; acks set processed_at). Queue "plain": a handler
 * that acks. Queue "tx": a transactional handler that inserts its business row
 * (TABLE_biz: row_id, pid) in its delivery's transaction, committed with the ack.
 *
 * LOG (O_APPEND, one write a line, shared by every process):
 *   S ID START_US PID QUEUE                          a handler began
 *   E ID START_US RETURN_US END_US PID CODE OUTCOME QUEUE
 *                                                   its row's settlement ended (on_delivery_end):
 *                                                   START_US on_delivery_start's (about the S
 *                                                   line's), RETURN_US the handler's return
 * BOARD: a file this process maps shared, read by the test after it killed the process or the
 * process killed itself (int64 cells): [0] pid, [1] 1 once subscribed, [2] the point it killed
 * itself at (KILL_*), [3] when (µs since 1970), [4..11] each worker thread's point now.
 *
 * Self-kills: a handler's call draws one in KILL_EVERY (0: never) a kill at one point of its
 * delivery: in the handler (before any write), inside a transactional handler's writes (after
 * the business row's insert, before the return), while its row settles (a thread fires a random
 * part of the usual settlement time after the handler returned, if the settlement has not
 * ended) or during the worker's next claim (likewise, after the settlement ended, if no
 * handler started since). While STOP_FILE exists it kills nothing.
 *
 * SQLite's advisory form serves one process a file at a time: the others wait at subscribe
 * (TABQ_DIALECT), retrying, as standbys. SIGTERM: shut down, print counters, exit 0. Exit 3:
 * no connection or subscription (the message on stderr). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <tabq/tabq.h>
#include <tabq/trace.h>
#include <time.h>
#include <unistd.h>

enum { KILL_NONE, KILL_CLAIMING, KILL_HANDLER, KILL_SETTLING, KILL_TX_WRITES };
enum { BOARD_PID, BOARD_READY, BOARD_POINT, BOARD_AT, BOARD_SLOTS, NSLOTS = 8 };

static int log_fd = -1;
static _Atomic int64_t *board;
static atomic_int next_slot;
static long kill_every;
static const char *stop_file;
static char biz_insert[256];
/* The usual time of a settlement (handler's return to on_delivery_end) and of a claim (a
 * worker's on_delivery_end to its next handler), µs, smoothed: the self-kills' windows. */
static _Atomic int64_t settle_us = 2000, claim_us = 2000;

static _Thread_local int slot = -1;
static _Thread_local unsigned seed;
static _Thread_local int64_t returned_at, ended_at;
/* A self-kill drawn for a point this thread only passes through (settling, claiming) stays
 * drawn until it fires: it is armed again at each pass until one lands. */
static _Thread_local bool kill_at_claim, kill_at_settle;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void put_line(const char *line, int n) {
  if (write(log_fd, line, (size_t)n) != n)
    perror("kill_worker: log");
}

/* This thread's cell on the board, taken on its first delivery. */
static int my_slot(void) {
  if (slot < 0) {
    slot = atomic_fetch_add(&next_slot, 1);
    seed = (unsigned)getpid() * 2654435761u ^ (unsigned)now_us() ^ (unsigned)slot << 16;
  }
  return slot;
}

static void set_point(int point) {
  int i = my_slot();
  if (i < NSLOTS)
    atomic_store(&board[BOARD_SLOTS + i], point);
}

static void self_kill(int point) {
  if (access(stop_file, F_OK) == 0)
    return;
  atomic_store(&board[BOARD_POINT], point);
  atomic_store(&board[BOARD_AT], now_us());
  kill(getpid(), SIGKILL);
}

static void smooth(_Atomic int64_t *avg, int64_t sample) {
  if (sample > 0 && sample < 10000000)
    atomic_store(avg, (atomic_load(avg) * 7 + sample) / 8);
}

/* ---- The killer thread: a kill at a point the worker only passes through ------------------ */

static pthread_mutex_t killer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t killer_cv = PTHREAD_COND_INITIALIZER;
static int armed_slot = -1, armed_point;
static struct timespec armed_at;

/* Fires in `delay_us` if the worker of `i` is still at `point` then; one armed at a time. */
static void arm(int i, int point, int64_t delay_us) {
  if (i >= NSLOTS)
    return;
  pthread_mutex_lock(&killer_mu);
  if (armed_slot < 0) {
    clock_gettime(CLOCK_REALTIME, &armed_at);
    int64_t ns = armed_at.tv_nsec + delay_us * 1000;
    armed_at.tv_sec += ns / 1000000000;
    armed_at.tv_nsec = ns % 1000000000;
    armed_slot = i;
    armed_point = point;
    pthread_cond_signal(&killer_cv);
  }
  pthread_mutex_unlock(&killer_mu);
}

static void *killer(void *unused) {
  (void)unused;
  pthread_mutex_lock(&killer_mu);
  for (;;) {
    while (armed_slot < 0)
      pthread_cond_wait(&killer_cv, &killer_mu);
    while (pthread_cond_timedwait(&killer_cv, &killer_mu, &armed_at) == 0) {
    }
    if (atomic_load(&board[BOARD_SLOTS + armed_slot]) == armed_point)
      self_kill(armed_point);
    armed_slot = -1; /* missed: the worker had moved on */
  }
  return NULL;
}

/* ---- Handlers and hooks --------------------------------------------------------------------- */

static tabq_outcome handle(tabq_delivery *d, void *user) {
  bool tx = user != NULL;
  int i = my_slot();
  int64_t start = now_us();
  if (ended_at)
    smooth(&claim_us, start - ended_at);
  set_point(KILL_HANDLER);
  char line[160];
  long long id = (long long)tabq_delivery_id(d);
  put_line(line, snprintf(line, sizeof line, "S %lld %lld %d %s\n", id, (long long)start,
                          (int)getpid(), tx ? "tx" : "plain"));
  /* One delivery in KILL_EVERY draws a kill, at a point of its life: in a transactional
   * handler half of them inside its writes, the rest evenly over the other three points. */
  int point = KILL_NONE;
  if (kill_every > 0 && rand_r(&seed) % kill_every == 0) {
    int r = rand_r(&seed) % 6;
    point =
        tx && r >= 3 ? KILL_TX_WRITES : (int[]){KILL_CLAIMING, KILL_HANDLER, KILL_SETTLING}[r % 3];
  }
  kill_at_claim |= point == KILL_CLAIMING;
  kill_at_settle |= point == KILL_SETTLING;
  /* 0-2 ms of work, and one delivery in 50 works 150 ms: a lock check that samples every
   * 0.1 s (test_kills.py, the advisory form) then meets locks held, however fast the rest go. */
  long work_us = rand_r(&seed) % 50 == 0 ? 150000 : rand_r(&seed) % 2000;
  struct timespec work = {0, work_us * 1000};
  nanosleep(&work, NULL);
  if (point == KILL_HANDLER)
    self_kill(KILL_HANDLER);
  if (tx) {
    set_point(KILL_TX_WRITES);
    tabq_value v[] = {tabq_int(id), tabq_int(getpid())};
    tabq_error err;
    if (tabq_tx_exec(tabq_delivery_tx(d), biz_insert, v, 2, NULL, &err)) {
      fprintf(stderr, "kill_worker %d: business row %lld: %s\n", (int)getpid(), id, err.message);
      set_point(KILL_SETTLING);
      returned_at = now_us();
      return tabq_retry();
    }
    if (point == KILL_TX_WRITES)
      self_kill(KILL_TX_WRITES);
  }
  set_point(KILL_SETTLING);
  returned_at = now_us();
  if (kill_at_settle)
    arm(i, KILL_SETTLING, rand_r(&seed) % (atomic_load(&settle_us) + 1));
  return tabq_ack();
}

static void delivery_end(tabq_delivery *d, const tabq_delivery_end *e, void *token, void *user) {
  (void)token, (void)user;
  int64_t end = now_us();
  smooth(&settle_us, end - returned_at);
  char line[200];
  put_line(line,
           snprintf(line, sizeof line, "E %lld %lld %lld %lld %d %s %s %s\n",
                    (long long)tabq_delivery_id(d), (long long)(end - e->total_us),
                    (long long)returned_at, (long long)end, (int)getpid(), tabq_code_name(e->code),
                    tabq_outcome_name(e->outcome), tabq_delivery_queue(d)));
  ended_at = end;
  set_point(KILL_CLAIMING);
  if (kill_at_claim)
    arm(my_slot(), KILL_CLAIMING, rand_r(&seed) % (atomic_load(&claim_us) + 1));
}

static void log_line(int level, const char *message, void *user) {
  (void)user;
  if (level <= TABQ_LOG_WARN)
    fprintf(stderr, "kill_worker %d: %s\n", (int)getpid(), message);
}

static _Atomic int64_t *map_board(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  size_t len = (BOARD_SLOTS + NSLOTS) * sizeof(int64_t);
  if (fd < 0 || ftruncate(fd, (off_t)len)) {
    perror(path);
    return NULL;
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv) {
  if (argc != 8 && argc != 9) {
    fprintf(stderr, "usage: kill_worker URL TABLE rowlock|lease|advisory LOG BOARD KILL_EVERY "
                    "STOP_FILE [LEASE_S]\n");
    return 2;
  }
  const char *url = argv[1], *table = argv[2], *form = argv[3];
  kill_every = atol(argv[6]);
  stop_file = argv[7];
  log_fd = open(argv[4], O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (log_fd < 0 || !(board = map_board(argv[5]))) {
    perror(argv[4]);
    return 2;
  }
  atomic_store(&board[BOARD_PID], getpid());
  bool pg = !strncmp(url, "postgres", 8);
  snprintf(biz_insert, sizeof biz_insert, "INSERT INTO %s_biz (row_id, pid) VALUES (%s, %s)", table,
           pg ? "$1" : "?", pg ? "$2" : "?");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread tabq starts inherits it */
  pthread_t k;
  pthread_create(&k, NULL, killer, NULL);

  tabq_table t = {.size = sizeof(tabq_table),
                  .name = table,
                  .id = {.name = "id", .generated = true},
                  .group = {.name = "queue"},
                  .retry_after = {.name = "retry_after"},
                  .attempt = {.name = "attempt", .generated = true},
                  .processed_at = {.name = "processed_at"},
                  .payload = {.name = "payload"}};
  char key[160];
  if (!strcmp(form, "lease"))
    t.locked_until.name = "locked_until";
  else if (!strcmp(form, "advisory")) {
    snprintf(key, sizeof key, "%s-{id}", table);
    t.advisory_lock = key;
  }
  tabq_broker_options bo = TABQ_BROKER_OPTIONS_INIT;
  bo.poll_interval_ms = 50;
  bo.pool_size = 6;
  bo.lease_s = argc > 8 ? (unsigned)atoi(argv[8]) : 2;
  bo.log = log_line;
  tabq_broker *b;
  tabq_error err;
  if (tabq_connect(url, &bo, &b, &err)) {
    fprintf(stderr, "kill_worker: connect: %s\n", err.message);
    return 3;
  }
  tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
  hooks.on_delivery_end = delivery_end;
  if (tabq_set_delivery_hooks(b, &hooks, &err)) {
    fprintf(stderr, "kill_worker: hooks: %s\n", err.message);
    return 3;
  }
  tabq_subscription *subs[2] = {NULL, NULL};
  static const char *const queues[2] = {"plain", "tx"};
  for (int i = 0; i < 2; i++) {
    tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
    o.queue = queues[i];
    o.handler = handle;
    o.user = i ? (void *)1 : NULL;
    o.transactional = i == 1;
    o.workers = 2;
    /* A standby of SQLite's advisory form: another process serves the file until it dies. */
    while (tabq_subscribe(b, &t, &o, &subs[i], &err)) {
      if (err.code != TABQ_DIALECT || i > 0 || strncmp(url, "sqlite", 6)) {
        fprintf(stderr, "kill_worker: subscribe: %s\n", err.message);
        return 3;
      }
      struct timespec pause = {0, 20 * 1000000};
      nanosleep(&pause, NULL);
    }
  }
  atomic_store(&board[BOARD_READY], 1);
  int sig;
  sigwait(&set, &sig);
  tabq_stats st[2];
  for (int i = 0; i < 2; i++)
    tabq_subscription_stats(subs[i], &st[i], sizeof st[i]);
  tabq_close(b);
  printf("{\"claimed\": %llu, \"acked\": %llu, \"retried\": %llu, \"released\": %llu, "
         "\"lease_lost\": %llu, \"failed\": %llu}\n",
         (unsigned long long)(st[0].claimed + st[1].claimed),
         (unsigned long long)(st[0].acked + st[1].acked),
         (unsigned long long)(st[0].retried + st[1].retried),
         (unsigned long long)(st[0].released + st[1].released),
         (unsigned long long)(st[0].lease_lost + st[1].lease_lost),
         (unsigned long long)(st[0].failed + st[1].failed));
  return 0;
}
