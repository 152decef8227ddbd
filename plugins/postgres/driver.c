/* tabq — the PostgreSQL driver on libpq: connections, prepared statements, transactions and
 * LISTEN/NOTIFY.
 *
 * URLs: postgres://... and postgresql://... go to libpq whole (it parses URIs itself);
 * postgres:KEY=VALUE ... hands libpq the key=value conninfo after the colon (url.c).
 * application_name falls back to "tabq" when neither the URL nor PGAPPNAME names one, and the
 * client encoding is always UTF-8, which is what tabq values hold. A connect is bounded:
 * connect_timeout falls back to DEFAULT_CONNECT_TIMEOUT_S when neither the URL nor
 * PGCONNECT_TIMEOUT sets it.
 *
 * Statements are prepared under per-connection names (tabq_1, tabq_2, ...) with their parameter
 * types left to the server to infer; execute sends binary parameters and asks for binary results
 * (codec.c), so nothing is quoted, escaped or parsed as text. Behind a transaction pooler
 * (pooler=transaction in the URL, pooler.c) no statement may outlive its transaction: prepare
 * learns the types through the unnamed statement, and each execute sends its SQL again with
 * them (parse, bind and execute in one round trip).
 *
 * Every round trip is bounded (settings.c, roundtrip.c): the connection runs in libpq's nonblocking
 * mode, each command goes out with a PQsend* call and its reply is awaited with poll() up to the
 * URL's statement_timeout plus TABQ_PG_REPLY_GRACE_S. A server that stops answering while its
 * kernel keeps the connection open (a paused server: keepalives and tcp_user_timeout see nothing
 * wrong, since its kernel still acknowledges) fails the command with 08006 and the connection is
 * given up, so the pool closes it. Waits for notifications are not statements: they wait as long
 * as asked. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <tabq/sys/host_log.h>

#include "codec.h"
#include "conn.h"
#include "postgres_plugin.h"

/* Without a bound, libpq waits on a server that accepts TCP and never answers for as long as
 * the kernel keeps the socket open. */
#define DEFAULT_CONNECT_TIMEOUT_S 10
#define STR_(x) #x
#define STR(x) STR_(x) /* the default as libpq takes it: text */
/* TCP keepalives unless the URL sets them: the first probe after 30 s idle, then every 10 s,
 * the connection ended after 3 unanswered (libpq turns keepalives on; the system's timings
 * wait two hours). */
#define DEFAULT_KEEPALIVES_IDLE_S 30
#define DEFAULT_KEEPALIVES_INTERVAL_S 10
#define DEFAULT_KEEPALIVES_COUNT 3
/* libpq raises a connect_timeout of 1 to 2 seconds. */
#define LIBPQ_MIN_TIMEOUT_S 2

struct tabq_prepared {
  tabq_conn *conn;
  tabq_prepared *prev, *next;
  PGresult *res; /* the last execution's rows, until reset */
  int row;       /* the current row of res */
  bool on_row;
  uint64_t changes;
  unsigned nparams, ncols;
  Oid *param_types; /* as the server inferred them at prepare */
  Oid *col_types;
  const char **values; /* what execute hands libpq, pointing into slots or the caller's values */
  int *lengths;
  int *formats; /* all 1: binary */
  tabq_pg_slot *slots;
  char server_name[24]; /* "" behind a transaction pooler */
  char *sql;            /* behind a transaction pooler: the text each execute sends */
  char name[32];
};

static const tabq_host *host(void) {
  return tabq_pg_host();
}

/* ---- Errors ------------------------------------------------------------------------------- */

/* Copies libpq's message on one line: its line breaks (and the indent after them) become one
 * space, its trailing newline goes. */
static void copy_message(char *dst, size_t cap, const char *msg) {
  if (!msg || !*msg)
    msg = "unknown error";
  size_t n = 0;
  for (const char *s = msg; *s && n + 1 < cap; s++) {
    if (*s != '\n' && *s != '\r') {
      dst[n++] = *s;
      continue;
    }
    while (s[1] == '\n' || s[1] == '\r' || s[1] == '\t' || s[1] == ' ')
      s++;
    if (s[1] && n > 0)
      dst[n++] = ' ';
  }
  while (n > 0 && dst[n - 1] == ' ')
    n--;
  if (cap > 0)
    dst[n] = '\0';
}

/* The connection is of no more use: ended, or given up by the driver. */
static bool lost(const tabq_conn *c) {
  return c->broken || PQstatus(c->pg) == CONNECTION_BAD;
}

