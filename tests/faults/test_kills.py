#!/usr/bin/env python3
"""Kills (docs/reliability.md, "Kills"): in every form of every database (SQLite lease and
advisory; PostgreSQL and MariaDB row lock, lease and advisory), three worker processes
(kill_worker: four workers each, two acking rows of the queue "plain", two transactional ones
inserting a business row with each ack of the queue "tx") drain one table that the test keeps
fed, while they are SIGKILLed and restarted: by the test at random times, and by themselves at
chosen points (while claiming, in the handler, while settling, inside a transactional handler's
writes), until KILLS kills, at least KILLS/8 of them at each point. A kill of the test's is
classified by the points its process's workers were at (each process keeps a board of them).

Afterwards, with every worker shut down:
- every row settled exactly once: acks set processed_at, and a trigger records each update
  that leaves it set, so a second settlement (or any write to a settled row) would be seen;
- every row handled, and never by two handlers at once: each handler logs its start, and the
  end of its settlement; a killed process's open handlings end at its kill, which the test knows;
- a row handled twice only ever after a kill: every handling but the one that settled it was
  cut by its process's kill, before the settlement;
- one business row for each row of the queue "tx", none for the others;
- no row stuck past its lease: a row a killed process had in hand is handled again within the
  lease and a margin (or later only when a claim of another killed process, counted by the
  row's attempt, took it meanwhile); the drain ends once the kills stop;
- no advisory lock left (pg_locks; IS_USED_LOCK on MariaDB; SQLite's lock file free), and the
  check shown to see tabq's locks while the workers run;
- no connection of tabq's left on the server (pg_stat_activity, information_schema.processlist).

usage: test_kills.py KILL_WORKER SQL_RUN [KILLS [DB:FORM ...]]   (KILLS: per form and database)"""
import fcntl
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults_db  # noqa: E402
from faults_db import MINE, scalar, sql, worker_url  # noqa: E402

worker_bin = sys.argv[1]
faults_db.SQL_RUN = sys.argv[2]
KILLS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
COMBOS = [("sqlite", "lease"), ("sqlite", "advisory"), ("postgres", "rowlock"),
          ("postgres", "lease"), ("postgres", "advisory"), ("mysql", "rowlock"),
          ("mysql", "lease"), ("mysql", "advisory")]
if len(sys.argv) > 4:
    COMBOS = [tuple(a.split(":")) for a in sys.argv[4:]]
POINTS = {1: "claiming", 2: "in the handler", 3: "settling", 4: "in tx writes"}
PROCS = 3
# The workers' lease (lease form): 2 s on the servers; on SQLite longer than its busy timeout
# (5 s), as a lease there must be: a claim or a settlement may wait that long for the file's
# write lock, which the other processes' writers keep busy, and a shorter lease can end under a
# delivery (docs/reliability.md, "Kills").
LEASE = {"sqlite": 10}
KILL_EVERY = 40  # a self-kill drawn once in this many handler calls
BOARD = struct.Struct("<12q")
work = tempfile.mkdtemp(prefix="tabq-kills.")
urls = database_urls(os.path.join(work, "kills.db"))
check = Checks()

