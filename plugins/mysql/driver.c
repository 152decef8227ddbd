/* tabq — the MySQL/MariaDB driver on mariadb-connector-c: connections, server-side prepared
 * statements on the binary protocol, and transactions. Its URLs are url.c's.
 *
 * Every session runs in UTC (time_zone '+00:00', so TIMESTAMP columns read and write UTC and
 * DATETIME is taken as UTC), in utf8mb4, with autocommit on, and never reconnects by itself: a
 * reconnect would drop the session's GET_LOCK locks without a word. Affected counts are rows
 * matched (CLIENT_FOUND_ROWS), as PostgreSQL counts them, so an UPDATE that writes a value the
 * row already holds still counts its row. A text query may hold several statements
 * (CLIENT_MULTI_STATEMENTS), so a begin's SET TRANSACTION and START TRANSACTION go in one round
 * trip; prepared statements hold one statement whatever the flag. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <errmsg.h>
#include <mysql.h>
#include <tabq/sys/host_log.h>
#include <mysqld_error.h>

#include "binds.h"
#include "mysql_plugin.h"
#include "sizes.h"
#include "url.h"

struct tabq_conn {
  MYSQL *my;
  const tabq_host *log_host; /* its broker's (Driver.connect_host, ABI 1.6), else NULL */
  bool broken;               /* the connection is known lost: the pool replaces it */
  tabq_prepared *stmts;      /* still prepared; close frees them */
  /* The session's max_allowed_packet, read at connect (the server fixes it for the session's
   * life): a statement as long is refused before it is sent. */
  uint64_t max_packet;
  unsigned statement_s; /* the URL's statement_timeout: the client waits that plus the grace */
  int64_t sent_ms;      /* when the current round trip began, to tell a timeout in messages */
};

struct tabq_prepared {
  tabq_conn *conn;
  tabq_prepared *prev, *next;
  MYSQL_STMT *stmt;
  MYSQL_RES *meta; /* the result's fields (the statement's own, updated by each execute) */
  unsigned nparams, ncols, colcap;
  MYSQL_BIND *pbind;
  tabq_my_param *pslots;
  MYSQL_BIND *rbind;
  tabq_my_col *cols;
  bool has_rows, on_row;
  uint64_t changes;
  char name[32];
  char *sql; /* its text: a value too long for its column is reported with its table */
};

