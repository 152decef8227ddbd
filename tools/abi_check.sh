#!/bin/sh
# The ABI against the committed baselines (docs/abi-policy.md, "The machine check").
#   abi_check.sh check  SOURCE_DIR GENERATED_INCLUDE_DIR LIBTABQ PLUGIN   (ctest abi_check)
#   abi_check.sh update SOURCE_DIR GENERATED_INCLUDE_DIR LIBTABQ PLUGIN   (./dev abi-update)
#   abi_check.sh dump BINARY OUT ROOT HEADERS_DIR...    abidw of BINARY, as the baselines are
#   abi_check.sh compare BASELINE CURRENT NAME          abidiff, judged by tools/abi_policy.awk
# LIBTABQ is the built libtabq.so; PLUGIN the plugin built from tests/abi/plugin_abi.c, whose
# entry's signature reaches the whole plugin ABI. The baselines are abi/libtabq.abi and
# abi/plugin.abi; `check` fails on any change the policy does not allow in a minor version.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

die() {
  echo "abi_check: $*" >&2
  exit 2
}

for tool in abidw abidiff; do
  command -v "$tool" >/dev/null ||
    die "$tool is not installed: it comes with Debian's abigail-tools (./dev deps installs it)"
done

# dump BINARY OUT ROOT HEADERS_DIR...: the binary's ABI as abidw writes it, restricted to the
# types the public headers define (the others become opaque declarations), without what differs
# from one build or machine to another: source locations, the file's and the build's paths, the
# libraries it needs, undefined symbols. Hash type ids keep a change to one type from
# renumbering the whole file. Sources under ROOT are named relative to it.
dump() {
  bin=$1 out=$2 root=$3
  shift 3
  [ -f "$bin" ] || die "no such file: $bin"
  n=$#
  for d; do set -- "$@" --headers-dir "$d"; done
  shift "$n"
  abidw "$@" --drop-private-types --drop-undefined-syms --exported-interfaces-only \
    --no-show-locs --no-corpus-path --no-comp-dir-path --no-elf-needed --type-id-style hash \
    --out-file "$out.tmp" "$bin" || die "abidw failed on $bin"
  awk -v pre="path='$root/" '{
    while ((i = index($0, pre)) > 0) $0 = substr($0, 1, i + 5) substr($0, i + length(pre))
    print }' "$out.tmp" >"$out"
  rm -f "$out.tmp"
  # Without debug info abidw still writes the symbols, and nothing of their types: a check on
  # that would pass whatever the headers say. So every exported function must have its type.
  symbols=$(grep -c "<elf-symbol name=.* type='func-type'" "$out" || true)
  typed=$(grep -c "<function-decl .* elf-symbol-id=" "$out" || true)
  [ "$symbols" -gt 0 ] && [ "$typed" -ge "$symbols" ] ||
    die "$bin: debug info describes $typed of its $symbols exported functions: the check needs a build with -g (RelWithDebInfo or Debug), and functions the optimiser did not fold into others"
}

# compare BASELINE CURRENT NAME: 0 when every difference is one the policy allows.
compare() {
  report=$2.report
  status=0
  # Every change, each type once where it changed (abi_policy.awk says why these options).
  abidiff --leaf-changes-only --harmless --no-default-suppression --show-bits --show-dec \
    --no-show-locs "$1" "$2" >"$report" 2>&1 || status=$?
  if verdict=$(awk -v status="$status" -f "$here/abi_policy.awk" "$1" "$report"); then
    echo "abi_check: $3 keeps the ABI of $1${verdict:+; allowed changes:}"
    [ -z "$verdict" ] || { echo "$verdict"; allowed=1; }
    return 0
  fi
  echo "abi_check: $3 breaks the ABI recorded in $1 (docs/abi-policy.md); abidiff says:"
  sed 's/^/    /' "$report"
  echo "$verdict"
  return 1
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  dump) [ $# -ge 4 ] || die "usage: dump BINARY OUT ROOT HEADERS_DIR..."; dump "$@" ;;
  compare) [ $# -eq 3 ] || die "usage: compare BASELINE CURRENT NAME"; compare "$@" ;;
  check | update)
    [ $# -eq 4 ] || die "usage: $cmd SOURCE_DIR GENERATED_INCLUDE_DIR LIBTABQ PLUGIN"
    src=$(cd "$1" && pwd) gen=$(cd "$2" && pwd) lib=$3 plugin=$4
    work=$(mktemp -d "${TMPDIR:-/tmp}/tabq-abi.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    dump "$lib" "$work/libtabq.abi" "$src" "$src/core/include" "$src/sdk/include" "$gen"
    dump "$plugin" "$work/plugin.abi" "$src" "$src/core/include" "$src/sdk/include"
    if [ "$cmd" = update ]; then
      for f in libtabq plugin; do
        cp "$work/$f.abi" "$src/abi/$f.abi"
        echo "abi_check: wrote abi/$f.abi"
      done
      exit 0
    fi
    # From the source folder, so messages name the baselines as abi/<name>.abi.
    cd "$src"
    failed=0 allowed=0
    compare abi/libtabq.abi "$work/libtabq.abi" libtabq.so || failed=1
    compare abi/plugin.abi "$work/plugin.abi" "the plugin ABI (tabq_plugin_entry)" || failed=1
    if [ "$failed" -ne 0 ]; then
      echo "abi_check: to accept an intended change (one the policy allows, or a new major version's), run ./dev abi-update and commit abi/ with the change"
      exit 1
    fi
    # An allowed change still fails until it is recorded: the next change must be judged against
    # this one, not the older layout (two unrecorded appends could swap places unseen), and the
    # policy asks for the baseline in the commit that makes the change.
    if [ "$allowed" -ne 0 ]; then
      echo "abi_check: the changes above are allowed, but not recorded: run ./dev abi-update and commit abi/ with them"
      exit 1
    fi
    ;;
  *) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
