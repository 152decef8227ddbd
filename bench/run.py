#!/usr/bin/env python3
"""Runs tabq's benchmark matrix in interleaved rounds and writes the results.

Every drain is one process that prints one JSON line: tabq's own benchmark programs
(tabq_bench for SQLite, tabq_bench_postgres, tabq_bench_mysql; sides tabq, own and best) and
the peers' scripts in bench/peers/. A round runs every scenario once, each scenario's sides back
to back in an order that turns from round to round, so every side of a scenario meets the same
server state; the first round is a warm-up and is not counted. The medians of the counted rounds
go to results.json beside every single run, a chart.svg, and a Markdown table on stdout.

Called by `./dev bench [quick]`, which builds the programs, starts durable servers and passes
their URLs and process ids in the environment:
  TABQ_BENCH_POSTGRES_URL, TABQ_BENCH_POSTGRES_PID, TABQ_BENCH_MYSQL_URL, TABQ_BENCH_MYSQL_PID,
  TABQ_BENCH_BIN (the programs' folder), TABQ_BENCH_PEERS (where bench/peers/install.sh put the
  peers' modules; without it the peers are left out).
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- The matrix --------------------------------------------------------------------------------

# The peers beside tabq's batches of 50 on PostgreSQL (bench/peers/README.md): graphile-worker
# with a local queue as large as the batch and with its performance page's 500, pg-boss fetching
# batches back to back. pg-boss's defaults are left out everywhere: at batch 1 its workers wait
# out a 2 s poll after every fetch (2 jobs/s at 4 workers), and burst mode needs a batch.
BATCHED_PEERS = ["graphile-worker:batched", "graphile-worker:local-queue-500", "pg-boss:burst"]


# A scenario: database, form, workers, batch, rows, and the sides that run it. A side is
# "tabq", "own", "best" or a peer as "peer:config". The table is plain (acks delete) unless a
# scenario names a processed_at one (--table of tabq's programs).
def scenarios(quick, base_rows=None):
    s = []

    def add(db, form, workers, batch, rows, sides, tag="", table="plain", autovacuum=False):
        s.append({"db": db, "form": form, "workers": workers, "batch": batch, "rows": rows,
                  "sides": sides, "tag": tag, "table": table, "autovacuum": autovacuum})

    rows = base_rows or 20000
    backlog = rows * 10
    if quick:
        rows = base_rows or 10000
        add("postgres", "rowlock", 4, 1, rows, ["tabq", "best"])
        add("postgres", "lease", 4, 1, rows,
            ["tabq", "tabq-no-lookahead", "tabq-coalesced", "tabq-prefetch", "tabq-unnamed",
             "best", "graphile-worker:defaults"])
        add("postgres", "lease", 4, 50, rows, ["tabq", "best"] + BATCHED_PEERS)
        add("mysql", "rowlock", 4, 1, rows, ["tabq", "best"])
        add("mysql", "lease", 4, 1, rows, ["tabq", "tabq-no-lookahead", "tabq-coalesced", "best"])
        add("sqlite", "lease", 1, 1, rows, ["tabq", "tabq-no-lookahead", "best", "tabq-prefetch",
                                            "plainjob:defaults"])
        add("sqlite", "lease", 4, 1, rows, ["tabq", "tabq-acks-alone", "best"])
        return s

    # Single deliveries: tabq and the best SQL at 1, 4 and 16 workers; the dialect's own
    # statements and the unbatched peer at 4. A durable server flushes every commit, so one
    # worker drains some 300-600 rows/s whatever runs the claims: its drains take a quarter of
    # the rows (the rate is the same), and the whole run stays near half an hour.
    for w in (1, 4, 16):
        n = rows // 4 if w == 1 else rows
        at4 = ["own"] if w == 4 else []
        # coalesce_acks (no window) beside tabq where several workers ack at once
        shared = ["tabq-coalesced"] if w > 1 else []
        add("postgres", "rowlock", w, 1, n, ["tabq", "best"] + at4)
        # prefetch (32 rows ahead) beside the unbatched peer
        ahead = ["tabq-prefetch", "tabq-no-lookahead"] if w == 4 else []
        # the statements a transaction pooler allows (unnamed, parsed each time) beside them
        unnamed = ["tabq-unnamed"] if w == 4 else []
        add("postgres", "lease", w, 1, n, ["tabq", "best"] + at4 + shared + ahead + unnamed +
            (["graphile-worker:defaults"] if w == 4 else []))
        add("mysql", "rowlock", w, 1, n, ["tabq", "best"] + at4)
        add("mysql", "lease", w, 1, n, ["tabq", "best"] + at4 + shared + ahead)
    for w in (4, 16):
        add("postgres", "advisory", w, 1, rows, ["tabq", "best"])
    add("mysql", "advisory", 4, 1, rows, ["tabq", "best"])
    for form in ("rowlock", "lease"):
        add("postgres", form, 4, 50, rows, ["tabq", "best"] +
            (BATCHED_PEERS if form == "lease" else []))
        add("mysql", form, 4, 50, rows, ["tabq", "best"])
    add("sqlite", "lease", 1, 1, rows, ["tabq", "own", "best", "tabq-prefetch",
                                        "tabq-no-lookahead", "plainjob:defaults"])
    add("sqlite", "lease", 4, 1, rows, ["tabq", "tabq-coalesced", "best", "tabq-prefetch",
                                        "tabq-no-lookahead", "tabq-acks-alone",
                                        "plainjob:defaults"])
    add("sqlite", "lease", 1, 50, rows, ["tabq", "best"])
    # A backlog: ten times the rows, drained once (in the first counted round) at the settings
    # of a scenario above, against which it is compared.
    # PostgreSQL's with the per-table autovacuum settings docs/table-description.md recommends,
    # against the same 20k drain (autovacuum off): what a service that follows the docs sees
    # (autovacuum off as well, it drained at 0.46: docs/benchmarks.md).
    add("postgres", "lease", 4, 1, backlog, ["tabq"], "backlog", autovacuum=True)
    add("mysql", "lease", 4, 1, backlog, ["tabq"], "backlog")
    add("sqlite", "lease", 1, 1, backlog, ["tabq"], "backlog")
    # Finished rows kept (processed_at), drained once: with the index docs/table-description.md
    # recommends, and with the plain claim index, at whose head they pile up.
    # The recommended index on PostgreSQL comes with the recommended autovacuum settings.
    for table, sides in (("processed", ["tabq", "best"]), ("processed-naive", ["tabq"])):
        add("mysql", "lease", 4, 1, rows, sides, table=table)
        add("postgres", "lease", 4, 1, rows, sides, table=table,
            autovacuum=table == "processed")
        add("sqlite", "lease", 1, 1, rows, sides, table=table)
    return s


# Publishing in bulk: tabq_publish_many in calls of 1,000 rows beside one tabq_publish a row, per
# database; the peers' bulk inserts are timed by their own drains (insert_rows_per_s).
PUBLISH_ROWS = 20000


def publish_commands(env):
    sqlite_url = "sqlite:%s?synchronous=normal" % os.path.join(
        tempfile.gettempdir(), "tabq-bench-publish-%d.db" % os.getpid())
    urls = {"sqlite": sqlite_url, "postgres": env.get("TABQ_BENCH_POSTGRES_URL"),
            "mysql": env.get("TABQ_BENCH_MYSQL_URL")}
    prog = os.path.join(env["TABQ_BENCH_BIN"], "tabq_bench_publish")
    for db, url in urls.items():
        for side in ("many", "single"):
            if url:
                yield db, side, [prog, "--url", url, "--rows", str(PUBLISH_ROWS), "--chunk",
                                 "1000", "--side", side]


def run_publish(env, timeout):
    out = []
    for db, side, cmd in publish_commands(env):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            rec = json.loads(lines[-1]) if p.returncode == 0 and lines else {
                "error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
        except subprocess.TimeoutExpired:
            rec = {"error": "no result within %d s" % timeout}
        rec.update({"db": db, "publish": side})
        out.append(rec)
        print("bench: publish %-8s %-6s %s" % (db, side, "%.0f rows/s" % rec["insert_rows_per_s"]
                                               if "insert_rows_per_s" in rec else rec["error"]),
              file=sys.stderr, flush=True)
    for name in os.listdir(tempfile.gettempdir()):
        if name.startswith("tabq-bench-publish-%d.db" % os.getpid()):
            os.unlink(os.path.join(tempfile.gettempdir(), name))
    return out


def peer_inserts(runs):
    """The peers' bulk inserts, median rows/s over their counted drains."""
    by = {}
    for r in runs:
        if r["round"] > 0 and r.get("insert_rows_per_s") and ":" in r["side_key"]:
            by.setdefault(r["side_key"].split(":")[0], []).append(r["insert_rows_per_s"])
    return {k: round(statistics.median(v)) for k, v in by.items()}


