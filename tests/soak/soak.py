#!/usr/bin/env python3
"""The soak (docs/reliability.md, "Soak"): MINUTES of publishing and draining on SQLite (a file),
PostgreSQL and MariaDB at once, every settlement on the way, a drainer SIGKILLed and restarted
every KILL_EVERY seconds, and the processes and tables sampled every SAMPLE_EVERY seconds.

Each database has one queue table and its dead letter table, written by tabq's schema, and three
processes (soak_proc): the publisher (RATE rows a second), a steady drainer and a drainer that is
killed and started again at once. Forms: SQLite lease, PostgreSQL advisory (with LISTEN/NOTIFY),
MariaDB row lock.

Sampled: each process's resident memory (VmRSS), open descriptors (/proc/PID/fd) and threads;
the server's connections of the soak's processes (pg_stat_activity by their application name,
information_schema.processlist by user); the queue table's rows, the dead letter table's rows,
and their bytes on disk (pg_total_relation_size; data_length + index_length after ANALYZE
TABLE; the SQLite file with its -wal and -shm).

Growth is judged by the second half of the run against the first, so that warm-up (pools
filling, arenas growing, the table reaching its working size) does not count. The bounds are
BOUNDS below; `peak2 <= peak1 * factor + slack` for growth, and the absolute ones:
  - rss of the publisher and the steady drainer: second half's peak at most 512 KiB above the
    first's; each life of the killed drainer: its peak at most 512 KiB above its first sample
    (taken most of a sample interval after its start) or above the steady drainer's first-half
    peak, whichever is higher;
  - descriptors, in two counts: those of the database connections (sockets; on SQLite the
    database file and its -wal, one each a connection, and the -shm once a process) never more
    than a full pool's, since a pool opens its connections as work asks for them and may open
    its last one late in a run; all the others never more in the second half than in the
    first for the publisher and the steady drainer, and in any life of the killed drainer never
    more than the steady drainer's in the first half (the same program);
  - threads of the publisher and the steady drainer: never more in the second half than in the
    first; of the killed drainer, in any life: never more than the steady drainer in the first
    half;
  - connections: never more than the pools (publisher 2, drainers POOL each);
  - queue rows: never more than RATE x 10 (the drain keeps up within ten seconds), and second
    half's peak within x 1.5 + RATE of the first's;
  - dead letter rows (pruned after 10 s): second half's peak within x 1.5 + RATE of the first's;
  - bytes: second half's peak within x 1.5 + 256 KiB of the first's.
At the end the publisher stops, the queue table must empty within 30 s, every process must shut
down cleanly on SIGTERM, every settlement must have been counted and none failed (by the last
drainers), and no connection may be left. The kills fall halfway between two samples.

usage: soak.py SOAK_PROC SQL_RUN MINUTES [--kill-every S] [--sample-every S] [--rate N]
The servers are those of TABQ_TEST_POSTGRES_URL and TABQ_TEST_MYSQL_URL (./dev soak and
./dev test start them). The samples are written to soak-samples.json in a temporary folder."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "support"))
sys.path.insert(0, os.path.join(here, "..", "faults"))
from checks import Checks, database_urls  # noqa: E402
import faults_db  # noqa: E402
from faults_db import sql  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("proc")
ap.add_argument("sql_run")
ap.add_argument("minutes", type=float)
ap.add_argument("--kill-every", type=float, default=60)
ap.add_argument("--sample-every", type=float, default=10)
ap.add_argument("--rate", type=int, default=40)
# Built with AddressSanitizer: freed memory waits in its quarantine (256 MiB) on purpose, so
# memory grows by design and is not judged; the sanitizer's leak check at each exit is.
ap.add_argument("--sanitized", action="store_true")
args = ap.parse_args()
faults_db.SQL_RUN = args.sql_run

FORMS = {"sqlite": "lease", "postgres": "advisory", "mysql": "rowlock"}
WORKERS, POOL, PUBLISHER_POOL = 3, 5, 2
BOUNDS = {
    # name: (factor, slack): the second half's peak may reach first half's peak * factor + slack
    # 512 KiB: four times the most a process's memory moved between the halves of clean runs
    # (120 KiB); a leak of 2 KiB a delivery passed 1 MiB in the second half of a 1 min run.
    "rss_kib": (1.0, 512),
    "other_fds": (1.0, 0),
    "threads": (1.0, 0),
    "rows": (1.5, args.rate),
    "dead_rows": (1.5, args.rate),
    "bytes": (1.5, 256 * 1024),
}
ROWS_CEILING = args.rate * 10
CONNECTIONS_CEILING = PUBLISHER_POOL + 2 * POOL
DRAIN_DEADLINE_S = 30
START_TRIES = 3

work = tempfile.mkdtemp(prefix="tabq-soak.")
SQLITE_PATH = os.path.realpath(os.path.join(work, "soak.db"))
urls = database_urls(SQLITE_PATH)
check = Checks()


def proc_url(db):
    """The URL the processes connect with: on PostgreSQL, named so the server lists them apart
    from the driver's own queries and from PgBouncer's idle server connections."""
    url = urls[db]
    if db != "postgres":
        return url
    return url + ("&" if "?" in url else "?") + "application_name=tabq_soak"


# ---- The processes -------------------------------------------------------------------------

class Proc:
    """One soak_proc: started, read until "ready", sampled from /proc. Every one started is in
    Proc.every, for the driver to end those still running however it exits."""
    started_count = 0
    every = []

    def __init__(self, db, table, role, argv):
        self.db, self.role = db, role
        Proc.started_count += 1
        self.err_path = os.path.join(work, f"{table}.{role}.{Proc.started_count}.err")
        self.p = subprocess.Popen([args.proc, proc_url(db), table, FORMS[db]] + argv,
                                  stdout=subprocess.PIPE, stderr=open(self.err_path, "w"),
                                  text=True)
        Proc.every.append(self.p)
        self.started = time.time()
        self.ready = self.p.stdout.readline().strip() == "ready"
        self.published = 0
        if role == "publisher" and self.ready:
            threading.Thread(target=self.read_counts, daemon=True).start()

    def read_counts(self):
        for line in self.p.stdout:
            if line.startswith("published "):
                self.published = int(line.split()[1])
            elif line.startswith("{"):
                self.final = line
                return

    def errors(self):
        return open(self.err_path).read()

    def sample(self):
        """Resident KiB, descriptors, threads; None once the process is gone."""
        fd_dir = f"/proc/{self.p.pid}/fd"
        try:
            status = open(f"/proc/{self.p.pid}/status").read()
            links = [os.readlink(os.path.join(fd_dir, n)) for n in os.listdir(fd_dir)]
        except OSError:
            return None
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        conn = sum(1 for x in links if x.startswith("socket:") or
                   (self.db == "sqlite" and x.startswith(SQLITE_PATH)))
        return {"rss_kib": int(fields["VmRSS"].split()[0]), "conn_fds": conn,
                "other_fds": len(links) - conn, "threads": int(fields["Threads"])}

    def stop(self):
        """SIGTERM; the exit status (or "hung") and the counters' JSON line."""
        self.p.send_signal(signal.SIGTERM)
        try:
            status = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            status = "hung"
        if self.role == "publisher":
            time.sleep(0.2)  # the reader thread takes the last line
            return status, getattr(self, "final", "")
        return status, self.p.stdout.read().strip()


