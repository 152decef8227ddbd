#!/bin/sh
# run_kit.sh KIT DB FORM WORKDIR [NAME QUERY [KIT OPTIONS...]]: runs tabq-conformance on a
# built-in database and form. SQLite gets a fresh file in WORKDIR; PostgreSQL and MariaDB URLs
# come from ./dev test, and so do PgBouncer's in front of PostgreSQL (DB pgbouncer_session,
# pgbouncer_transaction: the postgres plugin through session and transaction pooling). NAME (default conformance_DB_FORM) names the report files in WORKDIR;
# QUERY, when not empty, is added to the URL's query (sql_mode=... for MySQL's SQL modes); the
# options after it go to the kit (--skip NAME, ...).
set -eu
kit=$1 db=$2 form=$3 dir=$4
name=${5:-conformance_${db}_$form} query=${6:-}
[ $# -gt 6 ] && shift 6 || shift $#
scheme=$db
case "$db" in
  sqlite)
    file="$dir/${name}.db"
    rm -f "$file" "$file-wal" "$file-shm"
    url="sqlite:$file?synchronous=normal" ;;
  postgres) url=${TABQ_TEST_POSTGRES_URL:?TABQ_TEST_POSTGRES_URL is not set: ./dev test starts PostgreSQL and sets it} ;;
  mysql) url=${TABQ_TEST_MYSQL_URL:?TABQ_TEST_MYSQL_URL is not set: ./dev test starts MariaDB and sets it} ;;
  pgbouncer_session)
    scheme=postgres
    url=${TABQ_TEST_PGBOUNCER_SESSION_URL:?TABQ_TEST_PGBOUNCER_SESSION_URL is not set: ./dev test starts PgBouncer and sets it} ;;
  pgbouncer_transaction)
    scheme=postgres
    url=${TABQ_TEST_PGBOUNCER_TRANSACTION_URL:?TABQ_TEST_PGBOUNCER_TRANSACTION_URL is not set: ./dev test starts PgBouncer and sets it} ;;
  *) echo "run_kit.sh: unknown database $db" >&2; exit 2 ;;
esac
if [ -n "$query" ]; then
  case "$url" in
    *\?*) url="$url&$query" ;;
    *) url="$url?$query" ;;
  esac
fi
# A third-party dialect may decline a feature (the kit then skips its tests, with the reason);
# a built-in one must serve every feature its form has, so such a skip fails here.
out="$dir/$name.txt"
status=0
"$kit" --scheme "$scheme" --url "$url" --form "$form" --junit "$dir/$name.xml" "$@" \
  >"$out" 2>&1 || status=$?
cat "$out"
if [ "$status" -eq 0 ] && grep -q "SKIP.*refuses" "$out"; then
  echo "run_kit.sh: the built-in $scheme dialect declined a feature (SKIP ... refuses above)" >&2
  exit 1
fi
exit "$status"
