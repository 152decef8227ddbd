#!/usr/bin/env python3
"""Server faults under a drain (docs/reliability.md): on PostgreSQL and on MariaDB, three worker
processes (fault_worker, one per form: row lock, lease, advisory lock), each draining a table of
its own with four workers, while the server is restarted RESTARTS times in a row and then every
connection of tabq's is ended from the server's side (pg_terminate_backend, KILL) KILLS times.

Afterwards: every table is empty, every row was handled (at least once; the repeats are
counted, never two at once; MariaDB flushes each commit for the test, as a service's server
does, where ./dev test's flushes once a second), each worker shuts down cleanly on SIGTERM, the server's connections
of tabq's never exceeded the workers' pools, and none is left once the workers are gone.

usage: test_server_faults.py FAULT_WORKER SQL_RUN [RESTARTS [KILLS]]
The servers are ./dev test's: PostgreSQL is restarted with its own pg_ctl (the data folder read
from the server), MariaDB shut down with SHUTDOWN and started again with the command line it ran
with (read from /proc) after a SIGKILL: a crash, which InnoDB recovers from at start.""" 
import glob
import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
import faults_db  # noqa: E402
from faults_db import MINE, POOL, scalar, sql, wait_up, worker_url  # noqa: E402

worker_bin = sys.argv[1]
faults_db.SQL_RUN = sys.argv[2]
RESTARTS = int(sys.argv[3]) if len(sys.argv) > 3 else 20
KILLS = int(sys.argv[4]) if len(sys.argv) > 4 else 10
ROWS = 3000
FORMS = ("rowlock", "lease", "advisory")
work = tempfile.mkdtemp(prefix="tabq-faults.")
urls = database_urls(f"{work}/unused.db")
check = Checks()


# ---- Restarting each server ------------------------------------------------------------------

def pg_restarter(url):
    data = sql(url, "SHOW data_directory", 1)[0][0]
    owner = pwd.getpwuid(os.stat(data).st_uid).pw_name
    pg_ctl = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1]
    log = os.path.join(os.path.dirname(data), "server.log")  # where ./dev's server logs

    def restart():
        subprocess.run(["runuser", "-u", owner, "--", pg_ctl, "-D", data, "-l", log, "-w",
                        "-t", "60", "-m", "fast", "restart"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_up(url, "postgres")
    return restart


def alive(pid):
    """Whether the process runs; a zombie (a server this script started and has not reaped) does
    not."""
    try:
        return open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def maria_restarter(url):
    pid_file = sql(url, "SELECT @@pid_file", 1)[0][0]

    def restart():
        pid = int(open(pid_file).read().split()[0])
        argv = open(f"/proc/{pid}/cmdline", "rb").read().rstrip(b"\0").split(b"\0")
        # Durable across the crash (./dev test's server flushes its log once a second, and a
        # crash would take back the last second's commits, the rows written for the test too).
        argv = [b"--innodb-flush-log-at-trx-commit=1"
                if a.startswith(b"--innodb-flush-log-at-trx-commit") else a for a in argv]
        # Killed, not shut down: SHUTDOWN took from 2 to 20 s here, a crash and InnoDB's
        # recovery under a second, and a crash is the harsher fault.
        os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)
        subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        wait_up(url, "mysql")
    return restart


def end_connections(db, url):
    if db == "postgres":
        sql(url, "SELECT count(pg_terminate_backend(pid)) " + MINE[db], 1)
    else:
        for (cid,) in sql(url, "SELECT id " + MINE[db], 1):
            try:
                sql(url, f"KILL {cid}", tries=1)
            except RuntimeError:
                pass  # gone meanwhile


# ---- One database ----------------------------------------------------------------------------

def run(db):
    url = urls[db]
    if db == "mysql":  # flushed at each commit, as a service's server is (set back at the end)
        sql(url, "SET GLOBAL innodb_flush_log_at_trx_commit = 1")
    tables = {f: f"faults_{db[:2]}_{f}_{os.getpid()}" for f in FORMS}
    for form, t in tables.items():
        sql(url, f"DROP TABLE IF EXISTS {t}")
        sql(url, faults_db.DDL[db].format(t=t))
        sql(url, faults_db.FILL[db].format(t=t, n=ROWS))
    restart = pg_restarter(url) if db == "postgres" else maria_restarter(url)
    workers = {}
    for form, t in tables.items():
        out = os.path.join(work, f"{t}.log")
        p = subprocess.Popen([worker_bin, worker_url(db, url), t, form, "4", out],
                             stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, f"{t}.err"), "w"), text=True)
        ready = p.stdout.readline().strip()
        check(f"{db} {form}: the worker subscribed", ready == "ready",
              open(os.path.join(work, f"{t}.err")).read())
        workers[form] = (p, out)
    most = 0
    started = time.time()
    for i in range(RESTARTS):
        time.sleep(0.3)
        most = max(most, scalar(url, "SELECT count(*) " + MINE[db]))
        restart()
    restarts_s = time.time() - started
    for i in range(KILLS):
        time.sleep(0.3)
        most = max(most, scalar(url, "SELECT count(*) " + MINE[db]))
        end_connections(db, url)
    left = {}
    deadline = time.time() + 120
    for form, t in tables.items():
        while time.time() < deadline and scalar(url, f"SELECT count(*) FROM {t}"):
            time.sleep(0.2)
        left[form] = scalar(url, f"SELECT count(*) FROM {t}")
    for form, (p, out) in workers.items():
        p.send_signal(signal.SIGTERM)
        try:
            status = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            status = "hung"
        stats = p.stdout.read().strip()
        errors = open(os.path.join(work, f"{tables[form]}.err")).read()
        check(f"{db} {form}: every row settled after {RESTARTS} restarts and {KILLS} rounds of "
              f"ended connections", left[form] == 0, f"{left[form]} rows left; {errors[-2000:]}")
        check(f"{db} {form}: the worker shut down cleanly", status == 0,
              f"status {status}; {errors[-2000:]}")
        seen, spans = {}, {}
        for line in open(out):
            rid, start, end, _ = (int(x) for x in line.split())
            seen[rid] = seen.get(rid, 0) + 1
            spans.setdefault(rid, []).append((start, end))
        missing = [r for r in range(1, ROWS + 1) if r not in seen]
        twice = sum(1 for n in seen.values() if n > 1)
        overlaps = sum(1 for s in spans.values() for a, b in zip(sorted(s), sorted(s)[1:])
                       if b[0] < a[1])
        check(f"{db} {form}: every row handled ({twice} twice, after a fault)", not missing,
              f"{len(missing)} never handled, e.g. {missing[:10]}")
        check(f"{db} {form}: no row handled twice at once", overlaps == 0, f"{overlaps} overlaps")
        print(f"    {db} {form}: {stats}")
    check(f"{db}: tabq's connections never exceeded the pools ({most} seen, {3 * POOL} at most)",
          most <= 3 * POOL, most)
    time.sleep(0.5)
    after = scalar(url, "SELECT count(*) " + MINE[db])
    check(f"{db}: no connection left once the workers are gone", after == 0, f"{after} left")
    for t in tables.values():
        sql(url, f"DROP TABLE IF EXISTS {t}")
    if db == "mysql":
        sql(url, "SET GLOBAL innodb_flush_log_at_trx_commit = 0")
    print(f"    {db}: {RESTARTS} restarts in {restarts_s:.0f} s, {KILLS} rounds of ended "
          f"connections")


for db in ("postgres", "mysql"):
    run(db)
check.finish("server faults")
