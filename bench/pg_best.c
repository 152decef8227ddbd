/* The best PostgreSQL a programmer would write by hand for each form's guarantee, with the same
 * table, index and checks as tabq: the attempt counted at every claim, the lease's expiry checked
 * by every settlement, rows claimed in id order and never twice at once. Each statement is
 * prepared once per connection and run with binary parameters and results; a batch's ids go out
 * as one array in text form.
 *
 * Row lock (BEGIN ... COMMIT around each claim, the rows locked until the commit; BEGIN and
 * COMMIT prepared too, as tabq's driver runs them):
 *   one row   UPDATE jobs SET attempt = attempt + 1 WHERE id = (SELECT id FROM jobs
 *             WHERE queue = $1 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
 *             RETURNING id, attempt, payload
 *   n rows    ... WHERE id = ANY (ARRAY(SELECT ... LIMIT $2 FOR UPDATE SKIP LOCKED)) ...
 *   settle    DELETE FROM jobs WHERE id = $1   (a batch: id = ANY ($1), every row deleted)
 * Lease (autocommit; the expiry written by the claim is the token):
 *   one row   UPDATE jobs SET attempt = attempt + 1, locked_until = $2 WHERE id = (SELECT id
 *             FROM jobs WHERE queue = $1 AND (locked_until IS NULL OR locked_until <= $3)
 *             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, attempt, payload
 *   n rows    ... WHERE id = ANY (ARRAY(SELECT ... LIMIT $4 FOR UPDATE SKIP LOCKED)) ...
 *   settle    DELETE FROM jobs WHERE id = $1 AND locked_until = $2   (a batch: id = ANY ($1);
 *             a row the count misses has lost its lease)
 * Advisory (autocommit; a session lock on the id, one row at a time):
 *   lock      SELECT id FROM jobs WHERE queue = $1 AND pg_try_advisory_lock(id) ORDER BY id
 *             LIMIT 1   (the index scan stops at the first key it gets)
 *   take      UPDATE jobs SET attempt = attempt + 1 WHERE id = $1 RETURNING id, attempt,
 *             payload   (no row: settled by another between its snapshot and the lock; unlock)
 *   settle    WITH gone AS (DELETE FROM jobs WHERE id = $1 RETURNING id) SELECT
 *             pg_advisory_unlock($1) FROM (SELECT count(*) FROM gone) AS deleted
 *             (the delete before the unlock, and both in one round trip) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_bench.h"

#define Q "SELECT id FROM jobs WHERE queue = $1 "
#define RET " RETURNING id, attempt, payload"

static const char *const rowlock_one = "UPDATE jobs SET attempt = attempt + 1 WHERE id = (" Q
                                       "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)" RET;
static const char *const rowlock_many =
    "UPDATE jobs SET attempt = attempt + 1 WHERE id = ANY (ARRAY(" Q
    "ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED))" RET;
static const char *const rowlock_ack_one = "DELETE FROM jobs WHERE id = $1";
static const char *const rowlock_ack_many = "DELETE FROM jobs WHERE id = ANY ($1)";

#define DUE "AND (locked_until IS NULL OR locked_until <= $3) "
static const char *const lease_one =
    "UPDATE jobs SET attempt = attempt + 1, locked_until = $2 WHERE id = (" Q DUE
    "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)" RET;
static const char *const lease_many =
    "UPDATE jobs SET attempt = attempt + 1, locked_until = $2 WHERE id = ANY (ARRAY(" Q DUE
    "ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED))" RET;
static const char *const lease_ack_one = "DELETE FROM jobs WHERE id = $1 AND locked_until = $2";
static const char *const lease_ack_many =
    "DELETE FROM jobs WHERE id = ANY ($1) AND locked_until = $2";

static const char *const advisory_lock = Q "AND pg_try_advisory_lock(id) ORDER BY id LIMIT 1";
static const char *const advisory_take = "UPDATE jobs SET attempt = attempt + 1 WHERE id = $1" RET;
/* The unlock reads the delete's count, so the delete runs first: a CTE nobody reads runs after
 * the main query, which would let another session lock and take the row before it is gone. */
static const char *const advisory_ack =
    "WITH gone AS (DELETE FROM jobs WHERE id = $1 RETURNING id) "
    "SELECT pg_advisory_unlock($1) FROM (SELECT count(*) FROM gone) AS deleted";

