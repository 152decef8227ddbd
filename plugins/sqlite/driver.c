/* tabq — the SQLite driver: connections, prepared statements, transactions.
 *
 * URLs: sqlite:PATH, sqlite://PATH (relative), sqlite:///ABS/PATH, with an optional query
 * ?synchronous=off|normal|full|extra&busy_timeout=MS (FULL and 5000 ms unless set). Every
 * connection runs in WAL mode. Writers of one process take the file's writer lock
 * (writer_lock.c) before SQLite's, so they queue instead of spinning in the busy handler. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>
#include <tabq/sys/host_log.h>

#include "sqlite_plugin.h"

#define MIN_VERSION_NUMBER 3035000 /* UPDATE .. RETURNING */
#define DEFAULT_BUSY_MS 5000
#define TIME_BUF 32 /* per parameter: room for one formatted time */

static const char *const sync_names[] = {"OFF", "NORMAL", "FULL", "EXTRA"};
enum { SYNC_FULL = 2 };

struct tabq_conn {
  sqlite3 *db;
  const tabq_host *log_host; /* its broker's (Driver.connect_host, ABI 1.6), else NULL */
  tabq_sqlite_writer *writer;
  int busy_ms;
  unsigned writer_refs; /* holders of the writer lock on this connection: statements, tx, exec */
  bool in_tx;           /* begin ran; commit or rollback ends it */
  bool broken;          /* corruption or I/O error seen: the pool replaces the connection */
  tabq_prepared *stmts; /* still prepared; close finalizes them */
};

/* What a parameter's value is formatted into, kept from one execution to the next: a time as
 * text, a list of ids as JSON array text (grown to the longest list bound, freed at finalize). */
typedef struct param_buf {
  char time[TIME_BUF];
  char *list;
  size_t list_cap;
} param_buf;

struct tabq_prepared {
  tabq_conn *conn;
  sqlite3_stmt *stmt;
  tabq_prepared *prev, *next;
  unsigned nparams;
  bool readonly;
  bool active;       /* executed and not reset */
  bool pending;      /* execute's step produced a row that next has not handed out */
  bool on_row;       /* cell may read the current row */
  bool done;         /* stepped to the end */
  bool holds_writer; /* this execution holds a writer reference */
  uint64_t changes;
  char name[32];
  param_buf params[];
};

static const tabq_host *host(void) {
  return tabq_sqlite_host();
}

/* ---- Errors ------------------------------------------------------------------------------- */

/* Reports SQLite's error on `c` for `what` ("claim statement", "commit", ...). */
static int fail_sqlite(tabq_conn *c, int rc, const char *what) {
  int primary = rc & 0xff;
  const char *msg = sqlite3_errmsg(c->db);
  const char *path = c->writer ? tabq_sqlite_writer_path(c->writer) : "(opening)";
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR)
    c->broken = true;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    return host()->fail(TABQ_BACKEND, NULL, rc,
                        "%s: the database %s stayed locked for the busy timeout (%d ms): %s", what,
                        path, c->busy_ms, msg);
  if (primary == SQLITE_NOMEM)
    return host()->fail(TABQ_NOMEM, NULL, rc, "%s: %s", what, msg);
  return host()->fail(TABQ_BACKEND, NULL, rc, "%s: %s", what, msg);
}

/* After a failure of `sql` is reported: where in it SQLite's error points (3.38's byte offset),
 * counted as the host takes it, in characters from 1 (ABI 1.7). */
static int with_position(int code, sqlite3 *db, const char *sql) {
#if SQLITE_VERSION_NUMBER >= 3038000
  int at = sqlite3_error_offset(db);
  const tabq_host *h = host();
  if (at >= 0 && TABQ_HAS_MEMBER(h, tabq_host, fail_position)) {
    unsigned chars = 1;
    for (int i = 0; i < at && sql[i]; i++)
      chars += ((unsigned char)sql[i] & 0xC0) != 0x80; /* UTF-8 lead bytes and ASCII */
    h->fail_position(chars);
  }
#else
  (void)db;
  (void)sql;
#endif
  return code;
}

/* ---- The writer lock, counted per connection ---------------------------------------------- */

