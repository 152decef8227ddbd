#!/usr/bin/env python3
"""Failover to a streaming standby under a drain (docs/deployment.md, docs/reliability.md).

For each MODE (sync, async): a PostgreSQL primary and a standby made from it with pg_basebackup,
both on loopback in a folder of the test's own; the standby synchronous (the primary's
synchronous_standby_names names it, every commit waits for its flush) or asynchronous. Three
worker processes (fault_worker, one per form) drain a table each and a publisher writes more rows
into them, all through one multi-host URL:

    postgres://tabq@127.0.0.1:P1,127.0.0.1:P2/tabq_test?target_session_attrs=read-write

Mid-drain the primary is stopped the hard way (pg_ctl stop -m immediate: its processes quit at
once, as in a crash, and nothing more reaches the standby) and the standby is promoted. Then:

- every table drains on the new primary and every worker shuts down cleanly;
- sync: every row the publisher saw committed was handled (nothing acknowledged is lost), a row
  handled twice only ever one whose settlement failed in the fault (at most the workers' failed
  settlements), and never two handlers of a row at once;
- async: the same is reported, not required: what the last moment's commits on the old primary
  did (publishes lost, settlements undone and their rows handled again) is what docs/deployment.md
  says an asynchronous standby may take back;
- tabq's connections to the new primary stay within the pools, and none is left at the end.

usage: test_failover.py FAULT_WORKER SQL_RUN PUBLISHER [MODE...]"""
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "support"))
sys.path.insert(0, os.path.join(here, "..", "faults"))
from checks import Checks  # noqa: E402
import faults_db  # noqa: E402
from faults_db import MINE, POOL, scalar, sql  # noqa: E402

worker_bin, faults_db.SQL_RUN, publisher_bin = sys.argv[1:4]
MODES = sys.argv[4:] or ["sync", "async"]
ROWS = 5000
FORMS = ("rowlock", "lease", "advisory")
check = Checks()
bin_dir = os.path.dirname(sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1])
# PostgreSQL refuses to run as root: the servers run as the user ./dev's own server runs as.
db_user = "tabq-test" if os.getuid() == 0 else pwd.getpwuid(os.getuid()).pw_name


