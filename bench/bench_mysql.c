/* tabq_bench_mysql — one drain of a MariaDB/MySQL queue table per run, by one side:
 *
 *   tabq  tabq itself, a no-op handler that acks (a batch handler with --batch N > 1);
 *   own   a plain libmariadb loop of the very statements the mysql dialect renders (from its
 *         builders, bound by parameter id as the core binds them, prepared on the server and
 *         run on the binary protocol as the driver runs them, begin text included): what tabq
 *         would cost with nothing of its own;
 *   best  a plain libmariadb loop of the best SQL written by hand for the same guarantee
 *         (mysql_best.c; on a processed_at table the statements below, run by the own loop's
 *         code).
 *
 * --table processed keeps finished rows (acks set processed_at) with the claim index
 * docs/table-description.md recommends, (queue, processed_at, id), which keeps them out of the
 * claims' range; processed-naive keeps them with the plain (queue, id).
 *
 * The table lives in a database of the run's own (bench_<pid>, dropped at the end, also when
 * interrupted), is filled untimed with --rows rows and analyzed, then drained by --workers
 * threads (each raw loop a connection of its own; tabq's workers share its pool). The run prints
 * one JSON line (bench_emit) with the rate, this process's CPU per row and the server's, read
 * from /proc when TABQ_BENCH_SERVER_PID names mysqld. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mysqld_error.h>

#include <tabq/sys/sql.h>
#include <tabq/tabq.h>

#include "mysql_bench.h"
#include "mysql_plugin.h"

#define PROGRAM "tabq_bench_mysql"
#define URL_ENV "TABQ_BENCH_MYSQL_URL"
#define DEFAULT_ROWS 20000
#define CONNECT_TIMEOUT_S 10
#define CLEANUP_LOCK_WAIT_S 10
#define KEY_MAX 256 /* room for a candidate's lock name (the dialect keeps them to 64) */

/* Each form's description of the one table; the columns a form does not use stay NULL. */
#define JOBS_ROLES                                                                                 \
  .name = "jobs", .id = {.name = "id", .generated = true}, .group = {.name = "queue"},             \
  .attempt = {.name = "attempt", .generated = true}, .payload = {.name = "payload"}
static const tabq_table rowlock_jobs = {.size = sizeof(tabq_table), JOBS_ROLES};
static const tabq_table lease_jobs = {
    .size = sizeof(tabq_table), JOBS_ROLES, .locked_until = {.name = "locked_until"}};
static const tabq_table advisory_jobs = {
    .size = sizeof(tabq_table), JOBS_ROLES, .advisory_lock = "job-{id}"};

/* The table docs/table-description.md recommends, cut to the roles the benchmark uses, with its
 * claim index: locked_until without fractions holds a whole-second lease token exactly. The %s
 * are the processed_at column and the claim index's columns. */
static const char *const table_sql =
    "CREATE TABLE jobs (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT NULL, "
    "attempt INT NOT NULL DEFAULT 1, locked_until DATETIME NULL,%s payload BLOB NOT NULL, "
    "INDEX jobs_claim (%s)) ENGINE=InnoDB";

/* ---- The server's address ------------------------------------------------------------------ */

static const char *base_url;
static char database[32]; /* bench_<pid> */
const char *mb_database = database;
static char url[2048]; /* base_url reaching the run's database, for tabq */

static mb_server server; /* the URL's parts */

/* The server's parts, and the URL that reaches the run's database (for tabq). */
static void parse_url(void) {
  snprintf(database, sizeof database, "bench_%d", (int)getpid());
  mb_parse_url(base_url, URL_ENV, database, &server, url, sizeof url);
}

/* ---- Plain libmariadb ----------------------------------------------------------------------- */

void mb_fail(MYSQL *c, const char *what) {
  bench_die("%s: %s (%u)", what, mysql_error(c), mysql_errno(c));
}

void mb_stmt_fail(MYSQL_STMT *st, const char *what) {
  bench_die("%s: %s (%u)", what, mysql_stmt_error(st), mysql_stmt_errno(st));
}