static const tabq_host *host(void) {
  return tabq_my_host();
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A round trip begins: a connection lost at the end of the reply bound is said to have timed
 * out (the library's words, "Lost connection" or "Server has gone away", do not say why). */
static void round_trip(tabq_conn *c) {
  if (c->statement_s)
    c->sent_ms = mono_ms();
}

/* ---- Errors ------------------------------------------------------------------------------- */

/* Codes after which the session is gone or its protocol state unknown. */
static bool lost_code(unsigned err) {
  switch (err) {
  case CR_CONNECTION_ERROR:
  case CR_CONN_HOST_ERROR:
  case CR_SERVER_GONE_ERROR:
  case CR_SERVER_LOST:
  case CR_COMMANDS_OUT_OF_SYNC:
  case CR_MALFORMED_PACKET:
  case CR_SERVER_LOST_EXTENDED:
  case CR_ERR_NET_READ:
  case CR_ERR_NET_WRITE:
  case ER_CONNECTION_KILLED:
  case ER_SERVER_SHUTDOWN:
  case ER_NET_PACKET_TOO_LARGE:
    return true;
  default:
    return false;
  }
}

/* The "impossible to write to binary log" family (1661 to 1667). */
static bool binlog_code(unsigned err, const char *msg) {
  return (err >= ER_BINLOG_ROW_ENGINE_AND_STMT_ENGINE &&
          err <= ER_BINLOG_MULTIPLE_ENGINES_AND_SELF_LOGGING_ENGINE) ||
         (msg && strstr(msg, "impossible to write to binary log"));
}

/* Reports a failure of `what` ("claim statement", "commit", ...) with the server's or the
 * library's error number, SQLSTATE and message. */
static int fail_with(tabq_conn *c, unsigned err, const char *state, const char *msg,
                     const char *what) {
  if (!msg || !*msg)
    msg = "unknown error";
  if (state && (!*state || strcmp(state, "00000") == 0))
    state = NULL;
  if (lost_code(err))
    c->broken = true;
  if (err == ER_BINLOG_STMT_MODE_AND_ROW_ENGINE || strstr(msg, "BINLOG_FORMAT = STATEMENT"))
    return host()->fail(TABQ_BACKEND, state, (long)err,
                        "%s: the server logs statements (binlog_format = STATEMENT), which refuses "
                        "writes at READ COMMITTED; set binlog_format to ROW or MIXED. The server "
                        "said: %s",
                        what, msg);
  if (binlog_code(err, msg))
    return host()->fail(
        TABQ_BACKEND, state, (long)err,
        "%s: the server cannot write this statement to its binary log as its "
        "binlog_format stands (ROW or MIXED usually accepts it). The server said: %s",
        what, msg);
  /* The library waits in milliseconds: allow for the clock's granularity. */
  unsigned reply_s = c->statement_s + TABQ_MY_REPLY_GRACE_S;
  if (c->broken && c->statement_s && mono_ms() - c->sent_ms + 50 >= reply_s * 1000LL)
    return host()->fail(TABQ_BACKEND, state, (long)err,
                        "%s: no reply from the server within %u s (statement_timeout=%u in the "
                        "URL, and %d s more); the connection is given up: %s",
                        what, reply_s, c->statement_s, TABQ_MY_REPLY_GRACE_S, msg);
  return host()->fail(TABQ_BACKEND, state, (long)err, "%s: %s%s", what, msg,
                      c->broken ? " (the connection is lost)" : "");
}

static int fail_conn(tabq_conn *c, const char *what) {
  return fail_with(c, mysql_errno(c->my), mysql_sqlstate(c->my), mysql_error(c->my), what);
}

static int fail_stmt(tabq_prepared *p) {
  char what[48];
  snprintf(what, sizeof what, "%s statement", p->name);
  return fail_with(p->conn, mysql_stmt_errno(p->stmt), mysql_stmt_sqlstate(p->stmt),
                   mysql_stmt_error(p->stmt), what);
}

/* A failure while a result's rows arrive (a deadlock found while a locking read met a row, say,
 * which InnoDB reports after the result has begun): the library's statement state is not to be
 * trusted after it, and the statement's next execute was seen waiting for ever on a reply the
 * server never sends. The connection is given up: the pool replaces it. */
static int fail_rows(tabq_prepared *p) {
  p->conn->broken = true;
  return fail_stmt(p);
}

/* ---- Connections -------------------------------------------------------------------------- */

static pthread_once_t g_library_once = PTHREAD_ONCE_INIT;
static int g_library_rc;

/* The library's global state, set up once before any thread connects. */
static void library_init(void) {
  g_library_rc = mysql_library_init(0, NULL, NULL);
}

/* Runs `n` bytes of SQL and consumes every result it returns. */
static int run_sql(tabq_conn *c, const char *sql, size_t n, const char *what) {
  if (c->max_packet && 1 + (uint64_t)n >= c->max_packet) /* the command byte and the text */
    return tabq_my_fail_packet(what, 1 + (uint64_t)n, c->max_packet, false, 0, NULL, NULL);
  round_trip(c);
  if (mysql_real_query(c->my, sql, (unsigned long)n))
    return fail_conn(c, what);
  for (;;) {
    MYSQL_RES *res = mysql_store_result(c->my);
    if (res)
      mysql_free_result(res);
    else if (mysql_field_count(c->my) != 0)
      return fail_conn(c, what);
    int more = mysql_next_result(c->my);
    if (more < 0)
      return TABQ_OK;
    if (more > 0)
      return fail_conn(c, what);
  }
}

/* A failed connect, with what the library's words leave out: that connect_timeout ran out and
 * how to change it, or that nothing accepted the connection (the library reports a refused
 * non-blocking connect with errno 115, "in progress"). */
static int fail_connect(MYSQL *my, const tabq_my_url *u, const char *shown, int64_t elapsed_ms) {
  unsigned err = mysql_errno(my);
  /* The library waits with poll() in milliseconds: allow for the clock's granularity. */
  bool timed_out =
      u->connect_timeout && lost_code(err) && elapsed_ms + 50 >= u->connect_timeout * 1000LL;
  if (timed_out)
    return host()->fail(TABQ_BACKEND, mysql_sqlstate(my), (long)err,
                        "cannot connect to %s: the connect timed out after %u s (set "
                        "connect_timeout=SECONDS in the URL, default %d): %s",
                        shown, u->connect_timeout, TABQ_MY_DEFAULT_CONNECT_TIMEOUT_S,
                        mysql_error(my));
  if (u->sql_mode && err == ER_WRONG_VALUE_FOR_VAR)
    return host()->fail(TABQ_INVALID, mysql_sqlstate(my), (long)err,
                        "cannot connect to %s: the server refused the URL's sql_mode=%s (a mode "
                        "name it does not know?): %s",
                        shown, u->sql_mode, mysql_error(my));
  if (err == CR_CONNECTION_ERROR || err == CR_CONN_HOST_ERROR)
    return host()->fail(TABQ_BACKEND, mysql_sqlstate(my), (long)err,
                        "cannot connect to %s: no server accepted the connection (is it running, "
                        "and listening at that address?): %s",
                        shown, mysql_error(my));
  return host()->fail(TABQ_BACKEND, mysql_sqlstate(my), (long)err, "cannot connect to %s: %s",
                      shown, mysql_error(my));
}

/* The library applies the connect timeout to every read and write until mysql_real_connect
 * returns, the handshake and the init command included, then the read and write timeouts: the
 * URL's statement_timeout plus TABQ_MY_REPLY_GRACE_S, which bounds a statement on a server that
 * stops answering while its kernel keeps the connection open (a paused server). The server is
 * told the statement_timeout itself, so a statement slow by design (a lock wait, a statement of
 * the service's own) ends there first, with an error that leaves the session usable; a read cut
 * off by the client leaves the session lost and the connection is given up. */
static int open_session(MYSQL *my, const tabq_my_url *u, const char *shown) {
  my_bool off = 0, on = 1;
  unsigned int no_local_infile = 0;
  unsigned int reply_s = u->statement_timeout + TABQ_MY_REPLY_GRACE_S;
  /* As the init command, the session setup runs inside the bounded connect. The URL's
   * sql_mode holds mode names only (parse_query checked): it goes into the literal as it is.
   * max_statement_time is MariaDB's, in a comment only MariaDB executes (MySQL's
   * max_execution_time follows in read_session). */
  char session[1200], bound[64] = "";
  if (u->statement_timeout)
    snprintf(bound, sizeof bound, " /*M!, max_statement_time = %u*/", u->statement_timeout);
  snprintf(session, sizeof session, "SET time_zone = '+00:00', autocommit = 1%s%s%s%s",
           u->sql_mode ? ", sql_mode = '" : "", u->sql_mode ? u->sql_mode : "",
           u->sql_mode ? "'" : "", bound);
  if (mysql_optionsv(my, MYSQL_OPT_RECONNECT, &off) ||
      mysql_optionsv(my, MYSQL_SET_CHARSET_NAME, "utf8mb4") ||
      mysql_optionsv(my, MYSQL_REPORT_DATA_TRUNCATION, &on) ||
      mysql_optionsv(my, MYSQL_OPT_LOCAL_INFILE, &no_local_infile) ||
      mysql_optionsv(my, MYSQL_INIT_COMMAND, session) ||
      (u->connect_timeout && mysql_optionsv(my, MYSQL_OPT_CONNECT_TIMEOUT, &u->connect_timeout)) ||
      (u->statement_timeout && (mysql_optionsv(my, MYSQL_OPT_READ_TIMEOUT, &reply_s) ||
                                mysql_optionsv(my, MYSQL_OPT_WRITE_TIMEOUT, &reply_s))))
    return host()->fail(TABQ_BACKEND, NULL, 0, "cannot set the connection options for %s", shown);
  int64_t start = mono_ms();
  if (!mysql_real_connect(my, u->host, u->user, u->password, u->database, u->port, u->socket,
                          CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS))
    return fail_connect(my, u, shown, mono_ms() - start);
  return TABQ_OK;
}

/* True when the comma-separated `modes` names `mode`. */
static bool has_mode(const char *modes, const char *mode) {
  size_t n = strlen(mode);
  for (const char *p = modes; p && *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, mode, n) == 0)
      return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static atomic_bool g_warned_lax;

/* On MySQL, sets the session's statement bound (MariaDB's is in the init command). Reads what
 * the session keeps for its life: max_allowed_packet, which bounds every statement
 * sent (my_execute and run_sql refuse a longer one before sending it), and sql_mode, whose lack of
 * a strict mode lets an over-long value be cut to fit with a mere warning (logged once a process).
 */
static int read_session(tabq_conn *c, const char *shown, unsigned statement_timeout) {
  /* MySQL bounds SELECTs only (max_execution_time): a lock wait of another statement ends
   * on the server first through innodb_lock_wait_timeout, lowered to the bound. */
  char bound[160];
  snprintf(bound, sizeof bound,
           "SET SESSION max_execution_time = %u, innodb_lock_wait_timeout = "
           "LEAST(@@innodb_lock_wait_timeout, %u)",
           statement_timeout * 1000, statement_timeout);
  int rc;
  if (statement_timeout && !mariadb_connection(c->my) &&
      (rc = run_sql(c, bound, strlen(bound), "statement_timeout (set at connect)")) != TABQ_OK)
    return rc;
  static const char sql[] = "SELECT @@max_allowed_packet, @@sql_mode";
  if (mysql_real_query(c->my, sql, sizeof sql - 1))
    return fail_conn(c, "session settings");
  MYSQL_RES *res = mysql_store_result(c->my);
  if (!res)
    return fail_conn(c, "session settings");
  MYSQL_ROW row = mysql_fetch_row(res);
  c->max_packet = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
  const char *modes = row && row[1] ? row[1] : "";
  if (!has_mode(modes, "STRICT_TRANS_TABLES") && !has_mode(modes, "STRICT_ALL_TABLES") &&
      !atomic_exchange(&g_warned_lax, true))
    tabq_host_log(c->log_host, host(), TABQ_LOG_WARN,
                  "mysql: %s runs with sql_mode '%s', without STRICT_TRANS_TABLES: a payload or "
                  "value longer than its column is cut to fit, with a warning only; add "
                  "STRICT_TRANS_TABLES (sql_mode in the URL) to have such a write fail",
                  shown, modes);
  mysql_free_result(res);
  return TABQ_OK;
}

static int my_connect_host(const tabq_host *log_host, const char *url, tabq_conn **out) {
  *out = NULL;
  char shown[TABQ_MY_URL_SHOWN];
  if (!url)
    return host()->fail(TABQ_INVALID, NULL, 0, "connect: no URL");
  tabq_my_shown_url(url, shown);
  pthread_once(&g_library_once, library_init);
  if (g_library_rc)
    return host()->fail(TABQ_BACKEND, NULL, 0, "mysql_library_init failed");
  tabq_my_url u = {0};
  int rc = tabq_my_parse_url(url, &u, shown);
  tabq_conn *c = NULL;
  if (rc == TABQ_OK && !(c = host()->alloc(sizeof *c)))
    rc = host()->fail(TABQ_NOMEM, NULL, 0, "no memory for a MySQL connection");
  if (rc == TABQ_OK) {
    memset(c, 0, sizeof *c);
    c->log_host = log_host;
    c->statement_s = u.statement_timeout;
    if (!(c->my = mysql_init(NULL)))
      rc = host()->fail(TABQ_NOMEM, NULL, 0, "no memory for a MySQL connection");
  }
  if (rc == TABQ_OK)
    rc = open_session(c->my, &u, shown);
  if (rc == TABQ_OK)
    rc = read_session(c, shown, u.statement_timeout);
  if (u.store)
    host()->free(u.store);
  if (rc != TABQ_OK) {
    if (c && c->my)
      mysql_close(c->my);
    if (c)
      host()->free(c);
    return rc;
  }
  tabq_host_log(log_host, host(), TABQ_LOG_DEBUG,
                "mysql: connected to %s (server %s, connection id %lu)", shown,
                mysql_get_server_info(c->my), mysql_thread_id(c->my));
  *out = c;
  return TABQ_OK;
}

static int my_connect(const char *url, tabq_conn **out) {
  return my_connect_host(NULL, url, out);
}

static void free_prepared(tabq_prepared *p);

static void my_close(tabq_conn *c) {
  if (!c)
    return;
  /* The library forgets statements when the connection closes but never frees them. */
  while (c->stmts) {
    tabq_prepared *p = c->stmts;
    c->stmts = p->next;
    mysql_stmt_close(p->stmt);
    free_prepared(p);
  }
  mysql_close(c->my);
  host()->free(c);
}

static int my_exec(tabq_conn *c, const char *sql) {
  if (!sql)
    return host()->fail(TABQ_INVALID, NULL, 0, "exec: no SQL");
  return run_sql(c, sql, strlen(sql), "exec");
}

/* ---- Prepared statements ------------------------------------------------------------------ */

static void free_prepared(tabq_prepared *p) {
  for (unsigned i = 0; p->cols && i < p->colcap; i++)
    tabq_my_col_free(&p->cols[i]);
  for (unsigned i = 0; p->pslots && i < p->nparams; i++)
    if (p->pslots[i].list)
      host()->free(p->pslots[i].list);
  if (p->meta)
    mysql_free_result(p->meta);
  void *parts[] = {p->pbind, p->pslots, p->rbind, p->cols, p->sql};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (parts[i])
      host()->free(parts[i]);
  host()->free(p);
}

/* Grows an array of `*cap` items of `size` bytes to `n`, zeroing the new items. */
static bool grow_array(void **a, unsigned have, unsigned n, size_t size) {
  if (n <= have)
    return true;
  void *b = host()->realloc(*a, (size_t)n * size);
  if (!b)
    return false;
  memset((char *)b + (size_t)have * size, 0, (size_t)(n - have) * size);
  *a = b;
  return true;
}

/* Room for `n` result columns; existing column buffers are kept. */
static bool room_for_cols(tabq_prepared *p, unsigned n) {
  if (n <= p->colcap)
    return true;
  if (!grow_array((void **)&p->rbind, p->colcap, n, sizeof *p->rbind) ||
      !grow_array((void **)&p->cols, p->colcap, n, sizeof *p->cols))
    return false;
  p->colcap = n;
  return true;
}

/* A statement naming what the database lacks fails with TABQ_SCHEMA. */
static int fail_prepare(tabq_conn *c, MYSQL_STMT *st, const char *name) {
  unsigned err = mysql_stmt_errno(st);
  if (err == ER_NO_SUCH_TABLE || err == ER_BAD_FIELD_ERROR || err == ER_BAD_DB_ERROR ||
      err == ER_SP_DOES_NOT_EXIST)
    return host()->fail(TABQ_SCHEMA, mysql_stmt_sqlstate(st), (long)err, "%s statement: %s", name,
                        mysql_stmt_error(st));
  char what[48];
  snprintf(what, sizeof what, "%s statement", name);
  return fail_with(c, err, mysql_stmt_sqlstate(st), mysql_stmt_error(st), what);
}

static int my_prepare(tabq_conn *c, const char *sql, unsigned nparams, const char *name,
                      tabq_prepared **out) {
  *out = NULL;
  name = name ? name : "sql";
  if (!sql)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no SQL", name);
  MYSQL_STMT *st = mysql_stmt_init(c->my);
  if (!st)
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the %s statement", name);
  round_trip(c);
  if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql))) {
    int code = fail_prepare(c, st, name); /* before the close frees the message */
    mysql_stmt_close(st);
    return code;
  }
  unsigned long np = mysql_stmt_param_count(st);
  if (np != nparams) {
    mysql_stmt_close(st);
    /* An unbound placeholder would fail at every execute; a missing one would drop a value. */
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement has %lu placeholders, not %u", name,
                        np, nparams);
  }
  my_bool on = 1;
  tabq_prepared *p = host()->alloc(sizeof *p);
  if (!p || mysql_stmt_attr_set(st, STMT_ATTR_UPDATE_MAX_LENGTH, &on)) {
    mysql_stmt_close(st);
    if (p)
      host()->free(p);
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the %s statement", name);
  }
  memset(p, 0, sizeof *p);
  p->conn = c;
  p->stmt = st;
  p->nparams = nparams;
  snprintf(p->name, sizeof p->name, "%s", name);
  p->meta = mysql_stmt_result_metadata(st); /* NULL: no result set */
  p->ncols = p->meta ? mysql_num_fields(p->meta) : 0;
  size_t len = strlen(sql) + 1;
  if ((p->sql = host()->alloc(len)))
    memcpy(p->sql, sql, len);
  if (!p->sql || !grow_array((void **)&p->pbind, 0, nparams, sizeof *p->pbind) ||
      !grow_array((void **)&p->pslots, 0, nparams, sizeof *p->pslots) ||
      !room_for_cols(p, p->ncols)) {
    mysql_stmt_close(st);
    free_prepared(p);
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the %s statement", name);
  }
  p->next = c->stmts;
  if (c->stmts)
    c->stmts->prev = p;
  c->stmts = p;
  *out = p;
  return TABQ_OK;
}