static int writer_take(tabq_conn *c, const char *what) {
  if (c->writer_refs == 0 && !tabq_sqlite_writer_lock(c->writer, c->busy_ms))
    return host()->fail(TABQ_BACKEND, NULL, SQLITE_BUSY,
                        "%s: the database %s stayed locked by another connection of this process "
                        "for the busy timeout (%d ms)",
                        what, tabq_sqlite_writer_path(c->writer), c->busy_ms);
  c->writer_refs++;
  return TABQ_OK;
}

static void writer_give(tabq_conn *c) {
  if (c->writer_refs > 0 && --c->writer_refs == 0)
    tabq_sqlite_writer_unlock(c->writer);
}

/* After COMMIT or ROLLBACK, or an error that made SQLite roll back on its own. */
static void end_tx_if_closed(tabq_conn *c) {
  if (c->in_tx && sqlite3_get_autocommit(c->db)) {
    c->in_tx = false;
    writer_give(c);
  }
}

/* ---- URLs --------------------------------------------------------------------------------- */

static bool span_is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

static bool parse_ms(const char *s, size_t n, int *out) {
  long long v = 0;
  if (n == 0 || n > 10)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (s[i] - '0');
  }
  if (v > INT_MAX)
    return false;
  *out = (int)v;
  return true;
}

/* One key=value of the query. */
static int parse_option(const char *url, const char *s, size_t n, tabq_sqlite_url *o) {
  const char *eq = memchr(s, '=', n);
  size_t klen = eq ? (size_t)(eq - s) : n;
  const char *v = eq ? eq + 1 : s + n;
  size_t vlen = eq ? n - klen - 1 : 0;
  if (span_is(s, klen, "synchronous")) {
    for (int i = 0; i < 4; i++)
      if (eq && span_is(v, vlen, sync_names[i])) {
        o->sync = i;
        return TABQ_OK;
      }
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "sqlite URL %s: synchronous must be off, normal, full or extra, not "
                        "\"%.*s\"",
                        url, (int)vlen, v);
  }
  if (span_is(s, klen, "busy_timeout")) {
    if (eq && parse_ms(v, vlen, &o->busy_ms))
      return TABQ_OK;
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "sqlite URL %s: busy_timeout must be whole milliseconds, not \"%.*s\"", url,
                        (int)vlen, v);
  }
  return host()->fail(TABQ_INVALID, NULL, 0,
                      "sqlite URL %s: unknown query key \"%.*s\" (known: synchronous, "
                      "busy_timeout)",
                      url, (int)klen, s);
}

int tabq_sqlite_parse_url(const char *url, tabq_sqlite_url *o) {
  o->path = NULL;
  o->sync = SYNC_FULL;
  o->busy_ms = DEFAULT_BUSY_MS;
  if (!url || strncmp(url, "sqlite:", 7) != 0)
    return host()->fail(TABQ_INVALID, NULL, 0, "not a sqlite URL: %s", url ? url : "(null)");
  const char *path = url + 7;
  if (strncmp(path, "//", 2) == 0)
    path += 2; /* sqlite://rel/path and sqlite:///abs/path */
  const char *query = strchr(path, '?');
  size_t plen = query ? (size_t)(query - path) : strlen(path);
  if (plen == 0)
    return host()->fail(TABQ_INVALID, NULL, 0, "sqlite URL %s names no database file", url);
  if (span_is(path, plen, ":memory:"))
    return host()->fail(TABQ_INVALID, NULL, 0,
                        "sqlite URL %s: an in-memory database belongs to one connection, so "
                        "each pooled connection would get its own; name a file",
                        url);
  for (const char *s = query ? query + 1 : NULL; s && *s;) {
    const char *amp = strchr(s, '&');
    size_t n = amp ? (size_t)(amp - s) : strlen(s);
    if (n > 0) {
      int rc = parse_option(url, s, n, o);
      if (rc != TABQ_OK)
        return rc;
    }
    s = amp ? amp + 1 : NULL;
  }
  o->path = host()->alloc(plen + 1);
  if (!o->path)
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the sqlite URL %s", url);
  memcpy(o->path, path, plen);
  o->path[plen] = '\0';
  return TABQ_OK;
}

/* ---- Connections -------------------------------------------------------------------------- */