class Database:
    def __init__(self, db):
        self.db, self.url = db, urls[db]
        self.table = f"soak_{db[:2]}_{os.getpid()}"
        self.dead = self.table + "_dead"
        self.samples = []
        self.kills = 0
        self.lives = []  # the killed drainer's lives: (pid, started)
        self.failed_starts = []  # the errors of drainers that could not start
        if db != "sqlite":
            for t in (self.table, self.dead):
                sql(self.url, f"DROP TABLE IF EXISTS {t}")
        self.publisher = Proc(db, self.table, "publisher", ["publish", str(args.rate)])
        check(f"{db}: the publisher created the tables and started", self.publisher.ready,
              self.publisher.errors())
        self.steady = self.drainer("steady")
        self.killed = self.drainer("killed")

    def drainer(self, role):
        """Starts a drainer as a supervisor would: a start that fails (its error on stderr, the
        exit status 3) is counted and tried again, up to START_TRIES times."""
        for _ in range(START_TRIES):
            p = Proc(self.db, self.table, role, ["drain", str(WORKERS), str(POOL)])
            if p.ready:
                break
            p.p.wait()
            self.failed_starts.append(p.errors().strip())
        check(f"{self.db}: the {role} drainer subscribed", p.ready, p.errors())
        if role == "killed":
            self.lives.append((p.p.pid, p.started))
        return p

    def kill_and_restart(self):
        self.killed.p.send_signal(signal.SIGKILL)
        self.killed.p.wait()
        self.kills += 1
        self.killed = self.drainer("killed")

    def table_figures(self):
        """Connections (None on SQLite), queue rows, dead letter rows, bytes."""
        t, d = self.table, self.dead
        if self.db == "sqlite":
            rows, dead = (int(x) for x in sql(
                self.url, f"SELECT (SELECT count(*) FROM {t}), (SELECT count(*) FROM {d})", 2)[0])
            path = self.url[len("sqlite:"):]
            size = sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm")
                       if os.path.exists(path + s))
            return None, rows, dead, size
        if self.db == "postgres":
            q = ("SELECT (SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                 f"'tabq_soak'), (SELECT count(*) FROM {t}), (SELECT count(*) FROM {d}), "
                 f"pg_total_relation_size('{t}') + pg_total_relation_size('{d}')")
        else:
            sql(self.url, f"ANALYZE TABLE {t}, {d}", 4)  # data_length as it stands now
            q = ("SELECT (SELECT count(*) FROM information_schema.processlist WHERE user = 'tabq' "
                 "AND id <> CONNECTION_ID() AND command <> 'Killed'), "
                 f"(SELECT count(*) FROM {t}), (SELECT count(*) FROM {d}), "
                 "(SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE "
                 f"table_schema = DATABASE() AND table_name IN ('{t}', '{d}'))")
        return tuple(int(x) for x in sql(self.url, q, 4)[0])

    def sample(self, t):
        s = {"t": round(t, 1), "published": self.publisher.published}
        for role, p in (("publisher", self.publisher), ("steady", self.steady),
                        ("killed", self.killed)):
            s[role] = p.sample()
            if s[role]:
                s[role]["pid"] = p.p.pid
                s[role]["age"] = round(time.time() - p.started, 1)
        s["connections"], s["rows"], s["dead_rows"], s["bytes"] = self.table_figures()
        self.samples.append(s)