def peer_versions(runs):
    """Each peer library's version, as its drains reported it."""
    return {r["side_key"].split(":")[0]: r["version"] for r in runs
            if ":" in r["side_key"] and r.get("version")}


def key(sc):
    table = sc.get("table", "plain")
    return "%s %s w%d b%d %dk%s%s" % (sc["db"], sc["form"], sc["workers"], sc["batch"],
                                      sc["rows"] // 1000, "" if table == "plain" else " " + table,
                                      " autovacuum" if sc.get("autovacuum") else "")


# ---- Running one drain -------------------------------------------------------------------------

PROGRAMS = {"sqlite": "tabq_bench", "postgres": "tabq_bench_postgres",
            "mysql": "tabq_bench_mysql"}
PEER_SCRIPTS = {"graphile-worker": "graphile-worker.js", "pg-boss": "pg-boss.js",
                "plainjob": "plainjob.js"}


# The tabq-prefetch side's subscription option prefetch (docs/prefetch.md).
PREFETCH = 32


def command(sc, side, env):
    """The command line of one drain, or None with the reason it cannot run."""
    if ":" not in side:
        prog = os.path.join(env["TABQ_BENCH_BIN"], PROGRAMS[sc["db"]])
        if not os.path.exists(prog):
            return None, "%s was not built" % PROGRAMS[sc["db"]]
        # tabq with coalesce_acks (no window), or with 32 rows prefetched
        options = {"tabq-coalesced": ["--coalesce-us", "0"],
                   "tabq-prefetch": ["--prefetch", str(PREFETCH)],
                   "tabq-no-lookahead": ["--no-lookahead"],
                   "tabq-acks-alone": ["--acks-alone"],
                   "tabq-unnamed": ["--url-query", "pooler=transaction"]}
        cmd = [prog, "--side", "tabq" if side in options else side, "--form", sc["form"],
               "--workers", str(sc["workers"]), "--batch", str(sc["batch"]),
               "--rows", str(sc["rows"])] + options.get(side, [])
        if sc.get("table", "plain") != "plain":
            cmd += ["--table", sc["table"]]
        if sc.get("autovacuum"):
            cmd += ["--autovacuum"]
        return cmd, None
    peer, config = side.split(":")
    modules = env.get("TABQ_BENCH_PEERS")
    if not modules:
        return None, "the peers are not installed (node and npm are needed)"
    script = os.path.join(HERE, "peers", PEER_SCRIPTS[peer])
    if not os.path.exists(script):
        return None, "no script %s" % script
    cmd = ["node", script, "--modules", modules, "--workers", str(sc["workers"]),
           "--batch", str(sc["batch"]), "--rows", str(sc["rows"]), "--config", config]
    if sc["db"] == "sqlite":
        cmd += ["--path", os.path.join(tempfile.gettempdir(),
                                       "tabq-bench-peer-%d.db" % os.getpid())]
    else:
        cmd += ["--url", env["TABQ_BENCH_POSTGRES_URL"]]
    return cmd, None