static void free_conn(tabq_conn *c) {
  if (c->db)
    sqlite3_close_v2(c->db);
  tabq_sqlite_writer_close(c->writer);
  host()->free(c);
}

/* The key of the file's writer lock: one file reached by two spellings shares one lock. */
static int open_writer(tabq_conn *c, const char *path) {
  char *real = realpath(path, NULL);
  const char *key = real;
  if (!key) {
    key = sqlite3_db_filename(c->db, "main");
    if (!key || !*key)
      key = path;
  }
  int rc = tabq_sqlite_writer_open(key, &c->writer);
  free(real);
  return rc;
}

/* A failure while setting the connection up: SQLite's "busy" and "out of memory" keep their
 * codes, anything else means the file could not be opened as a database. */
static int fail_open(tabq_conn *c, int rc, const char *path) {
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_NOMEM)
    return fail_sqlite(c, rc, "connect");
  return host()->fail(TABQ_IO, NULL, rc, "cannot open the SQLite database %s: %s", path,
                      sqlite3_errmsg(c->db));
}

/* The journal mode of the file: WAL is persistent, so once set it needs no write lock again. */
static bool already_wal(tabq_conn *c) {
  sqlite3_stmt *st = NULL;
  bool wal = false;
  if (sqlite3_prepare_v2(c->db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    const char *mode = (const char *)sqlite3_column_text(st, 0);
    wal = mode && strcasecmp(mode, "wal") == 0;
  }
  sqlite3_finalize(st);
  return wal;
}

/* Switching to WAL takes the database's write lock, so it is done only when needed: another
 * process writing all along would otherwise keep a new connection waiting. */
static int set_journal_wal(tabq_conn *c, const char *path) {
  if (already_wal(c))
    return TABQ_OK;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st);
  /* Another process may have switched the file meanwhile and kept it busy since. */
  if (rc == SQLITE_BUSY && already_wal(c)) {
    sqlite3_finalize(st);
    return TABQ_OK;
  }
  if (rc != SQLITE_ROW) {
    int code = fail_open(c, rc, path);
    sqlite3_finalize(st);
    return code;
  }
  const char *mode = (const char *)sqlite3_column_text(st, 0);
  bool wal = mode && strcasecmp(mode, "wal") == 0;
  int code = wal ? TABQ_OK
                 : host()->fail(TABQ_BACKEND, NULL, 0,
                                "the SQLite database %s stays in journal mode %s, not WAL", path,
                                mode ? mode : "(unknown)");
  sqlite3_finalize(st);
  return code;
}

/* Busy timeout first, so the switch to WAL already waits out other processes. */
static int configure(tabq_conn *c, const tabq_sqlite_url *o) {
  char sql[64];
  sqlite3_extended_result_codes(c->db, 1);
  /* Otherwise a quoted column the table lacks silently reads as a string literal: prepare would
   * not report it and `"processed_at" IS NULL` would be false for every row. */
  sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
  sqlite3_busy_timeout(c->db, o->busy_ms);
  int code = writer_take(c, "connect");
  if (code != TABQ_OK)
    return code;
  code = set_journal_wal(c, o->path);
  if (code == TABQ_OK) {
    snprintf(sql, sizeof sql, "PRAGMA synchronous=%s", sync_names[o->sync]);
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
      code = fail_open(c, rc, o->path);
  }
  writer_give(c);
  return code;
}