# ---- Judging -------------------------------------------------------------------------------

def within(name, first, second):
    factor, slack = BOUNDS[name]
    bound = max(first) * factor + slack
    if name == "rss_kib" and args.sanitized:
        return True, bound
    return max(second) <= bound, bound


def connection_fds_ceiling(db, pool):
    """The descriptors of a full pool: a socket a connection; on SQLite the database file and
    its -wal a connection, and the -shm that SQLite shares among a process's connections."""
    return 2 * pool + 1 if db == "sqlite" else pool


def judge(d, half):
    """Checks d's samples against the bounds; returns the summary table's rows."""
    first = [s for s in d.samples if s["t"] <= half]
    second = [s for s in d.samples if s["t"] > half]
    table = []
    if not first or not second:
        check(f"{d.db}: samples in both halves", False, f"{len(d.samples)} samples")
        return table

    def line(what, a, b, bound, ok):
        table.append((what, a, b, bound, ok))
        check(f"{d.db}: {what} {b} in the second half, bound {bound}", ok,
              f"first half {a}; samples in {os.path.join(work, 'soak-samples.json')}")

    for role in ("publisher", "steady"):
        for name in ("rss_kib", "other_fds", "threads"):
            a = [s[role][name] for s in first if s[role]]
            b = [s[role][name] for s in second if s[role]]
            ok, bound = within(name, a, b)
            line(f"{role} {name}", max(a), max(b), round(bound), ok)
        ceiling = connection_fds_ceiling(d.db, PUBLISHER_POOL if role == "publisher" else POOL)
        a = [s[role]["conn_fds"] for s in first if s[role]]
        b = [s[role]["conn_fds"] for s in second if s[role]]
        line(f"{role} conn_fds", max(a), max(b), ceiling, max(a + b) <= ceiling)
    # The killed drainer's lives: the memory of each against its own first sample taken once it
    # had run most of a sample interval, or against the steady drainer's first-half peak (the
    # same program warmed up) where that is higher: since claims look ahead, a life's first
    # sample may come before the process reaches its working size (once 10,044 KiB at the
    # first sample against a peak of 10,616, the steady drainer's own size) (a life with one
    # such sample has nothing to compare);
    # its descriptors and threads against the steady drainer's first half, the same program on
    # the same pool, which opens its connections as work asks for them.
    lives = {}
    for s in d.samples:
        if s["killed"] and s["killed"]["age"] >= args.sample_every * 0.8:
            lives.setdefault(s["killed"]["pid"], []).append(s["killed"])
    worst, ok_all = None, True
    warmed = max([s["steady"]["rss_kib"] for s in first if s["steady"]], default=0)
    for ss in lives.values():
        if len(ss) < 2:
            continue
        peak = max(x["rss_kib"] for x in ss[1:])
        ok, bound = within("rss_kib", [ss[0]["rss_kib"], warmed], [peak])
        if worst is None or peak - bound > worst[0]:
            worst = (peak - bound, ss[0]["rss_kib"], peak, round(bound))
        ok_all = ok_all and ok
    if worst:
        table.append(("killed rss_kib (worst life)", worst[1], worst[2], worst[3], ok_all))
        check(f"{d.db}: killed drainer rss_kib within its first sample's bound in each of "
              f"{len(lives)} lives", ok_all, f"worst: first {worst[1]}, peak {worst[2]}")
    for name in ("conn_fds", "other_fds", "threads"):
        if name == "conn_fds":
            ceiling = connection_fds_ceiling(d.db, POOL)
        else:
            ceiling = max(s["steady"][name] for s in first if s["steady"])
        a = [s["killed"][name] for s in first if s["killed"]] or [0]
        b = [s["killed"][name] for s in second if s["killed"]] or [0]
        line(f"killed {name} (every life)", max(a), max(b), ceiling, max(a + b) <= ceiling)
    if d.db != "sqlite":
        most = max(s["connections"] for s in d.samples)
        table.append(("connections", max(s["connections"] for s in first),
                      max(s["connections"] for s in second), CONNECTIONS_CEILING,
                      most <= CONNECTIONS_CEILING))
        check(f"{d.db}: connections never more than the pools ({most}, at most "
              f"{CONNECTIONS_CEILING})", most <= CONNECTIONS_CEILING, most)
    most = max(s["rows"] for s in d.samples)
    check(f"{d.db}: queue rows never more than {ROWS_CEILING} ({most})", most <= ROWS_CEILING,
          most)
    for name in ("rows", "dead_rows", "bytes"):
        a = [s[name] for s in first]
        b = [s[name] for s in second]
        ok, bound = within(name, a, b)
        line(name, max(a), max(b), round(bound), ok)
    return table


