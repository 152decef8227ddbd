#!/usr/bin/env bash
# The installed package, used from outside tabq's tree: install the build into a temporary
# prefix, then, against that prefix alone,
#   - compile every public header alone as C11 (-pedantic) and as C++;
#   - check what libtabq and each plugin export against the committed lists;
#   - build examples/ as a project of its own with find_package(tabq), and once with pkg-config;
#   - run the thumbnails example on a SQLite file, its dialect loaded from the prefix;
#   - follow docs/writing-a-dialect.md's first steps with the installed template;
#   - build examples/dialects/pglease out of tree and run the installed kit on it.
# Usage: test_installed.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d /tmp/tabq-installed.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
# check NAME CMD...: runs CMD quietly; on failure shows its output.
check() {
  local name=$1; shift
  if "$@" >"$work/out" 2>&1; then ok "$name"; else not_ok "$name"; sed 's/^/    /' "$work/out"; fi
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
libdir=$(find "$prefix" -name libtabq.so -printf '%h\n' | head -n 1)
export PKG_CONFIG_PATH=$libdir/pkgconfig
# Nothing from the build tree: no plugin path, and the library found in the prefix only.
unset TABQ_PLUGIN_PATH LD_LIBRARY_PATH

check "libtabq.so.1 is the SONAME" sh -c "objdump -p '$libdir/libtabq.so' | grep -q 'SONAME *libtabq.so.1$'"
check "libtabq.so -> libtabq.so.1 -> libtabq.so.1.x.y" \
  sh -c "readlink '$libdir/libtabq.so' | grep -qx libtabq.so.1 && readlink '$libdir/libtabq.so.1' | grep -qE '^libtabq\.so\.1\.[0-9]+\.[0-9]+$'"

for h in "$prefix"/include/tabq/*.h "$prefix"/include/tabq/sys/*.h; do
  name=${h#"$prefix"/include/}
  check "$name compiles alone as C11" sh -c "printf '#include <$name>\nint header_test_;\n' |
    cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I'$prefix/include' -x c -"
  check "$name compiles alone as C++" sh -c "printf '#include <$name>\nint header_test_;\n' |
    c++ -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I'$prefix/include' -x c++ -"
done

check "the description files' JSON Schema is installed" \
  test -s "$prefix/share/tabq/tabq-description.schema.json"

exports() { nm -D --defined-only "$1" | awk '{print $3}' | LC_ALL=C sort; }
check "libtabq exports the committed list (tests/installed/symbols-libtabq.txt)" \
  diff -u <(LC_ALL=C sort "$src/tests/installed/symbols-libtabq.txt") <(exports "$libdir/libtabq.so")
for p in "$libdir"/tabq-1/*.so; do
  check "$(basename "$p") exports tabq_plugin_entry alone" \
    diff -u <(echo tabq_plugin_entry) <(exports "$p")
done

check "examples build with find_package(tabq)" sh -c "cmake -S '$src/examples' -B '$work/ex' \
  -DCMAKE_PREFIX_PATH='$prefix' && cmake --build '$work/ex'"
check "minimal (find_package build) runs its three jobs on SQLite" sh -c "
  '$work/ex/minimal/minimal' '$work/minimal.db' | grep -qx 'done: 3 jobs'"
check "thumbnails builds with pkg-config --cflags --libs tabq" sh -c "cc -std=c11 -Wall -Werror \
  '$src/examples/thumbnails/main.c' -o '$work/thumbnails-pc' \$(pkg-config --cflags --libs tabq jansson) \
  -Wl,-rpath,\$(realpath \$(pkg-config --variable=libdir tabq))"
for exe in "$work/ex/thumbnails/thumbnails" "$work/thumbnails-pc"; do
  if "$exe" --url "sqlite:$work/thumbs-$(basename "$exe").db" 40 >"$work/out" 2>&1 &&
      grep -q "from $libdir/tabq-1/sqlite.so" "$work/out" && grep -q "^summary: 40 handled" "$work/out"; then
    ok "$(basename "$exe") drains 40 jobs on SQLite, its dialect from the prefix"
  else
    not_ok "$(basename "$exe") drains 40 jobs on SQLite, its dialect from the prefix"
    sed 's/^/    /' "$work/out"
  fi
done

# Relocatable: the whole prefix copied elsewhere serves a build and a run from there alone.
cp -a "$prefix" "$work/moved"
check "a copy of the prefix elsewhere serves find_package and loads its own plugins" sh -c "
  cmake -S '$src/examples' -B '$work/ex-moved' -DCMAKE_PREFIX_PATH='$work/moved' >/dev/null &&
  cmake --build '$work/ex-moved' >/dev/null &&
  '$work/ex-moved/thumbnails/thumbnails' --url 'sqlite:$work/moved.db' 20 | grep -q 'from $work/moved/.*/tabq-1/sqlite.so'"

check "a C++ consumer of every TABQ_*_INIT builds with -Wall -Wextra -Werror" sh -c "c++ -std=c++11 \
  -pedantic -Wall -Wextra -Werror '$src/tests/installed/consumer.cpp' -o '$work/consumer' \
  \$(pkg-config --cflags --libs tabq) -Wl,-rpath,\$(realpath \$(pkg-config --variable=libdir tabq))"
check "the C++ consumer drains its job on SQLite" sh -c "'$work/consumer' '$work/consumer.db' |
  grep -qx 'handled 1'"
check "try_connect builds with pkg-config" sh -c "cc -std=c11 -Wall -Werror \
  '$src/tests/installed/try_connect.c' -o '$work/try_connect' \$(pkg-config --cflags --libs tabq) \
  -Wl,-rpath,\$(realpath \$(pkg-config --variable=libdir tabq))"

# docs/writing-a-dialect.md, steps 1 and 2, literally: the installed template copied and renamed,
# built against the prefix, loaded by TABQ_PLUGIN_PATH, and the kit naming the first member to
# write.
check "the installed template, renamed mydb, builds out of tree against the prefix" sh -c "
  cp -r '$prefix/share/tabq/template' '$work/mydb' && cd '$work/mydb' && mv skeleton.c mydb.c && mv skeleton.ddl mydb.ddl &&
  sed -i 's/skeleton/mydb/g' mydb.c CMakeLists.txt &&
  cmake -S . -B build -DCMAKE_PREFIX_PATH='$prefix' && cmake --build build"
TABQ_PLUGIN_PATH=$work/mydb/build "$work/try_connect" "mydb://anything" >"$work/out" 2>&1 || true
if grep -q "^error DIALECT .*mydb dialect: Driver.connect is not written yet" "$work/out"; then
  ok "the mydb skeleton loads by TABQ_PLUGIN_PATH and refuses with DIALECT"
else
  not_ok "the mydb skeleton loads by TABQ_PLUGIN_PATH and refuses with DIALECT"
  sed 's/^/    /' "$work/out"
fi
status=0
TABQ_PLUGIN_PATH=$work/mydb/build "$prefix/bin/tabq-conformance" --scheme mydb \
  --url mydb://localhost/test --ddl "$work/mydb/mydb.ddl" >"$work/out" 2>&1 || status=$?
if [ "$status" -eq 2 ] && [ "$(wc -l <"$work/out")" -eq 1 ] &&
    grep -q "^tabq-conformance: cannot reach mydb://localhost/test: .*Driver.connect is not written yet" "$work/out"; then
  ok "the kit on the skeleton: exit 2, one line naming the member to write"
else
  not_ok "the kit on the skeleton: exit 2, one line naming the member to write (exit $status)"
  sed 's/^/    /' "$work/out"
fi

kit=$prefix/bin/tabq-conformance
check "tabq-conformance is installed and runs from the prefix" sh -c "'$kit' --help | grep -q '^usage: tabq-conformance'"

# pglease, a third-party dialect over the postgres plugin's driver, must pass the kit.
if [ -d "$src/examples/dialects/pglease" ]; then
  check "pglease builds out of tree against the prefix" sh -c "cmake -S '$src/examples/dialects/pglease' \
    -B '$work/pglease' -DCMAKE_PREFIX_PATH='$prefix' && cmake --build '$work/pglease'"
  check "pglease also builds with pkg-config --cflags --libs tabq-sdk" sh -c "cc -std=c11 -Wall \
    -Werror -shared -fPIC -fvisibility=hidden '$src/examples/dialects/pglease/pglease.c' \
    -o '$work/pglease-pc.so' \$(pkg-config --cflags --libs tabq-sdk) &&
    nm -D --defined-only '$work/pglease-pc.so' | grep -q ' T tabq_plugin_entry$'"
  if [ -z "${TABQ_TEST_POSTGRES_URL:-}" ]; then
    not_ok "pglease passes the conformance kit: TABQ_TEST_POSTGRES_URL is not set (./dev test sets it)"
  else
    url=pglease:${TABQ_TEST_POSTGRES_URL#*:}
    dir=$(dirname "$(find "$work/pglease" -name pglease.so | head -n 1)")
    # --plugin here (the built-in dialects' runs use --scheme): the kit puts the file's folder on
    # the plugin path itself and checks the broker loaded that very file.
    if "$kit" --plugin "$dir/pglease.so" --url "$url" --junit "$build/conformance_pglease.xml" \
        >"$work/out" 2>&1; then
      ok "pglease passes the conformance kit ($(grep '^conformance:' "$work/out"))"
    else
      not_ok "pglease passes the conformance kit"
      sed 's/^/    /' "$work/out"
    fi
    cp "$work/out" "$build/conformance_pglease.txt"
  fi
fi

echo "installed: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