/* After a failure is reported: where in the statement the server says it is (ABI 1.7), its
 * error cursor counted in characters from 1, as the host takes it. */
static int with_position(int code, const PGresult *res) {
  const char *at = res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) : NULL;
  const tabq_host *h = host();
  if (at && TABQ_HAS_MEMBER(h, tabq_host, fail_position))
    h->fail_position((unsigned)strtoul(at, NULL, 10));
  return code;
}

/* Reports a failed command on `c` for `what` ("claim statement", "commit", ...): the server's
 * SQLSTATE and primary message when it sent them, libpq's own message otherwise. A connection
 * lost without a SQLSTATE reports 08006 (connection failure). */
static int fail_pg(tabq_conn *c, const PGresult *res, const char *what) {
  if (c->timed_out && !c->timeout_told) {
    c->timeout_told = true;
    return host()->fail(TABQ_BACKEND, "08006", 0,
                        "%s: no reply from the server within %u s (statement_timeout=%u in the "
                        "URL, and %d s more); the connection is given up",
                        what, (unsigned)(c->reply_ms / 1000), c->statement_s,
                        TABQ_PG_REPLY_GRACE_S);
  }
  if (c->timed_out) /* a later call, refused without a round trip */
    return host()->fail(TABQ_BACKEND, "08006", 0,
                        "%s: the connection was given up (an earlier statement got no reply "
                        "within %u s)",
                        what, (unsigned)(c->reply_ms / 1000));
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  char msg[512];
  if (primary)
    snprintf(msg, sizeof msg, "%s", primary);
  else
    copy_message(msg, sizeof msg,
                 res && *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
                                                   : PQerrorMessage(c->pg));
  bool gone = lost(c);
  if (!state && gone)
    state = "08006";
  if (!res && c->broken)
    snprintf(msg, sizeof msg, "the connection was given up");
  return with_position(host()->fail(TABQ_BACKEND, state, 0, "%s: %s%s", what, msg,
                                    gone ? " (the connection is lost)" : ""),
                       res);
}

/* Server notices (NOTICE, WARNING, and a FATAL that arrives while idle) go to the host's log
 * instead of libpq's default, stderr. */
static void on_notice(void *arg, const PGresult *res) {
  const tabq_conn *c = arg;
  const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (!sev)
    sev = PQresultErrorField(res, PG_DIAG_SEVERITY);
  const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
  char msg[512];
  copy_message(msg, sizeof msg, primary ? primary : PQresultErrorMessage(res));
  bool loud = sev && (strcmp(sev, "WARNING") == 0 || strcmp(sev, "FATAL") == 0 ||
                      strcmp(sev, "PANIC") == 0 || strcmp(sev, "ERROR") == 0);
  tabq_host_log(c->log_host, host(), loud ? TABQ_LOG_WARN : TABQ_LOG_DEBUG, "postgres: %s: %s",
                sev ? sev : "NOTICE", msg);
}

/* ---- Connections -------------------------------------------------------------------------- */

/* The connect_timeout libpq ran with, in whole seconds as it waits them (0: no bound). */
static long effective_timeout_s(PGconn *pg) {
  long s = 0;
  PQconninfoOption *opts = PQconninfo(pg);
  for (PQconninfoOption *o = opts; o && o->keyword; o++)
    if (strcmp(o->keyword, "connect_timeout") == 0 && o->val)
      s = strtol(o->val, NULL, 10);
  PQconninfoFree(opts);
  return s <= 0 ? 0 : s < LIBPQ_MIN_TIMEOUT_S ? LIBPQ_MIN_TIMEOUT_S : s;
}

/* A failed connect: says so plainly when connect_timeout ran out, since libpq's own words
 * ("timeout expired", perhaps translated) name neither the setting nor how long it waited.
 * libpq counts whole seconds of the clock, so it may give up to a second early. */
static int fail_connect(PGconn *pg, const char *url, int64_t elapsed_ms) {
  char shown[TABQ_PG_URL_SHOWN], msg[1024];
  copy_message(msg, sizeof msg, PQerrorMessage(pg));
  long timeout_s = effective_timeout_s(pg);
  bool timed_out =
      timeout_s > 0 && (strstr(msg, "timeout expired") || elapsed_ms >= (timeout_s - 1) * 1000);
  PQfinish(pg);
  if (timed_out)
    return host()->fail(TABQ_BACKEND, NULL, 0,
                        "cannot connect to %s: the connect timed out after %ld s (per address "
                        "tried; set connect_timeout=SECONDS in the URL, default %d, at least %d): "
                        "%s",
                        tabq_pg_shown_url(url, shown), timeout_s, DEFAULT_CONNECT_TIMEOUT_S,
                        LIBPQ_MIN_TIMEOUT_S, msg);
  return host()->fail(TABQ_BACKEND, NULL, 0, "cannot connect to %s: %s",
                      tabq_pg_shown_url(url, shown), msg);
}