def print_table(d, rows):
    print(f"\n    {d.db} ({FORMS[d.db]}): {d.publisher.published} published, {d.kills} kills, "
          f"{len(d.samples)} samples")
    print(f"    {'':30} {'1st half':>10} {'2nd half':>10} {'bound':>10}")
    for what, a, b, bound, ok in rows:
        print(f"    {what:30} {a:>10} {b:>10} {bound:>10}  {'ok' if ok else 'GREW'}")


# ---- The run -------------------------------------------------------------------------------

def finish(d):
    """Stops the publisher, waits for the queue to empty, stops the drainers; checks the end."""
    status, final = d.publisher.stop()
    check(f"{d.db}: the publisher shut down cleanly", status == 0,
          f"{status}; {d.publisher.errors()[-2000:]}")
    deadline = time.time() + DRAIN_DEADLINE_S
    left = None
    while time.time() < deadline:
        left = int(sql(d.url, f"SELECT count(*) FROM {d.table}", 1)[0][0])
        if left == 0:
            break
        time.sleep(0.5)
    check(f"{d.db}: the queue emptied once the publisher stopped", left == 0, f"{left} rows left")
    totals = {}
    for p in (d.steady, d.killed):
        status, line = p.stop()
        check(f"{d.db}: the {p.role} drainer shut down cleanly", status == 0,
              f"{status}; {p.errors()[-2000:]}")
        try:
            for k, v in json.loads(line).items():
                totals[k] = totals.get(k, 0) + v
        except ValueError:
            pass
    for k in ("acked", "dropped", "retried", "delayed", "dead_lettered", "dead_pruned"):
        check(f"{d.db}: {k} counted ({totals.get(k, 0)} by the last drainers)",
              totals.get(k, 0) > 0, totals)
    # A kill ends another process's work, never these ones': a failed settlement is a fault.
    check(f"{d.db}: no settlement of the last drainers failed", totals.get("failed", 1) == 0,
          f"{totals}; {d.steady.errors()[-2000:]}")
    if d.db != "sqlite":
        time.sleep(1)
        left = d.table_figures()[0]
        check(f"{d.db}: no connection left once the processes are gone", left == 0, f"{left} left")
        for t in (d.table, d.dead):
            sql(d.url, f"DROP TABLE IF EXISTS {t}")
    warnings = sum(len(open(os.path.join(work, f)).read().splitlines())
                   for f in os.listdir(work) if f.startswith(d.table) and f.endswith(".err"))
    print(f"    {d.db}: {json.dumps(totals)}; {warnings} lines on the processes' stderr; "
          f"{len(d.failed_starts)} drainer starts failed and were tried again")
    for e in d.failed_starts:
        print(f"      {e}")