static int fail_packet(tabq_prepared *p, uint64_t size, bool sent) {
  char what[48];
  snprintf(what, sizeof what, "%s statement", p->name);
  if (sent)
    p->conn->broken = true; /* the server closes the connection after saying so */
  return tabq_my_fail_packet(what, size, p->conn->max_packet, sent, mysql_stmt_errno(p->stmt),
                             mysql_stmt_sqlstate(p->stmt), mysql_stmt_error(p->stmt));
}

/* A failed execute of `size` bytes: what the server's words leave out for a value too long
 * for its column or a statement over max_allowed_packet. */
static int fail_execute(tabq_prepared *p, uint64_t size) {
  unsigned err = mysql_stmt_errno(p->stmt);
  if (err == ER_NET_PACKET_TOO_LARGE)
    return fail_packet(p, size, true);
  if (err == ER_DATA_TOO_LONG) {
    char what[48];
    snprintf(what, sizeof what, "%s statement", p->name);
    return tabq_my_fail_too_long(p->conn->my, p->sql, what, err, mysql_stmt_sqlstate(p->stmt),
                                 mysql_stmt_error(p->stmt));
  }
  return p->ncols ? fail_rows(p) : fail_stmt(p); /* a result may have begun */
}

static bool more_results(tabq_conn *c) {
  unsigned int status = 0;
  return mariadb_get_infov(c->my, MARIADB_CONNECTION_SERVER_STATUS, &status) == 0 &&
         (status & SERVER_MORE_RESULTS_EXIST);
}