static int sqlite_connect_host(const tabq_host *log_host, const char *url, tabq_conn **out) {
  *out = NULL;
  if (sqlite3_libversion_number() < MIN_VERSION_NUMBER)
    return host()->fail(TABQ_SERVER_TOO_OLD, NULL, 0,
                        "SQLite %s is older than 3.35.0, which UPDATE .. RETURNING needs",
                        sqlite3_libversion());
  if (!sqlite3_threadsafe())
    return host()->fail(TABQ_BACKEND, NULL, 0,
                        "SQLite %s was built without thread support (SQLITE_THREADSAFE=0)",
                        sqlite3_libversion());
  tabq_sqlite_url o;
  int code = tabq_sqlite_parse_url(url, &o);
  if (code != TABQ_OK)
    return code;
  tabq_conn *c = host()->alloc(sizeof *c);
  if (!c) {
    host()->free(o.path);
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for a sqlite connection");
  }
  memset(c, 0, sizeof *c);
  c->busy_ms = o.busy_ms;
  /* NOMUTEX: the pool lends a connection to one thread at a time. */
  int rc = sqlite3_open_v2(o.path, &c->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    code = c->db ? host()->fail(TABQ_IO, NULL, rc, "cannot open the SQLite database %s: %s", o.path,
                                sqlite3_errmsg(c->db))
                 : host()->fail(TABQ_NOMEM, NULL, rc, "no memory to open the SQLite database %s",
                                o.path);
  } else {
    code = open_writer(c, o.path);
    if (code == TABQ_OK)
      code = configure(c, &o);
  }
  if (code != TABQ_OK) {
    free_conn(c);
    host()->free(o.path);
    return code;
  }
  c->log_host = log_host;
  tabq_host_log(log_host, host(), TABQ_LOG_DEBUG,
                "sqlite: opened %s (synchronous=%s, busy_timeout=%d ms)",
                tabq_sqlite_writer_path(c->writer), sync_names[o.sync], o.busy_ms);
  host()->free(o.path);
  *out = c;
  return TABQ_OK;
}

static int sqlite_connect(const char *url, tabq_conn **out) {
  return sqlite_connect_host(NULL, url, out);
}

static void sqlite_finalize(tabq_prepared *p);

static void sqlite_close(tabq_conn *c) {
  if (!c)
    return;
  while (c->stmts)
    sqlite_finalize(c->stmts);
  if (c->in_tx) {
    if (!sqlite3_get_autocommit(c->db))
      sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    c->in_tx = false;
    writer_give(c);
  }
  if (c->writer_refs > 0) { /* not reached: every holder above gave its reference back */
    c->writer_refs = 1;
    writer_give(c);
  }
  free_conn(c);
}

static int sqlite_exec(tabq_conn *c, const char *sql) {
  if (!sql)
    return host()->fail(TABQ_INVALID, NULL, 0, "exec: no SQL");
  int code = writer_take(c, "exec");
  if (code != TABQ_OK)
    return code;
  int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK)
    code = fail_sqlite(c, rc, "exec");
  writer_give(c);
  end_tx_if_closed(c); /* the SQL may have ended begin's transaction */
  return code;
}

/* ---- Prepared statements ------------------------------------------------------------------ */

/* True when text follows the first statement (more than blanks, semicolons or comments). */
static bool has_more_statements(sqlite3 *db, const char *tail) {
  if (!tail || !*tail)
    return false;
  sqlite3_stmt *extra = NULL;
  int rc = sqlite3_prepare_v2(db, tail, -1, &extra, NULL);
  sqlite3_finalize(extra);
  return rc != SQLITE_OK || extra != NULL;
}

static int sqlite_prepare(tabq_conn *c, const char *sql, unsigned nparams, const char *name,
                          tabq_prepared **out) {
  *out = NULL;
  name = name ? name : "sql";
  if (!sql)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no SQL", name);
  sqlite3_stmt *st = NULL;
  const char *tail = NULL;
  int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, &tail);
  if (rc != SQLITE_OK) {
    const char *msg = sqlite3_errmsg(c->db);
    if (strstr(msg, "no such table") || strstr(msg, "no such column") ||
        strstr(msg, "has no column named") || /* an INSERT's column list */
        strstr(msg, "unknown database"))      /* "schema.table" with no such schema attached */
      return with_position(host()->fail(TABQ_SCHEMA, NULL, rc, "%s statement: %s", name, msg),
                           c->db, sql);
    char what[64];
    snprintf(what, sizeof what, "%s statement", name);
    return with_position(fail_sqlite(c, rc, what), c->db, sql);
  }
  int code = TABQ_OK;
  if (!st)
    code = host()->fail(TABQ_INVALID, NULL, 0, "%s statement holds no SQL", name);
  else if (has_more_statements(c->db, tail))
    code =
        host()->fail(TABQ_INVALID, NULL, 0, "%s statement holds more than one SQL statement", name);
  else if ((unsigned)sqlite3_bind_parameter_count(st) != nparams)
    /* An unbound placeholder would silently read NULL. */
    code = host()->fail(TABQ_INVALID, NULL, 0, "%s statement has %d placeholders, not %u", name,
                        sqlite3_bind_parameter_count(st), nparams);
  if (code != TABQ_OK) {
    sqlite3_finalize(st);
    return code;
  }
  size_t size = sizeof(tabq_prepared) + (size_t)nparams * sizeof(param_buf);
  tabq_prepared *p = host()->alloc(size);
  if (!p) {
    sqlite3_finalize(st);
    return host()->fail(TABQ_NOMEM, NULL, 0, "no memory for the %s statement", name);
  }
  memset(p, 0, size);
  p->conn = c;
  p->stmt = st;
  p->nparams = nparams;
  p->readonly = sqlite3_stmt_readonly(st) != 0;
  snprintf(p->name, sizeof p->name, "%s", name);
  p->next = c->stmts;
  if (c->stmts)
    c->stmts->prev = p;
  c->stmts = p;
  *out = p;
  return TABQ_OK;
}