DDL = {
    "sqlite": ["CREATE TABLE {t} (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, retry_after TEXT, "
               "attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT, "
               "payload BLOB NOT NULL)",
               "CREATE INDEX {t}_claim ON {t} (queue, processed_at, retry_after, id)",
               "CREATE TABLE {t}_settled (id BIGINT NOT NULL, first INTEGER NOT NULL)",
               "CREATE TABLE {t}_biz (row_id BIGINT NOT NULL, pid INTEGER NOT NULL)",
               "CREATE TRIGGER {t}_settle AFTER UPDATE ON {t} FOR EACH ROW WHEN "
               "NEW.processed_at IS NOT NULL BEGIN INSERT INTO {t}_settled (id, first) VALUES "
               "(NEW.id, OLD.processed_at IS NULL); END"],
    "postgres": ["CREATE TABLE {t} (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, retry_after "
                 "TIMESTAMPTZ, attempt INTEGER NOT NULL DEFAULT 1, processed_at TIMESTAMPTZ, "
                 "locked_until TIMESTAMPTZ, payload BYTEA NOT NULL)",
                 "CREATE INDEX {t}_claim ON {t} (queue, processed_at, retry_after, id)",
                 "CREATE TABLE {t}_settled (id BIGINT NOT NULL, first BOOLEAN NOT NULL)",
                 "CREATE TABLE {t}_biz (row_id BIGINT NOT NULL, pid INTEGER NOT NULL)",
                 "CREATE FUNCTION {t}_settle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                 "INSERT INTO {t}_settled (id, first) VALUES (NEW.id, OLD.processed_at IS NULL); "
                 "RETURN NEW; END $$",
                 "CREATE TRIGGER {t}_settle AFTER UPDATE ON {t} FOR EACH ROW WHEN "
                 "(NEW.processed_at IS NOT NULL) EXECUTE FUNCTION {t}_settle()"],
    "mysql": ["CREATE TABLE {t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT "
              "NULL, retry_after DATETIME(6) NULL, attempt INT NOT NULL DEFAULT 1, processed_at "
              "DATETIME(6) NULL, locked_until DATETIME NULL, payload BLOB NOT NULL, INDEX "
              "claim_order (queue, processed_at, retry_after, id)) ENGINE=InnoDB",
              "CREATE TABLE {t}_settled (id BIGINT NOT NULL, first INT NOT NULL) ENGINE=InnoDB",
              "CREATE TABLE {t}_biz (row_id BIGINT NOT NULL, pid INT NOT NULL) ENGINE=InnoDB",
              "CREATE TRIGGER {t}_settle AFTER UPDATE ON {t} FOR EACH ROW INSERT INTO "
              "{t}_settled (id, first) SELECT NEW.id, OLD.processed_at IS NULL FROM DUAL WHERE "
              "NEW.processed_at IS NOT NULL"],
}
DROP = {
    "sqlite": ["DROP TABLE IF EXISTS {t}", "DROP TABLE IF EXISTS {t}_settled",
               "DROP TABLE IF EXISTS {t}_biz"],
    "postgres": ["DROP TABLE IF EXISTS {t}, {t}_settled, {t}_biz",
                 "DROP FUNCTION IF EXISTS {t}_settle()"],
    "mysql": ["DROP TABLE IF EXISTS {t}, {t}_settled, {t}_biz"],
}
# Rows of both queues, alternating.
FILL = {
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) "
              "INSERT INTO {t} (queue, payload) SELECT CASE i % 2 WHEN 0 THEN 'plain' ELSE 'tx' "
              "END, 'x' FROM n",
    "postgres": "INSERT INTO {t} (queue, payload) SELECT CASE i % 2 WHEN 0 THEN 'plain' ELSE "
                "'tx' END, 'x' FROM generate_series(1, {n}) i",
    "mysql": "INSERT INTO {t} (queue, payload) SELECT IF(seq % 2 = 0, 'plain', 'tx'), 'x' FROM "
             "seq_1_to_{n}",
}