static void end_execution(tabq_prepared *p) {
  if (p->has_rows) {
    mysql_stmt_free_result(p->stmt);
    /* A procedure's further results would keep the connection busy. */
    if (more_results(p->conn))
      mysql_stmt_reset(p->stmt);
  }
  p->has_rows = p->on_row = false;
}

/* The library replaces its field array when an execute brings other metadata (a procedure's
 * result): take the new one. */
static int refresh_meta(tabq_prepared *p, unsigned fields) {
  if (p->meta)
    mysql_free_result(p->meta);
  p->meta = mysql_stmt_result_metadata(p->stmt);
  p->ncols = p->meta ? mysql_num_fields(p->meta) : 0;
  if (!p->meta || p->ncols != fields || !room_for_cols(p, p->ncols)) {
    p->ncols = 0;
    return host()->fail(TABQ_NOMEM, NULL, 0, "%s statement: no memory for its result columns",
                        p->name);
  }
  return TABQ_OK;
}

/* After an execute that returned rows: buffers them all (the connection is then free for the
 * next statement while these rows are read) and binds the columns. */
static int take_rows(tabq_prepared *p) {
  unsigned fields = mysql_stmt_field_count(p->stmt);
  int rc = TABQ_OK;
  if (fields != p->ncols || more_results(p->conn))
    rc = refresh_meta(p, fields);
  if (rc == TABQ_OK && mysql_stmt_store_result(p->stmt))
    rc = fail_rows(p);
  p->has_rows = true; /* from here on, reset frees what the execute left */
  if (rc != TABQ_OK)
    return rc;
  MYSQL_FIELD *f = mysql_fetch_fields(p->meta);
  for (unsigned i = 0; i < p->ncols; i++)
    if ((rc = tabq_my_bind_col(&f[i], &p->rbind[i], &p->cols[i], p->name, i)) != TABQ_OK)
      return rc;
  if (p->ncols > 0 && mysql_stmt_bind_result(p->stmt, p->rbind))
    return fail_stmt(p);
  p->changes = mysql_stmt_num_rows(p->stmt);
  return TABQ_OK;
}