static int fail_stmt(tabq_prepared *p, int rc) {
  char what[64];
  snprintf(what, sizeof what, "%s statement", p->name);
  return fail_sqlite(p->conn, rc, what);
}

/* Ends an execution: reset first (it commits an autocommit write whose rows were not all read),
 * then give back the writer lock. */
static void end_execution(tabq_prepared *p) {
  if (p->active) {
    sqlite3_reset(p->stmt);
    if (!p->done && !p->readonly)
      p->changes = (uint64_t)sqlite3_changes(p->conn->db); /* reset ran the statement to its end */
  }
  p->active = p->pending = p->on_row = p->done = false;
  if (p->holds_writer) {
    p->holds_writer = false;
    writer_give(p->conn);
  }
}

/* A list of ids as a JSON array ("[3,5,2]"), which the statements read with json_each; *n is
 * its length. 21 characters hold any integer with its separator. */
static int format_list(tabq_prepared *p, unsigned i, const tabq_value *v, size_t *n) {
  param_buf *pb = &p->params[i];
  size_t need = 3 + v->u.list.count * 21;
  if (v->u.list.count && !v->u.list.items)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: parameter %u is a list without items",
                        p->name, i + 1);
  if (need > pb->list_cap) {
    char *grown = host()->realloc(pb->list, need);
    if (!grown)
      return host()->fail(TABQ_NOMEM, NULL, 0, "%s statement: no memory for parameter %u", p->name,
                          i + 1);
    pb->list = grown;
    pb->list_cap = need;
  }
  size_t at = 0;
  pb->list[at++] = '[';
  for (size_t k = 0; k < v->u.list.count; k++)
    at += (size_t)snprintf(pb->list + at, pb->list_cap - at, "%s%" PRId64, k ? "," : "",
                           v->u.list.items[k]);
  pb->list[at++] = ']';
  *n = at;
  return TABQ_OK;
}

/* Binds with SQLITE_STATIC: the core keeps parameter buffers alive until reset, and the
 * statement's own (times, lists) live until the next execution. */
