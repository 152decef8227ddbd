/* tabq_bench_publish — rows written per second by tabq_publish_many, or by one tabq_publish per
 * row, on any database by URL.
 *
 *   tabq_bench_publish --url URL --rows N --chunk K --side many|single
 *
 * Creates a table of its own (bench_pub_<pid>) in the URL's database, publishes N rows with
 * 64-byte payloads, in calls of K messages (many) or one call per row (single), checks in the
 * database that exactly N rows were written, drops the table, and prints one JSON line. Only the
 * publishing calls are timed; the messages are built before. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tabq/tabq.h>

#include "bench_common.h"

#define MAX_ROWS 10000000u

static char table_name[48], check_name[56];

static tabq_table bench_table = {
    .size = sizeof(tabq_table),
    .name = table_name,
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static tabq_broker *broker;
static bool table_made;
static atomic_bool stop; /* SIGINT, SIGTERM: the loop ends, the table is dropped, then exit */

static void on_signal(int sig) {
  (void)sig;
  atomic_store(&stop, true);
}

static void run(const char *sql) {
  tabq_error err;
  if (tabq_exec(broker, sql, &err))
    bench_die("%s: %s", sql, err.message);
}

/* Runs at exit, also after bench_die: what the run created goes. */
static void drop_tables(void) {
  if (!broker)
    return;
  if (table_made) {
    char sql[160];
    tabq_error err;
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", check_name);
    tabq_exec(broker, sql, &err);
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", table_name);
    if (tabq_exec(broker, sql, &err))
      fprintf(stderr, "tabq_bench_publish: cannot drop %s: %s\n", table_name, err.message);
  }
  tabq_close(broker);
  broker = NULL;
}

/* The queue table as each database writes it, with the claim's index. */
static void create_table(const char *dialect) {
  char sql[512];
  if (!strcmp(dialect, "postgres"))
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, attempt INTEGER NOT "
             "NULL DEFAULT 1, locked_until TIMESTAMPTZ, payload BYTEA NOT NULL)",
             table_name);
  else if (!strcmp(dialect, "mysql"))
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT "
             "NULL, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME NULL, payload BLOB NOT "
             "NULL) ENGINE=InnoDB",
             table_name);
  else if (!strcmp(dialect, "sqlite"))
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, attempt INTEGER NOT "
             "NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL)",
             table_name);
  else
    bench_die("no table for dialect %s", dialect);
  table_made = true;
  run(sql);
  snprintf(sql, sizeof sql, "CREATE INDEX %s_claim ON %s (queue, id)", table_name, table_name);
  run(sql);
}

/* The database counts the rows itself: a count other than `rows` fails the CHECK. */
static void expect_rows(unsigned rows) {
  char sql[200];
  snprintf(sql, sizeof sql, "CREATE TABLE %s (n BIGINT CHECK (n = %u))", check_name, rows);
  run(sql);
  snprintf(sql, sizeof sql, "INSERT INTO %s (n) SELECT count(*) FROM %s", check_name, table_name);
  tabq_error err;
  if (tabq_exec(broker, sql, &err))
    bench_die("%s holds another number of rows than the %u published (%s)", table_name, rows,
              err.message);
}

static void usage(void) {
  fprintf(stderr, "usage: tabq_bench_publish --url URL --rows N --chunk K --side many|single\n"
                  "  URL: sqlite:FILE, postgres://..., mysql://...\n");
  exit(2);
}

int main(int argc, char **argv) {
  bench_init("tabq_bench_publish");
  const char *url = NULL, *side = NULL;
  unsigned rows = 0, chunk = 0;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      usage();
    if (!strcmp(argv[i], "--url"))
      url = argv[++i];
    else if (!strcmp(argv[i], "--rows"))
      rows = bench_parse_count("--rows", argv[++i], MAX_ROWS);
    else if (!strcmp(argv[i], "--chunk"))
      chunk = bench_parse_count("--chunk", argv[++i], MAX_ROWS);
    else if (!strcmp(argv[i], "--side"))
      side = argv[++i];
    else
      usage();
  }
  if (!url || !rows || !side || (strcmp(side, "many") && strcmp(side, "single")))
    usage();
  bool many = !strcmp(side, "many");
  if (many && !chunk)
    usage();
  if (!many)
    chunk = 1;

  /* The messages, built before the clock starts: payload "row-<i>" padded to 64 bytes. */
  char(*payloads)[BENCH_PAYLOAD_LEN] = malloc((size_t)rows * BENCH_PAYLOAD_LEN);
  tabq_message *msgs = malloc((size_t)rows * sizeof *msgs);
  const tabq_message **ptrs = malloc((size_t)rows * sizeof *ptrs);
  if (!payloads || !msgs || !ptrs)
    bench_die("cannot hold %u messages", rows);
  for (unsigned i = 0; i < rows; i++) {
    memset(payloads[i], 'a' + i % 26, BENCH_PAYLOAD_LEN);
    char head[16];
    int len = snprintf(head, sizeof head, "row-%u", i);
    memcpy(payloads[i], head, (size_t)len);
    msgs[i] = (tabq_message){.size = sizeof(tabq_message),
                             .group = BENCH_QUEUE,
                             .payload = payloads[i],
                             .payload_len = BENCH_PAYLOAD_LEN};
    ptrs[i] = &msgs[i];
  }

  snprintf(table_name, sizeof table_name, "bench_pub_%d", (int)getpid());
  snprintf(check_name, sizeof check_name, "%s_count", table_name);
  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err))
    bench_die("cannot connect to %s: %s", url, err.message);
  atexit(drop_tables);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  const char *dialect = tabq_dialect_name(broker);
  create_table(dialect);
  /* The insert prepared, untimed, as a service's first publish would have done. */
  char insert_sql[1024];
  if (tabq_insert_sql(broker, &bench_table, insert_sql, sizeof insert_sql, &err))
    bench_die("insert: %s", err.message);

  double cpu0 = bench_cpu_s(), t0 = bench_mono_s();
  for (unsigned at = 0; at < rows && !atomic_load(&stop); at += chunk) {
    size_t n = rows - at < chunk ? rows - at : chunk;
    int rc = many ? tabq_publish_many(broker, &bench_table, ptrs + at, n, &err)
                  : tabq_publish(broker, &bench_table, &msgs[at], &err);
    if (rc)
      bench_die("publish at row %u: %s: %s", at, tabq_code_name(err.code), err.message);
  }
  double seconds = bench_mono_s() - t0, cpu = bench_cpu_s() - cpu0;
  if (atomic_load(&stop)) {
    drop_tables();
    return 130;
  }
  expect_rows(rows);
  printf("{\"db\":\"%s\",\"side\":\"tabq\",\"op\":\"%s\",\"chunk\":%u,\"rows\":%u,"
         "\"seconds\":%.6f,\"insert_rows_per_s\":%.1f,\"client_cpu_us_per_row\":%.3f}\n",
         dialect, many ? "publish_many" : "publish", chunk, rows, seconds, rows / seconds,
         cpu * 1e6 / rows);
  fflush(stdout);
  drop_tables();
  free(ptrs);
  free(msgs);
  free(payloads);
  return 0;
}