/* What the URL sets beyond libpq's parameters (settings.c, pooler.c). */
typedef struct tabq_pg_settings {
  bool per_transaction;
  unsigned statement_s;
} tabq_pg_settings;

static int connect_conninfo(const tabq_host *log_host, const char *url, const char *conninfo,
                            const tabq_pg_settings *set, tabq_conn **out);

static int pg_connect_host(const tabq_host *log_host, const char *url, tabq_conn **out) {
  *out = NULL;
  char shown[TABQ_PG_URL_SHOWN];
  const char *given = url ? tabq_pg_conninfo_of(url) : NULL;
  if (!given)
    return host()->fail(TABQ_INVALID, NULL, 0, "not a postgres URL: %s",
                        url ? tabq_pg_shown_url(url, shown) : "(null)");
  size_t cap = strlen(given) + 1;
  char *conninfo = host()->alloc(cap);
  if (!conninfo)
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory to connect to %s",
                        tabq_pg_shown_url(url, shown));
  tabq_pg_settings set = {0};
  bool uri = !strncmp(given, "postgres://", 11) || !strncmp(given, "postgresql://", 13);
  int rc = tabq_pg_take_pooler(given, uri, conninfo, cap, &set.per_transaction);
  if (rc == TABQ_OK)
    rc = tabq_pg_take_statement_timeout(conninfo, uri, &set.statement_s);
  if (rc == TABQ_OK)
    rc = connect_conninfo(log_host, url, conninfo, &set, out);
  host()->free(conninfo);
  return rc;
}

static void pg_close(tabq_conn *c);
static int run_sql(tabq_conn *c, const char *sql, const char *what);

/* The server cancels a statement that runs past the URL's statement_timeout. Behind a transaction
 * pooler a session setting would stay with whichever server session ran it, for other clients
 * too: the pooler's own bound applies there (PgBouncer's query_timeout). */
static int set_session(tabq_conn *c) {
  if (c->statement_s == 0 || c->per_transaction)
    return TABQ_OK;
  char sql[48];
  snprintf(sql, sizeof sql, "SET statement_timeout = %u", c->statement_s * 1000);
  return run_sql(c, sql, "statement_timeout (set at connect)");
}

