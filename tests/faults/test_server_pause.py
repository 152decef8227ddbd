#!/usr/bin/env python3
"""The server paused under a drain (docs/reliability.md, "Server faults"): on PostgreSQL and on
MariaDB, three worker processes (fault_worker, one per form) drain a table each while every
process of the server is stopped with SIGSTOP for PAUSE_S seconds, longer than the URL's
statement_timeout and its reply bound, PAUSES times, then let go with SIGCONT. A paused server's
kernel still acknowledges what is sent, so TCP keepalives see nothing wrong: only the drivers'
bound on waiting for a reply (statement_timeout=2 in the URL: 2 s on the server, 4 s for a
reply) ends a statement sent to it.

A probe process (pause_probe) publishes once before each pause, once during it and once after:
the publish during the pause must fail within the reply bound and some slack, the others must
succeed. Afterwards: every table empty, every row handled, none by two at once, every publish
that succeeded is in its table, tabq's connections never more than the pools (sampled outside
the pauses), none left once the processes are gone. It prints how long the paused publishes
took, how long each drain took to resume after SIGCONT, and how many publishes that failed
during a pause had in fact been written (the server ran them when it woke up, which is why a
failed publish may be retried into a duplicate).

usage: test_server_pause.py FAULT_WORKER PAUSE_PROBE SQL_RUN [PAUSES [PAUSE_S]]
The servers are ./dev test's: PostgreSQL's postmaster (its data folder read from the server)
and every process it started, MariaDB's one process (its pid file read from the server). A
detached watchdog sends SIGCONT on its own PAUSE_S + 10 s after each pause, so a test killed
midway does not leave the server stopped."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
import faults_db  # noqa: E402
from faults_db import MINE, POOL, scalar, sql, worker_url  # noqa: E402

worker_bin, probe_bin = sys.argv[1], sys.argv[2]
faults_db.SQL_RUN = sys.argv[3]
PAUSES = int(sys.argv[4]) if len(sys.argv) > 4 else 3
PAUSE_S = float(sys.argv[5]) if len(sys.argv) > 5 else 6.0
STATEMENT_TIMEOUT_S = 2
REPLY_BOUND_S = STATEMENT_TIMEOUT_S + 2  # the drivers' grace
SLACK_S = 1.5  # a loaded machine's scheduling, the pool's look at an idle connection
ROWS = 400 * PAUSES  # a drain that lasts past the last pause
HANDLER_MS = 50
PROBE_POOL = 2
FORMS = ("rowlock", "lease", "advisory")
work = tempfile.mkdtemp(prefix="tabq-pause.")
urls = database_urls(f"{work}/unused.db")
check = Checks()


def with_timeout(url):
    return url + ("&" if "?" in url else "?") + f"statement_timeout={STATEMENT_TIMEOUT_S}"


# ---- Pausing a server ------------------------------------------------------------------------

def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def stopped(pid):
    """Whether the process is stopped, or gone (a backend that ended as it was stopped)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] in "TZX"
    except OSError:
        return True