/* Opens a session, or answers NULL with the library's message in `why`. */
static MYSQL *try_connect(const char *db, char *why, size_t cap) {
  MYSQL *c = mysql_init(NULL);
  if (!c) {
    snprintf(why, cap, "out of memory");
    return NULL;
  }
  my_bool off = 0;
  unsigned timeout = CONNECT_TIMEOUT_S;
  mysql_optionsv(c, MYSQL_OPT_RECONNECT, &off);
  mysql_optionsv(c, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_optionsv(c, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00', autocommit = 1");
  mysql_optionsv(c, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  if (!mysql_real_connect(c, server.host[0] ? server.host : NULL, server.user,
                          server.password[0] ? server.password : NULL, db, server.port,
                          server.socket[0] ? server.socket : NULL, CLIENT_FOUND_ROWS)) {
    snprintf(why, cap, "%s", mysql_error(c));
    mysql_close(c);
    return NULL;
  }
  return c;
}

MYSQL *mb_connect(const char *db) {
  char why[512];
  MYSQL *c = try_connect(db, why, sizeof why);
  if (!c)
    bench_die("cannot connect: %s", why);
  return c;
}

void mb_query_n(MYSQL *c, const char *sql, size_t n) {
  if (mysql_real_query(c, sql, (unsigned long)n))
    mb_fail(c, sql);
  for (;;) {
    MYSQL_RES *res = mysql_store_result(c);
    if (res)
      mysql_free_result(res);
    else if (mysql_field_count(c) != 0)
      mb_fail(c, sql);
    int more = mysql_next_result(c);
    if (more < 0)
      return;
    if (more > 0)
      mb_fail(c, sql);
  }
}

void mb_query(MYSQL *c, const char *sql) {
  mb_query_n(c, sql, strlen(sql));
}

void mb_commit(MYSQL *c) {
  if (mysql_commit(c))
    mb_fail(c, "COMMIT");
}

/* The first cell of a text query as a number; -1 for NULL or no row. */
static int64_t query_int(MYSQL *c, const char *sql) {
  if (mysql_query(c, sql))
    mb_fail(c, sql);
  MYSQL_RES *res = mysql_store_result(c);
  if (!res)
    mb_fail(c, sql);
  MYSQL_ROW row = mysql_fetch_row(res);
  int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : -1;
  mysql_free_result(res);
  return v;
}

MYSQL_STMT *mb_prepare(MYSQL *c, const char *sql, unsigned nparams) {
  MYSQL_STMT *st = mysql_stmt_init(c);
  if (!st)
    bench_die("out of memory");
  if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)))
    mb_stmt_fail(st, sql);
  if (mysql_stmt_param_count(st) != nparams)
    bench_die("%s: %lu placeholders, not %u", sql, mysql_stmt_param_count(st), nparams);
  return st;
}