static int my_execute(tabq_prepared *p, const tabq_value *params, unsigned n) {
  end_execution(p);
  p->changes = 0;
  if (n != p->nparams)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement takes %u parameters, not %u", p->name,
                        p->nparams, n);
  if (n > 0 && !params)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no parameters", p->name);
  for (unsigned i = 0; i < n; i++) {
    int rc = tabq_my_bind_param(&params[i], &p->pbind[i], &p->pslots[i], p->name, i + 1);
    if (rc != TABQ_OK)
      return rc;
  }
  if (n > 0 && mysql_stmt_bind_param(p->stmt, p->pbind))
    return fail_stmt(p);
  uint64_t size = tabq_my_execute_size(p->pbind, n);
  if (p->conn->max_packet && size >= p->conn->max_packet)
    return fail_packet(p, size, false);
  round_trip(p->conn);
  if (mysql_stmt_execute(p->stmt))
    return fail_execute(p, size);
  if (mysql_stmt_field_count(p->stmt) == 0) {
    my_ulonglong rows = mysql_stmt_affected_rows(p->stmt);
    p->changes = rows == (my_ulonglong)-1 ? 0 : rows;
    return TABQ_OK;
  }
  int rc = take_rows(p);
  if (rc != TABQ_OK)
    end_execution(p);
  return rc;
}

