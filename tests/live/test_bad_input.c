/* Bad input on every database (docs/reliability.md, "Bad input"): each refusal is clear and
 * leaves every row as it was, shown by a digest of the table's rows taken before and after
 * (every column, the payload's bytes included). Names with quotes, spaces, semicolons, non-ASCII
 * letters and invalid UTF-8; key templates with an unbalanced brace or an unknown column;
 * malformed URLs; a wrong password. Then payloads of 0 bytes and 16 MiB, each handed back byte
 * for byte, and headers that are not a JSON object, which read as absent and lose no row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "support.h"

#define BIG ((size_t)16 << 20)

static testdb db;
static tabq_error err;

static const char *ddl(void) {
  switch (test_db_kind()) {
  case TEST_POSTGRES:
    return "CREATE TABLE bad_in (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, attempt INTEGER "
           "NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, headers TEXT, payload BYTEA NOT NULL)";
  case TEST_MYSQL:
    return "CREATE TABLE bad_in (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(64) NOT "
           "NULL, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME NULL, headers TEXT, "
           "payload LONGBLOB NOT NULL) ENGINE=InnoDB";
  default:
    return "CREATE TABLE bad_in (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, "
           "attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, headers TEXT, payload BLOB "
           "NOT NULL)";
  }
}

/* Every row's every column, the payload as its digest or hex, in id order. */
static void digest(char *out, size_t cap) {
  const char *sql;
  switch (test_db_kind()) {
  case TEST_POSTGRES:
    sql = "SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY id)), '-') FROM bad_in t";
    break;
  case TEST_MYSQL:
    /* hex of the text columns: the connection's and the columns' collations never meet */
    sql = "SELECT IFNULL(MD5(GROUP_CONCAT(CONCAT_WS('|', id, HEX(queue), attempt, "
          "IFNULL(UNIX_TIMESTAMP(locked_until), '-'), HEX(IFNULL(headers, '-')), MD5(payload)) "
          "ORDER BY id)), '-') FROM bad_in";
    break;
  default:
    sql = "SELECT ifnull(group_concat(id || '|' || queue || '|' || attempt || '|' || "
          "ifnull(locked_until, '-') || '|' || ifnull(headers, '-') || '|' || hex(payload), ','), "
          "'-') FROM (SELECT * FROM bad_in ORDER BY id)";
  }
  testdb_text(&db, sql, out, cap);
}

static tabq_table bad_in(void) {
  return (tabq_table){.size = sizeof(tabq_table),
                      .name = "bad_in",
                      .id = {"id", .generated = true},
                      .group = {"queue"},
                      .attempt = {"attempt", .generated = true},
                      .locked_until = {"locked_until"},
                      .headers = {"headers"},
                      .payload = {"payload"}};
}

static tabq_outcome ack_it(tabq_delivery *d, void *user) {
  (void)d, (void)user;
  return tabq_ack();
}

static void refused_naming(int rc, const char *what, const char *part) {
  if (rc == TABQ_OK || !strstr(err.message, part))
    fprintf(stderr, "%s: rc %d, expected \"%s\" in: %s\n", what, rc, part, err.message);
  CU_ASSERT_NOT_EQUAL(rc, TABQ_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, part));
}

/* Subscribes `t` and expects a refusal whose message holds `part`. */
static void subscribe_refused(tabq_broker *b, const tabq_table *t, const char *part) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = ack_it;
  tabq_subscription *s = NULL;
  refused_naming(tabq_subscribe(b, t, &o, &s, &err), t->name, part);
  CU_ASSERT_PTR_NULL(s);
}