static int bind_one(tabq_prepared *p, unsigned i, const tabq_value *v) {
  sqlite3_stmt *st = p->stmt;
  int at = (int)i + 1;
  int rc;
  switch (v->type) {
  case TABQ_T_NULL:
    rc = sqlite3_bind_null(st, at);
    break;
  case TABQ_T_INT:
    rc = sqlite3_bind_int64(st, at, v->u.i);
    break;
  case TABQ_T_TEXT:
  case TABQ_T_JSON:
    if (!v->u.buf.ptr && v->u.buf.len > 0)
      return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: parameter %d has no text", p->name,
                          at);
    /* A NULL pointer would bind SQL NULL; empty text stays text. */
    rc = sqlite3_bind_text64(st, at, v->u.buf.ptr ? v->u.buf.ptr : "", v->u.buf.len, SQLITE_STATIC,
                             SQLITE_UTF8);
    break;
  case TABQ_T_BYTES:
    if (!v->u.buf.ptr && v->u.buf.len > 0)
      return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: parameter %d has no bytes", p->name,
                          at);
    /* Zero bytes are an empty blob, not NULL (a NOT NULL payload column accepts them). */
    rc = v->u.buf.len == 0 ? sqlite3_bind_zeroblob(st, at, 0)
                           : sqlite3_bind_blob64(st, at, v->u.buf.ptr, v->u.buf.len, SQLITE_STATIC);
    break;
  case TABQ_T_REAL:
    rc = sqlite3_bind_double(st, at, v->u.r);
    break;
  case TABQ_T_TIME:
    if (!tabq_sqlite_time_format(v->u.time_us, p->params[i].time))
      return host()->fail(TABQ_INVALID, NULL, 0,
                          "%s statement: parameter %d, time %lld us, falls outside the years "
                          "0000 to 9999",
                          p->name, at, (long long)v->u.time_us);
    rc = sqlite3_bind_text(st, at, p->params[i].time, TABQ_SQLITE_TIME_LEN, SQLITE_STATIC);
    break;
  case TABQ_T_INT_LIST: {
    size_t n = 0;
    if ((rc = format_list(p, i, v, &n)) != TABQ_OK)
      return rc;
    rc = sqlite3_bind_text64(st, at, p->params[i].list, n, SQLITE_STATIC, SQLITE_UTF8);
    break;
  }
  default:
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: parameter %d has unknown type %d",
                        p->name, at, (int)v->type);
  }
  return rc == SQLITE_OK ? TABQ_OK : fail_stmt(p, rc);
}

static int sqlite_execute(tabq_prepared *p, const tabq_value *params, unsigned n) {
  end_execution(p);
  p->changes = 0;
  if (n != p->nparams)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement takes %u parameters, not %u", p->name,
                        p->nparams, n);
  for (unsigned i = 0; i < n; i++) {
    int code = bind_one(p, i, &params[i]);
    if (code != TABQ_OK)
      return code;
  }
  if (!p->readonly) {
    int code = writer_take(p->conn, p->name);
    if (code != TABQ_OK)
      return code;
    p->holds_writer = true;
  }
  p->active = true;
  /* The first step runs here, so the write has happened when execute returns. */
  int rc = sqlite3_step(p->stmt);
  if (rc == SQLITE_ROW) {
    p->pending = true;
    return TABQ_OK;
  }
  if (rc == SQLITE_DONE) {
    p->done = true;
    p->changes = p->readonly ? 0 : (uint64_t)sqlite3_changes(p->conn->db);
    return TABQ_OK;
  }
  int code = fail_stmt(p, rc);
  end_execution(p);
  p->changes = 0;
  return code;
}

static int sqlite_next(tabq_prepared *p, bool *row) {
  *row = false;
  p->on_row = false;
  if (p->pending) {
    p->pending = false;
    p->on_row = *row = true;
    return TABQ_OK;
  }
  if (!p->active || p->done)
    return TABQ_OK;
  int rc = sqlite3_step(p->stmt);
  if (rc == SQLITE_ROW) {
    p->on_row = *row = true;
    return TABQ_OK;
  }
  if (rc == SQLITE_DONE) {
    p->done = true;
    p->changes = p->readonly ? 0 : (uint64_t)sqlite3_changes(p->conn->db);
    return TABQ_OK;
  }
  int code = fail_stmt(p, rc);
  end_execution(p);
  p->changes = 0;
  return code;
}

static int sqlite_cell(tabq_prepared *p, unsigned col, tabq_value *out) {
  if (!p->on_row)
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no current row", p->name);
  if (col >= (unsigned)sqlite3_column_count(p->stmt))
    return host()->fail(TABQ_INVALID, NULL, 0, "%s statement: no column %u", p->name, col);
  int c = (int)col;
  switch (sqlite3_column_type(p->stmt, c)) {
  case SQLITE_NULL:
    *out = tabq_null();
    return TABQ_OK;
  case SQLITE_INTEGER:
    *out = tabq_int(sqlite3_column_int64(p->stmt, c));
    return TABQ_OK;
  case SQLITE_FLOAT:
    *out = tabq_real(sqlite3_column_double(p->stmt, c));
    return TABQ_OK;
  case SQLITE_BLOB: {
    const void *b = sqlite3_column_blob(p->stmt, c);
    size_t n = (size_t)sqlite3_column_bytes(p->stmt, c);
    if (!b && n > 0)
      break;
    *out = tabq_bytes(b ? b : "", n);
    return TABQ_OK;
  }
  default: { /* TEXT */
    const unsigned char *t = sqlite3_column_text(p->stmt, c);
    size_t n = (size_t)sqlite3_column_bytes(p->stmt, c);
    if (!t)
      break;
    *out = tabq_text((const char *)t, n);
    return TABQ_OK;
  }
  }
  return host()->fail(TABQ_NOMEM, NULL, SQLITE_NOMEM, "%s statement: no memory to read column %u",
                      p->name, col);
}

