/* What the benchmarks share (see bench_common.h). */
#include "bench_common.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <tabq/sys/sql.h>

/* A drain whose handler has seen no row for this long is stuck: the run ends instead of
 * waiting for ever. */
#define STALL_S 60

static const char *program = "bench";
static atomic_bool interrupted;

void bench_init(const char *name) {
  program = name;
}

void bench_interrupted(void) {
  atomic_store(&interrupted, true);
}

bool bench_is_interrupted(void) {
  return atomic_load(&interrupted);
}

void bench_die(const char *fmt, ...) {
  while (atomic_load(&interrupted))
    pause();
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", program);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* ---- Interruptions ------------------------------------------------------------------------- */

static sigset_t stop_signals;
static void (*stop_cleanup)(void);
static char stop_what[160];

static void *signal_main(void *arg) {
  (void)arg;
  int sig;
  if (sigwait(&stop_signals, &sig) != 0)
    return NULL;
  fprintf(stderr, "%s: interrupted, %s\n", program, stop_what);
  bench_interrupted();
  stop_cleanup();
  signal(sig, SIG_DFL);
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
  raise(sig);
  return NULL;
}

void bench_watch_signals(void (*cleanup)(void), const char *what) {
  stop_cleanup = cleanup;
  snprintf(stop_what, sizeof stop_what, "%s", what);
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
  signal(SIGPIPE, SIG_IGN);
  pthread_t th;
  if (pthread_create(&th, NULL, signal_main, NULL))
    bench_die("cannot start the signal thread");
  pthread_detach(th);
  atexit(cleanup);
}

/* ---- A tiny host for the dialect's builders ------------------------------------------------- */

static int host_fail(int code, const char *sqlstate, long native, const char *fmt, ...) {
  (void)sqlstate;
  (void)native;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: dialect: ", program);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

static void host_log(int level, const char *fmt, ...) {
  if (level > TABQ_LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

const tabq_host bench_host = {
    .size = sizeof(tabq_host),
    .abi = TABQ_ABI_VERSION,
    .alloc = malloc,
    .realloc = realloc,
    .free = free,
    .fail = host_fail,
    .log = host_log,
};

void bench_build(tabq_build_fn fn, const tabq_table *table, tabq_form form, const char *what,
                 tabq_stmt *st) {
  tabq_build b = {.table = table, .form = form};
  tabq_sql_init(st, &bench_host);
  int rc = fn(&b, st);
  if (rc == TABQ_OK)
    rc = st->status;
  if (rc != TABQ_OK || !st->sql)
    bench_die("the dialect built no %s statement (%s)", what, tabq_code_name((tabq_code)rc));
}

typedef struct locating {
  const tabq_table *table;
  bench_projection p;
} locating;

static void locate(tabq_stmt *st, const tabq_col *c, int is_attempt, void *ctx) {
  (void)st;
  (void)is_attempt;
  locating *l = ctx;
  if (c == &l->table->id)
    l->p.id = l->p.n;
  else if (c == &l->table->attempt)
    l->p.attempt = l->p.n;
  else if (c == &l->table->payload)
    l->p.payload = l->p.n;
  l->p.n++;
}

bench_projection bench_project(tabq_stmt *claim, const tabq_table *table) {
  locating l = {table, {-1, -1, -1, 0}};
  tabq_sql_each_projected(claim, table, locate, &l);
  if (l.p.id < 0 || l.p.attempt < 0 || l.p.payload < 0)
    bench_die("the claim's projection lacks id, attempt or payload");
  return l.p;
}

/* ---- Clocks --------------------------------------------------------------------------------- */

int64_t bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double bench_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void sleep_us(long us) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};
  nanosleep(&ts, NULL);
}

/* ---- Tallies and threads -------------------------------------------------------------------- */

void bench_tally_add(bench_tally *into, const bench_tally *t) {
  into->rows += t->rows;
  into->id_sum += t->id_sum;
  into->attempt_sum += t->attempt_sum;
  into->bytes += t->bytes;
}

void bench_expect_tally(const bench_tally *t, int64_t rows, int64_t id_sum, const char *side) {
  if (t->rows != rows || t->id_sum != id_sum || t->attempt_sum != rows ||
      t->bytes != rows * BENCH_PAYLOAD_LEN)
    bench_die("%s read %lld rows of %lld (id sum %lld, want %lld; attempts %lld; %lld bytes)", side,
              (long long)t->rows, (long long)rows, (long long)t->id_sum, (long long)id_sum,
              (long long)t->attempt_sum, (long long)t->bytes);
}

void bench_threads(unsigned n, void *(*fn)(void *), void *args, size_t arg_size) {
  pthread_t *th = calloc(n, sizeof *th);
  if (!th)
    bench_die("out of memory");
  for (unsigned i = 0; i < n; i++)
    if (pthread_create(&th[i], NULL, fn, (char *)args + i * arg_size))
      bench_die("cannot start raw thread %u", i);
  for (unsigned i = 0; i < n; i++)
    pthread_join(th[i], NULL);
  free(th);
}

double bench_run_loops(void *(*fn)(void *), const bench_args *a, bench_tally *t) {
  bench_loop *ls = calloc(a->workers, sizeof *ls);
  if (!ls)
    bench_die("out of memory");
  pthread_barrier_t ready;
  pthread_barrier_init(&ready, NULL, a->workers);
  for (unsigned i = 0; i < a->workers; i++)
    ls[i] = (bench_loop){.a = a, .ready = &ready};
  bench_threads(a->workers, fn, ls, sizeof ls[0]);
  pthread_barrier_destroy(&ready);
  double start = ls[0].start, end = ls[0].end;
  memset(t, 0, sizeof *t);
  for (unsigned i = 0; i < a->workers; i++) {
    start = ls[i].start < start ? ls[i].start : start;
    end = ls[i].end > end ? ls[i].end : end;
    bench_tally_add(t, &ls[i].t);
  }
  free(ls);
  return end - start;
}

/* ---- tabq ----------------------------------------------------------------------------------- */

typedef struct drain {
  atomic_int_fast64_t rows, id_sum, attempt_sum, bytes;
  int64_t target;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
} drain;

static tabq_outcome on_job(tabq_delivery *d, void *user) {
  drain *dr = user;
  size_t len = 0;
  const void *payload = tabq_delivery_payload(d, &len);
  atomic_fetch_add_explicit(&dr->id_sum, tabq_delivery_id(d), memory_order_relaxed);
  atomic_fetch_add_explicit(&dr->attempt_sum, tabq_delivery_attempt(d), memory_order_relaxed);
  atomic_fetch_add_explicit(&dr->bytes, payload ? (int64_t)len : 0, memory_order_relaxed);
  if (atomic_fetch_add(&dr->rows, 1) + 1 == dr->target) {
    pthread_mutex_lock(&dr->mu);
    dr->done = true;
    pthread_cond_signal(&dr->cv);
    pthread_mutex_unlock(&dr->mu);
  }
  return tabq_ack();
}

/* Until the handler has seen every row; a drain that stops moving ends the run. */
static void wait_handled(drain *dr) {
  int64_t seen = -1;
  pthread_mutex_lock(&dr->mu);
  while (!dr->done) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STALL_S;
    if (pthread_cond_timedwait(&dr->cv, &dr->mu, &until) == ETIMEDOUT && !dr->done) {
      int64_t now = atomic_load(&dr->rows);
      if (now == seen)
        bench_die("tabq handled no row for %d s (%lld of %lld)", STALL_S, (long long)now,
                  (long long)dr->target);
      seen = now;
    }
  }
  pthread_mutex_unlock(&dr->mu);
}

/* tabq's warnings and errors, as its default logger writes them, until an interruption. */
static void tabq_log(int level, const char *message, void *user) {
  (void)user;
  if (!bench_is_interrupted())
    fprintf(stderr, "tabq %s: %s\n", level == TABQ_LOG_ERROR ? "error" : "warning", message);
}

static void on_batch(tabq_delivery *const *ds, size_t n, tabq_outcome *outcomes, void *user) {
  for (size_t i = 0; i < n; i++)
    outcomes[i] = on_job(ds[i], user);
}

double bench_run_tabq(const char *url, const tabq_table *table, const bench_args *a,
                      bench_tally *out) {
  unsigned workers = a->workers, batch = a->batch;
  int64_t rows = a->rows;
  tabq_broker_options bo = {.size = sizeof(tabq_broker_options),
                            .poll_interval_ms = BENCH_POLL_MS,
                            .pool_size = workers + 2 > 8 ? workers + 2 : 8,
                            .log = tabq_log};
  tabq_broker *b = NULL;
  tabq_error err;
  char with_query[2300];
  if (a->url_query) {
    snprintf(with_query, sizeof with_query, "%s%c%s", url, strchr(url, '?') ? '&' : '?',
             a->url_query);
    url = with_query;
  }
  if (tabq_connect(url, &bo, &b, &err))
    bench_die("tabq_connect: %s", err.message);
  drain dr = {.target = rows, .done = false};
  pthread_mutex_init(&dr.mu, NULL);
  pthread_cond_init(&dr.cv, NULL);
  tabq_subscription_options so = {
      .size = sizeof(tabq_subscription_options),
      .queue = BENCH_QUEUE,
      .handler = batch > 1 ? NULL : on_job,
      .batch_handler = batch > 1 ? on_batch : NULL,
      .batch = batch > 1 ? batch : 0,
      .user = &dr,
      .workers = workers,
      .poll_interval_ms = BENCH_POLL_MS,
      .coalesce_acks = a->coalesce_us >= 0,
      .coalesce_window_us = a->coalesce_us >= 0 ? (unsigned)a->coalesce_us : 0,
      .prefetch = a->prefetch,
      .lookahead = a->no_lookahead ? TABQ_LOOKAHEAD_OFF : TABQ_LOOKAHEAD_ADAPTIVE,
      .acks = a->acks_alone ? TABQ_ACKS_ALONE : TABQ_ACKS_DEFAULT,
  };
  tabq_subscription *sub = NULL;

  double t0 = bench_mono_s();
  if (tabq_subscribe(b, table, &so, &sub, &err))
    bench_die("tabq_subscribe: %s", err.message);
  wait_handled(&dr);
  /* The last handler has returned; its ack runs right after, so wait for the settlement too. */
  tabq_stats st;
  for (;;) {
    tabq_subscription_stats(sub, &st, sizeof st);
    if (st.acked + st.failed + st.lease_lost + st.retried + st.released >= (uint64_t)rows)
      break;
    sleep_us(20);
  }
  double elapsed = bench_mono_s() - t0;

  if (so.coalesce_acks) /* how many acks went together, beside the rate */
    fprintf(stderr, "bench: coalesce_acks (window %u us) settled %llu of %lld acks together\n",
            so.coalesce_window_us, (unsigned long long)st.coalesced, (long long)rows);
  if (st.acked != (uint64_t)rows)
    bench_die("tabq acked %llu rows of %lld (failed %llu, lease lost %llu)",
              (unsigned long long)st.acked, (long long)rows, (unsigned long long)st.failed,
              (unsigned long long)st.lease_lost);
  tabq_close(b);
  *out = (bench_tally){atomic_load(&dr.rows), atomic_load(&dr.id_sum), atomic_load(&dr.attempt_sum),
                       atomic_load(&dr.bytes)};
  pthread_mutex_destroy(&dr.mu);
  pthread_cond_destroy(&dr.cv);
  return elapsed;
}

/* ---- Options and medians -------------------------------------------------------------------- */

unsigned bench_parse_count(const char *opt, const char *s, unsigned max) {
  char *end;
  errno = 0;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || errno || *end || v < 1 || v > (long)max)
    bench_die("%s takes a whole number from 1 to %u", opt, max);
  return (unsigned)v;
}

