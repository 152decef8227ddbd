/* The best SQL on a MariaDB/MySQL table that keeps its finished rows (processed_at), for the
 * benchmark's best side: the raw loop of bench_mysql.c runs these statements. */
#include <stdbool.h>
#include <string.h>

#include <tabq/sys/sql.h>

#include "mysql_bench.h"

/* mysql_best.c's row lock and lease statements with every claim skipping finished rows and the
 * acks setting processed_at (to the host's time, as tabq's do) instead of deleting. The raw loop
 * runs them, binding the placeholders in order by the parameter ids listed with each; a batch's
 * stamp and ack reach their rows by mysql_best.c's join on the JSON array of ids. */
typedef struct hand_sql {
  const char *sql;
  uint16_t params[4];
  unsigned n;
} hand_sql;

#define COLS "SELECT id, attempt, payload FROM jobs WHERE queue = ? "
#define DUE "AND (locked_until IS NULL OR locked_until <= ?) "
#define OPEN_FIRST "AND processed_at IS NULL ORDER BY id LIMIT "
#define SKIP " FOR UPDATE SKIP LOCKED"
#define IDS                                                                                        \
  "JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS k STRAIGHT_JOIN jobs AS j FORCE INDEX "   \
  "(PRIMARY) ON j.id = k.id"

static const hand_sql processed_rowlock_one = {COLS OPEN_FIRST "1" SKIP, {TABQ_P_GROUP}, 1};
static const hand_sql processed_rowlock_many = {
    COLS OPEN_FIRST "?" SKIP, {TABQ_P_GROUP, TABQ_P_LIMIT}, 2};
static const hand_sql processed_rowlock_stamp_one = {
    "UPDATE jobs SET attempt = attempt + 1 WHERE id = ?", {TABQ_P_ID}, 1};
static const hand_sql processed_rowlock_stamp_many = {
    "UPDATE " IDS " SET j.attempt = j.attempt + 1", {TABQ_P_IDS}, 1};
static const hand_sql processed_rowlock_ack_one = {
    "UPDATE jobs SET processed_at = ? WHERE id = ?", {TABQ_P_NOW, TABQ_P_ID}, 2};
static const hand_sql processed_rowlock_ack_many = {
    "UPDATE " IDS " SET j.processed_at = ?", {TABQ_P_IDS, TABQ_P_NOW}, 2};
static const hand_sql processed_lease_one = {
    COLS DUE OPEN_FIRST "1" SKIP, {TABQ_P_GROUP, TABQ_P_NOW}, 2};
static const hand_sql processed_lease_many = {
    COLS DUE OPEN_FIRST "?" SKIP, {TABQ_P_GROUP, TABQ_P_NOW, TABQ_P_LIMIT}, 3};
static const hand_sql processed_lease_stamp_one = {
    "UPDATE jobs SET locked_until = ?, attempt = attempt + 1 WHERE id = ?",
    {TABQ_P_LEASE_UNTIL, TABQ_P_ID},
    2};
static const hand_sql processed_lease_stamp_many = {
    "UPDATE " IDS " SET j.locked_until = ?, j.attempt = j.attempt + 1",
    {TABQ_P_IDS, TABQ_P_LEASE_UNTIL},
    2};
static const hand_sql processed_lease_ack_one = {
    "UPDATE jobs SET processed_at = ?, locked_until = NULL WHERE id = ? AND locked_until = ?",
    {TABQ_P_NOW, TABQ_P_ID, TABQ_P_TOKEN},
    3};
static const hand_sql processed_lease_ack_many = {
    "UPDATE " IDS " SET j.processed_at = ?, j.locked_until = NULL WHERE j.locked_until = ?",
    {TABQ_P_IDS, TABQ_P_NOW, TABQ_P_TOKEN},
    3};

static void hand_stmt(const char *sql, const uint16_t *params, unsigned n, tabq_stmt *st) {
  tabq_sql_init(st, &bench_host);
  tabq_sql_raw(st, sql);
  if (n)
    memcpy(st->params, params, n * sizeof params[0]);
  st->nparams = n;
  if (st->status != TABQ_OK)
    bench_die("out of memory");
}

static void hand(const hand_sql *h, tabq_stmt *st) {
  hand_stmt(h->sql, h->params, h->n, st);
}

void mb_processed_statements(const bench_args *a, tabq_stmt *claim, tabq_stmt *stamp,
                             tabq_stmt *ack, tabq_stmt *begin) {
  bool many = a->batch > 1, rowlock = a->form == TABQ_FORM_ROWLOCK;
  if (rowlock) {
    hand(many ? &processed_rowlock_many : &processed_rowlock_one, claim);
    hand(many ? &processed_rowlock_stamp_many : &processed_rowlock_stamp_one, stamp);
    hand(many ? &processed_rowlock_ack_many : &processed_rowlock_ack_one, ack);
  } else {
    hand(many ? &processed_lease_many : &processed_lease_one, claim);
    hand(many ? &processed_lease_stamp_many : &processed_lease_stamp_one, stamp);
    hand(many ? &processed_lease_ack_many : &processed_lease_ack_one, ack);
  }
  hand_stmt(rowlock ? "" : "START TRANSACTION", NULL, 0, begin);
}
