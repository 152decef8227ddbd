#!/usr/bin/env bash
# The AsyncAPI documents of the fixture apps (tests/fixtures/asyncapi), for URLs of SQLite,
# PostgreSQL and MariaDB in every form the plugins read and for the live servers' URLs that
# ./dev test exports: each validated by the official @asyncapi/parser and checked for what it
# says (channels, operations, servers) and what it must never say (passwords, user names, query
# options, sockets' and SQLite files' paths). The validator and the check are first shown to
# refuse broken documents, so a pass means something.
#   test_asyncapi.sh ASYNCAPI_DOC TESTS_SOURCE_DIR WORK_DIR
set -euo pipefail
doc_tool=$1
here=$2/asyncapi
fixtures=$2/fixtures/asyncapi
work=$3
parser_version=3.6.6
mkdir -p "$work"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# ---- The parser, installed once into the build tree -------------------------------------------
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "node and npm are needed (./dev test installs Debian's nodejs and npm)"
  exit 1
}
parser=$work/parser
installed=$parser/node_modules/@asyncapi/parser/package.json
if ! grep -q "\"version\": \"$parser_version\"" "$installed" 2>/dev/null; then
  echo "installing @asyncapi/parser@$parser_version with npm into $parser"
  rm -rf "$parser.tmp"
  mkdir -p "$parser.tmp"
  # No install scripts: the parser needs none, and one of its dependencies' would report home.
  if ! npm install --prefix "$parser.tmp" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@asyncapi/parser@$parser_version" >"$work/npm.log" 2>&1; then
    cat "$work/npm.log"
    echo "npm could not install @asyncapi/parser@$parser_version"
    exit 1
  fi
  rm -rf "$parser"
  mv "$parser.tmp" "$parser"
fi
validate() { node "$here/validate.mjs" "$parser" "$@"; }
check() { node "$here/check.mjs" "$@"; }

# ---- The validator and the check refuse what they must ----------------------------------------
cat >"$work/no-info.json" <<'EOF'
{"asyncapi": "3.0.0", "channels": {"jobs": {"address": "jobs"}}}
EOF
cat >"$work/bad-action.json" <<'EOF'
{"asyncapi": "3.0.0", "info": {"title": "t", "version": "1.0.0"},
 "channels": {"jobs": {"address": "jobs"}},
 "operations": {"jobs": {"action": "publish", "channel": {"$ref": "#/channels/jobs"}}}}
EOF
for broken in no-info bad-action; do
  if validate "$work/$broken.json" >"$work/$broken.out" 2>&1; then
    fail "the parser took the broken document $broken.json"
  fi
  cat "$work/$broken.out"
done

# ---- Documents ----------------------------------------------------------------------------------
# generate NAME APP [--connect] URL...: the document into $work/NAME.json, validated; with
# --connect, each URL opens a broker first.
generate() {
  local name=$1 app=$2 connect=()
  shift 2
  [ "${1:-}" = --connect ] && connect=(--connect) && shift
  if ! "$doc_tool" "${connect[@]}" "$fixtures/$app.tabq.json" "$@" >"$work/$name.json" \
    2>"$work/$name.err"; then
    cat "$work/$name.err"
    fail "no document for $name"
    return
  fi
  validate "$work/$name.json" || fail "the parser refused $name.json"
}

# Each fixture app with a URL of each database, users, passwords and options in every place
# a URL holds them.
sqlite_url='sqlite:/srv/secret-folder/jobs.db?synchronous=normal&busy_timeout=250'
pg_url='postgresql://svc-user:Pg-S3cret@db.example.com:5433/crm?sslmode=require&password=Pg-S3cret'
maria_url='mariadb://svc-user:My-S3cret@[2001:db8::7]:3307/crm?socket=/run/secret.sock&connect_timeout=5'
secrets=(--absent Pg-S3cret --absent My-S3cret --absent svc-user --absent secret-folder
  --absent jobs.db --absent synchronous --absent sslmode --absent secret.sock --absent connect_timeout)
for app in thumbnails crm; do
  generate "$app" "$app" "$sqlite_url" "$pg_url" "$maria_url"
  check "$work/$app.json" "$fixtures/$app.expect.json" \
    --server sqlite sqlite "" - \
    --server postgresql postgresql db.example.com:5433 /crm \
    --server mariadb mysql "[2001:db8::7]:3307" /crm \
    "${secrets[@]}" || fail "$app.json says what it should not, or not what it should"
done

# The other forms of the plugins' URLs: libpq's conninfo and socket folders, a host list, the
# MySQL driver's socket, SQLite's absolute and relative files, a third-party dialect's scheme.
generate forms crm \
  "postgres:host=db.internal port=6543 dbname=crm user=conn-user password='Conn S3cret'" \
  'postgres:///crm?host=%2Fvar%2Frun%2Fsecret-pg&password=Q-S3cret' \
  'postgresql://a.example.com:5432,b.example.com:5433/crm?target_session_attrs=read-write' \
  'mysql://sock-user:Sock-S3cret@/crm?socket=/tmp/secret-mysql.sock' \
  'sqlite:///var/lib/secret-abs/jobs.db' 'sqlite://secret-rel/jobs.db' \
  'cockroach://crdb-user:Cr-S3cret@crdb.example.com:26257/crm?sslrootcert=/secret/ca.pem'