def run_one(sc, side, env, timeout):
    cmd, why = command(sc, side, env)
    if cmd and sc.get("rows_override"):
        cmd[cmd.index("--rows") + 1] = str(sc["rows_override"])
    if not cmd:
        return None, why
    child_env = dict(os.environ)
    pid = {"postgres": env.get("TABQ_BENCH_POSTGRES_PID"),
           "mysql": env.get("TABQ_BENCH_MYSQL_PID")}.get(sc["db"])
    child_env["TABQ_BENCH_SERVER_PID"] = pid or ""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env)
    except subprocess.TimeoutExpired:
        return None, "no result within %d s" % timeout
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return None, err[:300]
    return json.loads(lines[-1]), None


# ---- Medians and ratios ------------------------------------------------------------------------

def summarise(plan, runs):
    out = []
    for sc in plan:
        k = key(sc)
        row = {"scenario": k, **{f: sc[f] for f in ("db", "form", "workers", "batch", "rows",
                                                      "tag", "table", "autovacuum")},
               "sides": {}}
        for side in sc["sides"]:
            rs = [r for r in runs if r["scenario"] == k and r["side_key"] == side
                  and r["round"] > 0 and r.get("msgs_per_s")]
            fails = [r for r in runs if r["scenario"] == k and r["side_key"] == side
                     and r.get("error")]
            if not rs:
                row["sides"][side] = {"error": fails[-1]["error"] if fails else "not run"}
                continue

            def med(field):
                vals = [r[field] for r in rs if r.get(field) is not None]
                return round(statistics.median(vals), 2) if vals else None

            row["sides"][side] = {"msgs_per_s": med("msgs_per_s"), "rounds": len(rs),
                                  "client_cpu_us_per_row": med("client_cpu_us_per_row"),
                                  "server_cpu_us_per_row": med("server_cpu_us_per_row")}
        t = row["sides"].get("tabq", {}).get("msgs_per_s")
        row["ratios"] = {}
        for side, v in row["sides"].items():
            if not side.startswith("tabq") and t and v.get("msgs_per_s"):
                row["ratios"]["tabq/" + side] = round(t / v["msgs_per_s"], 2)
        for variant in ("coalesced", "prefetch", "unnamed", "no-lookahead", "acks-alone"):
            c = row["sides"].get("tabq-" + variant, {}).get("msgs_per_s")
            if c and t:
                row["ratios"][variant + "/tabq"] = round(c / t, 2)
        # prefetch against the unbatched peers (the targets count tabq's defaults)
        p = row["sides"].get("tabq-prefetch", {}).get("msgs_per_s")
        for side, v in row["sides"].items():
            if ":" in side and p and v.get("msgs_per_s"):
                row["ratios"]["prefetch/" + side] = round(p / v["msgs_per_s"], 2)
        out.append(row)
    # A table that keeps its rows against the plain one at the same settings.
    for row in out:
        base = next((r for r in out if r["tag"] == "" and r["table"] == "plain"
                     and not r["autovacuum"]
                     and row["table"] != "plain" and r["db"] == row["db"]
                     and r["form"] == row["form"] and r["workers"] == row["workers"]
                     and r["batch"] == row["batch"] and r["rows"] == row["rows"]), None)
        for side, v in row["sides"].items():
            b = base["sides"].get(side, {}).get("msgs_per_s") if base else None
            if b and v.get("msgs_per_s"):
                row["ratios"]["%s %s/plain" % (side, row["table"])] = round(v["msgs_per_s"] / b, 2)
    # The backlog: a 200k drain against the 20k drain of the same settings.
    for row in out:
        if row["tag"] != "backlog":
            continue
        base = next((r for r in out if r["tag"] == "" and r["table"] == "plain"
                     and not r["autovacuum"] and r["db"] == row["db"]
                     and r["form"] == row["form"] and r["workers"] == row["workers"]
                     and r["batch"] == row["batch"]), None)
        if not base:
            continue
        for side, v in row["sides"].items():
            b = base["sides"].get(side, {}).get("msgs_per_s")
            if b and v.get("msgs_per_s"):
                row["ratios"]["backlog %s 200k/20k" % side] = round(v["msgs_per_s"] / b, 2)
    return out