/* Connects with what libpq takes; `url` names the server in messages. */
static int connect_conninfo(const tabq_host *log_host, const char *url, const char *conninfo,
                            const tabq_pg_settings *set, tabq_conn **out) {
  char shown[TABQ_PG_URL_SHOWN];
  if (!PQisthreadsafe())
    return host()->fail(TABQ_BACKEND, NULL, 0, "libpq was built without thread support");
  /* Keywords after dbname override what its expansion sets; those before it only fill gaps, so
   * the URL's connect_timeout wins over the default. PGCONNECT_TIMEOUT is read only for keywords
   * still unset, so the default steps aside when it is set. The keepalive defaults find an idle
   * connection whose peer is gone (a host down, a network cut) in about a minute instead of the
   * system's two hours: the listening connection, which sends no statement, above all. */
  const char *env_timeout = getenv("PGCONNECT_TIMEOUT");
  const char *keys[8], *values[8];
  size_t n = 0;
  keys[n] = "fallback_application_name", values[n++] = "tabq";
  if (!env_timeout || !*env_timeout)
    keys[n] = "connect_timeout", values[n++] = STR(DEFAULT_CONNECT_TIMEOUT_S);
  keys[n] = "keepalives_idle", values[n++] = STR(DEFAULT_KEEPALIVES_IDLE_S);
  keys[n] = "keepalives_interval", values[n++] = STR(DEFAULT_KEEPALIVES_INTERVAL_S);
  keys[n] = "keepalives_count", values[n++] = STR(DEFAULT_KEEPALIVES_COUNT);
  keys[n] = "dbname", values[n++] = conninfo;
  keys[n] = "client_encoding", values[n++] = "UTF8";
  keys[n] = NULL, values[n] = NULL;
  int64_t start = tabq_pg_mono_ms();
  PGconn *pg = PQconnectdbParams(keys, values, 1);
  if (!pg)
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory to connect to %s",
                        tabq_pg_shown_url(url, shown));
  if (PQstatus(pg) != CONNECTION_OK)
    return fail_connect(pg, url, tabq_pg_mono_ms() - start);
  const char *idt = PQparameterStatus(pg, "integer_datetimes");
  if (idt && strcmp(idt, "on") != 0) { /* servers before 10 could be built so */
    PQfinish(pg);
    return host()->fail(TABQ_SERVER_TOO_OLD, NULL, 0,
                        "the server at %s keeps timestamps as floating point "
                        "(integer_datetimes off), which the postgres driver cannot read",
                        tabq_pg_shown_url(url, shown));
  }
  if (PQsetnonblocking(pg, 1) != 0) {
    PQfinish(pg);
    return host()->fail(TABQ_BACKEND, NULL, 0,
                        "cannot put the connection to %s in nonblocking mode",
                        tabq_pg_shown_url(url, shown));
  }
  tabq_conn *c = host()->alloc(sizeof *c);
  if (!c) {
    PQfinish(pg);
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for a postgres connection");
  }
  memset(c, 0, sizeof *c);
  c->pg = pg;
  c->log_host = log_host;
  c->per_transaction = set->per_transaction;
  c->statement_s = set->statement_s;
  c->reply_ms = set->statement_s ? (set->statement_s + TABQ_PG_REPLY_GRACE_S) * 1000LL : 0;
  PQsetNoticeReceiver(pg, on_notice, c);
  int rc = set_session(c);
  if (rc != TABQ_OK) {
    pg_close(c);
    return rc;
  }
  tabq_host_log(
      log_host, host(), TABQ_LOG_DEBUG, "postgres: connected to %s (server %s, backend pid %d)",
      tabq_pg_shown_url(url, shown), PQparameterStatus(pg, "server_version"), PQbackendPID(pg));
  *out = c;
  return TABQ_OK;
}

static int pg_connect(const char *url, tabq_conn **out) {
  return pg_connect_host(NULL, url, out);
}

static void free_prepared(tabq_prepared *p);

/* The server drops the connection's prepared statements with the session. */
static void pg_close(tabq_conn *c) {
  if (!c)
    return;
  while (c->stmts) {
    tabq_prepared *p = c->stmts;
    c->stmts = p->next;
    free_prepared(p);
  }
  PQfinish(c->pg);
  host()->free(c);
}

/* Checks a command's result: OK for a command or rows, else the failure reported for `what`. */
static int check_result(tabq_conn *c, PGresult *res, const char *what) {
  switch (PQresultStatus(res)) {
  case PGRES_COMMAND_OK:
  case PGRES_TUPLES_OK:
  case PGRES_EMPTY_QUERY:
    return TABQ_OK;
  case PGRES_COPY_IN:
  case PGRES_COPY_OUT:
  case PGRES_COPY_BOTH:
    /* The connection now waits for COPY data the driver never sends or reads. */
    c->broken = true;
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "%s: COPY is not supported; the connection is "
                        "given up",
                        what);
  default:
    return fail_pg(c, res, what);
  }
}

/* Runs SQL text; `what` names it in messages. */
static int run_sql(tabq_conn *c, const char *sql, const char *what) {
  PGresult *res = tabq_pg_exec_text(c, sql);
  int code = check_result(c, res, what);
  PQclear(res);
  return code;
}

static int pg_exec(tabq_conn *c, const char *sql) {
  if (!sql)
    return host()->fail(TABQ_INVALID, NULL, 0, "exec: no SQL");
  return run_sql(c, sql, "exec");
}

/* ---- Prepared statements ------------------------------------------------------------------ */

static void free_prepared(tabq_prepared *p) {
  PQclear(p->res);
  for (unsigned i = 0; p->slots && i < p->nparams; i++)
    tabq_pg_slot_free(&p->slots[i]);
  void *parts[] = {p->param_types, p->col_types, p->values, p->lengths,
                   p->formats,     p->slots,     p->sql};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (parts[i])
      host()->free(parts[i]);
  host()->free(p);
}

/* An array of n items of `size` bytes, zeroed; NULL only when n > 0 and memory ran out. */
static void *zeroed(size_t n, size_t size, bool *ok) {
  if (n == 0)
    return NULL;
  void *a = host()->alloc(n * size);
  if (a)
    memset(a, 0, n * size);
  else
    *ok = false;
  return a;
}