static void refusals_leave_every_row_as_it_was(void) {
  testdb_create(&db);
  testdb_exec(&db, ddl());
  tabq_broker *b = connect_broker(&db, 20);
  tabq_table t = bad_in();
  for (int i = 0; i < 5; i++) {
    tabq_header h = {"trace", "t-1"};
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = "q";
    m.payload = "p\0q'\";--";
    m.payload_len = 8;
    m.headers = &h;
    m.nheaders = 1;
    CU_ASSERT_EQUAL_FATAL(tabq_publish(b, &t, &m, &err), TABQ_OK);
  }
  char before[4096], after[4096];
  digest(before, sizeof before);

  /* Table names that are no table here, or no name at all. */
  static const struct {
    const char *name, *part;
  } names[] = {
      {"bad_in\" x", "bad_in\" x"},
      {"bad in", "bad in"},
      {"bad_in; DROP TABLE bad_in", "DROP TABLE"},
      {"bäd_in", "bäd_in"},
      {"bad_in\xff", "UTF-8"},
      {"bad_in`", "bad_in`"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    tabq_table bad = t;
    bad.name = names[i].name;
    subscribe_refused(b, &bad, names[i].part);
  }
  /* Column names likewise. */
  tabq_table bad = t;
  bad.payload.name = "pay\"load; --";
  subscribe_refused(b, &bad, "pay\"load; --");
  bad = t;
  bad.headers.name = "head\xc3";
  subscribe_refused(b, &bad, "UTF-8");
  /* Key templates (the advisory form's; the lease column left out). */
  bad = t;
  bad.locked_until.name = NULL;
  bad.advisory_lock = "bad-{id";
  subscribe_refused(b, &bad, "bad-{id");
  bad.advisory_lock = "bad-{nosuch}";
  subscribe_refused(b, &bad, "nosuch");
  /* A publish of such names writes nothing either. */
  bad = t;
  bad.name = "bad_in; DELETE FROM bad_in";
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = "x";
  m.payload_len = 1;
  refused_naming(tabq_publish(b, &bad, &m, &err), "publish", "DELETE FROM bad_in");
  m.group = "q\xff";
  refused_naming(tabq_publish(b, &t, &m, &err), "publish", "UTF-8");
  tabq_close(b);

  /* Malformed URLs of every dialect, and an unknown scheme. */
  static const struct {
    const char *url, *part;
  } urls[] = {
      {"postgres://tabq@127.0.0.1:notaport/db", "notaport"},
      {"postgres://[::1/db", "postgres://[::1/db"},
      {"mysql://tabq@127.0.0.1:99999999/db", "99999999"},
      {"mysql://tabq@/db?sql_mode", "sql_mode"},
      {"sqlite:", "sqlite:"},
      {"nosuch://x", "nosuch"},
  };
  for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    tabq_broker *nb = NULL;
    refused_naming(tabq_connect(urls[i].url, NULL, &nb, &err), urls[i].url, urls[i].part);
    CU_ASSERT_PTR_NULL(nb);
  }
  /* A wrong password where the server asks for one (MariaDB's test user has one; the test
   * PostgreSQL trusts loopback), and the password never shown. */
  if (test_db_kind() == TEST_MYSQL) {
    char url[600];
    const char *at = strchr(db.url, '@');
    snprintf(url, sizeof url, "mysql://tabq:not-the-password%s", at);
    tabq_broker *nb = NULL;
    refused_naming(tabq_connect(url, NULL, &nb, &err), "wrong password", "Access denied");
    CU_ASSERT_PTR_NULL(strstr(err.message, "not-the-password"));
  }

  digest(after, sizeof after);
  CU_ASSERT_STRING_EQUAL(after, before);
  CU_ASSERT_EQUAL(testdb_int(&db, "SELECT count(*) FROM bad_in WHERE attempt = 1"), 5);
  testdb_remove(&db);
}

typedef struct seen {
  const char *big;
  int empty_ok, big_ok, other;
} seen;

static tabq_outcome check_payload(tabq_delivery *d, void *user) {
  seen *s = user;
  size_t len;
  const void *p = tabq_delivery_payload(d, &len);
  if (len == 0)
    s->empty_ok++;
  else if (len == BIG && !memcmp(p, s->big, BIG))
    s->big_ok++;
  else
    s->other++;
  return tabq_ack();
}