void pg_best_print(const bench_args *a) {
  bool many = a->batch > 1;
  switch (a->form) {
  case TABQ_FORM_ROWLOCK:
    fprintf(stderr, "best rowlock: BEGIN; %s; %s; COMMIT\n", many ? rowlock_many : rowlock_one,
            many ? rowlock_ack_many : rowlock_ack_one);
    break;
  case TABQ_FORM_LEASE:
    fprintf(stderr, "best lease: %s; %s\n", many ? lease_many : lease_one,
            many ? lease_ack_many : lease_ack_one);
    break;
  default:
    fprintf(stderr, "best advisory: %s; %s; %s\n", advisory_lock, advisory_take, advisory_ack);
  }
}

/* The parameters of one statement: values in binary, but for the ids array (text). */
typedef struct params {
  char bin[4][8];
  const char *values[4];
  int lengths[4], formats[4];
  int n;
} params;

static void p_text(params *p, const char *s, int len) {
  p->values[p->n] = s;
  p->lengths[p->n] = len;
  p->formats[p->n++] = 0;
}

static void p_int8(params *p, int64_t v) {
  pg_put_be64(p->bin[p->n], v);
  p->values[p->n] = p->bin[p->n];
  p->lengths[p->n] = 8;
  p->formats[p->n++] = 1;
}

static void p_time(params *p, int64_t unix_us) {
  p_int8(p, unix_us - PG_EPOCH_US);
}

static PGresult *run(PGconn *c, const char *name, params *p) {
  PGresult *r = PQexecPrepared(c, name, p->n, p->values, p->lengths, p->formats, 1);
  pg_check(c, r, name);
  return r;
}

/* Reads what a handler would read of every returned row; the ids go to `list` as a text array
 * when a batch settles them at once. Returns the rows. */
static int read_rows(PGresult *r, bench_loop *l, int64_t *first_id, char *list, size_t cap) {
  int n = PQntuples(r);
  size_t used = 0;
  for (int i = 0; i < n; i++) {
    if (PQgetisnull(r, i, 0) || PQgetisnull(r, i, 1) || PQgetisnull(r, i, 2))
      bench_die("best: a claimed row has a NULL id, attempt or payload");
    int64_t id = pg_get_int(PQgetvalue(r, i, 0), PQgetlength(r, i, 0));
    if (i == 0)
      *first_id = id;
    l->t.rows++;
    l->t.id_sum += id;
    l->t.attempt_sum += pg_get_int(PQgetvalue(r, i, 1), PQgetlength(r, i, 1)) - 1;
    l->t.bytes += PQgetlength(r, i, 2);
    if (list)
      used += (size_t)snprintf(list + used, cap - used, "%c%lld", i ? ',' : '{', (long long)id);
  }
  if (list && used + 2 < cap)
    memcpy(list + used, "}", 2);
  return n;
}

static void expect_changed(PGresult *r, int want, const char *what) {
  if (atoi(PQcmdTuples(r)) != want)
    bench_die("best %s changed %s rows, not %d", what, PQcmdTuples(r), want);
}

/* BEGIN, COMMIT and ROLLBACK run prepared, as tabq's driver runs them: libpq copies the text of
 * each simple query, an allocation a prepared execution does not make. */
static void control(PGconn *c, const char *name) {
  params none = {0};
  PQclear(run(c, name, &none));
}

static void commit(PGconn *c) {
  params none = {0};
  PGresult *r = run(c, "commit", &none);
  if (strcmp(PQcmdStatus(r), "COMMIT"))
    bench_die("best: COMMIT rolled back");
  PQclear(r);
}

/* One claim and its settlement; false once the claim comes back empty. */
static bool rowlock_round(PGconn *c, bench_loop *l, char *list, size_t cap) {
  bool many = l->a->batch > 1;
  params p = {0};
  p_text(&p, BENCH_QUEUE, (int)sizeof BENCH_QUEUE - 1);
  if (many)
    p_int8(&p, l->a->batch);
  control(c, "begin");
  PGresult *r = run(c, "claim", &p);
  int64_t id = 0;
  int n = read_rows(r, l, &id, many ? list : NULL, cap);
  PQclear(r);
  if (n == 0) {
    control(c, "rollback");
    return false;
  }
  p = (params){0};
  if (many)
    p_text(&p, list, (int)strlen(list));
  else
    p_int8(&p, id);
  r = run(c, "ack", &p);
  expect_changed(r, n, "ack");
  PQclear(r);
  commit(c);
  return true;
}