check "$work/forms.json" "$fixtures/crm.expect.json" \
  --server postgresql postgresql db.internal:6543 /crm \
  --server postgresql_2 postgresql localhost /crm \
  --server postgresql_3 postgresql a.example.com:5432,b.example.com:5433 /crm \
  --server mysql mysql localhost /crm \
  --server sqlite sqlite "" - --server sqlite_2 sqlite "" - \
  --server cockroach cockroach crdb.example.com:26257 - \
  --absent S3cret --absent conn-user --absent sock-user --absent crdb-user --absent secret \
  --absent /var --absent /tmp --absent target_session_attrs --absent sslrootcert ||
  fail "forms.json says what it should not, or not what it should"

# The live servers of ./dev test: the same URLs open brokers (--connect), then document them.
# PostgreSQL trusts loopback, so its URL also takes a password the test chose; MariaDB's
# password is its user's name, so that one is checked as user info, and a second document is
# made for its URL with a chosen password (no connection: the document needs none).
if [ -z "${TABQ_TEST_POSTGRES_URL:-}" ] || [ -z "${TABQ_TEST_MYSQL_URL:-}" ]; then
  fail "TABQ_TEST_POSTGRES_URL and TABQ_TEST_MYSQL_URL are not set: ./dev test starts the servers and sets them"
else
  authority() { # scheme://user[:password]@host:port/db -> host:port
    local a=${1#*://}
    a=${a%%/*}
    echo "${a##*@}"
  }
  pg_live=$TABQ_TEST_POSTGRES_URL
  my_live=$TABQ_TEST_MYSQL_URL
  pg_host=$(authority "$pg_live")
  my_host=$(authority "$my_live")
  pg_user=${pg_live#*://}
  pg_user=${pg_user%%@*}
  pg_user=${pg_user%%:*}
  my_userinfo=${my_live#*://}
  my_userinfo=${my_userinfo%%@*}
  pg_with_password="${pg_live%%://*}://$pg_user:Live-Pg-S3cret@${pg_live#*@}"
  pg_with_password="$pg_with_password$([[ $pg_with_password == *\?* ]] && echo '&' || echo '?')password=Live-Pg-S3cret"
  live_db=$work/live-secret-dir/live.db
  mkdir -p "$(dirname "$live_db")"
  for app in thumbnails crm; do
    generate "live-$app" "$app" --connect "$pg_with_password" "$my_live" "sqlite:$live_db"
    check "$work/live-$app.json" "$fixtures/$app.expect.json" \
      --server postgresql postgresql "$pg_host" /tabq_test \
      --server mysql mysql "$my_host" /tabq_test \
      --server sqlite sqlite "" - \
      --absent Live-Pg-S3cret --absent "$pg_user@" --absent "$pg_user:" --absent "$my_userinfo@" \
      --absent "$my_userinfo" --absent live-secret-dir --absent "$live_db" ||
      fail "live-$app.json says what it should not, or not what it should"
  done
  my_with_password="${my_live%%://*}://${my_userinfo%%:*}:Live-My-S3cret@${my_live#*@}"
  generate live-mysql-password crm "$my_with_password"
  check "$work/live-mysql-password.json" "$fixtures/crm.expect.json" \
    --server mysql mysql "$my_host" /tabq_test --absent Live-My-S3cret ||
    fail "live-mysql-password.json says what it should not, or not what it should"
fi

# ---- The check refuses what it must -------------------------------------------------------------
# The thumbnails document with a password in a server's description, with a channel less, and
# with an operation pointing at another channel's message: the check must fail each.
tamper() { # tamper NAME JS: $work/thumbnails.json changed by JS (on `d`) into $work/NAME.json
  node -e "const fs=require('fs');const d=JSON.parse(fs.readFileSync(process.argv[1]));$2;
fs.writeFileSync(process.argv[2], JSON.stringify(d, null, 2))" "$work/thumbnails.json" "$work/$1.json"
}
tamper leaked 'd.servers.postgresql.description = "user svc-user, password Pg-S3cret"'
tamper lost-channel 'delete d.channels.thumbnail_jobs'
tamper wrong-message 'd.operations.thumbnail.messages = [{$ref: "#/channels/thumbnail_jobs/messages/other"}]'
for tampered in leaked lost-channel wrong-message; do
  if check "$work/$tampered.json" "$fixtures/thumbnails.expect.json" \
    --server sqlite sqlite "" - --server postgresql postgresql db.example.com:5433 /crm \
    --server mariadb mysql "[2001:db8::7]:3307" /crm "${secrets[@]}"; then
    fail "the check took the tampered document $tampered.json"
  fi
done

if [ "$failures" -gt 0 ]; then
  echo "$failures failed"
  exit 1
fi
echo "every document valid and as expected; the broken and tampered ones refused"
