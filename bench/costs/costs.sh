#!/usr/bin/env bash
# costs.sh — what one message costs tabq, counted (./dev costs; README.md beside this file).
#
#   costs.sh [--rows A,B] [--form lease|advisory] [--json FILE]
#
# Builds tabq_cost_drain with optimisation and debug info in build-costs/, runs it under
# valgrind's DHAT (heap allocations) and callgrind (instructions) at A and B rows (default 2000
# and 6000), and prints the slopes: (count at B - count at A) / (B - A). Start-up, connecting,
# subscribing and closing cost the same at both lengths and cancel; what is left is per message.
# The numbers also go to FILE as JSON (default build-costs/costs.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-costs
rows_a=2000
rows_b=6000
form=lease
json=$build/costs.json

usage() { sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rows)
      [[ ${2:-} =~ ^([0-9]+),([0-9]+)$ ]] || { echo "costs: --rows takes A,B (2000,6000)" >&2; exit 2; }
      rows_a=${BASH_REMATCH[1]}; rows_b=${BASH_REMATCH[2]}; shift 2 ;;
    --form) form=${2:-}; shift 2 ;;
    --json) json=${2:-}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
if [ "$rows_a" -lt 1 ] || [ "$rows_b" -le "$rows_a" ]; then
  echo "costs: --rows A,B needs 1 <= A < B" >&2
  exit 2
fi
for tool in valgrind python3 cmake; do
  command -v "$tool" >/dev/null || { echo "costs: $tool is missing (./dev deps installs it)" >&2; exit 1; }
done

mkdir -p "$build"
echo "costs: building tabq_cost_drain (RelWithDebInfo) in $build"
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTABQ_BUILD_TESTS=OFF &&
       cmake --build "$build" -j"$(nproc)" --target tabq_cost_drain; } >"$build/build.log" 2>&1; then
  tail -40 "$build/build.log" >&2
  echo "costs: the build failed; the whole log is $build/build.log" >&2
  exit 1
fi

runs=$build/runs
rm -rf "$runs"
mkdir -p "$runs"
drain=$build/bin/tabq_cost_drain

# measure TOOL ROWS VALGRIND-OPTIONS...: one drain under valgrind (its own errors go to stderr).
# The drain forks its fill and its check, whose files name their own process ids: only the
# drain's own pid is counted.
measure() {
  local tool=$1 rows=$2 pid
  shift 2
  echo "costs: $tool, $rows rows"
  valgrind --tool="$tool" --log-file="$runs/$tool.$rows.%p.log" "$@" \
    "$drain" --rows "$rows" --form "$form" &
  pid=$!
  if ! wait "$pid"; then
    echo "costs: the drain failed under $tool; valgrind's log is $runs/$tool.$rows.$pid.log" >&2
    exit 1
  fi
  echo "$pid" >"$runs/$tool.$rows.pid"
}

for rows in "$rows_a" "$rows_b"; do
  # -v -v makes valgrind log where it mapped each object, which attributes DHAT's frames to
  # objects also where debug information names a source file instead.
  measure dhat "$rows" -v -v --num-callers=40 --fullpath-after="$root/" \
    --dhat-out-file="$runs/dhat.$rows.%p"
  measure callgrind "$rows" --dump-instr=no --callgrind-out-file="$runs/callgrind.$rows.%p"
done

mkdir -p "$(dirname "$json")"
python3 - "$runs" "$build/lib" "$rows_a" "$rows_b" "$form" "$json" <<'PY'
import json, os, re, sys

runs, libdir, rows_a, rows_b, form, json_path = sys.argv[1:]
rows = [int(rows_a), int(rows_b)]
span = rows[1] - rows[0]
plugin_dir = None
for entry in sorted(os.listdir(libdir)):
    if entry.startswith("tabq-") and os.path.isdir(os.path.join(libdir, entry)):
        plugin_dir = os.path.realpath(os.path.join(libdir, entry))


def run_file(tool, n, suffix=""):
    with open(os.path.join(runs, f"{tool}.{n}.pid")) as f:
        pid = f.read().strip()
    return os.path.join(runs, f"{tool}.{n}.{pid}{suffix}")