static int my_next(tabq_prepared *p, bool *row) {
  *row = p->on_row = false;
  if (!p->has_rows)
    return TABQ_OK;
  int rc = mysql_stmt_fetch(p->stmt);
  if (rc == MYSQL_NO_DATA)
    return TABQ_OK;
  if (rc == MYSQL_DATA_TRUNCATED) /* the buffers follow max_length: a library surprise */
    return host()->fail(TABQ_BACKEND, NULL, 0,
                        "%s statement: a value came longer than its column's max_length", p->name);
  if (rc != 0)
    return fail_rows(p);
  *row = p->on_row = true;
  return TABQ_OK;
}

static int my_cell(tabq_prepared *p, unsigned col, tabq_value *out) {
  if (!p->on_row)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no current row", p->name);
  if (col >= p->ncols)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no column %u", p->name, col);
  return tabq_my_cell(&p->cols[col], out, p->name, col);
}

/* Rows the last execution matched, or returned. */
static uint64_t my_affected(tabq_prepared *p) {
  return p->changes;
}

static void my_reset(tabq_prepared *p) {
  end_execution(p);
}

static void my_finalize(tabq_prepared *p) {
  if (!p)
    return;
  tabq_conn *c = p->conn;
  end_execution(p);
  mysql_stmt_close(p->stmt);
  if (p->prev)
    p->prev->next = p->next;
  else
    c->stmts = p->next;
  if (p->next)
    p->next->prev = p->prev;
  free_prepared(p);
}

