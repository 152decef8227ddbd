/* The best MariaDB/MySQL a programmer would write by hand for each form's guarantee, with the
 * same table, index and checks as tabq: the attempt counted at every claim, the lease's expiry
 * checked by every settlement, rows claimed in id order and never twice at once. Each statement
 * is prepared once per connection, its parameters and columns bound once, and run on the binary
 * protocol; rows are read as they arrive (nothing buffered). Row lock and lease sessions run at
 * READ COMMITTED, set once per session (as tabq's claims run, but tabq sets it before every
 * transaction). Neither server returns rows from an UPDATE, so a claim selects, then stamps.
 *
 * Row lock (the session in autocommit = 0: the claim's SELECT opens the transaction, saving a
 * START TRANSACTION round trip; the rows stay locked until the commit):
 *   claim    SELECT id, attempt, payload FROM jobs WHERE queue = ? ORDER BY id LIMIT 1
 *            FOR UPDATE SKIP LOCKED            (n rows: LIMIT ?)
 *   stamp    UPDATE jobs SET attempt = attempt + 1 WHERE id = ?      (n rows: UPDATE IDS SET
 *            j.attempt = j.attempt + 1)
 *            The stamp stays: the attempt must be counted within the claim, so a retry or a
 *            delivery dropped unsettled commits it. It cannot ride on the claim (no UPDATE ...
 *            RETURNING, and no SKIP LOCKED in an UPDATE), nor on the ack, which deletes the row.
 *   settle   DELETE FROM jobs WHERE id = ?                            (n rows: DELETE j FROM IDS)
 *   COMMIT   (an empty claim: ROLLBACK)
 * Lease (autocommit; the claim in a short transaction whose expiry is the token):
 *   START TRANSACTION
 *   claim    SELECT id, attempt, payload FROM jobs WHERE queue = ? AND (locked_until IS NULL
 *            OR locked_until <= ?) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED  (n rows: LIMIT ?)
 *   stamp    UPDATE jobs SET locked_until = ?, attempt = attempt + 1 WHERE id = ?
 *            (n rows: UPDATE IDS SET j.locked_until = ?, j.attempt = j.attempt + 1)
 *   COMMIT
 *   settle   DELETE FROM jobs WHERE id = ? AND locked_until = ?   (n rows: DELETE j FROM IDS
 *            WHERE j.locked_until = ?; a row the count misses has lost its lease)
 * Advisory (autocommit; a GET_LOCK session lock on the name tabq's dialect gives the row,
 * '<database>.job-<id>', one row at a time):
 *   lock     SELECT id, payload FROM jobs WHERE queue = ? AND GET_LOCK(CONCAT('<database>.job-',
 *            id), 0) ORDER BY id LIMIT 1   (the scan in id order stops at the first name it gets;
 *            the payload never changes, so the snapshot's is the row's)
 *   take     UPDATE jobs SET attempt = LAST_INSERT_ID(attempt + 1) WHERE id = ? AND queue = ?
 *            (counts the attempt and returns it in the OK packet, in one round trip; no row:
 *            settled by another between the lock's snapshot and its lock)
 *   settle   DELETE FROM jobs WHERE id = ?
 *   release  SELECT IS_USED_LOCK(CONCAT('<database>.job-', ?)) = CONNECTION_ID(),
 *            RELEASE_ALL_LOCKS()   (confirms the session held the row's name, then frees every
 *            name it holds: the lock's scan may take one twice or take another, since InnoDB
 *            evaluates a condition pushed into an index scan again on a row version it rebuilds;
 *            seen as 2 names freed after one row, with 4 workers)
 *
 * IDS, a batch's rows: JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS k STRAIGHT_JOIN
 * jobs AS j FORCE INDEX (PRIMARY) ON j.id = k.id, the ids bound as one JSON array. Not
 * id IN (?, ...): once the table has shrunk to about the list's length (the end of every drain)
 * the optimizer scans the whole table for it, and a DELETE waits on every locked row it scans
 * (only an UPDATE passes over them at READ COMMITTED), so two batches' settlements deadlocked.
 * The join, in its forced order, reaches each id by its key alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_bench.h"

#define PAYLOAD_CAP 256

#define COLS "SELECT id, attempt, payload FROM jobs WHERE queue = ? "
#define DUE "AND (locked_until IS NULL OR locked_until <= ?) "
#define ORDER "ORDER BY id LIMIT "
#define SKIP " FOR UPDATE SKIP LOCKED"
#define IDS                                                                                        \
  "JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS k STRAIGHT_JOIN jobs AS j FORCE INDEX "   \
  "(PRIMARY) ON j.id = k.id"

/* The statements of one form and batch size. */
typedef struct best_sql {
  const char *claim, *stamp, *ack, *lock, *unlock;
} best_sql;