static int parse_window(const char *opt, const char *s) {
  char *end;
  errno = 0;
  long v = s ? strtol(s, &end, 10) : -1;
  if (!s || errno || *end || v < 0 || v > 1000000)
    bench_die("%s takes microseconds from 0 to 1000000", opt);
  return (int)v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, unsigned n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- One drain per run ---------------------------------------------------------------------- */

static const char *const side_names[] = {"tabq", "own", "best"};

const char *bench_side_name(bench_side side) {
  return side_names[side];
}

const char *bench_form_name(tabq_form form) {
  return form == TABQ_FORM_ROWLOCK ? "rowlock" : form == TABQ_FORM_LEASE ? "lease" : "advisory";
}

static const char *const table_names[] = {"plain", "processed", "processed-naive"};

const char *bench_table_name(bench_table_kind table) {
  return table_names[table];
}

const char *bench_processed_at(const bench_args *a) {
  return a->table == BENCH_TABLE_PLAIN ? NULL : "processed_at";
}

static const char *arg_of(int argc, char **argv, int *i) {
  if (*i + 1 >= argc)
    bench_die("%s takes a value", argv[*i]);
  return argv[++*i];
}

void bench_parse_args(int argc, char **argv, unsigned forms, int64_t default_rows,
                      const char *usage, bench_args *a) {
  *a = (bench_args){
      .side = BENCH_TABQ, .workers = 1, .batch = 1, .rows = default_rows, .coalesce_us = -1};
  bool form_given = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "--side")) {
      const char *v = arg_of(argc, argv, &i);
      unsigned s = 0;
      while (s < 3 && strcmp(v, side_names[s]))
        s++;
      if (s == 3)
        bench_die("--side is tabq, own or best, not %s", v);
      a->side = (bench_side)s;
    } else if (!strcmp(o, "--form")) {
      const char *v = arg_of(argc, argv, &i);
      tabq_form f = !strcmp(v, "rowlock") ? TABQ_FORM_ROWLOCK
                    : !strcmp(v, "lease") ? TABQ_FORM_LEASE
                                          : TABQ_FORM_ADVISORY;
      if (strcmp(v, bench_form_name(f)) || !(forms & (unsigned)f))
        bench_die("this benchmark has no form %s", v);
      a->form = f;
      form_given = true;
    } else if (!strcmp(o, "--workers"))
      a->workers = bench_parse_count(o, arg_of(argc, argv, &i), BENCH_MAX_WORKERS);
    else if (!strcmp(o, "--batch"))
      a->batch = bench_parse_count(o, arg_of(argc, argv, &i), BENCH_MAX_BATCH);
    else if (!strcmp(o, "--rows"))
      a->rows = bench_parse_count(o, arg_of(argc, argv, &i), 100000000);
    else if (!strcmp(o, "--sql"))
      a->show_sql = true;
    else if (!strcmp(o, "--autovacuum"))
      a->autovacuum = true;
    else if (!strcmp(o, "--coalesce-us")) /* coalesce_acks with this window, 0 to 1,000,000 */
      a->coalesce_us = parse_window(o, arg_of(argc, argv, &i));
    else if (!strcmp(o, "--url-query")) /* tabq's URL only: "pooler=transaction" */
      a->url_query = arg_of(argc, argv, &i);
    else if (!strcmp(o, "--no-lookahead")) /* a claim takes rows for idle workers only */
      a->no_lookahead = true;
    else if (!strcmp(o, "--acks-alone")) /* each ack its own commit, on SQLite too */
      a->acks_alone = true;
    else if (!strcmp(o, "--prefetch")) /* the subscription's prefetch, 1 to 1,000 */
      a->prefetch = bench_parse_count(o, arg_of(argc, argv, &i), 1000);
    else if (!strcmp(o, "--table")) {
      const char *v = arg_of(argc, argv, &i);
      unsigned t = 0;
      while (t < 3 && strcmp(v, table_names[t]))
        t++;
      if (t == 3)
        bench_die("--table is plain, processed or processed-naive, not %s", v);
      a->table = (bench_table_kind)t;
    } else if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
      fputs(usage, stdout);
      exit(0);
    } else {
      fputs(usage, stderr);
      exit(2);
    }
  }
  if (!form_given) /* the first form the benchmark serves */
    a->form = (tabq_form)(forms & -forms);
}

