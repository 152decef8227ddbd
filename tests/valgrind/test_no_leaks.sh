#!/bin/sh
# No leak and no memory error under valgrind (docs/reliability.md, "Sanitizers and valgrind"):
# every example on a SQLite file of its own, and the tabq command through its subcommands on a
# description file's tables. Each run must exit as it does without valgrind, with no error and
# no definitely or indirectly lost block (valgrind's --error-exitcode makes either fail it).
# Reachable blocks at exit (a library's caches) are not leaks and are not counted.
#
#   test_no_leaks.sh BIN_DIR DESCRIPTION_FILE TABLE
set -u
bin=$1
desc=$2
table=$3
work=$(mktemp -d /tmp/tabq-valgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
failures=0
runs=0

# check NAME CMD...: runs CMD under valgrind; its output is shown when it fails.
check() {
  name=$1
  shift
  runs=$((runs + 1))
  if valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
      --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
      --log-file="$work/vg.log" "$@" >"$work/out.log" 2>&1; then
    echo "ok - $name"
  else
    echo "not ok - $name (exit $?)"
    sed 's/^/    /' "$work/out.log" | tail -20
    sed 's/^/    /' "$work/vg.log" | head -60
    failures=$((failures + 1))
  fi
}

for example in minimal outbox decoding holds ledger tracing cancel retention deadlines pause_queue \
    concurrency_limit unique_jobs handler_tests; do
  check "example $example" "$bin/$example" "$work/$example.db"
done
check "example thumbnails" "$bin/thumbnails" --url "sqlite:$work/thumbnails.db" 20
check "example schedule" "$bin/schedule" 2

url="sqlite:$work/cli.db"
check "tabq plugins" "$bin/tabq" plugins
check "tabq schema --apply" "$bin/tabq" schema --url "$url" --table "$desc" --apply
check "tabq check" "$bin/tabq" check --url "$url" --table "$desc"
check "tabq publish" "$bin/tabq" publish --url "$url" --table "$desc" --table-name "$table" \
  '{"path": "a.png", "size": 64}'
check "tabq stats --json" "$bin/tabq" stats --url "$url" --table "$desc" --json
check "tabq requeue --dry-run" "$bin/tabq" requeue --url "$url" --table "$desc" --dry-run
check "tabq purge" "$bin/tabq" purge --url "$url" --table "$desc" --older-than 1d
check "tabq asyncapi" "$bin/tabq" asyncapi --table "$desc"
check "tabq schedule --next" "$bin/tabq" schedule --next 3 --cron "*/5 * * * *" --zone Europe/Paris
"$bin/sql_run" "$url" "CREATE TABLE queue_controls (queue_table TEXT NOT NULL, queue TEXT NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0, paused_at TEXT, PRIMARY KEY (queue_table, queue))"
check "tabq pause" "$bin/tabq" pause --url "$url" --table "$desc" --in "$table" \
  --controls queue_controls
check "tabq resume" "$bin/tabq" resume --url "$url" --table "$desc" --in "$table" \
  --controls queue_controls
check "tabq cancel" "$bin/tabq" cancel --url "$url" --table "$desc" --in "$table" 1
check "tabq with a bad URL (exit 2)" sh -c "'$bin/tabq' stats --url 'nosuch:x' --table '$desc'; [ \$? -eq 2 ]"

echo "valgrind: $((runs - failures)) passed, $failures failed"
[ "$failures" -eq 0 ] && [ "$runs" -gt 0 ]