void mb_time(MYSQL_TIME *t, int64_t unix_us) {
  time_t secs = (time_t)(unix_us / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  memset(t, 0, sizeof *t);
  t->year = (unsigned)tm.tm_year + 1900;
  t->month = (unsigned)tm.tm_mon + 1;
  t->day = (unsigned)tm.tm_mday;
  t->hour = (unsigned)tm.tm_hour;
  t->minute = (unsigned)tm.tm_min;
  t->second = (unsigned)tm.tm_sec;
  t->second_part = (unsigned long)(unix_us % 1000000);
  t->time_type = MYSQL_TIMESTAMP_DATETIME;
}

int64_t mb_lease_until(int64_t now_us) {
  int64_t until = now_us + (int64_t)BENCH_LEASE_S * 1000000;
  return (until + 999999) / 1000000 * 1000000;
}

/* ---- The database, and dropping it whatever ends the run ------------------------------------ */

static pthread_mutex_t cleanup_mu = PTHREAD_MUTEX_INITIALIZER;
static bool database_made, database_dropped;

/* Ends this run's other sessions (a row lock transaction left open would hold the table's
 * metadata lock, which the drop waits for) and drops the database. Never dies: it runs from
 * exit and from the signal thread. */
static void drop_database(void) {
  pthread_mutex_lock(&cleanup_mu);
  if (!database_made || database_dropped) {
    pthread_mutex_unlock(&cleanup_mu);
    return;
  }
  database_dropped = true;
  bench_interrupted(); /* the sessions ended here fail elsewhere: not the run's failures */
  char why[512] = "", sql[160];
  MYSQL *c = try_connect(NULL, why, sizeof why);
  snprintf(sql, sizeof sql, "SET SESSION lock_wait_timeout = %d", CLEANUP_LOCK_WAIT_S);
  bool ok = c && !mysql_query(c, sql);
  snprintf(sql, sizeof sql,
           "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '%s' AND ID <> "
           "CONNECTION_ID()",
           database);
  MYSQL_RES *res = ok && !mysql_query(c, sql) ? mysql_store_result(c) : NULL;
  ok = ok && res;
  for (MYSQL_ROW row; res && (row = mysql_fetch_row(res));) {
    snprintf(sql, sizeof sql, "KILL CONNECTION %s", row[0]);
    if (mysql_query(c, sql) && mysql_errno(c) != ER_NO_SUCH_THREAD)
      ok = false; /* one gone meanwhile is fine */
  }
  if (res)
    mysql_free_result(res);
  snprintf(sql, sizeof sql, "DROP DATABASE %s", database);
  ok = ok && !mysql_query(c, sql);
  if (!ok)
    fprintf(stderr, "%s: could not drop database %s: %s\n", PROGRAM, database,
            c ? mysql_error(c) : why);
  if (c)
    mysql_close(c);
  pthread_mutex_unlock(&cleanup_mu);
}

static void watch_signals(void) {
  char what[96];
  snprintf(what, sizeof what, "dropping database %s", database);
  bench_watch_signals(drop_database, what);
}

/* The numbers 1..10^places from a cross join of digit tables, one per decimal place. */
static size_t digits_sql(char *out, size_t cap, int64_t rows) {
  static const char digit[] = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL "
                              "SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 "
                              "UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";
  int places = 1;
  for (int64_t reach = 10; reach < rows; reach *= 10)
    places++;
  size_t n = (size_t)snprintf(out, cap, "SELECT 1");
  long long weight = 1;
  for (int p = 0; p < places; p++, weight *= 10)
    n += (size_t)snprintf(out + n, cap - n, " + d%d.d * %lld", p, weight);
  n += (size_t)snprintf(out + n, cap - n, " AS i FROM ");
  for (int p = 0; p < places; p++)
    n += (size_t)snprintf(out + n, cap - n, "%s%s d%d", p ? " CROSS JOIN " : "", digit, p);
  return n;
}

/* Fills the table with `rows` fresh rows from a cross join of digits (as fast as a sequence
 * table, and MySQL has none), then analyzes it. Returns the sum of the ids, which each side
 * must read back exactly. */
static int64_t refill(MYSQL *admin, int64_t rows) {
  char nums[2048], sql[2400];
  digits_sql(nums, sizeof nums, rows);
  int n = snprintf(sql, sizeof sql,
                   "INSERT INTO jobs (queue, payload) SELECT '%s', "
                   "RPAD(CONCAT('job-', i), %d, CHAR(97 + i %% 26)) FROM (%s) AS seq WHERE i <= "
                   "%lld",
                   BENCH_QUEUE, BENCH_PAYLOAD_LEN, nums, (long long)rows);
  if (n < 0 || (size_t)n >= sizeof sql)
    bench_die("the fill statement is too long");
  mb_query(admin, sql);
  mb_query(admin, "ANALYZE TABLE jobs");
  if (query_int(admin, "SELECT COUNT(*) FROM jobs") != rows)
    bench_die("the fill wrote other than %lld rows", (long long)rows);
  return query_int(admin, "SELECT SUM(id) FROM jobs");
}

/* After a drain: nothing may be left, not even a leased row; of a processed_at table every row,
 * each finished and none leased. */
static void expect_drained(MYSQL *admin, const bench_args *a) {
  const char *side = bench_side_name(a->side);
  int64_t left = query_int(admin, "SELECT COUNT(*) FROM jobs");
  if (bench_processed_at(a))
    bench_expect_finished(left,
                          query_int(admin, "SELECT COUNT(*) FROM jobs WHERE processed_at IS NOT "
                                           "NULL AND locked_until IS NULL"),
                          a->rows, side);
  else if (left != 0)
    bench_die("%s: %lld rows left in the table after the drain", side, (long long)left);
}

/* ---- The raw loop: the dialect's own statements (or hand-written ones) ---------------------- */

/* The statements a raw loop runs: the dialect's of one form for the "own" loop, or on a
 * processed_at table the hand-written ones for the "best" loop. */
static struct {
  tabq_stmt begin, claim, stamp, ack;       /* row lock and lease */
  tabq_stmt candidates, lock, take, unlock; /* advisory (with stamp and ack) */
  bench_projection pr;                      /* the claim's or the take's */
  int64_t counted; /* 1 when the claim returns the attempt already counted (attempt + 1) */
  bool by_ids;     /* one stamp and one ack for a claim's rows, by a JSON array of their ids */
} own;

typedef struct raw_values {
  int64_t now, lease_until, token, id, limit;
  const char *key;
  unsigned long key_len;
  const char *ids; /* a claim's ids as a JSON array, "[1,2,3]" */
  unsigned long ids_len;
} raw_values;

#define RAW_MAX_COLS 8

/* One result column as the driver binds it: integers widened to 64 bits, the rest as bytes
 * into a buffer grown to the field's longest value. */
typedef struct raw_col {
  bool integer;
  int64_t i;
  char *buf;
  size_t cap;
  unsigned long len;
  my_bool is_null, error;
} raw_col;

/* A statement prepared on one connection, with what its parameters and columns bind to. */
typedef struct raw_stmt {
  const tabq_stmt *def;
  const char *name;
  MYSQL_STMT *st;
  MYSQL_RES *meta; /* the columns, whose max_length each buffered result updates */
  unsigned ncols;
  bool has_rows;
  MYSQL_BIND params[TABQ_STMT_MAX_PARAMS];
  union {
    int64_t i;
    MYSQL_TIME t;
  } slots[TABQ_STMT_MAX_PARAMS];
  unsigned long lengths[TABQ_STMT_MAX_PARAMS];
  MYSQL_BIND binds[RAW_MAX_COLS];
  raw_col cols[RAW_MAX_COLS];
} raw_stmt;

static bool integer_field(const MYSQL_FIELD *f) {
  return f->type == MYSQL_TYPE_TINY || f->type == MYSQL_TYPE_SHORT || f->type == MYSQL_TYPE_INT24 ||
         f->type == MYSQL_TYPE_LONG || f->type == MYSQL_TYPE_LONGLONG;
}

/* Prepared as the driver prepares (max_length kept for the column buffers). `pr` (claims and
 * takes) checks that id and attempt are integers and the payload binary. */
static void raw_prepare(MYSQL *c, raw_stmt *s, const tabq_stmt *def, const char *name,
                        const bench_projection *pr) {
  memset(s, 0, sizeof *s);
  s->def = def;
  s->name = name;
  s->st = mb_prepare(c, def->sql, def->nparams);
  my_bool on = 1;
  if (mysql_stmt_attr_set(s->st, STMT_ATTR_UPDATE_MAX_LENGTH, &on))
    mb_stmt_fail(s->st, name);
  s->meta = mysql_stmt_result_metadata(s->st);
  s->ncols = s->meta ? mysql_num_fields(s->meta) : 0;
  if (s->ncols > RAW_MAX_COLS)
    bench_die("%s: %u columns", def->sql, s->ncols);
  if (pr) {
    MYSQL_FIELD *f = mysql_fetch_fields(s->meta);
    if ((int)s->ncols != pr->n || !integer_field(&f[pr->id]) || !integer_field(&f[pr->attempt]) ||
        integer_field(&f[pr->payload]) || f[pr->payload].charsetnr != 63)
      bench_die("%s: the projection's columns are not the integers and bytes the loop reads",
                def->sql);
  }
}

static void raw_close(raw_stmt *s) {
  if (s->meta)
    mysql_free_result(s->meta);
  mysql_stmt_close(s->st);
  for (unsigned i = 0; i < RAW_MAX_COLS; i++)
    free(s->cols[i].buf);
}

/* Binds every placeholder by the parameter id the dialect put there, as the core's statement
 * runner does and as the driver codes the values, and executes. Returns the rows matched, or
 * the rows returned (all buffered, as the driver buffers them). */
static uint64_t raw_exec(raw_stmt *s, const raw_values *v) {
  if (s->has_rows)
    mysql_stmt_free_result(s->st);
  s->has_rows = false;
  const tabq_stmt *def = s->def;
  for (unsigned i = 0; i < def->nparams; i++) {
    MYSQL_BIND *b = &s->params[i];
    memset(b, 0, sizeof *b);
    b->length = &s->lengths[i];
    s->lengths[i] = 0;
    switch (def->params[i]) {
    case TABQ_P_ID:
    case TABQ_P_LIMIT:
      s->slots[i].i = def->params[i] == TABQ_P_ID ? v->id : v->limit;
      b->buffer_type = MYSQL_TYPE_LONGLONG;
      b->buffer = &s->slots[i].i;
      break;
    case TABQ_P_GROUP:
    case TABQ_P_KEY:
      b->buffer_type = MYSQL_TYPE_STRING;
      b->buffer = def->params[i] == TABQ_P_GROUP ? (void *)BENCH_QUEUE : (void *)v->key;
      s->lengths[i] = def->params[i] == TABQ_P_GROUP ? sizeof BENCH_QUEUE - 1 : v->key_len;
      b->buffer_length = s->lengths[i];
      break;
    case TABQ_P_IDS:
      b->buffer_type = MYSQL_TYPE_STRING;
      b->buffer = (void *)v->ids;
      s->lengths[i] = v->ids_len;
      b->buffer_length = s->lengths[i];
      break;
    case TABQ_P_NOW:
    case TABQ_P_LEASE_UNTIL:
    case TABQ_P_TOKEN:
      mb_time(&s->slots[i].t, def->params[i] == TABQ_P_NOW           ? v->now
                              : def->params[i] == TABQ_P_LEASE_UNTIL ? v->lease_until
                                                                     : v->token);
      b->buffer_type = MYSQL_TYPE_DATETIME;
      b->buffer = &s->slots[i].t;
      break;
    default:
      bench_die("the own loop binds no parameter id %u", def->params[i]);
    }
  }
  if (def->nparams && mysql_stmt_bind_param(s->st, s->params))
    mb_stmt_fail(s->st, s->name);
  if (mysql_stmt_execute(s->st))
    mb_stmt_fail(s->st, s->name);
  if (mysql_stmt_field_count(s->st) == 0)
    return mysql_stmt_affected_rows(s->st);
  if (mysql_stmt_store_result(s->st))
    mb_stmt_fail(s->st, s->name);
  s->has_rows = true;
  MYSQL_FIELD *f = s->meta ? mysql_fetch_fields(s->meta) : NULL;
  for (unsigned i = 0; f && i < s->ncols; i++) {
    MYSQL_BIND *b = &s->binds[i];
    raw_col *col = &s->cols[i];
    memset(b, 0, sizeof *b);
    b->is_null = &col->is_null;
    b->length = &col->len;
    b->error = &col->error;
    col->integer = integer_field(&f[i]);
    if (col->integer) {
      b->buffer_type = MYSQL_TYPE_LONGLONG;
      b->buffer = &col->i;
      b->buffer_length = sizeof col->i;
      continue;
    }
    size_t need = f[i].max_length + 1 < 64 ? 64 : f[i].max_length + 1;
    if (need > col->cap) {
      free(col->buf);
      if (!(col->buf = malloc(need)))
        bench_die("out of memory");
      col->cap = need;
    }
    b->buffer_type = MYSQL_TYPE_BLOB;
    b->buffer = col->buf;
    b->buffer_length = (unsigned long)col->cap;
  }
  if (s->ncols && mysql_stmt_bind_result(s->st, s->binds))
    mb_stmt_fail(s->st, s->name);
  return mysql_stmt_num_rows(s->st);
}

/* The next buffered row; false past the last. */
static bool raw_next(raw_stmt *s) {
  int rc = mysql_stmt_fetch(s->st);
  if (rc == MYSQL_NO_DATA)
    return false;
  if (rc == MYSQL_DATA_TRUNCATED)
    bench_die("%s: a value came longer than its column's max_length", s->name);
  if (rc)
    mb_stmt_fail(s->st, s->name);
  return true;
}

/* What a handler reads of the current row: id, the attempt as it stood before this claim
 * (the dialect's projection has counted it already), the payload. Returns the id. */
static int64_t raw_tally(raw_stmt *s, bench_tally *t) {
  const bench_projection *pr = &own.pr;
  raw_col *id = &s->cols[pr->id], *attempt = &s->cols[pr->attempt],
          *payload = &s->cols[pr->payload];
  if (id->is_null || attempt->is_null || payload->is_null)
    bench_die("%s: a row came back with a NULL id, attempt or payload", s->name);
  t->rows++;
  t->id_sum += id->i;
  t->attempt_sum += attempt->i - own.counted;
  t->bytes += (int64_t)payload->len;
  return id->i;
}

static void expect_changed(uint64_t changed, const char *what, int64_t id) {
  if (changed != 1)
    bench_die("%s of row %lld changed %llu rows", what, (long long)id, (unsigned long long)changed);
}

/* The dialect's begin text run as the driver runs it: statement by statement, since the
 * connection takes no multi-statement text. */
static void run_begin(MYSQL *c, const char *begin) {
  for (const char *s = begin; *s;) {
    while (*s == ' ' || *s == ';')
      s++;
    size_t n = strcspn(s, ";");
    if (n)
      mb_query_n(c, s, n);
    s += n;
  }
}

/* A 1 or 0 answer of GET_LOCK or RELEASE_LOCK (NULL reads 0). */
static int64_t raw_answer(raw_stmt *s, const raw_values *v) {
  raw_exec(s, v);
  int64_t answer = raw_next(s) && !s->cols[0].is_null ? s->cols[0].i : 0;
  while (raw_next(s))
    ;
  return answer;
}

/* A batch's stamp or ack, by the JSON array of its ids: every row must be changed. */
static void expect_changed_all(uint64_t changed, const char *what, unsigned n) {
  if (changed != n)
    bench_die("%s of %u rows changed %llu", what, n, (unsigned long long)changed);
}

/* One connection draining until its claim comes back empty: a claim of --batch rows in a
 * transaction opened by the begin, the stamp of each row, then the ack of each row (or one
 * stamp and one ack by their ids), in the row lock form before the commit, in the lease form
 * after it (autocommit). */
static void own_claims(MYSQL *c, bench_loop *l, bool rowlock) {
  raw_stmt claim, stamp, ack;
  raw_prepare(c, &claim, &own.claim, "claim", &own.pr);
  raw_prepare(c, &stamp, &own.stamp, "stamp", NULL);
  raw_prepare(c, &ack, &own.ack, "ack", NULL);
  int64_t *ids = calloc(l->a->batch, sizeof *ids);
  size_t list_cap = (size_t)l->a->batch * 21 + 4;
  char *list = malloc(list_cap);
  if (!ids || !list)
    bench_die("out of memory");
  pthread_barrier_wait(l->ready);

  l->start = bench_mono_s();
  for (;;) {
    raw_values v = {.now = bench_now_us(), .limit = l->a->batch};
    v.lease_until = mb_lease_until(v.now);
    run_begin(c, own.begin.sql);
    raw_exec(&claim, &v);
    unsigned n = 0;
    while (raw_next(&claim))
      ids[n++] = raw_tally(&claim, &l->t);
    if (n == 0) {
      if (mysql_rollback(c)) /* nothing to hold, as tabq ends an empty claim */
        mb_fail(c, "ROLLBACK");
      break;
    }
    if (own.by_ids) {
      size_t used = 0;
      for (unsigned i = 0; i < n; i++)
        used += (size_t)snprintf(list + used, list_cap - used, "%c%lld", i ? ',' : '[',
                                 (long long)ids[i]);
      snprintf(list + used, list_cap - used, "]");
      v.ids = list;
      v.ids_len = (unsigned long)used + 1;
      expect_changed_all(raw_exec(&stamp, &v), "stamp", n);
    }
    for (unsigned i = 0; !own.by_ids && i < n; i++) {
      v.id = ids[i];
      expect_changed(raw_exec(&stamp, &v), "stamp", v.id);
    }
    if (!rowlock)
      mb_commit(c);
    v.token = v.lease_until;
    v.now = bench_now_us(); /* what a processed_at ack writes: the time of the ack */
    if (own.by_ids)
      expect_changed_all(raw_exec(&ack, &v), "ack", n);
    for (unsigned i = 0; !own.by_ids && i < n; i++) {
      v.id = ids[i];
      expect_changed(raw_exec(&ack, &v), "ack", v.id);
    }
    if (rowlock)
      mb_commit(c);
  }
  l->end = bench_mono_s();
  free(ids);
  free(list);
  raw_close(&claim);
  raw_close(&stamp);
  raw_close(&ack);
}

/* One connection draining one row at a time as tabq's advisory claim does: the candidates (the
 * rows wanted plus one per worker, which may be in work elsewhere), GET_LOCK on each name until
 * one is taken, the take, the stamp; then the ack in autocommit and the release. Done once the
 * candidates come back empty. */
static void own_advisory(MYSQL *c, bench_loop *l) {
  raw_stmt cand, lock, take, stamp, ack, unlock;
  raw_prepare(c, &cand, &own.candidates, "candidates", NULL);
  raw_prepare(c, &lock, &own.lock, "lock", NULL);
  raw_prepare(c, &take, &own.take, "take", &own.pr);
  raw_prepare(c, &stamp, &own.stamp, "stamp", NULL);
  raw_prepare(c, &ack, &own.ack, "ack", NULL);
  raw_prepare(c, &unlock, &own.unlock, "unlock", NULL);
  unsigned want = 1 + l->a->workers;
  int64_t *ids = calloc(want, sizeof *ids);
  char(*keys)[KEY_MAX] = calloc(want, sizeof *keys);
  unsigned long *key_lens = calloc(want, sizeof *key_lens);
  if (!ids || !keys || !key_lens)
    bench_die("out of memory");
  pthread_barrier_wait(l->ready);

  l->start = bench_mono_s();
  for (;;) {
    raw_values v = {.now = bench_now_us(), .limit = want};
    raw_exec(&cand, &v);
    unsigned n = 0;
    while (raw_next(&cand)) {
      if (cand.cols[0].is_null || cand.cols[1].is_null || cand.cols[1].len >= KEY_MAX)
        bench_die("candidates: a row came back with a NULL id or an unusable key");
      ids[n] = cand.cols[0].i;
      memcpy(keys[n], cand.cols[1].buf, cand.cols[1].len);
      key_lens[n++] = cand.cols[1].len;
    }
    if (n == 0)
      break;
    for (unsigned i = 0; i < n; i++) {
      v.key = keys[i];
      v.key_len = key_lens[i];
      if (raw_answer(&lock, &v) != 1)
        continue; /* held elsewhere: pass it over */
      v.id = ids[i];
      v.now = bench_now_us();
      bool taken = raw_exec(&take, &v) > 0 && raw_next(&take);
      if (taken) {
        raw_tally(&take, &l->t);
        while (raw_next(&take))
          ;
        expect_changed(raw_exec(&stamp, &v), "stamp", v.id);
        expect_changed(raw_exec(&ack, &v), "ack", v.id);
      }
      if (raw_answer(&unlock, &v) != 1)
        bench_die("the release of key %s was not confirmed", keys[i]);
      if (taken)
        break;
    }
  }
  l->end = bench_mono_s();
  free(ids);
  free(keys);
  free(key_lens);
  raw_stmt *all[] = {&cand, &lock, &take, &stamp, &ack, &unlock};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    raw_close(all[i]);
}

static void *own_main(void *arg) {
  bench_loop *l = arg;
  MYSQL *c = mb_connect(database);
  if (l->a->side == BENCH_BEST) { /* the session as mysql_best.c sets it up */
    mb_query(c, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    if (l->a->form == TABQ_FORM_ROWLOCK && mysql_autocommit(c, 0))
      mb_fail(c, "autocommit = 0");
  }
  if (l->a->form == TABQ_FORM_ADVISORY)
    own_advisory(c, l);
  else
    own_claims(c, l, l->a->form == TABQ_FORM_ROWLOCK);
  mysql_close(c);
  return NULL;
}

/* ---- Main ----------------------------------------------------------------------------------- */

static const char *const usage =
    "usage: " PROGRAM " [--side tabq|own|best] [--form rowlock|lease|advisory] [--workers N]\n"
    "                        [--batch N] [--rows N] [--sql]\n"
    "                        [--table plain|processed|processed-naive] [--coalesce-us US]\n"
    "  one drain of --rows rows (default 20000) by one side, printed as one JSON line;\n"
    "  --table processed keeps finished rows (processed_at) with the index\n"
    "  (queue, processed_at, id), processed-naive with the plain (queue, id); --coalesce-us\n"
    "  turns on coalesce_acks (tabq, lease) with that window;\n"
    "  the server's URL from " URL_ENV " (mysql://user:pass@host:port/db; the user\n"
    "  creates and drops a database of the run's own), mysqld's pid (for the server's CPU\n"
    "  per row) from TABQ_BENCH_SERVER_PID\n";

/* The description the run drains: its form's, with processed_at on a table that keeps its rows. */
static tabq_table drained;

static const tabq_table *describe(const bench_args *a) {
  drained = a->form == TABQ_FORM_ROWLOCK ? rowlock_jobs
            : a->form == TABQ_FORM_LEASE ? lease_jobs
                                         : advisory_jobs;
  drained.processed_at.name = bench_processed_at(a);
  return &drained;
}

/* As bench_build, with the connection's database, which advisory lock names start with. */
static void build(tabq_build_fn fn, tabq_form form, const char *what, tabq_stmt *st) {
  tabq_build b = {.table = &drained, .form = form, .database = database};
  tabq_sql_init(st, &bench_host);
  int rc = fn(&b, st);
  if (rc == TABQ_OK)
    rc = st->status;
  if (rc != TABQ_OK || !st->sql)
    bench_die("the dialect built no %s statement (%s)", what, tabq_code_name((tabq_code)rc));
}

/* The claim tabq runs: claim_one for claims of one row, claim for a batch. */
static void build_own(tabq_form form, unsigned batch) {
  if (form == TABQ_FORM_ADVISORY) {
    build(tabq_my_advisory.candidates, form, "candidates", &own.candidates);
    build(tabq_my_advisory.lock, form, "lock", &own.lock);
    build(tabq_my_advisory.take, form, "take", &own.take);
    build(tabq_my_advisory.stamp, form, "stamp", &own.stamp);
    build(tabq_my_advisory.unlock, form, "unlock", &own.unlock);
    own.pr = bench_project(&own.take, &drained);
  } else {
    bool rowlock = form == TABQ_FORM_ROWLOCK;
    tabq_build_fn one = rowlock ? tabq_my_rowlock.claim_one : tabq_my_lease.claim_one;
    build(batch == 1 && one ? one
          : rowlock         ? tabq_my_rowlock.claim
                            : tabq_my_lease.claim,
          form, "claim", &own.claim);
    build(rowlock ? tabq_my_rowlock.stamp : tabq_my_lease.stamp, form, "stamp", &own.stamp);
    /* The table declares no isolation level: the default, as the core builds every begin. */
    build(tabq_my_dialect.begin, form, "begin", &own.begin);
    own.pr = bench_project(&own.claim, &drained);
  }
  build(tabq_my_dialect.ack, form, "ack", &own.ack);
  own.counted = 1;
}

/* The raw loop's statements for the best side on a processed_at table (mysql_processed.c):
 * the row lock session runs with autocommit off (own_main), so its claim opens the transaction. */
static void build_best_processed(const bench_args *a) {
  mb_processed_statements(a, &own.claim, &own.stamp, &own.ack, &own.begin);
  own.pr = (bench_projection){.id = 0, .attempt = 1, .payload = 2, .n = 3};
  own.counted = 0; /* the claim reads the attempt before its stamp counts it */
  own.by_ids = a->batch > 1;
}

static void print_own(const char *side, tabq_form form) {
  if (form == TABQ_FORM_ADVISORY)
    fprintf(stderr, "%s advisory: %s; %s; %s; %s; %s; %s\n", side, own.candidates.sql, own.lock.sql,
            own.take.sql, own.stamp.sql, own.ack.sql, own.unlock.sql);
  else if (form == TABQ_FORM_ROWLOCK)
    fprintf(stderr, "%s rowlock: %s; %s; %s; %s; COMMIT\n", side,
            own.begin.sql[0] ? own.begin.sql : "(autocommit = 0)", own.claim.sql, own.stamp.sql,
            own.ack.sql);
  else
    fprintf(stderr, "%s lease: %s; %s; %s; COMMIT; %s\n", side, own.begin.sql, own.claim.sql,
            own.stamp.sql, own.ack.sql);
}

static void free_own(void) {
  tabq_stmt *all[] = {&own.begin,      &own.claim, &own.stamp, &own.ack,
                      &own.candidates, &own.lock,  &own.take,  &own.unlock};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i]->sql)
      tabq_sql_free(all[i]);
}

