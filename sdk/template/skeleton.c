/* skeleton — a tabq dialect plugin to start from.
 *
 * Every member of every interface is here and answers TABQ_DIALECT ("not written yet"), so the
 * plugin loads, and tabq names the first member a service reaches that still needs writing.
 * Replace the stubs one interface at a time, in this order, and run tabq-conformance after each:
 *   1. the Driver (connect ... alive): talks to the database;
 *   2. the Dialect (check, quote, insert, the settlements, begin): statements every form shares;
 *   3. one claim form: Lease (claim, extend, release), RowLock (claim) or Advisory (candidates,
 *      lock, unlock, take); set the others' pointers in the descriptor to NULL;
 *   4. optional members (fetch, fifo_guard, channel/notify, placeholder, count_attempt,
 *      column_default, ack_ids, insert_rows, savepoint, schema, indexes, and claim_one and
 *      stamp_ids in RowLock and Lease).
 * tabq/dialect.h documents each member; tabq/sql.h and tabq/sql_build.h build most statements.
 * A dialect for a database whose wire protocol another plugin already speaks can leave the
 * Driver out and name that plugin in `driver_from` instead.
 *
 * Rename: "skeleton" below, the file, and the name in CMakeLists.txt. */
#include <tabq/sys/dialect.h>

/* The host's services, lent at load: allocation, failure reports, logging. */
static const tabq_host *host;

static int not_written(const char *member) {
  return host->fail(TABQ_DIALECT, NULL, 0, "the skeleton dialect: %s is not written yet", member);
}

/* ---- Driver ---------------------------------------------------------------------------------- */

static int sk_connect(const char *url, tabq_conn **out) {
  (void)url;
  *out = NULL;
  return not_written("Driver.connect");
}
static void sk_close(tabq_conn *c) {
  (void)c;
}
static int sk_exec(tabq_conn *c, const char *sql) {
  (void)c, (void)sql;
  return not_written("Driver.exec");
}
static int sk_prepare(tabq_conn *c, const char *sql, unsigned nparams, const char *name,
                      tabq_prepared **out) {
  (void)c, (void)sql, (void)nparams, (void)name;
  *out = NULL;
  return not_written("Driver.prepare");
}
static int sk_execute(tabq_prepared *p, const tabq_value *params, unsigned n) {
  (void)p, (void)params, (void)n;
  return not_written("Driver.execute");
}
static int sk_next(tabq_prepared *p, bool *row) {
  (void)p;
  *row = false;
  return not_written("Driver.next");
}
static int sk_cell(tabq_prepared *p, unsigned col, tabq_value *out) {
  (void)p, (void)col;
  *out = tabq_null();
  return not_written("Driver.cell");
}
static uint64_t sk_affected(tabq_prepared *p) {
  (void)p;
  return 0;
}
static void sk_reset(tabq_prepared *p) {
  (void)p;
}
static void sk_finalize(tabq_prepared *p) {
  (void)p;
}
static int sk_begin(tabq_conn *c, const char *begin_sql) {
  (void)c, (void)begin_sql;
  return not_written("Driver.begin");
}
static int sk_commit(tabq_conn *c) {
  (void)c;
  return not_written("Driver.commit");
}
static int sk_rollback(tabq_conn *c) {
  (void)c;
  return not_written("Driver.rollback");
}
static int sk_server_version(tabq_conn *c, char *text, size_t cap, uint32_t *number) {
  (void)c, (void)cap;
  text[0] = '\0';
  *number = 0;
  return not_written("Driver.server_version");
}
static bool sk_alive(tabq_conn *c) {
  (void)c;
  return false;
}

static const tabq_driver_v1 driver = {
    .size = sizeof(tabq_driver_v1),
    .version = 1,
    .connect = sk_connect,
    .close = sk_close,
    .exec = sk_exec,
    .prepare = sk_prepare,
    .execute = sk_execute,
    .next = sk_next,
    .cell = sk_cell,
    .affected = sk_affected,
    .reset = sk_reset,
    .finalize = sk_finalize,
    .begin = sk_begin,
    .commit = sk_commit,
    .rollback = sk_rollback,
    .server_version = sk_server_version,
    .alive = sk_alive,
    .listen = NULL,      /* optional: notifications */
    .wait_notify = NULL, /* optional: with listen */
    .database = NULL,    /* optional: the current database's name */
};