/* The statement object, with room for `np` parameters and `nf` columns. */
static tabq_prepared *new_prepared(tabq_conn *c, unsigned np, unsigned nf) {
  tabq_prepared *p = host()->alloc(sizeof *p);
  if (!p)
    return NULL;
  memset(p, 0, sizeof *p);
  bool ok = true;
  p->conn = c;
  p->nparams = np;
  p->ncols = nf;
  p->param_types = zeroed(np, sizeof *p->param_types, &ok);
  p->values = zeroed(np, sizeof *p->values, &ok);
  p->lengths = zeroed(np, sizeof *p->lengths, &ok);
  p->formats = zeroed(np, sizeof *p->formats, &ok);
  p->slots = zeroed(np, sizeof *p->slots, &ok);
  p->col_types = zeroed(nf, sizeof *p->col_types, &ok);
  if (!ok) {
    p->nparams = 0; /* no slot holds memory yet */
    free_prepared(p);
    return NULL;
  }
  for (unsigned i = 0; i < np; i++)
    p->formats[i] = 1;
  return p;
}

/* Drops a statement on the server, where a command can still run; otherwise it stays until the
 * session ends (a failed transaction refuses every command but ROLLBACK). */
static void deallocate(tabq_conn *c, const char *server_name) {
  if (!server_name[0] || lost(c) || c->broken || PQtransactionStatus(c->pg) == PQTRANS_INERROR)
    return;
  char sql[48];
  snprintf(sql, sizeof sql, "DEALLOCATE %s", server_name);
  PQclear(tabq_pg_exec_text(c, sql));
}

/* A statement naming what the database lacks fails with TABQ_SCHEMA: an undefined table,
 * column, schema or function (hashtextextended before PostgreSQL 11). */
static int fail_prepare(tabq_conn *c, const PGresult *res, const char *name) {
  static const char *const schema_states[] = {"42P01", "42703", "3F000", "42883"};
  const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
  for (size_t i = 0; state && primary && i < 4; i++)
    if (strcmp(state, schema_states[i]) == 0)
      return with_position(host()->fail(TABQ_SCHEMA, state, 0, "%s statement: %s", name, primary),
                           res);
  char what[48];
  snprintf(what, sizeof what, "%s statement", name);
  return fail_pg(c, res, what);
}

/* Learns the types the server gave the parameters and the columns, and builds the object. */
static int describe(tabq_conn *c, const char *server_name, unsigned nparams, const char *name,
                    tabq_prepared **out) {
  PGresult *res = tabq_pg_await_reply(c, !c->broken && PQsendDescribePrepared(c->pg, server_name));
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    int code = fail_prepare(c, res, name);
    PQclear(res);
    return code;
  }
  int np = PQnparams(res), nf = PQnfields(res);
  if (np < 0 || (unsigned)np != nparams) {
    PQclear(res);
    /* An unbound placeholder would fail at every execute; a missing one would drop a value. */
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement has %d placeholders, not %u", name, np,
                        nparams);
  }
  tabq_prepared *p = new_prepared(c, (unsigned)np, nf > 0 ? (unsigned)nf : 0);
  if (!p) {
    PQclear(res);
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the %s statement", name);
  }
  for (int i = 0; i < np; i++)
    p->param_types[i] = PQparamtype(res, i);
  for (int i = 0; i < nf; i++)
    p->col_types[i] = PQftype(res, i);
  PQclear(res);
  *out = p;
  return TABQ_OK;
}

/* Prepares `sql` as `server_name` ("" for the unnamed statement) and learns its types. */
static int prepare_described(tabq_conn *c, const char *server_name, const char *sql,
                             unsigned nparams, const char *name, tabq_prepared **out) {
  /* No parameter types: the server infers each from where its placeholder stands. */
  PGresult *res =
      tabq_pg_await_reply(c, !c->broken && PQsendPrepare(c->pg, server_name, sql, 0, NULL));
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    int code = fail_prepare(c, res, name);
    PQclear(res);
    return code;
  }
  PQclear(res);
  int code = describe(c, server_name, nparams, name, out);
  if (code != TABQ_OK)
    deallocate(c, server_name);
  return code;
}

static char *copy_text(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = host()->alloc(n);
  if (copy)
    memcpy(copy, s, n);
  return copy;
}