int main(int argc, char **argv) {
  bench_init(PROGRAM);
  bench_args a;
  bench_parse_args(argc, argv, TABQ_FORM_ROWLOCK | TABQ_FORM_LEASE | TABQ_FORM_ADVISORY,
                   DEFAULT_ROWS, usage, &a);
  if (a.side != BENCH_TABQ && a.form == TABQ_FORM_ADVISORY && a.batch > 1) {
    fprintf(stderr,
            PROGRAM ": the %s loop claims one row at a time in the advisory form (each row "
                    "holds its key on a connection of its own); run it with --batch 1\n",
            bench_side_name(a.side));
    return 2;
  }
  base_url = getenv(URL_ENV);
  if (!base_url || !*base_url) {
    fprintf(stderr, PROGRAM ": " URL_ENV " is not set; point it at a MariaDB or MySQL server "
                            "where the user may create a database, e.g. "
                            "mysql://tabq:tabq@127.0.0.1:53306/tabq_test\n");
    return 2;
  }
  /* mysql_best.c's advisory loop deletes its rows; a processed_at one is left to tabq. */
  bool best_processed = a.side == BENCH_BEST && bench_processed_at(&a);
  if (best_processed && a.form == TABQ_FORM_ADVISORY) {
    fprintf(stderr, PROGRAM ": the best loop on a processed_at table runs the row lock and lease "
                            "forms, not advisory\n");
    return 2;
  }
  parse_url();
  const tabq_table *table = describe(&a);
  /* The builders report failures through the host the core would have lent. */
  tabq_my_set_host(&bench_host);
  if (a.side == BENCH_OWN)
    build_own(a.form, a.batch);
  else if (best_processed)
    build_best_processed(&a);
  bool raw_loop = a.side == BENCH_OWN || best_processed;
  if (a.show_sql && raw_loop)
    print_own(bench_side_name(a.side), a.form);
  else if (a.show_sql && a.side == BENCH_BEST)
    mb_best_print(&a);
  if (mysql_library_init(0, NULL, NULL)) /* once, before any thread connects */
    bench_die("mysql_library_init failed");

  watch_signals(); /* before any other thread, so every one inherits the blocked signals */
  MYSQL *admin = mb_connect(NULL);
  char sql[96];
  snprintf(sql, sizeof sql, "CREATE DATABASE %s CHARACTER SET utf8mb4", database);
  if (mysql_query(admin, sql))
    bench_die("cannot create database %s (the benchmark needs a user who may create and drop "
              "one): %s",
              database, mysql_error(admin));
  pthread_mutex_lock(&cleanup_mu);
  database_made = true;
  pthread_mutex_unlock(&cleanup_mu);
  if (mysql_select_db(admin, database))
    mb_fail(admin, "USE");
  char ddl[512];
  snprintf(ddl, sizeof ddl, table_sql,
           bench_processed_at(&a) ? " processed_at DATETIME(6) NULL," : "",
           a.table == BENCH_TABLE_PROCESSED ? "queue, processed_at, id" : "queue, id");
  mb_query(admin, ddl);
  int64_t ids = refill(admin, a.rows);

  bench_tally t;
  double cpu = bench_cpu_s(), server_cpu = bench_server_cpu_s(), seconds;
  if (a.side == BENCH_TABQ)
    seconds = bench_run_tabq(url, table, &a, &t);
  else
    seconds = bench_run_loops(raw_loop ? own_main : mb_best_main, &a, &t);
  cpu = bench_cpu_s() - cpu;
  double server_end = bench_server_cpu_s();
  bench_expect_tally(&t, a.rows, ids, bench_side_name(a.side));
  expect_drained(admin, &a);

  bench_result r = {.db = "mysql",
                    .server_version = mysql_get_server_info(admin),
                    .seconds = seconds,
                    .client_cpu_s = cpu,
                    .server_cpu_s =
                        server_cpu >= 0 && server_end >= 0 ? server_end - server_cpu : -1};
  bench_emit(&a, &r);
  mysql_close(admin);
  drop_database();
  free_own();
  mysql_library_end();
  return 0;
}
