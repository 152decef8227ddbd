#!/usr/bin/env python3
"""Many processes on one table (docs/reliability.md): PROCS worker processes (fault_worker, four
workers each, handlers that return at once) drain ROWS rows of one table on PostgreSQL (lease
form) and on MariaDB (row lock form), all started before the rows are written, so they compete
from the first row.

Checks: every row handled, a second time only where its lease ran out first (the workers' lost
leases; the late ack is refused, so each row is still settled once); no process starved (each handled rows; the spread from
the fewest to the most is printed); the server's connections of tabq's never more than the pools
(PROCS x 6), sampled every 100 ms; none left after the processes shut down.

The PostgreSQL table gets what docs/table-description.md recommends for a queue table: a claim
index and autovacuum settings that keep the dead head short. Without them a drain of 200,000
rows by 32 processes fell to a tenth of the rate of 20,000 (every claim walked the dead rows the
deletes left, autovacuum waiting for a fifth of the table to change), and the slower claims made
claimed rows wait past their lease.

usage: test_many_processes.py FAULT_WORKER SQL_RUN [PROCS [ROWS [RUNS]]]
RUNS: DB[:FORM],... (default postgres:lease,mysql:rowlock)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults_db  # noqa: E402
from faults_db import DDL, FILL, MINE, POOL, scalar, sql, worker_url  # noqa: E402

worker_bin = sys.argv[1]
faults_db.SQL_RUN = sys.argv[2]
PROCS = int(sys.argv[3]) if len(sys.argv) > 3 else 32
ROWS = int(sys.argv[4]) if len(sys.argv) > 4 else 200000
RUNS = [(r.split(":") + [None])[:2] for r in
        (sys.argv[5] if len(sys.argv) > 5 else "postgres:lease,mysql:rowlock").split(",")]
# The drain's bound: 15 minutes, or 50 rows a second at the least for larger runs.
DRAIN_S = max(900, ROWS // 50)
TUNING = {
    "postgres": ["CREATE INDEX {t}_claim ON {t} (queue, retry_after, id)",
                 "ALTER TABLE {t} SET (autovacuum_vacuum_scale_factor = 0, "
                 "autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, "
                 "autovacuum_vacuum_insert_threshold = 5000, autovacuum_analyze_scale_factor = 0, "
                 "autovacuum_analyze_threshold = 5000, autovacuum_vacuum_cost_delay = 0, "
                 "fillfactor = 80)"],
    "mysql": [],  # the DDL's claim_order index
}
work = tempfile.mkdtemp(prefix="tabq-many.")
urls = database_urls(f"{work}/unused.db")
check = Checks()


def run(db, form):
    url = urls[db]
    table = f"many_{db[:2]}_{os.getpid()}"
    sql(url, f"DROP TABLE IF EXISTS {table}")
    sql(url, DDL[db].format(t=table))
    for statement in TUNING[db]:
        sql(url, statement.format(t=table))
    out = os.path.join(work, f"{table}.log")
    procs = []
    for i in range(PROCS):
        err = open(os.path.join(work, f"{table}.{i}.err"), "w")
        argv = [worker_bin, worker_url(db, url), table, form, "4", out, "0"]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True))
    ready = sum(p.stdout.readline().strip() == "ready" for p in procs)
    check(f"{db} {form}: {PROCS} processes subscribed", ready == PROCS, f"{ready} ready")
    most = [0]
    sampling = [True]

    def sample():
        while sampling[0]:
            try:
                most[0] = max(most[0], scalar(url, "SELECT count(*) " + MINE[db]))
            except (RuntimeError, IndexError, ValueError):
                pass
            time.sleep(0.1)
    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.time()
    # Written in chunks of 10,000 (MariaDB's sequence table, PostgreSQL's series), the drain
    # starting on the first.
    for done in range(0, ROWS, 10000):
        sql(url, FILL[db].format(t=table, n=min(10000, ROWS - done)))
    deadline = time.time() + DRAIN_S
    while time.time() < deadline and scalar(url, f"SELECT count(*) FROM {table}"):
        time.sleep(0.25)
    seconds = time.time() - started
    left = scalar(url, f"SELECT count(*) FROM {table}")
    sampling[0] = False
    sampler.join()
    statuses, lease_lost = [], 0
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            statuses.append(p.wait(timeout=60))
            lease_lost += json.loads(p.stdout.read().strip() or "{}").get("lease_lost", 0)
        except subprocess.TimeoutExpired:
            p.kill()
            statuses.append("hung")
    seen, per_process = {}, {}
    for line in open(out):
        rid, _, _, pid = (int(x) for x in line.split())
        seen[rid] = seen.get(rid, 0) + 1
        per_process[pid] = per_process.get(pid, 0) + 1
    first = min(seen) if seen else 0
    missing = ROWS - len(seen)
    twice = sum(1 for n in seen.values() if n > 1)
    check(f"{db} {form}: {ROWS} rows drained in {seconds:.0f} s ({ROWS / seconds:.0f} rows/s)",
          left == 0, f"{left} left")
    # A row is handled twice only where its lease ran out before its ack (the late ack fails
    # with a lost lease, so it is still settled once): under many processes on few cores a
    # claimed row may wait past fault_worker's 2 s lease for a thread to run it.
    check(f"{db} {form}: every row handled, a second time only after a lost lease ({twice} "
          f"twice, {lease_lost} leases lost)", missing == 0 and twice <= lease_lost,
          f"{missing} never, {twice} twice (ids from {first}), {lease_lost} leases lost")
    counts = sorted(per_process.values())
    check(f"{db} {form}: no process starved ({len(counts)} of {PROCS} handled rows, from "
          f"{counts[0] if counts else 0} to {counts[-1] if counts else 0} each)",
          len(counts) == PROCS, counts)
    check(f"{db} {form}: every process shut down cleanly", all(s == 0 for s in statuses),
          statuses)
    check(f"{db} {form}: tabq's connections at most the pools ({most[0]} seen, "
          f"{PROCS * POOL} at most)", most[0] <= PROCS * POOL, most[0])
    time.sleep(0.5)
    after = scalar(url, "SELECT count(*) " + MINE[db])
    check(f"{db} {form}: no connection left", after == 0, f"{after} left")
    sql(url, f"DROP TABLE IF EXISTS {table}")


for db, form in RUNS:
    run(db, form or {"postgres": "lease", "mysql": "rowlock"}[db])
check.finish("many processes")
