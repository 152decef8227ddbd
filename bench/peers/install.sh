#!/bin/sh
# Installs the peer libraries of tabq's benchmark into DIR/node_modules, exactly as
# package-lock.json pins them, with nothing fetched but npm packages:
#
#   bench/peers/install.sh DIR        then   node bench/peers/<peer>.js --modules DIR ...
#
# better-sqlite3 (for plainjob) is compiled from source: its installer would otherwise download a
# prebuilt binary from outside the npm registry, and node-gyp would download Node's headers. So
# this needs a C/C++ compiler and make (Debian: build-essential), python3, and Node's headers:
# those of npm's `nodedir` setting, else those installed beside node (Debian: libnode-dev).
# The compile takes a few minutes.
set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
dir=$1

for tool in node npm make python3; do
  command -v $tool >/dev/null 2>&1 ||
    { echo "install.sh: $tool is missing (Debian: nodejs npm build-essential python3)" >&2; exit 1; }
done
command -v c++ >/dev/null 2>&1 ||
  { echo "install.sh: no C++ compiler; better-sqlite3 is compiled from source (Debian: build-essential)" >&2; exit 1; }

nodedir=${npm_config_nodedir:-$(npm config get nodedir 2>/dev/null || true)}
case $nodedir in undefined | null) nodedir= ;; esac
if [ -z "$nodedir" ] || [ ! -f "$nodedir/include/node/node_api.h" ]; then
  nodedir=$(node -p 'require("path").resolve(process.execPath, "..", "..")')
fi
if [ ! -f "$nodedir/include/node/node_api.h" ]; then
  echo "install.sh: Node's headers (include/node/node_api.h) were not found beside node;" >&2
  echo "better-sqlite3 is compiled against them (Debian: apt-get install libnode-dev, or set npm_config_nodedir)" >&2
  exit 1
fi

mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
cd "$dir"
# prebuild-install reads its buildFromSource setting from this variable: it skips the binary's
# download and hands over to node-gyp, which compiles against the headers in nodedir.
# graphile-worker 0.18 and pg-boss 12 declare Node 22 in their engines field but run on Node
# 20.19 and later (README.md): npm warns about it, and must not refuse under engine-strict.
env npm_config_nodedir="$nodedir" 'prebuild-install_buildFromSource=true' \
  npm ci --no-audit --no-fund --engine-strict=false >&2
node -e 'require("better-sqlite3")(":memory:").close()' ||
  { echo "install.sh: better-sqlite3 was compiled but does not load" >&2; exit 1; }
echo "install.sh: peers installed in $dir/node_modules" >&2
