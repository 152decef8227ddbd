#!/bin/sh
# check_format.sh ROOT: fails, naming each file, when a C source of the tree is not formatted as
# .clang-format says (./dev fmt formats them).
set -eu
cd "$1"
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (./dev deps)" >&2; exit 2; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.h' '*.cpp')
else
  files=$(find . -path ./build\* -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print)
fi
[ -n "$files" ] || { echo "check_format: no C source found under $1" >&2; exit 2; }
# One run over every file; its warnings start with the file's name.
if ! out=$(echo "$files" | xargs clang-format --dry-run -Werror 2>&1); then
  echo "$out" | sed -n 's/^\([^ :]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/not formatted: \1/p' | sort -u
  echo "check_format: run ./dev fmt, then commit" >&2
  exit 1
fi