def kind(obj):
    """The object class of a loaded file: libtabq, plugin, sqlite, libc or other."""
    base = os.path.basename(obj)
    if base.startswith("libtabq.so"):
        return "libtabq"
    if plugin_dir and os.path.dirname(os.path.realpath(obj)) == plugin_dir:
        return "plugin"
    if base.startswith("libsqlite3.so"):
        return "sqlite"
    if re.match(r"(libc|libm|libpthread|libdl|librt|ld-linux[-\w]*)\.so", base):
        return "libc"
    return "other"


# ---- DHAT: heap blocks, each charged to the code that asked for it ------------------------------

def object_map(log):
    """(text start, object) for each object valgrind mapped, from its -v -v log."""
    starts, current = [], None
    with open(log) as f:
        for line in f:
            m = re.search(r"Reading syms from (\S+)", line)
            if m:
                current = m.group(1)
                continue
            m = re.search(r"svma 0x[0-9a-f]+, avma (0x[0-9a-f]+)", line)
            if m and current:
                starts.append((int(m.group(1), 16), current))
                current = None
    if not starts:
        sys.exit(f"costs: no object addresses in {log} (valgrind -v -v changed its log?)")
    return sorted(starts)


FRAME = re.compile(r"^(0x[0-9A-Fa-f]+): (.*?)(?: \((.*)\))?$")


def frame_kind(text, starts):
    """The object class a DHAT frame runs in; "alloc" for valgrind's allocator itself."""
    m = FRAME.match(text)
    if not m:
        return "other"
    where = m.group(3) or ""
    if where.startswith("in "):
        obj = where[3:]
    else:
        addr, obj = int(m.group(1), 16), None
        for start, name in starts:
            if start > addr:
                break
            obj = name
        if obj is None:
            return "other"
    if "vgpreload_" in os.path.basename(obj):
        return "alloc"
    return kind(obj)


def dhat(n):
    path = run_file("dhat", n)
    with open(path) as f:
        data = json.load(f)
    starts = object_map(run_file("dhat", n, ".log"))
    kinds = [frame_kind(t, starts) for t in data["ftbl"]]
    totals = {"tabq": [0, 0], "other": [0, 0], "beneath_tabq": [0, 0]}
    sites = {}
    for pp in data["pps"]:
        frames = [i for i in pp["fs"] if data["ftbl"][i] != "[root]"]
        # Past the allocator and the C library (strdup, pthread_create...) to the first caller.
        owner = next((kinds[i] for i in frames if kinds[i] not in ("alloc", "libc")), "libc")
        side = "tabq" if owner in ("libtabq", "plugin") else "other"
        counts = (pp["tbk"], pp["tb"])
        for key in [side] + (["beneath_tabq"]
                             if any(kinds[i] in ("libtabq", "plugin") for i in frames) else []):
            totals[key][0] += counts[0]
            totals[key][1] += counts[1]
        # The same site in both runs, whatever the addresses.
        stack = tuple(FRAME.sub(r"\2 (\3)", data["ftbl"][i]) for i in frames)
        site = sites.setdefault(stack, {"side": side, "blocks": 0})
        site["blocks"] += counts[0]
    return totals, sites


# ---- callgrind: instructions by the object they ran in ------------------------------------------

COST = re.compile(r"^[-+*0-9]")


def callgrind(n):
    """Instructions run in each object class (self cost), checked against callgrind's total."""
    path = run_file("callgrind", n)
    names, by_kind = {}, dict.fromkeys(("libtabq", "plugin", "sqlite", "libc", "other"), 0)
    npos, ir_at, obj, after_call, summary = 1, None, None, False, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                npos = len(line.split()[1:])
            elif line.startswith("events:"):
                ir_at = line.split()[1:].index("Ir")
            elif line.startswith(("summary:", "totals:")):
                summary = int(line.split()[1 + ir_at])
            elif line.startswith(("ob=", "cob=")):
                m = re.match(r"c?ob=(?:\((\d+)\))? ?(.*)$", line)
                ident, name = m.group(1), m.group(2)
                if ident and name:
                    names[ident] = name
                name = names[ident] if ident else name
                if line.startswith("ob="):
                    obj = name
            elif line.startswith("calls="):
                after_call = True  # the next cost line is the callee's inclusive cost
            elif COST.match(line):
                if after_call:
                    after_call = False
                    continue
                fields = line.split()[npos:]
                if ir_at < len(fields):
                    by_kind[kind(obj)] += int(fields[ir_at])
    counted = sum(by_kind.values())
    if summary is None or counted != summary:
        sys.exit(f"costs: {path}: self costs sum to {counted}, callgrind's total is {summary}")
    return by_kind