def targets(summary):
    """The issue's targets, each with the figure that meets or misses it."""
    lines = []

    def check(name, value, floor):
        if value is None:
            lines.append({"target": name, "value": None, "floor": floor, "met": None})
        else:
            lines.append({"target": name, "value": value, "floor": floor, "met": value >= floor})

    for row in summary:
        r = row["ratios"]
        label = row["scenario"]
        if row["tag"] == "backlog":
            check("%s: tabq 200k/20k" % label, r.get("backlog tabq 200k/20k"), 0.9)
            continue
        if row["table"] != "plain":
            if row["table"] == "processed":  # the recommended index keeps the drain flat
                check("%s: tabq processed/plain" % label, r.get("tabq processed/plain"), 0.9)
            continue
        if row["batch"] == 1:
            check("%s: tabq/best" % label, r.get("tabq/best"), 1.0)
            # tabq's defaults past the one-row loop where a claim may look ahead
            if row["db"] == "postgres" and row["form"] == "lease" and row["workers"] == 4:
                check("%s: tabq/best (look-ahead)" % label, r.get("tabq/best"), 1.5)
            if "tabq/graphile-worker:defaults" in r:
                check("%s: tabq/graphile defaults" % label, r["tabq/graphile-worker:defaults"], 2.5)
            if "tabq/plainjob:defaults" in r:
                check("%s: tabq/plainjob" % label, r["tabq/plainjob:defaults"], 2.5)
            # the same targets met with an option, beside the defaults' figures above
            if "prefetch/graphile-worker:defaults" in r:
                check("%s: tabq prefetch/graphile defaults" % label,
                      r["prefetch/graphile-worker:defaults"], 2.5)
            if "prefetch/plainjob:defaults" in r:
                check("%s: tabq prefetch/plainjob" % label, r["prefetch/plainjob:defaults"], 2.5)
        else:
            # graphile-worker claiming as many jobs at once as tabq, and at its fastest
            # documented settings
            if "tabq/graphile-worker:batched" in r:
                check("%s: tabq/graphile batched" % label, r["tabq/graphile-worker:batched"], 2.0)
            if "tabq/graphile-worker:local-queue-500" in r:
                check("%s: tabq/graphile local-queue-500" % label,
                      r["tabq/graphile-worker:local-queue-500"], 2.0)
            if "tabq/pg-boss:burst" in r:
                check("%s: tabq/pg-boss burst" % label, r["tabq/pg-boss:burst"], 3.0)
    return lines