def advisory_locks(db, url, t, where="TRUE"):
    """The advisory locks held now on the database: on PostgreSQL every one of the database (the
    test's servers are its own), on MariaDB those of the table's rows by the name tabq gives
    them ('<database>.' and the key), on SQLite 1 while a process holds the lock file."""
    if db == "postgres":
        return scalar(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                           "database = (SELECT oid FROM pg_database WHERE datname = "
                           "current_database())")
    if db == "mysql":
        return scalar(url, f"SELECT count(*) FROM {t} WHERE {where} AND IS_USED_LOCK(CONCAT("
                           f"LOWER(DATABASE()), '.{t}-', id)) IS NOT NULL")
    with open(urls["sqlite"][len("sqlite:"):] + "-tabq-advisory", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 1
        fcntl.flock(f, fcntl.LOCK_UN)
        return 0


class Worker:
    """One kill_worker process and its board."""
    serial = 0

    def __init__(self, db, form, t, log, err, every, stop, lease):
        Worker.serial += 1
        self.board_path = os.path.join(work, f"{t}.{Worker.serial}.board")
        self.out = open(os.path.join(work, f"{t}.{Worker.serial}.out"), "w")
        self.p = subprocess.Popen([worker_bin, worker_url(db, urls[db]), t, form, log,
                                   self.board_path, str(every), stop, str(lease)],
                                  stdout=self.out, stderr=err)
        self.pid = self.p.pid
        self.by_test = False

    def board(self):
        try:
            with open(self.board_path, "rb") as f:
                data = f.read(BOARD.size)
            return BOARD.unpack(data) if len(data) == BOARD.size else None
        except OSError:
            return None


def read_log(path):
    """The handlings, keyed (row, pid, start): [queue, returned, ended, code, outcome], the
    last four None for a handling its process's kill cut short."""
    handlings, by_process, ends = {}, {}, []
    for line in open(path):
        f = line.split()
        if f[0] == "S":
            key = (int(f[1]), int(f[3]), int(f[2]))
            handlings[key] = [f[4], None, None, None, None]
            by_process.setdefault(key[:2], []).append(key)
        elif f[0] == "E":
            ends.append(f)
    # Each E line ends the handling of its row by its process that began closest to its own
    # start (on_delivery_start's, on the monotonic clock: a few µs off the S line's).
    for f in ends:
        row, start, returned, ended, pid = (int(x) for x in f[1:6])
        keys = [k for k in by_process.get((row, pid), []) if handlings[k][1] is None]
        if keys:
            key = min(keys, key=lambda k: abs(k[2] - start))
            handlings[key][1:] = [returned, ended, f[6], f[7]]
    return handlings


def run(db, form, totals):
    url = urls[db]
    t = f"kills_{db[:2]}_{form}_{os.getpid()}"
    label = f"{db} {form}"
    lease = LEASE.get(db, 2)
    back_within = lease + 8  # a killed process's rows handled again within this
    for s in DROP[db]:
        sql(url, s.format(t=t))
    for s in DDL[db]:
        sql(url, s.format(t=t))
    sql(url, FILL[db].format(t=t, n=600))
    log = os.path.join(work, f"{t}.log")
    stop = os.path.join(work, f"{t}.stop")
    err = open(os.path.join(work, f"{t}.err"), "a")
    workers = [Worker(db, form, t, log, err, KILL_EVERY, stop, lease) for _ in range(PROCS)]
    pids = {w.pid for w in workers}
    self_kills = dict.fromkeys(POINTS, 0)
    test_kills, caught = 0, dict.fromkeys(POINTS, 0)
    kill_at = {}  # pid -> the time of its kill (s)
    odd_exits, failed_starts = [], 0
    locks_seen, next_lock_look = 0, 0
    started = time.time()
    give_up = started + max(120, KILLS * 3)
    next_kill = started + random.uniform(0.1, 0.6)
    next_fill = 0.0

    def reap():
        nonlocal failed_starts
        for i, w in enumerate(workers):
            rc = w.p.poll()
            if rc is None:
                continue
            board = w.board()
            if w.by_test:
                pass
            elif rc == -signal.SIGKILL and board and board[2] in POINTS:
                self_kills[board[2]] += 1
                kill_at[w.pid] = board[3] / 1e6
            elif rc == 3:
                failed_starts += 1
            else:
                odd_exits.append((w.pid, rc))
                kill_at[w.pid] = time.time()
            workers[i] = Worker(db, form, t, log, err, KILL_EVERY, stop, lease)
            if workers[i].pid in pids:
                odd_exits.append((workers[i].pid, "pid reused"))
            pids.add(workers[i].pid)

    def feed(now):
        nonlocal next_fill
        if now >= next_fill:
            next_fill = now + 0.5
            if scalar(url, f"SELECT count(*) FROM {t} WHERE processed_at IS NULL") < 400:
                sql(url, FILL[db].format(t=t, n=800))

    while True:
        time.sleep(0.02)
        reap()
        now = time.time()
        total = test_kills + sum(self_kills.values())
        if total >= KILLS and min(self_kills.values()) >= max(1, KILLS // 8):
            break
        if now > give_up or len(odd_exits) + failed_starts > 20:
            break  # the checks below say why
        feed(now)
        # The locks are looked for while the workers run, apart from the test's kills, and
        # again while they drain: under AddressSanitizer the workers' own kills once reached
        # the count before the test found a worker ready to kill, so no look was made, and the
        # locks, held only for a delivery's millisecond or two, met none of the looks of the
        # kills' eight seconds. The workers now also work 150 ms on one delivery in 50, so the
        # looks meet held locks however fast the other deliveries go.
        if form == "advisory" and not locks_seen and now >= next_lock_look:
            next_lock_look = now + 0.1
            locks_seen = advisory_locks(db, url, t, "processed_at IS NULL")
        if now >= next_kill:
            next_kill = now + random.uniform(0.1, 0.6)
            ready = [w for w in workers if w.p.poll() is None and (w.board() or [0, 0])[1]]
            if not ready:
                continue
            w = random.choice(ready)
            board = w.board()
            # Read before the kill: the process handles nothing past it, and another takes its
            # rows only once the server (or the lease) lets them go, after its death. Read
            # after, a scheduling delay of this script's would stretch the handlings it cut.
            killed = time.time()
            os.kill(w.pid, signal.SIGKILL)
            w.p.wait()
            if w.board()[2]:
                continue  # it had killed itself first: reap() counts it
            kill_at[w.pid] = killed
            w.by_test = True
            test_kills += 1
            for point in POINTS:
                caught[point] += point in board[4:]
    kills_s = time.time() - started
    last_kill = time.time()
    open(stop, "w").close()  # no more self-kills; the test's stop too
    drain_deadline = time.time() + back_within + 60
    while time.time() < drain_deadline:
        reap()
        if form == "advisory" and not locks_seen:
            locks_seen = advisory_locks(db, url, t, "processed_at IS NULL")
        if not scalar(url, f"SELECT count(*) FROM {t} WHERE processed_at IS NULL"):
            break
        time.sleep(0.2)
    reap()
    drained_s = time.time() - last_kill
    left = scalar(url, f"SELECT count(*) FROM {t} WHERE processed_at IS NULL")
    statuses = []
    for w in workers:
        w.p.send_signal(signal.SIGTERM)
    for w in workers:
        try:
            statuses.append(w.p.wait(timeout=60))
        except subprocess.TimeoutExpired:
            w.p.kill()
            statuses.append("hung")
    errors = open(os.path.join(work, f"{t}.err")).read()

    # ---- The checks -----------------------------------------------------------------------
    nself = sum(self_kills.values())
    total = nself + test_kills
    check(f"{label}: {total} kills in {kills_s:.0f} s ({nself} self, {test_kills} by the test), "
          f"at least {max(1, KILLS // 8)} at each point",
          total >= KILLS and min(self_kills.values()) >= max(1, KILLS // 8),
          f"self-kills per point {self_kills}")
    check(f"{label}: no worker ended otherwise than by a kill", not odd_exits,
          f"{odd_exits}; {errors[-2000:]}")
    check(f"{label}: every worker started ({failed_starts} could not connect or subscribe)",
          failed_starts == 0, errors[-2000:])
    check(f"{label}: every row settled within {back_within + 60} s of the last kill "
          f"({drained_s:.1f} s)", left == 0, f"{left} rows left; {errors[-2000:]}")
    check(f"{label}: the workers shut down cleanly", all(s == 0 for s in statuses),
          f"{statuses}; {errors[-2000:]}")

    rows = {int(r[0]): r[1] for r in sql(url, f"SELECT id, queue FROM {t}", 2)}
    settled = {}
    for rid, first in sql(url, f"SELECT id, first FROM {t}_settled", 2):
        settled.setdefault(int(rid), []).append(first in ("1", "t", "true"))
    twice = [r for r, s in settled.items() if len(s) != 1 or not s[0]]
    never = [r for r in rows if r not in settled]
    check(f"{label}: each of {len(rows)} rows settled exactly once", not twice and not never,
          f"settled more than once: {twice[:10]}; never: {never[:10]}")

    handlings = read_log(log)
    by_row = {}
    for (rid, pid, start), (queue, end, _, code, outcome) in handlings.items():
        by_row.setdefault(rid, []).append((start, pid, end, code, outcome))
    unhandled = [r for r in rows if r not in by_row]
    check(f"{label}: every row handled", not unhandled, f"never handled: {unhandled[:10]}")

    # A claim counts its row's attempt (attempt - 1 claims): claims that never reached a
    # handler were cut by a kill too, and a row claimed that way waits for a lease again.
    attempts = {int(r[0]): int(r[1]) for r in sql(url, f"SELECT id, attempt FROM {t}", 2)}
    overlaps, unexplained, unended, stuck = [], [], [], []
    restranded = 0
    lease_lost = sum(h[3] == "LEASE_LOST" for hs in by_row.values() for h in hs)
    duplicates, back_max = 0, 0.0
    for rid, hs in by_row.items():
        hs.sort()
        spans = []
        for start, pid, end, code, outcome in hs:
            if end is None:
                if pid not in kill_at:
                    unended.append((rid, pid))
                    continue
                end = max(start, int(kill_at[pid] * 1e6))
            spans.append((start, end, pid))
        overlaps += [(rid, a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
        if len(hs) > 1:
            duplicates += 1
        done = [h for h in hs if h[3] == "OK" and h[4] == "ack"]
        settler = done[0] if len(done) == 1 else hs[-1]
        if len(done) > 1:
            unexplained.append((rid, "settled by two handlers", done))
        for h in hs:
            if h is settler:
                continue
            start, pid, end, code, outcome = h
            if end is not None or pid not in kill_at or start > settler[0]:
                unexplained.append((rid, h))
                continue
            later = [x for x in hs if x[0] > start]
            if later:
                back = later[0][0] / 1e6 - kill_at[pid]
                if back > back_within and attempts.get(rid, 1) - 1 > len(hs):
                    restranded += 1  # a claim of a process killed before its handler
                elif back > back_within:
                    stuck.append((rid, round(back, 1)))
                else:
                    back_max = max(back_max, back)
    check(f"{label}: no row handled by two at once", not overlaps, overlaps[:5])
    check(f"{label}: every handling ended, by its settlement or its process's kill",
          not unended, unended[:10])
    check(f"{label}: {duplicates} rows handled more than once, each after a kill",
          not unexplained, f"{lease_lost} settlements found their lease lost; " +
          "; ".join(map(str, unexplained[:5])))
    check(f"{label}: a killed process's rows handled again within {back_within} s "
          f"(at most {back_max:.1f} s; {restranded} later, claimed meanwhile by a process "
          f"killed before its handler)", not stuck, stuck[:10])

    biz = {}
    for rid, n in sql(url, f"SELECT row_id, count(*) FROM {t}_biz GROUP BY row_id", 2):
        biz[int(rid)] = int(n)
    wrong = [(r, biz.get(r, 0)) for r, q in rows.items() if biz.get(r, 0) != (q == "tx")]
    stray = [r for r in biz if r not in rows]
    ntx = sum(q == "tx" for q in rows.values())
    check(f"{label}: one business row for each of {ntx} transactional rows, none for the others",
          not wrong and not stray, f"wrong counts: {wrong[:10]}; of no row: {stray[:10]}")

    if form == "advisory":
        check(f"{label}: the lock check sees tabq's locks while the workers run",
              locks_seen > 0, "none seen")
        held = advisory_locks(db, url, t)
        for _ in range(40):
            if not held:
                break
            time.sleep(0.25)
            held = advisory_locks(db, url, t)
        check(f"{label}: no advisory lock left", held == 0, f"{held} held")
    if db != "sqlite":
        after = scalar(url, "SELECT count(*) " + MINE[db])
        for _ in range(40):
            if not after:
                break
            time.sleep(0.25)
            after = scalar(url, "SELECT count(*) " + MINE[db])
        check(f"{label}: no connection of tabq's left on the server", after == 0,
              f"{after} left")
    # The control: a second settlement of a row is seen.
    some = min(rows) if rows else 0
    sql(url, f"UPDATE {t} SET processed_at = processed_at WHERE id = {some}")
    seen = scalar(url, f"SELECT count(*) FROM {t}_settled WHERE id = {some}")
    check(f"{label}: the settlement count sees a second settlement (control)", seen == 2,
          f"{seen} settlements of row {some}")
    sql(url, f"DELETE FROM {t}")  # the trigger's function is dropped with the tables
    for s in DROP[db]:
        sql(url, s.format(t=t))
    print(f"    {label}: {len(rows)} rows; kills survived: " +
          ", ".join(f"{self_kills[p]} {n}" for p, n in POINTS.items()) +
          f", {test_kills} at random (their processes caught " +
          ", ".join(f"{caught[p]} {n}" for p, n in POINTS.items()) +
          f"); {duplicates} rows handled twice, all after a kill; back within {back_max:.1f} s "
          f"({restranded} later, claimed again by a killed process); "
          f"drained {drained_s:.1f} s after the last kill", flush=True)
    totals["kills"] += total
    totals["rows"] += len(rows)
    totals["duplicates"] += duplicates
    for p in POINTS:
        totals[p] += self_kills[p]
    totals["random"] += test_kills


totals = dict.fromkeys(["kills", "rows", "duplicates", "random", *POINTS], 0)
for db, form in COMBOS:
    run(db, form, totals)
print(f"kills: {totals['kills']} survived over {len(COMBOS)} forms and databases, " +
      ", ".join(f"{totals[p]} {n}" for p, n in POINTS.items()) +
      f", {totals['random']} at random; {totals['rows']} rows; {totals['duplicates']} handled "
      f"twice, each after a kill")
check.finish("kills")