def main():
    duration = args.minutes * 60
    dbs = [Database(db) for db in ("sqlite", "postgres", "mysql")]
    if check.failures:
        check.finish("soak")
    started = time.time()
    # The kills fall between two samples, so that no sample counts the connections of a process
    # just killed (the server drops them within moments) beside its successor's.
    next_sample, next_kill = args.sample_every, args.kill_every + args.sample_every / 2
    while True:
        t = time.time() - started
        if t >= duration:
            break
        if t >= next_kill:
            next_kill += args.kill_every
            for d in dbs:
                d.kill_and_restart()
                if not d.killed.ready:
                    check.finish("soak")
        if t >= next_sample:
            next_sample += args.sample_every
            for d in dbs:
                d.sample(t)
        wake = min(next_sample, next_kill, duration)
        time.sleep(max(0, wake - (time.time() - started)))
    json.dump({d.db: d.samples for d in dbs}, open(os.path.join(work, "soak-samples.json"), "w"))
    tables = [(d, judge(d, duration / 2)) for d in dbs]
    for d in dbs:
        finish(d)
    print(f"\n    soak of {args.minutes:g} min at {args.rate} rows/s a database, a kill every "
          f"{args.kill_every:g} s, a sample every {args.sample_every:g} s "
          f"(samples: {os.path.join(work, 'soak-samples.json')})")
    for d, rows in tables:
        print_table(d, rows)
    check.finish("soak")


try:
    main()
finally:
    for p in Proc.every:  # a run that ends early leaves no process behind
        if p.poll() is None:
            p.kill()
            p.wait()
