#!/usr/bin/env bash
# The ABI check itself (tools/abi_check.sh), on altered copies of the public headers: each case
# edits a copy, builds the plugin entry (plugin_abi.c) and a stand-in for libtabq
# (service_probe.c) against it, and expects the check to pass what docs/abi-policy.md allows in
# a minor version and to fail what it does not. The builds are two small files each, so the
# whole run takes seconds.
# Usage: test_abi_check.sh SOURCE_DIR GENERATED_INCLUDE_DIR CC
set -euo pipefail
src=$1
gen=$2
cc=$3
check=$src/tools/abi_check.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/tabq-abi-cases.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# build NAME [CFLAGS...]: the plugin entry and the probe as one binary, against
# $work/NAME/tabq/ (the service's headers, sys/ the SDK's), and its ABI.
build() {
  local dir=$work/$1
  shift
  # -O0: at -O2 the probe's alike bodies fold together, and a folded function loses the debug
  # info that ties its symbol to its type (the check refuses such a binary).
  "$cc" -std=c11 -g -O0 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -I"$dir" "$@" \
    "$src/tests/abi/plugin_abi.c" "$src/tests/abi/service_probe.c" -o "$dir/abi.so"
  sh "$check" dump "$dir/abi.so" "$dir/abi.xml" "$work" "$dir"
}

mkdir -p "$work/base/tabq/sys"
cp "$src"/core/include/tabq/*.h "$gen/tabq/version.h" "$work/base/tabq/"
cp "$src"/sdk/include/tabq/sys/*.h "$work/base/tabq/sys/"
build base

# edit FILE OLD NEW: replaces the one occurrence of OLD (which must be there) by NEW.
edit() {
  OLD=$2 NEW=$3 perl -0777 -i -pe 'my $n = () = /\Q$ENV{OLD}\E/g;
    $n == 1 or die "edit: \"$ENV{OLD}\" occurs $n times in $ARGV\n";
    s/\Q$ENV{OLD}\E/$ENV{NEW}/' "$1"
}

# expect pass|fail NAME 'EDITS' [CFLAGS...]: EDITS runs in the copy's tabq/ folder. A case
# that passes must list as many allowed changes as ALLOWED says (default 1), so that none of
# its edits went unseen.
expect() {
  local want=$1 name=$2 edits=$3 got=pass
  shift 3
  cp -r "$work/base" "$work/$name"
  (cd "$work/$name/tabq" && eval "$edits")
  build "$name" "$@"
  sh "$check" compare "$work/base/abi.xml" "$work/$name/abi.xml" "$name" >"$work/$name/out" 2>&1 ||
    got=fail
  local seen
  seen=$(grep -c '^  allowed: ' "$work/$name/out" || true)
  if [ "$got" = pass ] && [ "$seen" -ne "${ALLOWED:-1}" ]; then
    got="pass with $seen allowed changes, not ${ALLOWED:-1}"
  fi
  if [ "$got" = "$want" ]; then
    echo "ok - $name: $([ "$want" = pass ] && echo passes || echo fails)"
    grep -h '^  \(not \)\{0,1\}allowed' "$work/$name/out" | sed 's/^  /    /'
    passed=$((passed + 1))
  else
    echo "not ok - $name: expected to $want, did $got"
    sed 's/^/    /' "$work/$name/out"
    failed=$((failed + 1))
  fi
}

# What a minor version may do: the two the policy names first, then the others together. The
# edits append before a struct's closing line, so that they stay appends as the headers grow.
expect pass dialect_v1_appended \
  'edit sys/dialect.h "
} tabq_dialect_v1;" "
  tabq_build_fn appended;
} tabq_dialect_v1;"'
expect pass subscription_options_appended \
  'edit tabq.h "
} tabq_subscription_options;" "
  const char *appended;
} tabq_subscription_options;"'
ALLOWED=7 expect pass every_other_allowed_change \
  'edit sys/dialect.h "
} tabq_plugin;" "
  const void *appended;
} tabq_plugin;"
   edit sys/dialect.h "
} tabq_build;" "
  unsigned appended;
} tabq_build;"
   edit tabq.h "
} tabq_stats;" "
  uint64_t appended;
} tabq_stats;"
   edit codes.h "  TABQ_CODE_LIST(TABQ_CODE_ENUM_)
" "  TABQ_CODE_LIST(TABQ_CODE_ENUM_)
  TABQ_APPENDED,
"
   edit sys/dialect.h "  TABQ_P_DATA = 256," "  TABQ_P_APPENDED,
  TABQ_P_DATA = 256,"
   edit value.h "
} tabq_type;" "
  TABQ_T_APPENDED,
} tabq_type;"' -DPROBE_ADDED_FUNCTION

# What needs a new major version.
expect fail lease_v1_inserted_in_the_middle \
  'edit sys/dialect.h "  tabq_build_fn extend;" "  tabq_build_fn inserted;
  tabq_build_fn extend;"'
expect fail build_member_retyped \
  'edit sys/dialect.h "  uint32_t server_version;" "  uint64_t server_version;"'
expect fail build_member_retyped_same_size \
  'edit sys/dialect.h "  unsigned rows;" "  int rows;"'
expect fail build_appended_and_retyped \
  'edit sys/dialect.h "  uint32_t server_version;" "  int32_t server_version;"
   edit sys/dialect.h "
} tabq_build;" "
  const char *appended;
} tabq_build;"'
expect fail lease_v1_member_renamed \
  'edit sys/dialect.h "  tabq_build_fn extend;" "  tabq_build_fn extend_lease;"'
expect fail rowlock_v1_hole_filled \
  'edit sys/dialect.h "  uint32_t flags;
  /* NOW GROUP LIMIT -> projection, locking" "  uint32_t flags;
  uint32_t inserted;
  /* NOW GROUP LIMIT -> projection, locking"'
# Its last member is a bool: one more fits in the padding after it.
expect fail broker_options_appended_in_tail_padding \
  'edit tabq.h "
} tabq_broker_options;" "
  bool appended;
} tabq_broker_options;"'
expect fail error_grown \
  'edit tabq.h "  char reserved_[48]; /* zero;" "  char reserved_[49]; /* zero;"'
expect fail stmt_grown \
  'edit sys/dialect.h "  int status; /*" "  int appended;
  int status; /*"'
expect fail function_removed \
  'edit tabq.h "TABQ_API const char *tabq_strerror(tabq_code code);" ""' -DPROBE_WITHOUT_STRERROR
expect fail function_parameter_retyped \
  'edit tabq.h "tabq_stats *out, size_t size);" "tabq_stats *out, unsigned size);"' \
  -DPROBE_STATS_SIZE=unsigned
expect fail value_type_inserted_in_the_middle \
  'edit value.h "  TABQ_T_INT,      /* u.i */" "  TABQ_T_INSERTED,
  TABQ_T_INT,      /* u.i */"'

echo "abi cases: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