static int pg_prepare(tabq_conn *c, const char *sql, unsigned nparams, const char *name,
                      tabq_prepared **out) {
  *out = NULL;
  name = name ? name : "sql";
  if (!sql)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no SQL", name);
  char server_name[24] = "";
  if (!c->per_transaction)
    snprintf(server_name, sizeof server_name, "tabq_%" PRIu64, ++c->stmt_seq);
  /* Behind a transaction pooler the unnamed statement's prepare and describe must meet one
   * server session: inside a transaction (the caller's, or one of their own). */
  bool own_tx = c->per_transaction && PQtransactionStatus(c->pg) == PQTRANS_IDLE;
  if (own_tx) {
    int code = run_sql(c, "BEGIN", name);
    if (code != TABQ_OK)
      return code;
  }
  tabq_prepared *p = NULL;
  int code = prepare_described(c, server_name, sql, nparams, name, &p);
  if (own_tx) {
    PGresult *end = tabq_pg_exec_text(c, code == TABQ_OK ? "COMMIT" : "ROLLBACK");
    if (code == TABQ_OK)
      code = check_result(c, end, name);
    PQclear(end);
  }
  if (code == TABQ_OK && c->per_transaction && !(p->sql = copy_text(sql)))
    code = host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the %s statement", name);
  if (code != TABQ_OK) {
    if (p)
      free_prepared(p);
    return code;
  }
  snprintf(p->server_name, sizeof p->server_name, "%s", server_name);
  snprintf(p->name, sizeof p->name, "%s", name);
  p->next = c->stmts;
  if (c->stmts)
    c->stmts->prev = p;
  c->stmts = p;
  *out = p;
  return TABQ_OK;
}

static void end_execution(tabq_prepared *p) {
  PQclear(p->res);
  p->res = NULL;
  p->on_row = false;
}

/* A value of sample's type through the codec of the type the server inferred for placeholder
 * i, into a slot of its own: what execute would do with it, without a round trip (ABI 1.7). */
static int pg_bindable(tabq_prepared *p, unsigned i, const tabq_value *sample) {
  if (i >= p->nparams)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement has %u placeholders; no $%u", p->name,
                        p->nparams, i + 1);
  tabq_pg_slot slot = {0};
  const char *data;
  int len;
  int code = tabq_pg_encode(sample, p->param_types[i], &slot, &data, &len, p->name, i + 1);
  tabq_pg_slot_free(&slot);
  return code;
}

static uint64_t parse_count(const char *s) {
  uint64_t n = 0;
  for (; s && *s >= '0' && *s <= '9'; s++)
    n = n * 10 + (uint64_t)(*s - '0');
  return n;
}

static int pg_execute(tabq_prepared *p, const tabq_value *params, unsigned n) {
  end_execution(p);
  p->changes = 0;
  if (n != p->nparams)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement takes %u parameters, not %u", p->name,
                        p->nparams, n);
  if (n > 0 && !params)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no parameters", p->name);
  for (unsigned i = 0; i < n; i++) {
    int code = tabq_pg_encode(&params[i], p->param_types[i], &p->slots[i], &p->values[i],
                              &p->lengths[i], p->name, i + 1);
    if (code != TABQ_OK)
      return code;
  }
  /* Behind a transaction pooler: the text again, with the types the server inferred at prepare,
   * so the values bind as they would to the prepared statement. */
  tabq_conn *c = p->conn;
  PGresult *res = tabq_pg_await_reply(
      c, !c->broken && (p->sql ? PQsendQueryParams(c->pg, p->sql, (int)n, p->param_types, p->values,
                                                   p->lengths, p->formats, 1)
                               : PQsendQueryPrepared(c->pg, p->server_name, (int)n, p->values,
                                                     p->lengths, p->formats, 1)));
  char what[48];
  snprintf(what, sizeof what, "%s statement", p->name);
  int code = check_result(p->conn, res, what);
  if (code != TABQ_OK) {
    PQclear(res);
    return code;
  }
  p->res = res;
  p->row = -1;
  p->changes = parse_count(PQcmdTuples(res));
  return TABQ_OK;
}

static int pg_next(tabq_prepared *p, bool *row) {
  *row = p->on_row = false;
  if (p->res && p->row + 1 < PQntuples(p->res)) {
    p->row++;
    *row = p->on_row = true;
  }
  return TABQ_OK;
}

static int pg_cell(tabq_prepared *p, unsigned col, tabq_value *out) {
  if (!p->on_row)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no current row", p->name);
  if (col >= p->ncols || (int)col >= PQnfields(p->res))
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no column %u", p->name, col);
  int r = p->row, f = (int)col;
  const char *data = PQgetisnull(p->res, r, f) ? NULL : PQgetvalue(p->res, r, f);
  return tabq_pg_decode(data, PQgetlength(p->res, r, f), p->col_types[col], out, p->name, col);
}

