#!/usr/bin/env python3
"""Heap allocations per message of tabq against the raw loops (./dev costs --loops; README.md
beside this file, "Against the raw loops").

Runs each bench program (tabq_bench for SQLite, tabq_bench_postgres, tabq_bench_mysql) under
valgrind's DHAT at two lengths, one worker, for each form it drains, once as tabq (--side tabq)
and once as the best loop written by hand for the same guarantee (--side best), and prints the
slope of the whole process's allocated blocks: (blocks at B - blocks at A) / (B - A). The whole
process, the database's client library included, since a raw loop's allocations are all its
client library's: what is compared is what each way of draining asks of the heap per message.

usage: against_loops.py BIN_DIR ROWS_A ROWS_B OUT_DIR [--json FILE]
The servers are those of TABQ_BENCH_POSTGRES_URL and TABQ_BENCH_MYSQL_URL."""
import json
import os
import re
import subprocess
import sys

bin_dir, rows_a, rows_b, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
json_path = sys.argv[6] if len(sys.argv) > 6 and sys.argv[5] == "--json" else None
CASES = [("sqlite", "tabq_bench", "lease"),
         ("postgres", "tabq_bench_postgres", "rowlock"),
         ("postgres", "tabq_bench_postgres", "lease"),
         ("postgres", "tabq_bench_postgres", "advisory"),
         ("mysql", "tabq_bench_mysql", "rowlock"),
         ("mysql", "tabq_bench_mysql", "lease"),
         ("mysql", "tabq_bench_mysql", "advisory")]
TOTAL = re.compile(r"Total:\s+([\d,]+) bytes in ([\d,]+) blocks")


def blocks(program, side, form, rows):
    """The blocks DHAT counted over one drain of `rows` rows."""
    tag = f"{program}.{form}.{side}.{rows}"
    log = os.path.join(out_dir, tag + ".log")
    argv = ["valgrind", "--tool=dhat", f"--log-file={log}",
            f"--dhat-out-file={os.path.join(out_dir, tag + '.dhat')}",
            os.path.join(bin_dir, program), "--side", side, "--form", form, "--workers", "1",
            "--rows", str(rows)]
    run = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"costs: {program} --side {side} --form {form} --rows {rows} failed under "
                 f"valgrind ({run.stderr.strip()[-500:]}); its log is {log}")
    m = TOTAL.search(open(log).read())
    if not m:
        sys.exit(f"costs: no total in {log}")
    return int(m.group(2).replace(",", ""))


results = []
print(f"costs: heap blocks per message, {rows_a} -> {rows_b} rows, one worker")
print(f"    {'database':10} {'form':9} {'tabq':>8} {'raw loop':>9} {'tabq / loop':>12}")
for db, program, form in CASES:
    slope = {}
    for side in ("tabq", "best"):
        a = blocks(program, side, form, rows_a)
        b = blocks(program, side, form, rows_b)
        slope[side] = (b - a) / (rows_b - rows_a)
    ratio = slope["tabq"] / slope["best"] if slope["best"] else float("nan")
    results.append({"db": db, "form": form, "tabq_blocks_per_msg": round(slope["tabq"], 3),
                    "best_blocks_per_msg": round(slope["best"], 3), "ratio": round(ratio, 3)})
    print(f"    {db:10} {form:9} {slope['tabq']:8.2f} {slope['best']:9.2f} {ratio:12.2f}",
          flush=True)
if json_path:
    with open(json_path, "w") as f:
        json.dump({"rows": [rows_a, rows_b], "cases": results}, f, indent=2)
