/* pglease — a third-party dialect: the lease form on PostgreSQL 12+, over the postgres plugin's
 * driver, with a claim of its own.
 *
 * Built only against the installed SDK (tabq/dialect.h, tabq/sql_build.h), it brings no driver:
 * the descriptor names the postgres plugin in `driver_from`, and tabq lends it that plugin's
 * connections, prepared statements and binary types. URLs take this dialect's own scheme,
 * pglease://user@host:port/database, which tabq hands the borrowed driver as postgres://...
 *
 * Its claim picks the due rows in a MATERIALIZED CTE (PostgreSQL 12+), so the planner walks the
 * claim-order index to the LIMIT and locks only those rows, leases them in the same statement,
 * and returns them in claim order for batch handlers. The settlements, the extension and the
 * release come from the SDK's shared builders, which check the lease token in every one. */
#include <string.h>
#include <tabq/sys/dialect.h>
#include <tabq/sys/sql.h>
#include <tabq/sys/sql_build.h>

#define PGLEASE_FLOOR 120000 /* WITH ... AS MATERIALIZED */

static const tabq_host *g_host;

static const tabq_host *host(void) {
  return g_host;
}

static const tabq_sql_style style = {
    .host = host,
    .quote = '"',
    .placeholder = TABQ_PH_DOLLAR,
    .db_now = "statement_timestamp()",
    .empty_insert = NULL,
    .product = "PostgreSQL (pglease)",
};

/* ---- Dialect --------------------------------------------------------------------------------- */

static int check(const tabq_build *b) {
  const tabq_table *t = b->table;
  if (b->form != TABQ_FORM_LEASE)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the pglease dialect serves the lease form only; declare "
                        "locked_until, or use the postgres dialect for the other forms",
                        t->name);
  if (t->fifo)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the pglease dialect keeps no FIFO groups; use the postgres "
                        "dialect for them",
                        t->name);
  if (t->isolation != TABQ_ISOLATION_DEFAULT || t->mode != TABQ_SQLITE_MODE_DEFAULT)
    return host()->fail(TABQ_DIALECT, NULL, 0,
                        "table %s: the pglease dialect claims in one statement and opens no "
                        "isolation level or mode; leave both unset",
                        t->name);
  if (b->server_version && b->server_version < PGLEASE_FLOOR)
    return host()->fail(TABQ_SERVER_TOO_OLD, NULL, 0,
                        "table %s: the pglease dialect needs PostgreSQL 12 or later "
                        "(MATERIALIZED common table expressions); the server is %s",
                        t->name, b->server_version_text ? b->server_version_text : "older");
  return TABQ_OK;
}

static int quote(tabq_stmt *out, const char *name) {
  tabq_sqlb_table(&style, out, name);
  return out->status;
}

static int placeholder(tabq_stmt *out, tabq_param id) {
  return tabq_sqlb_placeholder(&style, out, id);
}

static int begin(const tabq_build *b, tabq_stmt *out) {
  (void)b;
  tabq_sql_raw(out, "BEGIN");
  return out->status;
}

static int dead_letter_table(const tabq_build *b, tabq_stmt *copy, tabq_stmt *remove) {
  return tabq_sqlb_dead_letter_table(&style, b, copy, remove);
}

TABQ_SQLB_MEMBER(style, insert)
TABQ_SQLB_MEMBER(style, ack)
TABQ_SQLB_MEMBER(style, discard)
TABQ_SQLB_MEMBER(style, retry)
TABQ_SQLB_MEMBER(style, retry_after)
TABQ_SQLB_MEMBER(style, dead_letter_group)
TABQ_SQLB_MEMBER(style, count_attempt_row)

static const tabq_dialect_v1 dialect = {
    .size = sizeof(tabq_dialect_v1),
    .version = 1,
    .check = check,
    .quote = quote,
    .insert = insert,
    .ack = ack,
    .discard = discard,
    .retry = retry,
    .retry_after = retry_after,
    .dead_letter_group = dead_letter_group,
    .dead_letter_table = dead_letter_table,
    .begin = begin,
    .placeholder = placeholder,
    .count_attempt = count_attempt_row,
};

/* ---- Lease ----------------------------------------------------------------------------------- */

/* WITH picked AS MATERIALIZED (SELECT id FROM T WHERE <due> ORDER BY <claim order> LIMIT :LIMIT
 *                              FOR UPDATE SKIP LOCKED),
 *      leased AS (UPDATE T AS q SET locked_until = :LEASE_UNTIL[, attempt = attempt + 1]
 *                 FROM picked WHERE q.id = picked.id RETURNING q.*)
 * SELECT <projection> FROM leased ORDER BY <claim order> */
static int lease_claim(const tabq_build *b, tabq_stmt *out) {
  const tabq_table *t = b->table;
  tabq_sql_raw(out, "WITH picked AS MATERIALIZED (SELECT ");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " FROM ");
  tabq_sqlb_table(&style, out, t->name);
  tabq_sqlb_first_due(&style, b, out);
  tabq_sql_raw(out, " FOR UPDATE SKIP LOCKED), leased AS (UPDATE ");
  tabq_sqlb_table(&style, out, t->name);
  tabq_sql_raw(out, " AS q SET ");
  tabq_sqlb_set_lease(&style, out, t);
  tabq_sql_raw(out, " FROM picked WHERE q.");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " = picked.");
  tabq_sqlb_col(&style, out, &t->id);
  tabq_sql_raw(out, " RETURNING q.*) SELECT ");
  tabq_sqlb_projection(&style, out, t, false);
  tabq_sql_raw(out, " FROM leased");
  tabq_sqlb_claim_order(&style, out, t);
  return tabq_sqlb_finish(&style, b, out, "claim");
}

TABQ_SQLB_MEMBER(style, lease_extend)
TABQ_SQLB_MEMBER(style, lease_release)
TABQ_SQLB_MEMBER(style, lease_one)

static const tabq_lease_v1 lease = {
    .size = sizeof(tabq_lease_v1),
    .version = 1,
    .flags = 0,
    .claim = lease_claim,
    .stamp = NULL,
    .extend = lease_extend,
    .release = lease_release,
    .lease_one = lease_one,
};

/* ---- The descriptor -------------------------------------------------------------------------- */

static const char *const schemes[] = {"pglease", NULL};

static const tabq_plugin descriptor = {
    .size = sizeof(tabq_plugin),
    .abi = TABQ_ABI_VERSION,
    .name = "pglease",
    .schemes = schemes,
    .driver_from = "postgres", /* the plugin whose driver this dialect borrows */
    .driver = NULL,
    .dialect = &dialect,
    .rowlock = NULL,
    .lease = &lease,
    .advisory = NULL,
    .byname = NULL,
};

TABQ_PLUGIN_EXPORT const tabq_plugin *tabq_plugin_entry(const tabq_host *h, uint32_t host_abi) {
  if (!h || TABQ_ABI_MAJOR_OF(host_abi) != TABQ_ABI_MAJOR)
    return NULL;
  g_host = h;
  return &descriptor;
}