/* Rows the last execution changed or returned (its command tag's count). */
static uint64_t pg_affected(tabq_prepared *p) {
  return p->changes;
}

static void pg_reset(tabq_prepared *p) {
  end_execution(p);
}

static void pg_finalize(tabq_prepared *p) {
  if (!p)
    return;
  tabq_conn *c = p->conn;
  end_execution(p);
  deallocate(c, p->server_name);
  if (p->prev)
    p->prev->next = p->next;
  else
    c->stmts = p->next;
  if (p->next)
    p->next->prev = p->prev;
  free_prepared(p);
}

/* ---- Transactions ------------------------------------------------------------------------- */

/* Transaction control (BEGIN with its isolation level, COMMIT, ROLLBACK) goes out as a statement
 * the connection prepared by name at its first use: the simple protocol's PQsendQuery keeps a
 * copy of each query's text until the reply, two allocations per row lock delivery that a
 * prepared execution does not make. The server parses transaction control in the extended
 * protocol, COMMIT and ROLLBACK also inside a failed transaction. Behind a transaction pooler
 * nothing is prepared by name, and a text of several statements cannot be: those go as text.
 * A failed prepare is the reply the caller reports. */
static PGresult *exec_control(tabq_conn *c, const char *sql) {
  if (c->broken || c->per_transaction || strchr(sql, ';') || strlen(sql) >= TABQ_PG_CONTROL_MAX)
    return tabq_pg_exec_text(c, sql);
  unsigned i = 0;
  while (i < c->ncontrols && strcmp(c->controls[i], sql) != 0)
    i++;
  if (i == TABQ_PG_CONTROLS_KEPT)
    return tabq_pg_exec_text(c, sql);
  char name[16];
  snprintf(name, sizeof name, "tabq_tx%u", i);
  if (i == c->ncontrols) {
    PGresult *res = tabq_pg_await_reply(c, PQsendPrepare(c->pg, name, sql, 0, NULL));
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
      return res;
    PQclear(res);
    memcpy(c->controls[c->ncontrols++], sql, strlen(sql) + 1);
  }
  return tabq_pg_await_reply(c, !c->broken &&
                                    PQsendQueryPrepared(c->pg, name, 0, NULL, NULL, NULL, 0));
}

static int run_control(tabq_conn *c, const char *sql, const char *what) {
  PGresult *res = exec_control(c, sql);
  int code = check_result(c, res, what);
  PQclear(res);
  return code;
}

static int pg_begin(tabq_conn *c, const char *begin_sql) {
  /* The server would only warn, and the caller would take the open transaction for its own. */
  if (PQtransactionStatus(c->pg) == PQTRANS_INTRANS ||
      PQtransactionStatus(c->pg) == PQTRANS_INERROR)
    return host()->fail(TABQ_INVALID, NULL, 0, "begin: a transaction is already open");
  return run_control(c, begin_sql ? begin_sql : "BEGIN", "begin");
}

static int pg_commit(tabq_conn *c) {
  PGresult *res = exec_control(c, "COMMIT");
  int code = check_result(c, res, "commit");
  /* COMMIT of a failed transaction succeeds as a command and rolls back: say so. */
  if (code == TABQ_OK && strcmp(PQcmdStatus(res), "ROLLBACK") == 0)
    code = host()->fail(TABQ_BACKEND, "25P02", 0,
                        "commit: the transaction had failed, so the server rolled it back");
  PQclear(res);
  return code;
}

static int pg_rollback(tabq_conn *c) {
  if (PQtransactionStatus(c->pg) == PQTRANS_IDLE)
    return TABQ_OK; /* nothing open: no round trip, and no server warning */
  return run_control(c, "ROLLBACK", "rollback");
}

/* ---- The rest ----------------------------------------------------------------------------- */

static int pg_server_version(tabq_conn *c, char *text, size_t cap, uint32_t *number) {
  int v = PQserverVersion(c->pg);
  if (v <= 0)
    return fail_pg(c, NULL, "server version");
  const char *shown = PQparameterStatus(c->pg, "server_version");
  if (text && cap > 0)
    snprintf(text, cap, "%s", shown ? shown : "");
  if (number)
    *number = (uint32_t)v;
  return TABQ_OK;
}

/* An idle connection learns that the server went away (terminated, restarted) only by reading:
 * a look at the socket that never blocks, then reading what arrived, tells without a round trip.
 * A few rounds, since the server's farewell message and the end of the stream may come apart. */