heap = [dhat(n) for n in rows]
instr = [callgrind(n) for n in rows]


def slope(a, b):
    return (b - a) / span


allocs = {k: slope(heap[0][0][k][0], heap[1][0][k][0]) for k in heap[0][0]}
nbytes = {k: slope(heap[0][0][k][1], heap[1][0][k][1]) for k in heap[0][0]}
per_msg = {k: slope(instr[0][k], instr[1][k]) for k in instr[0]}
per_msg["total"] = sum(per_msg.values())
growing = []
for stack in set(heap[0][1]) | set(heap[1][1]):
    a = heap[0][1].get(stack, {"blocks": 0, "side": None})
    b = heap[1][1].get(stack, {"blocks": 0, "side": None})
    if b["blocks"] != a["blocks"]:
        growing.append({"side": b["side"] or a["side"],
                        "allocs_per_msg": slope(a["blocks"], b["blocks"]),
                        "blocks": [a["blocks"], b["blocks"]], "stack": list(stack)})
growing.sort(key=lambda s: -abs(s["allocs_per_msg"]))

result = {
    "rows": rows,
    "form": form,
    "allocs_per_msg_tabq": round(allocs["tabq"], 4),
    "allocs_per_msg_other": round(allocs["other"], 4),
    "bytes_per_msg_tabq": round(nbytes["tabq"], 2),
    "bytes_per_msg_other": round(nbytes["other"], 2),
    "allocs_per_msg_beneath_tabq": round(allocs["beneath_tabq"], 4),
    "instr_per_msg": {k: round(v, 1) for k, v in per_msg.items()},
    "allocs": {str(n): {k: v[0] for k, v in heap[i][0].items()} for i, n in enumerate(rows)},
    "instr": {str(n): instr[i] for i, n in enumerate(rows)},
    "tabq_sites_growing": [s for s in growing if s["side"] == "tabq"][:20],
    "other_sites_growing": [s for s in growing if s["side"] == "other"][:20],
}
with open(json_path, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")

print(f"\ntabq costs per message: SQLite, {form} form, one worker, no-op handler that acks")
print(f"slopes between {rows[0]} and {rows[1]} rows (start-up and shutdown cancel)\n")
print(f"  heap allocations per message   blocks    bytes")
print(f"    tabq (libtabq, plugin)     {allocs['tabq']:8.3f} {nbytes['tabq']:8.1f}")
print(f"    the rest (sqlite3, libc)   {allocs['other']:8.3f} {nbytes['other']:8.1f}")
print(f"\n  instructions per message")
for k, label in (("libtabq", "libtabq"), ("plugin", "plugin (sqlite.so)"), ("sqlite", "libsqlite3"),
                 ("libc", "libc, ld.so"), ("other", "other"), ("total", "total")):
    share = 100 * per_msg[k] / per_msg["total"] if per_msg["total"] else 0
    print(f"    {label:<22} {per_msg[k]:10.0f}  {share:5.1f}%")
tabq_sites = result["tabq_sites_growing"]
if tabq_sites:
    print(f"\n  tabq's allocation sites that grow with the rows:")
    for s in tabq_sites[:5]:
        print(f"    {s['allocs_per_msg']:.4f} per message ({s['blocks'][0]} blocks at {rows[0]} rows,"
              f" {s['blocks'][1]} at {rows[1]})")
        for frame in s["stack"][:8]:
            print(f"        {frame}")
else:
    print(f"\n  each of tabq's allocation sites allocated as often at {rows[0]} rows as at {rows[1]}")
print(f"\ncosts: JSON in {json_path}; valgrind's files in {runs}")
PY