# ---- The chart ---------------------------------------------------------------------------------

COLOURS = {"tabq": "#1f6feb", "tabq-coalesced": "#0a3069", "tabq-prefetch": "#54aeff",
           "tabq-unnamed": "#8250df", "tabq-no-lookahead": "#afb8c1",
           "tabq-acks-alone": "#d0d7de",
           "own": "#8fb8f5", "best": "#2da44e",
           "graphile-worker:defaults": "#bf8700", "graphile-worker:batched": "#e3b341",
           "graphile-worker:local-queue-500": "#9a6700", "pg-boss:burst": "#f47067",
           "plainjob:defaults": "#8250df"}


def chart(summary, path, title):
    """Horizontal bars, one group per scenario, one bar per side, each scaled to its group's
    largest so small and large rates both read; the figure is printed at the bar's end."""
    bar, gap, left, width = 14, 12, 250, 560
    rows = []
    for row in summary:
        sides = [(s, v["msgs_per_s"]) for s, v in row["sides"].items() if v.get("msgs_per_s")]
        if sides:
            rows.append((row["scenario"], sides))
    height = 60 + sum(len(s) * bar + gap for _, s in rows) + 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (left + width + 120, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % title,
           '<text x="10" y="38" fill="#555">messages per second, median of the counted rounds; '
           'bars scaled within each scenario</text>']
    y = 55
    for name, sides in rows:
        top = max(v for _, v in sides)
        out.append('<text x="10" y="%d" font-weight="bold">%s</text>' % (y + 11, name))
        for side, v in sides:
            w = max(1, int(width * v / top))
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                       % (left, y, w, bar - 2, COLOURS.get(side, "#999")))
            out.append('<text x="%d" y="%d">%s %s</text>' % (left + w + 4, y + 10,
                                                             format(int(v), ","), side))
            y += bar
        y += gap
    out.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---- The Markdown table ------------------------------------------------------------------------

def markdown(summary):
    lines = ["| scenario | tabq | own | best | peers | tabq/best | server CPU µs/job tabq / best |",
             "|---|---|---|---|---|---|---|"]

    def rate(v):
        return format(int(v["msgs_per_s"]), ",") if v and v.get("msgs_per_s") else "–"

    for row in summary:
        s = row["sides"]
        peers = ", ".join("%s %s" % (k, rate(v)) for k, v in s.items()
                          if ":" in k or k.startswith("tabq-"))
        cpu = [s.get(x, {}).get("server_cpu_us_per_row") for x in ("tabq", "best")]
        cpu_text = " / ".join("%.0f" % c if c else "–" for c in cpu)
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            row["scenario"] + (" (backlog)" if row["tag"] else ""), rate(s.get("tabq")),
            rate(s.get("own")), rate(s.get("best")), peers or "–",
            row["ratios"].get("tabq/best", "–"), cpu_text))
    return "\n".join(lines)