static best_sql sql_of(const bench_args *a) {
  bool many = a->batch > 1;
  switch (a->form) {
  case TABQ_FORM_ROWLOCK:
    return (best_sql){
        .claim = many ? COLS ORDER "?" SKIP : COLS ORDER "1" SKIP,
        .stamp = many ? "UPDATE " IDS " SET j.attempt = j.attempt + 1"
                      : "UPDATE jobs SET attempt = attempt + 1 WHERE id = ?",
        .ack = many ? "DELETE j FROM " IDS : "DELETE FROM jobs WHERE id = ?",
    };
  case TABQ_FORM_LEASE:
    return (best_sql){
        .claim = many ? COLS DUE ORDER "?" SKIP : COLS DUE ORDER "1" SKIP,
        .stamp = many ? "UPDATE " IDS " SET j.locked_until = ?, j.attempt = j.attempt + 1"
                      : "UPDATE jobs SET locked_until = ?, attempt = attempt + 1 WHERE id = ?",
        .ack = many ? "DELETE j FROM " IDS " WHERE j.locked_until = ?"
                    : "DELETE FROM jobs WHERE id = ? AND locked_until = ?",
    };
  default:
    return (best_sql){
        .lock = "SELECT id, payload FROM jobs WHERE queue = ? AND GET_LOCK(CONCAT('%s.job-', "
                "id), 0) ORDER BY id LIMIT 1",
        .stamp = "UPDATE jobs SET attempt = LAST_INSERT_ID(attempt + 1) WHERE id = ? AND "
                 "queue = ?",
        .ack = "DELETE FROM jobs WHERE id = ?",
        .unlock = "SELECT IS_USED_LOCK(CONCAT('%s.job-', ?)) = CONNECTION_ID(), "
                  "RELEASE_ALL_LOCKS()",
    };
  }
}

/* `pattern` with the run's database for its %s, in memory of its own. */
static char *with_database(const char *pattern) {
  size_t n = strlen(pattern) + strlen(mb_database) + 1;
  char *out = malloc(n);
  if (!out)
    bench_die("out of memory");
  snprintf(out, n, pattern, mb_database);
  return out;
}

void mb_best_print(const bench_args *a) {
  best_sql s = sql_of(a);
  if (a->form == TABQ_FORM_ROWLOCK)
    fprintf(stderr, "best rowlock (autocommit = 0): %s; %s; %s; COMMIT\n", s.claim, s.stamp, s.ack);
  else if (a->form == TABQ_FORM_LEASE)
    fprintf(stderr, "best lease: START TRANSACTION; %s; %s; COMMIT; %s\n", s.claim, s.stamp, s.ack);
  else {
    char *lock = with_database(s.lock), *unlock = with_database(s.unlock);
    fprintf(stderr, "best advisory: %s; %s; %s; %s\n", lock, s.stamp, s.ack, unlock);
    free(lock);
    free(unlock);
  }
}

/* One loop's connection, statements and the buffers they are bound to once. */
typedef struct best {
  bench_loop *l;
  MYSQL *c;
  MYSQL_STMT *claim, *stamp, *ack, *unlock;
  int64_t one_id; /* a row's id; a batch's go out as one JSON array: */
  char *ids;
  size_t ids_cap;
  unsigned long ids_len;
  int64_t limit;
  MYSQL_TIME now, until;
  unsigned long queue_len;
  /* a claim's columns: id, attempt, payload (the advisory lock's: id, payload) */
  int64_t id, attempt;
  int64_t held, released; /* the advisory release's answers */
  char payload[PAYLOAD_CAP];
  unsigned long payload_len;
  my_bool nulls[3];
} best;

static void bind_int(MYSQL_BIND *b, int64_t *v) {
  memset(b, 0, sizeof *b);
  b->buffer_type = MYSQL_TYPE_LONGLONG;
  b->buffer = v;
}

static void bind_time(MYSQL_BIND *b, MYSQL_TIME *t) {
  memset(b, 0, sizeof *b);
  b->buffer_type = MYSQL_TYPE_DATETIME;
  b->buffer = t;
}

