# Sourced by ./dev: a throwaway MariaDB server for the tests (the Debian package's server), in a
# temporary folder, with its own socket and a free loopback port, run as a non-root user.
#   maria_test_start   install the data folder, start, create the database and the user;
#                      exports TABQ_TEST_MYSQL_URL
#   maria_test_stop    shut the server down and remove its folder

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

maria_test_start() {
  command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] ||
    { echo "dev: no MariaDB server (package mariadb-server)" >&2; return 1; }
  local user
  if [ "$(id -u)" -eq 0 ]; then
    user=tabq-test
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  else
    user=$(id -un)
  fi
  MARIA_TEST_DIR=$(mktemp -d /tmp/tabq-maria.XXXXXX)
  chmod 755 "$MARIA_TEST_DIR"
  [ "$(id -u)" -eq 0 ] && chown "$user" "$MARIA_TEST_DIR"
  local d=$MARIA_TEST_DIR
  mariadb-install-db --no-defaults --datadir="$d/data" --user="$user" \
    --auth-root-authentication-method=normal --skip-test-db >"$d/install.log" 2>&1 ||
    { cat "$d/install.log" >&2; return 1; }
  # A binary log in MIXED format (MariaDB's default), so the tests can show what a server that
  # logs statements does at READ COMMITTED; no fsync per commit: a test server needs no
  # durability and the suites run faster. The benchmark sets MARIA_TEST_DURABLE=1 for a server
  # that flushes its redo log at every commit, as a service's would.
  local flush=0
  [ "${MARIA_TEST_DURABLE:-0}" = 1 ] && flush=1
  # The port is probed free, then bound by the server a moment later: another ./dev started at
  # the same time may take it in between. The server's own bind decides; when it exits refusing
  # the port, the next free one is tried.
  MARIA_TEST_PORT=$(free_port 53306)
  local tries=0 pid i up
  while :; do
    rm -f "$d/error.log"
    /usr/sbin/mariadbd --no-defaults --datadir="$d/data" --user="$user" --socket="$d/sock" \
      --port="$MARIA_TEST_PORT" --bind-address=127.0.0.1 --pid-file="$d/pid" \
      --log-error="$d/error.log" --innodb-flush-log-at-trx-commit=$flush --innodb-buffer-pool-size=128M \
      --max-connections=400 --skip-name-resolve --log-bin="$d/binlog" --server-id=1 \
      --sync-binlog=0 >/dev/null 2>&1 &
    pid=$!
    up=0
    for i in $(seq 1 120); do
      mariadb-admin --no-defaults --socket="$d/sock" -uroot ping >/dev/null 2>&1 && { up=1; break; }
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    [ "$up" = 1 ] && break
    tries=$((tries + 1))
    if [ "$tries" -ge 20 ] || ! grep -q "Bind on TCP/IP port\|Address already in use" "$d/error.log"; then
      cat "$d/error.log" >&2
      return 1
    fi
    wait "$pid" 2>/dev/null || true
    echo "dev: MariaDB could not bind 127.0.0.1:$MARIA_TEST_PORT (taken since it was probed free); trying the next free port"
    MARIA_TEST_PORT=$(free_port $((MARIA_TEST_PORT + 1)))
  done
  mariadb --no-defaults --socket="$d/sock" -uroot -e \
    "CREATE DATABASE tabq_test; CREATE USER 'tabq'@'127.0.0.1' IDENTIFIED BY 'tabq';
     GRANT ALL ON *.* TO 'tabq'@'127.0.0.1';" ||
    { cat "$d/error.log" >&2; return 1; }
  export TABQ_TEST_MYSQL_URL="mysql://tabq:tabq@127.0.0.1:$MARIA_TEST_PORT/tabq_test"
  MARIA_TEST_PID=$(cat "$d/pid")
  echo "dev: MariaDB $(mariadb --no-defaults --socket="$d/sock" -uroot -N -e 'SELECT VERSION()') on 127.0.0.1:$MARIA_TEST_PORT (TABQ_TEST_MYSQL_URL)"
}

maria_test_stop() {
  [ -n "${MARIA_TEST_DIR:-}" ] || return 0
  mariadb-admin --no-defaults --socket="$MARIA_TEST_DIR/sock" -uroot shutdown >/dev/null 2>&1 ||
    { [ -f "$MARIA_TEST_DIR/pid" ] && kill "$(cat "$MARIA_TEST_DIR/pid")" 2>/dev/null; }
  local i
  for i in $(seq 1 40); do [ -e "$MARIA_TEST_DIR/pid" ] || break; sleep 0.25; done
  rm -rf "$MARIA_TEST_DIR"
  MARIA_TEST_DIR=
}
