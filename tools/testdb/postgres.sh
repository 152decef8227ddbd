# Sourced by ./dev: a throwaway PostgreSQL cluster for the tests, in a temporary folder, on
# loopback, run as a non-root user (PostgreSQL refuses root; CI runs as root).
#   pg_test_start   initdb + start + create the database; exports TABQ_TEST_POSTGRES_URL
#   pg_test_stop    stop the server and remove its folder

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] || { echo "dev: no PostgreSQL server binaries under /usr/lib/postgresql" >&2; return 1; }
  echo "$d"
}

# as_db_user CMD...: runs CMD as the unprivileged user that owns the cluster.
as_db_user() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$PG_TEST_USER" -- "$@"
  else
    "$@"
  fi
}

pg_test_start() {
  local bin
  bin=$(pg_bin) || return 1
  if [ "$(id -u)" -eq 0 ]; then
    PG_TEST_USER=tabq-test
    id "$PG_TEST_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_TEST_USER"
  else
    PG_TEST_USER=$(id -un)
  fi
  PG_TEST_DIR=$(mktemp -d /tmp/tabq-pg.XXXXXX)
  chmod 755 "$PG_TEST_DIR"
  [ "$(id -u)" -eq 0 ] && chown "$PG_TEST_USER" "$PG_TEST_DIR"
  as_db_user "$bin/initdb" -D "$PG_TEST_DIR/data" -A trust -U tabq --no-sync -E UTF8 >"$PG_TEST_DIR/initdb.log" 2>&1 ||
    { cat "$PG_TEST_DIR/initdb.log" >&2; return 1; }
  # fsync off: a test cluster needs no durability, and it keeps the suites fast. The benchmark
  # sets PG_TEST_DURABLE=1 for a server that flushes every commit, as a service's would.
  local sync="-c fsync=off -c synchronous_commit=off"
  [ "${PG_TEST_DURABLE:-0}" = 1 ] && sync="-c fsync=on -c synchronous_commit=on"
  # The port is probed free, then bound by the server a moment later: another ./dev started at
  # the same time may take it in between. The server's own bind decides; on a refusal the next
  # free port is tried.
  PG_TEST_PORT=$(free_port 55432)
  local tries=0
  until as_db_user "$bin/pg_ctl" -D "$PG_TEST_DIR/data" -l "$PG_TEST_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_TEST_PORT -k $PG_TEST_DIR $sync -c max_connections=300" \
    start >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -ge 20 ] || ! grep -q "could not bind\|Address already in use" "$PG_TEST_DIR/server.log"; then
      cat "$PG_TEST_DIR/server.log" >&2
      return 1
    fi
    echo "dev: PostgreSQL could not bind 127.0.0.1:$PG_TEST_PORT (taken since it was probed free); trying the next free port"
    PG_TEST_PORT=$(free_port $((PG_TEST_PORT + 1)))
  done
  as_db_user "$bin/createdb" -h 127.0.0.1 -p "$PG_TEST_PORT" -U tabq tabq_test
  export TABQ_TEST_POSTGRES_URL="postgres://tabq@127.0.0.1:$PG_TEST_PORT/tabq_test"
  PG_TEST_PID=$(head -n 1 "$PG_TEST_DIR/data/postmaster.pid")
  echo "dev: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_TEST_PORT (TABQ_TEST_POSTGRES_URL)"
}

pg_test_stop() {
  [ -n "${PG_TEST_DIR:-}" ] || return 0
  local bin
  bin=$(pg_bin) || return 0
  as_db_user "$bin/pg_ctl" -D "$PG_TEST_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_TEST_DIR"
  PG_TEST_DIR=
}