static bool pg_alive(tabq_conn *c) {
  if (!c || c->broken || lost(c))
    return false;
  PGTransactionStatusType ts = PQtransactionStatus(c->pg);
  for (int round = 0; round < 3 && (ts == PQTRANS_IDLE || ts == PQTRANS_INTRANS); round++) {
    struct pollfd pfd = {.fd = PQsocket(c->pg), .events = POLLIN};
    if (pfd.fd < 0 || poll(&pfd, 1, 0) <= 0)
      break;
    if (!PQconsumeInput(c->pg))
      break;
    (void)PQisBusy(c->pg); /* parses what came, leaving notifications queued */
  }
  return !lost(c);
}

static int pg_session_scope(tabq_conn *c) {
  return c && c->per_transaction ? TABQ_SESSION_PER_TRANSACTION : TABQ_SESSION_OWN;
}

static int pg_listen(tabq_conn *c, const char *channel) {
  if (c->per_transaction)
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "LISTEN needs a server session of its own, and the URL declares a "
                        "transaction pooler (pooler=transaction): listen on a direct connection "
                        "or through session pooling");
  if (!channel)
    return host()->fail(TABQ_INVALID, NULL, 0, "listen: no channel");
  size_t n = strlen(channel);
  char *sql = host()->alloc(2 * n + 16);
  if (!sql)
    return host()->fail(TABQ_NOMEM, NULL, 0, "listen: no memory");
  char *w = sql + sprintf(sql, "LISTEN \"");
  for (const char *s = channel; *s; s++) {
    *w++ = *s;
    if (*s == '"')
      *w++ = '"';
  }
  memcpy(w, "\"", 2);
  int code = run_sql(c, sql, "listen");
  host()->free(sql);
  return code;
}

/* Copies `src` into `dst` (cap bytes), cut at a character boundary when it is too long. */
static void copy_cut(char *dst, size_t cap, const char *src) {
  if (!dst || cap == 0)
    return;
  size_t n = strlen(src);
  if (n >= cap) {
    n = cap - 1;
    while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
      n--;
  }
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static bool take_notify(tabq_conn *c, char *channel, size_t channel_cap, char *payload,
                        size_t payload_cap) {
  PGnotify *n = PQnotifies(c->pg);
  if (!n)
    return false;
  copy_cut(channel, channel_cap, n->relname);
  copy_cut(payload, payload_cap, n->extra ? n->extra : "");
  PQfreemem(n);
  return true;
}

/* Notifications that came with earlier results are queued in libpq: those first. A negative
 * timeout waits no time. */
static int pg_wait_notify(tabq_conn *c, int timeout_ms, char *channel, size_t channel_cap,
                          char *payload, size_t payload_cap, bool *got) {
  *got = false;
  if (take_notify(c, channel, channel_cap, payload, payload_cap)) {
    *got = true;
    return TABQ_OK;
  }
  int64_t deadline = tabq_pg_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    struct pollfd pfd = {.fd = PQsocket(c->pg), .events = POLLIN};
    if (pfd.fd < 0 || lost(c))
      return fail_pg(c, NULL, "wait_notify");
    int64_t left = deadline - tabq_pg_mono_ms();
    int rc = poll(&pfd, 1, left > 0 ? (int)left : 0);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0)
      return host()->fail(TABQ_IO, NULL, errno, "wait_notify: poll: %s", strerror(errno));
    if (rc == 0)
      return TABQ_OK;
    if (!PQconsumeInput(c->pg))
      return fail_pg(c, NULL, "wait_notify");
    if (take_notify(c, channel, channel_cap, payload, payload_cap)) {
      *got = true;
      return TABQ_OK;
    }
    if (lost(c))
      return fail_pg(c, NULL, "wait_notify");
    if (left <= 0)
      return TABQ_OK;
  }
}

const tabq_driver_v1 tabq_pg_driver = {
    .size = sizeof(tabq_driver_v1),
    .version = 1,
    .connect = pg_connect,
    .close = pg_close,
    .exec = pg_exec,
    .prepare = pg_prepare,
    .execute = pg_execute,
    .next = pg_next,
    .cell = pg_cell,
    .affected = pg_affected,
    .reset = pg_reset,
    .finalize = pg_finalize,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .server_version = pg_server_version,
    .alive = pg_alive,
    .listen = pg_listen,
    .wait_notify = pg_wait_notify,
    .connect_host = pg_connect_host,
    .bindable = pg_bindable,
    .session_scope = pg_session_scope,
};