/* ---- Statements: one stub per builder, each naming itself ------------------------------------ */

#define STUB_BUILD(iface, member)                                                                  \
  static int sk_##iface##_##member(const tabq_build *b, tabq_stmt *out) {                          \
    (void)b, (void)out;                                                                            \
    return not_written(#iface "." #member);                                                        \
  }

static int sk_check(const tabq_build *b) {
  (void)b;
  return not_written("Dialect.check");
}
static int sk_quote(tabq_stmt *out, const char *name) {
  (void)out, (void)name;
  return not_written("Dialect.quote");
}
static int sk_dead_letter_table(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove) {
  (void)b, (void)copy, (void)remove;
  return not_written("Dialect.dead_letter_table");
}
STUB_BUILD(dialect, insert)
STUB_BUILD(dialect, ack)
STUB_BUILD(dialect, discard)
STUB_BUILD(dialect, retry)
STUB_BUILD(dialect, retry_after)
STUB_BUILD(dialect, dead_letter_group)
STUB_BUILD(dialect, begin)

static const tabq_dialect_v1 dialect = {
    .size = sizeof(tabq_dialect_v1),
    .version = 1,
    .check = sk_check,
    .quote = sk_quote,
    .insert = sk_dialect_insert,
    .ack = sk_dialect_ack,
    .discard = sk_dialect_discard,
    .retry = sk_dialect_retry,
    .retry_after = sk_dialect_retry_after,
    .dead_letter_group = sk_dialect_dead_letter_group,
    .dead_letter_table = sk_dead_letter_table,
    .begin = sk_dialect_begin,
    /* Optional members, NULL until written: fetch, fifo_guard, channel, notify, placeholder,
     * count_attempt, column_default, ack_ids, insert_rows (tabq_sqlb_insert_rows builds it for
     * a database that takes a multi-row VALUES), savepoint, schema (TABQ_SQLB_SCHEMA_MEMBER
     * builds it from a tabq_sql_schema of your types), indexes (a catalog query). */
};

STUB_BUILD(lease, claim)
STUB_BUILD(lease, extend)
STUB_BUILD(lease, release)
static const tabq_lease_v1 lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    .claim = sk_lease_claim,
    .extend = sk_lease_extend,
    .release = sk_lease_release,
};

STUB_BUILD(rowlock, claim)
static const tabq_rowlock_v1 rowlock = {
    .size = sizeof(tabq_rowlock_v1),
    .version = 1,
    .claim = sk_rowlock_claim,
};

STUB_BUILD(advisory, candidates)
STUB_BUILD(advisory, lock)
STUB_BUILD(advisory, unlock)
STUB_BUILD(advisory, take)
static const tabq_advisory_v1 advisory = {
    .size = sizeof(tabq_advisory_v1),
    .version = 1,
    .candidates = sk_advisory_candidates,
    .lock = sk_advisory_lock,
    .unlock = sk_advisory_unlock,
    .take = sk_advisory_take,
};

static int sk_byname_check(const tabq_build *b) {
  (void)b;
  return not_written("ByName.check");
}
static const tabq_byname_v1 byname = {
    .size = sizeof(tabq_byname_v1),
    .version = 1,
    .check = sk_byname_check,
};

/* ---- The descriptor and the entry ------------------------------------------------------------ */

static const char *const schemes[] = {"skeleton", NULL};

static const tabq_plugin descriptor = {
    .size = sizeof(tabq_plugin),
    .abi = TABQ_ABI_VERSION,
    .name = "skeleton",
    .schemes = schemes,
    .driver_from = NULL,
    .driver = &driver,
    .dialect = &dialect,
    .rowlock = &rowlock,
    .lease = &lease,
    .advisory = &advisory,
    .byname = &byname,
};

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *h, uint32_t host_abi) {
  /* The core may be newer (a higher minor); never older in major. */
  if (!h || TABQ_ABI_MAJOR_OF(host_abi) != TABQ_ABI_MAJOR)
    return NULL;
  host = h;
  return &descriptor;
}