class Pauser:
    """Stops a server's processes and lets them go again: the main one first (the postmaster
    then starts no new backend), then what it started."""

    def __init__(self, db, url):
        if db == "postgres":
            data = sql(url, "SHOW data_directory", 1)[0][0]
            self.main = int(open(os.path.join(data, "postmaster.pid")).readline())
        else:
            self.main = int(open(sql(url, "SELECT @@pid_file", 1)[0][0]).read().split()[0])
        self.with_children = db == "postgres"
        self.pids, self.watchdog = [], None

    def pause(self):
        os.kill(self.main, signal.SIGSTOP)
        self.pids = [self.main] + (children(self.main) if self.with_children else [])
        for pid in self.pids[1:]:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        self.watchdog = subprocess.Popen(
            ["sh", "-c", f"sleep {PAUSE_S + 10}; kill -CONT {' '.join(map(str, self.pids))}"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 1  # a signal takes effect when the process next runs
        while time.monotonic() < deadline and not all(stopped(p) for p in self.pids):
            time.sleep(0.01)
        return sum(stopped(p) for p in self.pids), len(self.pids)

    def resume(self):
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if self.watchdog:
            self.watchdog.kill()
            self.watchdog.wait()
            self.watchdog = None


# ---- The probe -------------------------------------------------------------------------------

class Probe:
    def __init__(self, url, table):
        self.err = open(os.path.join(work, f"{table}.probe.err"), "w")
        self.p = subprocess.Popen([probe_bin, url, table], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.ready = self.p.stdout.readline().strip() == "ready"

    def publish(self, group):
        """(ok, milliseconds, message)"""
        self.p.stdin.write(group + "\n")
        self.p.stdin.flush()
        words = self.p.stdout.readline().strip().split(" ", 2)
        return words[0] == "ok", int(words[1]), words[2] if len(words) > 2 else ""

    def close(self):
        self.p.stdin.close()
        try:
            return self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return "hung"


# ---- One database ----------------------------------------------------------------------------

def run(db):
    url = urls[db]
    wurl = with_timeout(worker_url(db, url))
    tables = {f: f"pause_{db[:2]}_{f}_{os.getpid()}" for f in FORMS}
    probe_table = f"pause_{db[:2]}_probe_{os.getpid()}"
    for t in list(tables.values()) + [probe_table]:
        sql(url, f"DROP TABLE IF EXISTS {t}")
        sql(url, faults_db.DDL[db].format(t=t))
    for t in tables.values():
        sql(url, faults_db.FILL[db].format(t=t, n=ROWS))
    pauser = Pauser(db, url)
    workers = {}
    for form, t in tables.items():
        out = os.path.join(work, f"{t}.log")
        p = subprocess.Popen([worker_bin, wurl, t, form, "4", out, str(HANDLER_MS), str(POOL)],
                             stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, f"{t}.err"), "w"), text=True)
        ready = p.stdout.readline().strip()
        check(f"{db} {form}: the worker subscribed", ready == "ready",
              open(os.path.join(work, f"{t}.err")).read())
        workers[form] = (p, out)
    probe = Probe(wurl, probe_table)
    check(f"{db}: the probe connected", probe.ready)
    published, paused_tries, paused_ms, after_ms, resumes = [], [], [], [], []
    most = 0
    try:
        for i in range(PAUSES):
            time.sleep(1.0)
            ok, ms, msg = probe.publish(f"before-{i}")
            check(f"{db} pause {i + 1}: a publish before it succeeds", ok, msg)
            if ok:
                published.append(f"before-{i}")
            most = max(most, scalar(url, "SELECT count(*) " + MINE[db]))
            n_stopped, n = pauser.pause()
            paused_at = time.monotonic()
            check(f"{db} pause {i + 1}: every process of the server stopped ({n})",
                  n_stopped == n, f"{n_stopped} of {n}")
            time.sleep(0.3)
            ok, ms, msg = probe.publish(f"paused-{i}")
            paused_tries.append(f"paused-{i}")
            paused_ms.append(ms)
            check(f"{db} pause {i + 1}: a publish to the paused server fails within the reply "
                  f"bound ({ms} ms; {REPLY_BOUND_S} s, and {SLACK_S} s slack)",
                  not ok and ms <= (REPLY_BOUND_S + SLACK_S) * 1000 and
                  "no reply from the server within" in msg, f"ok={ok} {msg}")
            time.sleep(max(0.0, paused_at + PAUSE_S - time.monotonic()))
            pauser.resume()
            resumes.append(time.time())
            ok, ms, msg = probe.publish(f"after-{i}")
            after_ms.append(ms)
            check(f"{db} pause {i + 1}: a publish after it succeeds ({ms} ms)", ok, msg)
            if ok:
                published.append(f"after-{i}")
            # Sessions the clients gave up on end once the server reads their close.
            time.sleep(1.5)
            most = max(most, scalar(url, "SELECT count(*) " + MINE[db]))
    finally:
        pauser.resume()
    left = {}
    deadline = time.time() + 60
    for form, t in tables.items():
        while time.time() < deadline and scalar(url, f"SELECT count(*) FROM {t}"):
            time.sleep(0.2)
        left[form] = scalar(url, f"SELECT count(*) FROM {t}")
    most = max(most, scalar(url, "SELECT count(*) " + MINE[db]))
    resumed = []
    for form, (p, out) in workers.items():
        p.send_signal(signal.SIGTERM)
        try:
            status = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            status = "hung"
        stats = p.stdout.read().strip()
        errors = open(os.path.join(work, f"{tables[form]}.err")).read()
        check(f"{db} {form}: every row settled after {PAUSES} pauses of {PAUSE_S:.0f} s",
              left[form] == 0, f"{left[form]} rows left; {errors[-2000:]}")
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
        check(f"{db} {form}: every row handled ({twice} twice, after a pause)", not missing,
              f"{len(missing)} never handled, e.g. {missing[:10]}")
        check(f"{db} {form}: no row handled twice at once", overlaps == 0, f"{overlaps} overlaps")
        starts = sorted(s for ss in spans.values() for s, _ in ss)
        for at in resumes:  # the first handler call after each SIGCONT
            later = [s for s in starts if s >= at * 1e6]
            if later:
                resumed.append((later[0] - at * 1e6) / 1e6)
        print(f"    {db} {form}: {stats}")
    check(f"{db}: the probe shut down cleanly", probe.close() == 0, probe.err.name)
    rows = {r[0] for r in sql(url, f"SELECT queue FROM {probe_table}", 1)}
    lost = [g for g in published if g not in rows]
    check(f"{db}: every publish that succeeded is in its table ({len(published)})", not lost,
          f"missing: {lost}")
    written = sum(1 for g in paused_tries if g in rows)
    check(f"{db}: tabq's connections never exceeded the pools ({most} seen, "
          f"{3 * POOL + PROBE_POOL} at most)", most <= 3 * POOL + PROBE_POOL, most)
    time.sleep(0.5)
    after = scalar(url, "SELECT count(*) " + MINE[db])
    check(f"{db}: no connection left once the processes are gone", after == 0, f"{after} left")
    for t in list(tables.values()) + [probe_table]:
        sql(url, f"DROP TABLE IF EXISTS {t}")
    print(f"    {db}: {PAUSES} pauses of {PAUSE_S:.0f} s; a publish during one failed after "
          f"{min(paused_ms)} to {max(paused_ms)} ms (reply bound {REPLY_BOUND_S} s), "
          f"{written} of {len(paused_tries)} of them written all the same once the server woke; "
          f"a publish after one took {min(after_ms)} to {max(after_ms)} ms; the drains resumed "
          f"{min(resumed) * 1000:.0f} to {max(resumed) * 1000:.0f} ms after SIGCONT")


for db in ("postgres", "mysql"):
    run(db)
check.finish("server pause")