static void bind_queue(MYSQL_BIND *b, best *x) {
  memset(b, 0, sizeof *b);
  x->queue_len = sizeof BENCH_QUEUE - 1;
  b->buffer_type = MYSQL_TYPE_STRING;
  b->buffer = (void *)BENCH_QUEUE;
  b->buffer_length = x->queue_len;
  b->length = &x->queue_len;
}

static void bind_params(MYSQL_STMT *st, MYSQL_BIND *b) {
  if (mysql_stmt_bind_param(st, b))
    mb_stmt_fail(st, "bind");
}

/* The claim's (or the advisory lock's) columns. */
static void bind_rows(best *x, MYSQL_STMT *st, bool with_attempt) {
  MYSQL_BIND b[3];
  unsigned n = 0;
  bind_int(&b[n], &x->id);
  b[n++].is_null = &x->nulls[0];
  if (with_attempt) {
    bind_int(&b[n], &x->attempt);
    b[n++].is_null = &x->nulls[1];
  }
  memset(&b[n], 0, sizeof b[n]);
  b[n].buffer_type = MYSQL_TYPE_BLOB;
  b[n].buffer = x->payload;
  b[n].buffer_length = sizeof x->payload;
  b[n].length = &x->payload_len;
  b[n].is_null = &x->nulls[2];
  if (mysql_stmt_field_count(st) != n + 1 || mysql_stmt_bind_result(st, b))
    bench_die("best: the claim's columns are not the ones bound");
}

/* The next row of the claim or the lock; false past the last. */
static bool fetch(MYSQL_STMT *st) {
  int rc = mysql_stmt_fetch(st);
  if (rc == MYSQL_NO_DATA)
    return false;
  if (rc == MYSQL_DATA_TRUNCATED)
    bench_die("best: a payload longer than %d bytes", PAYLOAD_CAP);
  if (rc)
    mb_stmt_fail(st, "fetch");
  return true;
}

static void execute(MYSQL_STMT *st, const char *what) {
  if (mysql_stmt_execute(st))
    mb_stmt_fail(st, what);
}

static void expect_changed(MYSQL_STMT *st, unsigned want, const char *what) {
  my_ulonglong got = mysql_stmt_affected_rows(st);
  if (got != want)
    bench_die("best %s changed %llu rows, not %u", what, (unsigned long long)got, want);
}

/* What a handler would read of the current row; `attempt` as it stood before this claim. */
static void tally(best *x, int64_t attempt) {
  if (x->nulls[0] || x->nulls[1] || x->nulls[2])
    bench_die("best: a claimed row has a NULL id, attempt or payload");
  x->l->t.rows++;
  x->l->t.id_sum += x->id;
  x->l->t.attempt_sum += attempt;
  x->l->t.bytes += (int64_t)x->payload_len;
}

/* ---- Row lock and lease --------------------------------------------------------------------- */

static void bind_ids(MYSQL_BIND *b, best *x) {
  memset(b, 0, sizeof *b);
  b->buffer_type = MYSQL_TYPE_STRING;
  b->buffer = x->ids;
  b->buffer_length = (unsigned long)x->ids_cap;
  b->length = &x->ids_len;
}

static void prepare_claims(best *x, const best_sql *s, bool lease, bool many) {
  x->claim = mb_prepare(x->c, s->claim, (lease ? 2u : 1u) + many);
  x->stamp = mb_prepare(x->c, s->stamp, 1u + lease);
  x->ack = mb_prepare(x->c, s->ack, 1u + lease);
  MYSQL_BIND b[3];
  unsigned n = 0;
  bind_queue(&b[n++], x);
  if (lease)
    bind_time(&b[n++], &x->now);
  if (many)
    bind_int(&b[n++], &x->limit);
  bind_params(x->claim, b);
  bind_rows(x, x->claim, true);
  /* The ids come first in a batch's statements (in FROM), last in a row's (in WHERE). */
  MYSQL_BIND *ids = &b[lease && !many ? 1 : 0], *until = &b[lease && !many ? 0 : 1];
  if (many)
    bind_ids(ids, x);
  else
    bind_int(ids, &x->one_id);
  bind_time(until, &x->until);
  bind_params(x->stamp, b);
  if (!many) { /* the row's ack: WHERE id = ? AND locked_until = ? */
    bind_int(&b[0], &x->one_id);
    bind_time(&b[1], &x->until);
  }
  bind_params(x->ack, b);
}

