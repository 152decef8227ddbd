# Sourced by ./dev: PgBouncer on loopback in front of the test PostgreSQL, run as the cluster's
# unprivileged user (PgBouncer refuses root), after pg_test_start.
#   pgbouncer_test_start  start it; exports TABQ_TEST_PGBOUNCER_SESSION_URL (session pooling) and
#                         TABQ_TEST_PGBOUNCER_TRANSACTION_URL (transaction pooling, pooler=transaction)
#   pgbouncer_test_stop   stop it and remove its folder
# One PgBouncer serves both: each pooling mode is a database entry of its own over tabq_test.

pgbouncer_test_start() {
  command -v pgbouncer >/dev/null || { echo "dev: pgbouncer is not installed" >&2; return 1; }
  PGB_TEST_DIR=$(mktemp -d /tmp/tabq-pgbouncer.XXXXXX)
  chmod 755 "$PGB_TEST_DIR"
  [ "$(id -u)" -eq 0 ] && chown "$PG_TEST_USER" "$PGB_TEST_DIR"
  PGB_TEST_PORT=$(free_port 56432)
  local server="host=127.0.0.1 port=$PG_TEST_PORT dbname=tabq_test"
  # The pools hold as many server connections as the tests' brokers take at once (the kit's four
  # racing brokers of eight connections each, and a child's).
  cat >"$PGB_TEST_DIR/pgbouncer.ini" <<INI
[databases]
tabq_session = $server pool_mode=session
tabq_transaction = $server pool_mode=transaction
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_TEST_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGB_TEST_DIR/users.txt
pidfile = $PGB_TEST_DIR/pgbouncer.pid
logfile = $PGB_TEST_DIR/pgbouncer.log
admin_users = tabq
default_pool_size = 60
max_client_conn = 400
server_reset_query = DISCARD ALL
INI
  echo '"tabq" ""' >"$PGB_TEST_DIR/users.txt"
  [ "$(id -u)" -eq 0 ] && chown -R "$PG_TEST_USER" "$PGB_TEST_DIR"
  if ! as_db_user pgbouncer -d "$PGB_TEST_DIR/pgbouncer.ini" >"$PGB_TEST_DIR/start.log" 2>&1; then
    cat "$PGB_TEST_DIR/start.log" "$PGB_TEST_DIR/pgbouncer.log" >&2 2>/dev/null
    return 1
  fi
  local waited=0
  until (exec 3<>"/dev/tcp/127.0.0.1/$PGB_TEST_PORT") 2>/dev/null; do
    waited=$((waited + 1))
    [ "$waited" -lt 100 ] || { cat "$PGB_TEST_DIR/pgbouncer.log" >&2; return 1; }
    sleep 0.1
  done
  export TABQ_TEST_PGBOUNCER_SESSION_URL="postgres://tabq@127.0.0.1:$PGB_TEST_PORT/tabq_session"
  export TABQ_TEST_PGBOUNCER_TRANSACTION_URL="postgres://tabq@127.0.0.1:$PGB_TEST_PORT/tabq_transaction?pooler=transaction"
  echo "dev: $(pgbouncer --version | head -n 1) on 127.0.0.1:$PGB_TEST_PORT, session and transaction pooling (TABQ_TEST_PGBOUNCER_*_URL)"
}

pgbouncer_test_stop() {
  [ -n "${PGB_TEST_DIR:-}" ] || return 0
  [ -f "$PGB_TEST_DIR/pgbouncer.pid" ] && kill "$(cat "$PGB_TEST_DIR/pgbouncer.pid")" 2>/dev/null || true
  rm -rf "$PGB_TEST_DIR"
  PGB_TEST_DIR=
}
