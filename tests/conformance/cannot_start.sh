#!/bin/sh
# cannot_start.sh KIT FREE_PORT FIXTURES: the kit exits 2 with one line naming the URL or the
# file when it cannot start, distinct from a failed suite (exit 1).
set -u
kit=$1 free_port=$2 fixtures=$3
failures=0

expect_one_line() { # WHAT NEEDLE ARGS...: exit 2, one line of output, the line names NEEDLE
  what=$1 needle=$2
  shift 2
  out=$("$kit" "$@" 2>&1)
  rc=$?
  lines=$(printf '%s\n' "$out" | wc -l)
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$out" | grep -qF -- "$needle"; then
    echo "FAIL $what: exit $rc, $lines lines, wanted exit 2 and one line naming $needle:"
    printf '%s\n' "$out"
    failures=$((failures + 1))
  else
    echo "ok   $what: $out"
  fi
}

port=$("$free_port") || { echo "cannot find a free loopback port"; exit 1; }
expect_one_line "unreachable postgres URL" "127.0.0.1:$port" \
  --scheme postgres --url "postgres://tabq@127.0.0.1:$port/none"
expect_one_line "unreachable mysql URL" "127.0.0.1:$port" \
  --scheme mysql --url "mysql://tabq@127.0.0.1:$port/none"
expect_one_line "a file that is no shared object" "$fixtures/notelf.so" \
  --plugin "$fixtures/notelf.so" --url "notelf:x"
expect_one_line "a plugin of another ABI" "$fixtures/badabi.so" \
  --plugin "$fixtures/badabi.so" --url "badabi:x"
expect_one_line "a plugin file that does not exist" "$fixtures/missing.so" \
  --plugin "$fixtures/missing.so" --url "missing:x"
expect_one_line "a usage error" "usage" --url "sqlite:x"
[ "$failures" -eq 0 ]