def as_db_user(*args, **kw):
    cmd = [os.path.join(bin_dir, args[0])] + list(args[1:])
    if os.getuid() == 0:
        cmd = ["runuser", "-u", db_user, "--"] + cmd
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pair:
    """A primary and its standby in a folder of their own."""

    def __init__(self, mode):
        self.dir = tempfile.mkdtemp(prefix="tabq-failover.")
        os.chmod(self.dir, 0o755)
        if os.getuid() == 0:
            shutil.chown(self.dir, db_user)
        self.primary, self.standby = f"{self.dir}/primary", f"{self.dir}/standby"
        self.p1, self.p2 = free_port(), free_port()
        as_db_user("initdb", "-D", self.primary, "-A", "trust", "-U", "tabq", "--no-sync",
                   "-E", "UTF8")
        self.start(self.primary, self.p1)
        as_db_user("createdb", "-h", "127.0.0.1", "-p", str(self.p1), "-U", "tabq", "tabq_test")
        # -R writes the standby's primary_conninfo; its application_name is what
        # synchronous_standby_names names.
        as_db_user("pg_basebackup", "-D", self.standby, "-c", "fast", "-X", "stream", "-R",
                   "--no-sync", "-d",
                   f"host=127.0.0.1 port={self.p1} user=tabq application_name=tabq_standby")
        self.start(self.standby, self.p2)
        self.url1 = f"postgres://tabq@127.0.0.1:{self.p1}/tabq_test"
        self.url2 = f"postgres://tabq@127.0.0.1:{self.p2}/tabq_test"
        if mode == "sync":  # set once the standby runs: every commit waits for it from here on
            sql(self.url1, "ALTER SYSTEM SET synchronous_standby_names = 'tabq_standby'")
            sql(self.url1, "SELECT pg_reload_conf()", 1)
        state = "sync" if mode == "sync" else "async"
        deadline = time.time() + 30
        while time.time() < deadline and not scalar(
                self.url1, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' "
                f"AND sync_state = '{state}'"):
            time.sleep(0.1)
        check(f"{mode}: the standby streams from the primary ({state})", scalar(
            self.url1, f"SELECT count(*) FROM pg_stat_replication WHERE sync_state = '{state}'"))

    def start(self, data, port):
        # fsync off: the standby's copy is what survives here, not the primary's disk;
        # synchronous_commit on: a synchronous standby's flush is waited for at each commit.
        as_db_user("pg_ctl", "-D", data, "-l", f"{data}.log", "-w", "-t", "60", "-o",
                   f"-c listen_addresses=127.0.0.1 -p {port} -k {self.dir} -c fsync=off "
                   "-c synchronous_commit=on -c max_connections=100", "start")

    def fail(self):
        as_db_user("pg_ctl", "-D", self.primary, "-m", "immediate", "stop")

    def promote(self):
        as_db_user("pg_ctl", "-D", self.standby, "-w", "-t", "60", "promote")

    def remove(self):
        for data in (self.primary, self.standby):
            subprocess.run(["runuser", "-u", db_user, "--"] * (os.getuid() == 0) +
                           [os.path.join(bin_dir, "pg_ctl"), "-D", data, "-m", "immediate",
                            "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def started(cmd, err_path):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(err_path, "w"), text=True)
    return p, p.stdout.readline().strip() == "ready"


def stopped(p):
    p.send_signal(signal.SIGTERM)
    try:
        status = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        status = "hung"
    return status, p.stdout.read().strip()


def handled(out):
    """Each row's handler spans [(start_us, end_us)] from a worker's log."""
    spans = {}
    for line in open(out):
        rid, start, end, _ = (int(x) for x in line.split())
        spans.setdefault(rid, []).append((start, end))
    return spans


def run(mode):
    pair = Pair(mode)
    work = pair.dir
    try:
        url = (f"postgres://tabq@127.0.0.1:{pair.p1},127.0.0.1:{pair.p2}/tabq_test"
               "?target_session_attrs=read-write&connect_timeout=2&application_name=tabq_faults")
        tables = {f: f"failover_{f}" for f in FORMS}
        for t in tables.values():
            sql(pair.url1, faults_db.DDL["postgres"].format(t=t))
            sql(pair.url1, faults_db.FILL["postgres"].format(t=t, n=ROWS))
        workers = {}
        for form, t in tables.items():
            out = f"{work}/{t}.log"
            p, ready = started([worker_bin, url, t, form, "4", out, "5"], f"{work}/{t}.err")
            check(f"{mode}: the {form} worker subscribed", ready, open(f"{work}/{t}.err").read())
            workers[form] = (p, out)
        pub, ready = started([publisher_bin, url] + list(tables.values()), f"{work}/pub.err")
        check(f"{mode}: the publisher connected", ready, open(f"{work}/pub.err").read())
        time.sleep(2)
        failed_at = time.time()
        pair.fail()
        time.sleep(1)  # the brokers meet a dead primary and a standby that refuses writes
        pair.promote()
        promoted_at = time.time()
        time.sleep(3)
        pub_status, pub_out = stopped(pub)
        published = json.loads(pub_out)["ok"] if pub_status == 0 else [0, 0, 0]
        check(f"{mode}: the publisher shut down cleanly", pub_status == 0,
              open(f"{work}/pub.err").read()[-2000:])
        most, left, deadline = 0, {}, time.time() + 90
        for form, t in tables.items():
            while time.time() < deadline and scalar(pair.url2, f"SELECT count(*) FROM {t}"):
                most = max(most, scalar(pair.url2, "SELECT count(*) " + MINE["postgres"]))
                time.sleep(0.2)
            left[form] = scalar(pair.url2, f"SELECT count(*) FROM {t}")
        resumed = []
        for i, (form, (p, out)) in enumerate(workers.items()):
            status, stats_line = stopped(p)
            errors = open(f"{work}/{tables[form]}.err").read()
            check(f"{mode} {form}: every row settled on the new primary", left[form] == 0,
                  f"{left[form]} left; {errors[-2000:]}")
            check(f"{mode} {form}: the worker shut down cleanly", status == 0,
                  f"status {status}; {errors[-2000:]}")
            stats = json.loads(stats_line) if status == 0 else {"failed": 0, "lease_lost": 0}
            spans = handled(out)
            after = [s for ss in spans.values() for s, _ in ss if s > promoted_at * 1e6]
            resumed.append((min(after) / 1e6 - promoted_at) if after else float("inf"))
            expected = ROWS + published[i]
            lost = max(0, expected - len(spans))
            twice = sum(1 for s in spans.values() if len(s) > 1)
            redo_bound = stats["failed"] + stats["lease_lost"]
            overlaps = sum(1 for s in spans.values() for a, b in zip(sorted(s), sorted(s)[1:])
                           if b[0] < a[1])
            line = (f"{mode} {form}: {len(spans)} rows handled of {expected} committed "
                    f"({published[i]} published during the run), {lost} lost, {twice} handled "
                    f"twice, {stats['failed']} settlements failed")
            if mode == "sync":
                check(f"{line}: nothing committed lost", lost == 0, f"{lost} rows never handled")
                check(f"{mode} {form}: a row handled twice only after its settlement failed",
                      twice <= redo_bound, f"{twice} twice, {redo_bound} failed or lost leases")
                check(f"{mode} {form}: no row handled twice at once", overlaps == 0,
                      f"{overlaps} overlaps")
            else:
                print(f"    {line}, {overlaps} handled twice at once (an asynchronous standby "
                      "may take back the last commits: reported, not required)")
        check(f"{mode}: the workers resumed on the new primary within 10 s of the promotion "
              f"(after {max(resumed):.1f} s)", max(resumed) < 10, resumed)
        check(f"{mode}: tabq's connections to the new primary within the pools ({most} seen, "
              f"{3 * POOL + 2} at most)", most <= 3 * POOL + 2, most)
        time.sleep(0.5)
        after = scalar(pair.url2, "SELECT count(*) " + MINE["postgres"])
        check(f"{mode}: no connection left once the workers are gone", after == 0, f"{after}")
        print(f"    {mode}: primary stopped {promoted_at - failed_at:.1f} s before the promotion")
    finally:
        pair.remove()


for m in MODES:
    run(m)
check.finish("failover")