static void empty_and_16_mib_payloads_arrive_byte_for_byte(void) {
  testdb_create(&db);
  testdb_exec(&db, ddl());
  long long packet = 0;
  if (test_db_kind() == TEST_MYSQL) { /* 16 MiB and the statement around it: over 10.11's 16M */
    packet = testdb_int(&db, "SELECT @@GLOBAL.max_allowed_packet");
    testdb_exec(&db, "SET GLOBAL max_allowed_packet = 67108864");
  }
  tabq_broker *b = connect_broker(&db, 20);
  tabq_table t = bad_in();
  seen s = {.big = test_bytes(BIG)};
  tabq_message m = TABQ_MESSAGE_INIT;
  m.group = "q";
  m.payload = "";
  m.payload_len = 0;
  CU_ASSERT_EQUAL(tabq_publish(b, &t, &m, &err), TABQ_OK);
  m.payload = s.big;
  m.payload_len = BIG;
  int rc = tabq_publish(b, &t, &m, &err);
  if (rc)
    fprintf(stderr, "16 MiB publish: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, TABQ_OK);
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = check_payload;
  o.user = &s;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM bad_in", 0, 60000));
  tabq_close(b);
  CU_ASSERT_EQUAL(s.empty_ok, 1);
  CU_ASSERT_EQUAL(s.big_ok, 1);
  CU_ASSERT_EQUAL(s.other, 0);
  free((void *)s.big);
  if (packet) {
    char sql[96];
    snprintf(sql, sizeof sql, "SET GLOBAL max_allowed_packet = %lld", packet);
    testdb_exec(&db, sql);
  }
  testdb_remove(&db);
}

typedef struct header_reads {
  int absent, present;
} header_reads;

static tabq_outcome read_header(tabq_delivery *d, void *user) {
  header_reads *r = user;
  if (tabq_delivery_header(d, "trace"))
    r->present++;
  else
    r->absent++;
  return tabq_ack();
}

static void headers_not_an_object_read_as_absent(void) {
  testdb_create(&db);
  testdb_exec(&db, ddl());
  const char *payload = test_db_kind() == TEST_POSTGRES ? "'\\x78'" : "'x'";
  static const char *const headers[] = {
      "'[1, 2]'",         "'\"trace\"'",         "'not json'",
      "'{\"trace\": 7}'", "'{\"trace\": \"t\"'", "'{\"trace\": \"ok\"}'"};
  char sql[256];
  for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
    snprintf(sql, sizeof sql, "INSERT INTO bad_in (queue, headers, payload) VALUES ('q', %s, %s)",
             headers[i], payload);
    testdb_exec(&db, sql);
  }
  tabq_broker *b = connect_broker(&db, 20);
  tabq_table t = bad_in();
  header_reads r = {0, 0};
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "q";
  o.handler = read_header;
  o.user = &r;
  CU_ASSERT_EQUAL_FATAL(tabq_subscribe(b, &t, &o, NULL, &err), TABQ_OK);
  CU_ASSERT(wait_count(&db, "SELECT count(*) FROM bad_in", 0, 10000));
  tabq_close(b);
  CU_ASSERT_EQUAL(r.absent, 5); /* every malformed one read as absent, each row handled */
  CU_ASSERT_EQUAL(r.present, 1);
  testdb_remove(&db);
}

int register_tests(void) {
  static CU_TestInfo tests[] = {
      {"refusals name what they refuse and leave every row as it was",
       refusals_leave_every_row_as_it_was},
      {"payloads of 0 bytes and 16 MiB arrive byte for byte",
       empty_and_16_mib_payloads_arrive_byte_for_byte},
      {"headers that are not a JSON object read as absent, no row lost",
       headers_not_an_object_read_as_absent},
      CU_TEST_INFO_NULL,
  };
  ADD_SUITE("bad input", NULL, NULL, tests);
  return 0;
}