static bool lease_round(PGconn *c, bench_loop *l, char *list, size_t cap) {
  bool many = l->a->batch > 1;
  int64_t now = bench_now_us(), until = now + (int64_t)BENCH_LEASE_S * 1000000;
  params p = {0};
  p_text(&p, BENCH_QUEUE, (int)sizeof BENCH_QUEUE - 1);
  p_time(&p, until);
  p_time(&p, now);
  if (many)
    p_int8(&p, l->a->batch);
  PGresult *r = run(c, "claim", &p);
  int64_t id = 0;
  int n = read_rows(r, l, &id, many ? list : NULL, cap);
  PQclear(r);
  if (n == 0)
    return false;
  p = (params){0};
  if (many)
    p_text(&p, list, (int)strlen(list));
  else
    p_int8(&p, id);
  p_time(&p, until);
  r = run(c, "ack", &p);
  expect_changed(r, n, "ack (a lease lost)");
  PQclear(r);
  return true;
}

static bool advisory_round(PGconn *c, bench_loop *l) {
  params p = {0};
  p_text(&p, BENCH_QUEUE, (int)sizeof BENCH_QUEUE - 1);
  PGresult *r = run(c, "lock", &p);
  if (PQntuples(r) == 0) {
    PQclear(r);
    return false;
  }
  int64_t id = pg_get_int(PQgetvalue(r, 0, 0), PQgetlength(r, 0, 0));
  PQclear(r);
  p = (params){0};
  p_int8(&p, id);
  r = run(c, "take", &p);
  int64_t got = 0;
  read_rows(r, l, &got, NULL, 0);
  PQclear(r);
  r = run(c, "ack", &p); /* deletes nothing when the row was gone, and unlocks either way */
  if (strcmp(PQgetvalue(r, 0, 0), "\001") && strcmp(PQgetvalue(r, 0, 0), "t"))
    bench_die("best: the advisory lock on %lld was not held", (long long)id);
  expect_changed(r, 1, "unlock");
  PQclear(r);
  return true;
}

void *pg_best_main(void *arg) {
  bench_loop *l = arg;
  const bench_args *a = l->a;
  bool many = a->batch > 1;
  PGconn *c = pg_open(pg_bench_url);
  const Oid text = PG_OID_TEXT, ts = PG_OID_TIMESTAMPTZ, i8 = PG_OID_INT8, ids = PG_OID_INT8_ARRAY;
  switch (a->form) {
  case TABQ_FORM_ROWLOCK:
    pg_prepare(c, "claim", many ? rowlock_many : rowlock_one, many ? 2 : 1, (Oid[]){text, i8});
    pg_prepare(c, "ack", many ? rowlock_ack_many : rowlock_ack_one, 1, (Oid[]){many ? ids : i8});
    pg_prepare(c, "begin", "BEGIN", 0, NULL);
    pg_prepare(c, "commit", "COMMIT", 0, NULL);
    pg_prepare(c, "rollback", "ROLLBACK", 0, NULL);
    break;
  case TABQ_FORM_LEASE:
    pg_prepare(c, "claim", many ? lease_many : lease_one, many ? 4 : 3, (Oid[]){text, ts, ts, i8});
    pg_prepare(c, "ack", many ? lease_ack_many : lease_ack_one, 2, (Oid[]){many ? ids : i8, ts});
    break;
  default:
    if (many)
      bench_die("best advisory claims one row at a time");
    pg_prepare(c, "lock", advisory_lock, 1, (Oid[]){text});
    pg_prepare(c, "take", advisory_take, 1, (Oid[]){i8});
    pg_prepare(c, "ack", advisory_ack, 1, (Oid[]){i8});
  }
  size_t cap = (size_t)a->batch * 21 + 4;
  char *list = malloc(cap);
  if (!list)
    bench_die("out of memory");
  memset(&l->t, 0, sizeof l->t);
  pthread_barrier_wait(l->ready);

  l->start = bench_mono_s();
  bool more = true;
  while (more)
    more = a->form == TABQ_FORM_ROWLOCK ? rowlock_round(c, l, list, cap)
           : a->form == TABQ_FORM_LEASE ? lease_round(c, l, list, cap)
                                        : advisory_round(c, l);
  l->end = bench_mono_s();
  free(list);
  PQfinish(c);
  return NULL;
}