/* ---- Transactions ------------------------------------------------------------------------- */

static bool in_transaction(tabq_conn *c) {
  unsigned int status = 0;
  return mariadb_get_infov(c->my, MARIADB_CONNECTION_SERVER_STATUS, &status) == 0 &&
         (status & SERVER_STATUS_IN_TRANS);
}

/* The dialect's begin text (SET TRANSACTION ...; START TRANSACTION) goes as one multi-statement
 * query: one round trip. A part that fails leaves no half-begun transaction open. */
static int my_begin(tabq_conn *c, const char *begin_sql) {
  /* The server would commit the open transaction and start another without a word. */
  if (in_transaction(c))
    return host()->fail(TABQ_INVALID, NULL, 0, "begin: a transaction is already open");
  const char *s = begin_sql ? begin_sql : "START TRANSACTION";
  int rc = run_sql(c, s, strlen(s), "begin");
  if (rc != TABQ_OK && !c->broken && in_transaction(c))
    mysql_rollback(c->my);
  return rc;
}

static int my_commit(tabq_conn *c) {
  round_trip(c);
  return mysql_commit(c->my) ? fail_conn(c, "commit") : TABQ_OK;
}

static int my_rollback(tabq_conn *c) {
  if (!in_transaction(c))
    return TABQ_OK; /* nothing open: no round trip */
  round_trip(c);
  return mysql_rollback(c->my) ? fail_conn(c, "rollback") : TABQ_OK;
}