/* utime + stime (+ cutime + cstime when `children`) of one process, in clock ticks; -1 when it
 * cannot be read. The command name may hold spaces, so the fields are counted after its ')'. */
static long long proc_ticks(long pid, bool children, long *ppid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  long long ut, st, cut, cst;
  long parent;
  /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
   * cutime cstime */
  if (!p || sscanf(p + 1, " %*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld",
                   &parent, &ut, &st, &cut, &cst) != 5)
    return -1;
  if (ppid)
    *ppid = parent;
  return ut + st + (children ? cut + cst : 0);
}

double bench_server_cpu_s(void) {
  const char *env = getenv("TABQ_BENCH_SERVER_PID");
  long server = env && *env ? strtol(env, NULL, 10) : 0;
  if (server <= 0)
    return -1;
  long long ticks = proc_ticks(server, true, NULL);
  if (ticks < 0)
    return -1;
  /* PostgreSQL's backends are the server's children: the live ones count here, the ended ones
   * in the server's cutime once it has reaped them. */
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    long parent = 0;
    if (*end || pid <= 0 || pid == server)
      continue;
    long long t = proc_ticks(pid, false, &parent);
    if (t > 0 && parent == server)
      ticks += t;
  }
  if (d)
    closedir(d);
  return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

void bench_emit(const bench_args *a, const bench_result *r) {
  double rows = (double)a->rows;
  printf("{\"db\":\"%s\",\"side\":\"%s\",\"form\":\"%s\",\"table\":\"%s\",\"workers\":%u,"
         "\"batch\":%u,\"coalesce_us\":%d,\"prefetch\":%u,\"rows\":%lld,\"seconds\":%.4f,"
         "\"msgs_per_s\":%.1f,\"client_cpu_us_per_row\":%.2f,",
         r->db, bench_side_name(a->side), bench_form_name(a->form), bench_table_name(a->table),
         a->workers, a->batch, a->coalesce_us, a->prefetch, (long long)a->rows, r->seconds,
         rows / r->seconds, r->client_cpu_s / rows * 1e6);
  if (r->server_cpu_s >= 0)
    printf("\"server_cpu_us_per_row\":%.2f,", r->server_cpu_s / rows * 1e6);
  else
    printf("\"server_cpu_us_per_row\":null,");
  printf("\"server_version\":\"%s\"}\n", r->server_version ? r->server_version : "");
  if (fflush(stdout) || ferror(stdout))
    bench_die("cannot write the result: %s", strerror(errno));
}

void bench_expect_finished(int64_t total, int64_t finished, int64_t rows, const char *side) {
  if (total != rows || finished != rows)
    bench_die("%s: %lld rows of %lld left in the table after the drain, %lld of them finished "
              "(processed_at set, no lease)",
              side, (long long)total, (long long)rows, (long long)finished);
}