/* Rows changed by the last execution: known once it stepped to its end or was reset. */
static uint64_t sqlite_affected(tabq_prepared *p) {
  return p->changes;
}

static void sqlite_reset(tabq_prepared *p) {
  end_execution(p);
}

static void sqlite_finalize(tabq_prepared *p) {
  if (!p)
    return;
  end_execution(p);
  sqlite3_finalize(p->stmt);
  tabq_conn *c = p->conn;
  if (p->prev)
    p->prev->next = p->next;
  else
    c->stmts = p->next;
  if (p->next)
    p->next->prev = p->prev;
  for (unsigned i = 0; i < p->nparams; i++)
    host()->free(p->params[i].list);
  host()->free(p);
}

/* ---- Transactions ------------------------------------------------------------------------- */

static int sqlite_begin(tabq_conn *c, const char *begin_sql) {
  if (c->in_tx)
    return host()->fail(TABQ_INVALID, NULL, 0, "begin: a transaction is already open");
  int code = writer_take(c, "begin");
  if (code != TABQ_OK)
    return code;
  int rc = sqlite3_exec(c->db, begin_sql ? begin_sql : "BEGIN", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    code = fail_sqlite(c, rc, "begin");
    writer_give(c);
    return code;
  }
  c->in_tx = true;
  return TABQ_OK;
}

static int sqlite_commit(tabq_conn *c) {
  int rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
  int code = rc == SQLITE_OK ? TABQ_OK : fail_sqlite(c, rc, "commit");
  end_tx_if_closed(c); /* a failed COMMIT may leave the transaction open for a rollback */
  return code;
}

static int sqlite_rollback(tabq_conn *c) {
  int code = TABQ_OK;
  if (!sqlite3_get_autocommit(c->db)) {
    int rc = sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
      code = fail_sqlite(c, rc, "rollback");
  }
  end_tx_if_closed(c);
  return code;
}

/* ---- The rest ----------------------------------------------------------------------------- */

static int sqlite_server_version(tabq_conn *c, char *text, size_t cap, uint32_t *number) {
  (void)c;
  if (text && cap > 0)
    snprintf(text, cap, "%s", sqlite3_libversion());
  if (number)
    *number = (uint32_t)sqlite3_libversion_number();
  return TABQ_OK;
}

/* The main database's file, as SQLite resolved it: the advisory form keeps its keys by file.
 * An in-memory or temporary database has none: "". */
static int sqlite_database(tabq_conn *c, char *out, size_t cap) {
  const char *file = sqlite3_db_filename(c->db, "main");
  if (!file)
    file = "";
  size_t n = strlen(file);
  if (n >= cap)
    return host()->fail(TABQ_INVALID, NULL, 0, "the database file name %s is longer than %zu bytes",
                        file, cap - 1);
  memcpy(out, file, n + 1);
  return TABQ_OK;
}

static bool sqlite_alive(tabq_conn *c) {
  return c && !c->broken;
}

const tabq_driver_v1 tabq_sqlite_driver = {
    .size = sizeof(tabq_driver_v1),
    .version = 1,
    .connect = sqlite_connect,
    .close = sqlite_close,
    .exec = sqlite_exec,
    .prepare = sqlite_prepare,
    .execute = sqlite_execute,
    .next = sqlite_next,
    .cell = sqlite_cell,
    .affected = sqlite_affected,
    .reset = sqlite_reset,
    .finalize = sqlite_finalize,
    .begin = sqlite_begin,
    .commit = sqlite_commit,
    .rollback = sqlite_rollback,
    .server_version = sqlite_server_version,
    .alive = sqlite_alive,
    .listen = NULL,
    .wait_notify = NULL,
    .database = sqlite_database,
    .connect_host = sqlite_connect_host,
};