/* One claim and its settlement; false once the claim comes back empty. */
static bool claim_round(best *x, bool lease, bool many) {
  if (lease) {
    mb_query(x->c, "START TRANSACTION");
    int64_t now = bench_now_us();
    mb_time(&x->now, now);
    mb_time(&x->until, mb_lease_until(now));
  }
  execute(x->claim, "claim");
  unsigned n = 0;
  size_t used = 0;
  while (fetch(x->claim)) {
    x->one_id = x->id;
    if (many)
      used += (size_t)snprintf(x->ids + used, x->ids_cap - used, "%c%lld", n ? ',' : '[',
                               (long long)x->id);
    n++;
    tally(x, x->attempt);
  }
  if (n == 0) {
    if (mysql_rollback(x->c))
      mb_fail(x->c, "ROLLBACK");
    return false;
  }
  if (many) {
    snprintf(x->ids + used, x->ids_cap - used, "]");
    x->ids_len = (unsigned long)used + 1;
  }
  execute(x->stamp, "stamp");
  expect_changed(x->stamp, n, "stamp");
  if (lease)
    mb_commit(x->c);
  execute(x->ack, "ack");
  expect_changed(x->ack, n, lease ? "ack (a lease lost)" : "ack");
  if (!lease)
    mb_commit(x->c);
  return true;
}

/* ---- Advisory ------------------------------------------------------------------------------- */

static void prepare_advisory(best *x, const best_sql *s) {
  char *lock = with_database(s->lock), *unlock = with_database(s->unlock);
  x->claim = mb_prepare(x->c, lock, 1);
  x->stamp = mb_prepare(x->c, s->stamp, 2);
  x->ack = mb_prepare(x->c, s->ack, 1);
  x->unlock = mb_prepare(x->c, unlock, 1);
  free(lock);
  free(unlock);
  MYSQL_BIND b[2];
  bind_queue(&b[0], x);
  bind_params(x->claim, b);
  bind_rows(x, x->claim, false);
  bind_int(&b[0], &x->one_id);
  bind_queue(&b[1], x);
  bind_params(x->stamp, b);
  bind_int(&b[0], &x->one_id);
  bind_params(x->ack, b);
  bind_params(x->unlock, b);
  bind_int(&b[0], &x->held);
  bind_int(&b[1], &x->released);
  if (mysql_stmt_bind_result(x->unlock, b))
    mb_stmt_fail(x->unlock, "release");
}

static bool advisory_round(best *x) {
  execute(x->claim, "lock");
  if (!fetch(x->claim))
    return false; /* nothing left, or every name held by the other loops */
  x->one_id = x->id;
  int64_t id = x->id;
  if (fetch(x->claim))
    bench_die("best: the lock returned two rows");
  execute(x->stamp, "take");
  bool taken = mysql_stmt_affected_rows(x->stamp) == 1;
  if (taken) {
    tally(x, (int64_t)mysql_stmt_insert_id(x->stamp) - 1);
    execute(x->ack, "settle");
    expect_changed(x->ack, 1, "settle");
  }
  execute(x->unlock, "release");
  if (!fetch(x->unlock) || x->held != 1 || x->released < 1)
    bench_die("best: row %lld's name was not held (%lld names freed)", (long long)id,
              (long long)x->released);
  while (fetch(x->unlock))
    ;
  return true;
}

void *mb_best_main(void *arg) {
  bench_loop *l = arg;
  const bench_args *a = l->a;
  bool many = a->batch > 1;
  best x = {.l = l, .limit = a->batch, .ids_cap = (size_t)a->batch * 21 + 4};
  x.ids = malloc(x.ids_cap);
  if (!x.ids)
    bench_die("out of memory");
  x.c = mb_connect(mb_database);
  best_sql s = sql_of(a);
  if (a->form == TABQ_FORM_ADVISORY) {
    if (many)
      bench_die("best advisory claims one row at a time");
    prepare_advisory(&x, &s);
  } else {
    mb_query(x.c, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    if (a->form == TABQ_FORM_ROWLOCK && mysql_autocommit(x.c, 0))
      mb_fail(x.c, "autocommit = 0");
    prepare_claims(&x, &s, a->form == TABQ_FORM_LEASE, many);
  }
  memset(&l->t, 0, sizeof l->t);
  pthread_barrier_wait(l->ready);

  l->start = bench_mono_s();
  bool more = true;
  while (more)
    more = a->form == TABQ_FORM_ADVISORY ? advisory_round(&x)
                                         : claim_round(&x, a->form == TABQ_FORM_LEASE, many);
  l->end = bench_mono_s();
  MYSQL_STMT *all[] = {x.claim, x.stamp, x.ack, x.unlock};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i])
      mysql_stmt_close(all[i]);
  mysql_close(x.c);
  free(x.ids);
  return NULL;
}