# ---- Main --------------------------------------------------------------------------------------

def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    mem = 0
    with open("/proc/meminfo") as f:
        mem = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1)) // 1024
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_mb": mem,
            "kernel": platform.release(), "python": platform.python_version()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="full", choices=["full", "quick"])
    ap.add_argument("--rounds", type=int, default=None,
                    help="counted rounds (default 2, quick 1), after one warm-up round of a "
                         "tenth of the rows")
    ap.add_argument("--only", default=None, help="a regular expression on the scenario names")
    ap.add_argument("--out", required=True, help="folder for results.json and chart.svg")
    ap.add_argument("--rows", type=int, default=None,
                    help="rows per drain (default 20000, quick 10000; a backlog ten times more)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds one drain may take")
    args = ap.parse_args()
    quick = args.mode == "quick"
    rounds = args.rounds if args.rounds is not None else (1 if quick else 2)
    env = dict(os.environ)
    plan = [sc for sc in scenarios(quick, args.rows) if not args.only or re.search(args.only, key(sc))]
    os.makedirs(args.out, exist_ok=True)

    started = time.time()
    runs = []
    print("bench: %d scenarios, %d counted rounds after one warm-up" % (len(plan), rounds),
          file=sys.stderr)
    for rnd in range(rounds + 1):
        for i, sc in enumerate(plan):
            if (sc["tag"] == "backlog" or sc["table"] != "plain") and rnd != 1:
                continue  # drained once
            # The warm-up round drains a tenth of the rows: it only wakes caches and servers.
            sc = dict(sc, rows_override=max(sc["rows"] // 10, 1000) if rnd == 0 else None)
            sides = sc["sides"]
            turn = (rnd + i) % len(sides)  # each side leads in turn
            for side in sides[turn:] + sides[:turn]:
                result, err = run_one(sc, side, env, args.timeout)
                rec = {"round": rnd, "scenario": key(sc), "side_key": side}
                if result:
                    rec.update(result)
                    msg = "%8.0f msg/s" % result["msgs_per_s"]
                else:
                    rec["error"] = err
                    msg = "not run: %s" % err
                runs.append(rec)
                print("bench: round %d %-34s %-26s %s" % (rnd, key(sc), side, msg),
                      file=sys.stderr, flush=True)

    publish = run_publish(env, args.timeout) if not args.only else []
    summary = summarise(plan, runs)
    doc = {"mode": args.mode, "rounds": rounds, "seconds": round(time.time() - started),
           "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "settings": {"postgres": "fsync=on, synchronous_commit=on",
                        "mysql": "innodb_flush_log_at_trx_commit=1, binary log on, sync_binlog=0",
                        "sqlite": "WAL, synchronous=NORMAL"},
           "summary": summary, "targets": targets(summary), "runs": runs,
           "publish": publish, "peer_inserts": peer_inserts(runs),
           "peer_versions": peer_versions(runs)}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    chart(summary, os.path.join(args.out, "chart.svg"),
          "tabq beside the best hand-written SQL and the peers (%s)" % doc["date"])
    print(markdown(summary))
    print()
    for p in publish:
        if "insert_rows_per_s" in p:
            print("publish %-8s %-6s %10.0f rows/s" % (p["db"], p["publish"],
                                                      p["insert_rows_per_s"]))
    for peer, rate in doc["peer_inserts"].items():
        print("publish %-17s %8d rows/s (its bulk insert)" % (peer, rate))
    if doc["peer_versions"]:
        print("peers: " + ", ".join("%s %s" % kv for kv in sorted(doc["peer_versions"].items())))
    print()
    for t in doc["targets"]:
        state = "no figure" if t["met"] is None else ("met" if t["met"] else "MISSED")
        print("target %-52s >= %-4s %-6s %s" % (t["target"], t["floor"],
                                               t["value"] if t["value"] is not None else "–",
                                               state))
    print("\nbench: %d s; results in %s" % (doc["seconds"], args.out))


if __name__ == "__main__":
    main()