/* ---- The rest ----------------------------------------------------------------------------- */

/* From the handshake: no round trip. */
static int my_server_version(tabq_conn *c, char *text, size_t cap, uint32_t *number) {
  unsigned long v = mysql_get_server_version(c->my);
  const char *info = mysql_get_server_info(c->my);
  if (v == 0 || !info)
    return host()->fail(TABQ_BACKEND, NULL, 0, "server version: the connection has none");
  if (text && cap > 0)
    snprintf(text, cap, "%s", info);
  if (number)
    *number = (uint32_t)v;
  return TABQ_OK;
}

static int my_database(tabq_conn *c, char *name, size_t cap) {
  static const char sql[] = "SELECT DATABASE()";
  round_trip(c);
  if (mysql_real_query(c->my, sql, sizeof sql - 1))
    return fail_conn(c, "database");
  MYSQL_RES *res = mysql_store_result(c->my);
  if (!res)
    return fail_conn(c, "database");
  MYSQL_ROW row = mysql_fetch_row(res);
  unsigned long *len = row ? mysql_fetch_lengths(res) : NULL;
  size_t n = row && row[0] && len ? len[0] : 0;
  int rc = TABQ_OK;
  if (n >= cap)
    rc = host()->fail(TABQ_INVALID, NULL, 0, "database: the name is longer than %zu bytes",
                      cap ? cap - 1 : 0);
  else if (cap > 0) {
    if (n > 0)
      memcpy(name, row[0], n);
    name[n] = '\0';
  }
  mysql_free_result(res);
  return rc;
}

/* An idle connection expects nothing from the server; anything readable means it went away
 * (end of stream, or an error packet before it). Only data that might belong to TLS asks the
 * server with a ping. */
static bool my_alive(tabq_conn *c) {
  if (!c || c->broken)
    return false;
  my_socket fd = mysql_get_socket(c->my);
  if ((int)fd < 0) {
    c->broken = true;
    return false;
  }
  struct pollfd pfd = {.fd = (int)fd, .events = POLLIN};
  if (poll(&pfd, 1, 0) <= 0)
    return true;
  char byte;
  ssize_t got = recv((int)fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    c->broken = true;
  else if (got > 0 && mysql_ping(c->my))
    c->broken = true;
  return !c->broken;
}

const tabq_driver_v1 tabq_my_driver = {
    .size = sizeof(tabq_driver_v1),
    .version = 1,
    .connect = my_connect,
    .close = my_close,
    .exec = my_exec,
    .prepare = my_prepare,
    .execute = my_execute,
    .next = my_next,
    .cell = my_cell,
    .affected = my_affected,
    .reset = my_reset,
    .finalize = my_finalize,
    .begin = my_begin,
    .commit = my_commit,
    .rollback = my_rollback,
    .server_version = my_server_version,
    .alive = my_alive,
    .listen = NULL,
    .wait_notify = NULL,
    .database = my_database,
    .connect_host = my_connect_host,
};
