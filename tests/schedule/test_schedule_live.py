#!/usr/bin/env python3
"""Periodic jobs across processes (docs/schedule.md), on SQLite, PostgreSQL and MariaDB, with
`tabq schedule` as the processes:

- three processes schedule one every-second job side by side for a few seconds: the table
  holds exactly one row per slot, and the slots run without a gap;
- everything stopped for a few seconds, one process with the default policy (skip) publishes
  none of the slots missed meanwhile;
- two processes with the catch-up policy publish the latest missed slot of an hourly job once
  between them;
- a table without a unique_key column and a spec that does not parse are refused (exit 2),
  naming the rule; --next prints slots and keys without a database;
- a description file's "schedules" run in two processes, one row per slot.

usage: test_schedule_live.py TABQ SQL_RUN DESCRIPTION_FILE"""
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402

tabq, sql_run, desc = sys.argv[1], sys.argv[2], sys.argv[3]
work = tempfile.mkdtemp(prefix="tabq-schedule.")
COLUMNS = {
    "sqlite": "id INTEGER PRIMARY KEY, queue TEXT NOT NULL, retry_after TEXT,"
              " attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT,"
              " payload BLOB NOT NULL",
    "postgres": "id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, retry_after TIMESTAMPTZ,"
                " attempt INTEGER NOT NULL DEFAULT 1, processed_at TIMESTAMPTZ,"
                " locked_until TIMESTAMPTZ, payload BYTEA NOT NULL",
    "mysql": "id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT NULL,"
             " retry_after DATETIME(6) NULL, attempt INT NOT NULL DEFAULT 1,"
             " processed_at DATETIME(6) NULL, locked_until DATETIME NULL,"
             " payload MEDIUMBLOB NOT NULL",
}
# The key's index: over the unfinished rows where the database has partial indexes.
DDL = {
    "sqlite": "DROP TABLE IF EXISTS sched_jobs; DROP TABLE IF EXISTS sched_keyless;"
              f"CREATE TABLE sched_jobs ({COLUMNS['sqlite']}, slot_key TEXT);"
              "CREATE UNIQUE INDEX sched_jobs_unique ON sched_jobs (slot_key)"
              " WHERE processed_at IS NULL;"
              f"CREATE TABLE sched_keyless ({COLUMNS['sqlite']})",
    "postgres": "DROP TABLE IF EXISTS sched_jobs, sched_keyless;"
                f"CREATE TABLE sched_jobs ({COLUMNS['postgres']}, slot_key TEXT);"
                "CREATE UNIQUE INDEX sched_jobs_unique ON sched_jobs (slot_key)"
                " WHERE processed_at IS NULL;"
                f"CREATE TABLE sched_keyless ({COLUMNS['postgres']})",
    "mysql": "DROP TABLE IF EXISTS sched_jobs, sched_keyless;"
             f"CREATE TABLE sched_jobs ({COLUMNS['mysql']}, slot_key VARCHAR(191) NULL,"
             " UNIQUE INDEX sched_jobs_unique (slot_key)) ENGINE=InnoDB;"
             f"CREATE TABLE sched_keyless ({COLUMNS['mysql']}) ENGINE=InnoDB",
}
urls = database_urls(f"{work}/jobs.db")
check = Checks()


def sql(url, text):
    r = subprocess.run([sql_run, url, text], capture_output=True, text=True, timeout=60)
    if r.returncode:
        sys.exit(f"sql_run failed: {r.stderr}")


def rows(url, ncols, text):
    r = subprocess.run([sql_run, url, "-q", str(ncols), text], capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        sys.exit(f"sql_run failed: {r.stderr}")
    return [line.split("\t") for line in r.stdout.splitlines()]


def args(url, name, *more):
    return [tabq, "schedule", "--url", url, "--table", desc, "--table-name", "sched_jobs",
            "--name", name, "--queue", "ticks", *more]


class Scheduler:
    """A `tabq schedule` process, ready once it printed its first line."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, stdin=subprocess.DEVNULL)
        ready, _, _ = select.select([self.p.stdout], [], [], 30)
        self.line = self.p.stdout.readline() if ready else ""

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            out, err = self.p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        return self.p.returncode, err


def slot_of(key):
    stamp = key.split(":", 1)[1]
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ"):
        try:
            return int(datetime.strptime(stamp, fmt).replace(tzinfo=timezone.utc).timestamp())
        except ValueError:
            pass
    raise ValueError(key)


def keys(url, name):
    return {k: int(n) for k, n in rows(url, 2, "SELECT slot_key, COUNT(*) FROM sched_jobs WHERE "
                                              f"slot_key LIKE '{name}:%' GROUP BY slot_key")}


def refusals(db, url):
    r = subprocess.run([tabq, "schedule", "--url", url, "--table", desc, "--table-name",
                        "sched_keyless", "--name", "t", "--every", "1s", "--queue", "q"],
                       capture_output=True, text=True, timeout=60)
    check(f"{db}: a table without unique_key is refused", r.returncode == 2 and
          "table sched_keyless has no unique_key column" in r.stderr, r.stderr)
    r = subprocess.run(args(url, "t", "--cron", "0 25 * * *"), capture_output=True, text=True,
                       timeout=60)
    check(f"{db}: a cron expression that does not parse is refused with its position",
          r.returncode == 2 and "field 2 (hour), position 3: 25 is out of 0-23" in r.stderr,
          r.stderr)


def side_by_side(db, url):
    procs = [Scheduler(args(url, "tick", "--every", "1s", "--lead", "500ms", "payload"))
             for _ in range(3)]
    check(f"{db}: three processes schedule the job",
          all(p.line.startswith("scheduling tick") for p in procs), [p.line for p in procs])
    time.sleep(4)
    results = [p.stop() for p in procs]
    check(f"{db}: each stops at TERM with exit 0", all(rc == 0 for rc, _ in results), results)
    got = keys(url, "tick")
    dup = {k: n for k, n in got.items() if n != 1}
    check(f"{db}: one row per slot ({len(got)} slots)", len(got) >= 3 and not dup,
          f"{len(got)} slots, duplicates: {dup}")
    slots = sorted(slot_of(k) for k in got)
    check(f"{db}: the slots run without a gap", slots == list(range(slots[0], slots[-1] + 1)),
          slots)
    return slots[-1]


def skipped_while_down(db, url, last):
    time.sleep(3)  # every process down: these slots are missed
    start = time.time()
    p = Scheduler(args(url, "tick", "--every", "1s", "--lead", "500ms", "payload"))
    time.sleep(2)
    p.stop()
    slots = sorted(slot_of(k) for k in keys(url, "tick") if slot_of(k) > last)
    check(f"{db}: skip publishes none of the slots missed while everything was down",
          slots and slots[0] > start and len(slots) == len(set(slots)),
          f"stopped after {last}, started at {start:.3f}: {slots}")


def caught_up(db, url):
    before = time.time()
    a = Scheduler(args(url, "hourly", "--every", "1h", "--missed", "catch-up", "payload"))
    b = Scheduler(args(url, "hourly", "--every", "1h", "--missed", "catch-up", "payload"))
    after = time.time()
    time.sleep(1)
    a.stop()
    b.stop()
    got = keys(url, "hourly")
    hours = {int(before) // 3600 * 3600, int(after) // 3600 * 3600}
    check(f"{db}: catch-up publishes the latest missed slot once between two processes",
          got and all(n == 1 for n in got.values()) and
          {slot_of(k) for k in got} <= hours and len(got) == len(hours), got)
    # The default policy publishes nothing for an hourly job until its next slot comes near.
    start = time.time()
    p = Scheduler(args(url, "hourly-skip", "--every", "1h", "payload"))
    time.sleep(1)
    p.stop()
    if 3600 - start % 3600 > 15:
        got = keys(url, "hourly-skip")
        check(f"{db}: skip publishes nothing of an hourly job mid-hour", not got, got)


def next_slots():
    r = subprocess.run([tabq, "schedule", "--next", "3", "--cron", "30 2 * * *", "--zone",
                        "Europe/Berlin", "--name", "nightly", "--after", "2027-03-26T12:00:00Z"],
                       capture_output=True, text=True, timeout=60)
    want = ("2027-03-27T01:30:00Z  nightly:2027-03-27T01:30Z\n"
            "2027-03-28T01:00:00Z  nightly:2027-03-28T01:00Z\n"
            "2027-03-29T00:30:00Z  nightly:2027-03-29T00:30Z\n")
    check("--next prints the slots over a clock change and their keys",
          r.returncode == 0 and r.stdout == want, r.stdout + r.stderr)
    r = subprocess.run([tabq, "schedule", "--next", "1", "--every", "1h", "--after", "3601",
                        "--json"], capture_output=True, text=True, timeout=60)
    check("--next --json", r.returncode == 0 and '"unix": 7200' in r.stdout, r.stdout + r.stderr)
    r = subprocess.run([tabq, "schedule", "--next", "1", "--cron", "* * * * 8"],
                       capture_output=True, text=True, timeout=60)
    check("--next refuses a bad expression with its position", r.returncode == 2 and
          "field 5 (day of week), position 9: 8 is out of 0-7" in r.stderr, r.stderr)


def from_the_file(db, url):
    argv = [tabq, "schedule", "--url", url, "--table", desc]
    procs = [Scheduler(argv) for _ in range(2)]
    check(f"{db}: the file's schedule runs in two processes",
          all(p.line.startswith("scheduling filetick (every 1s) into sched_jobs")
              for p in procs), [p.line for p in procs])
    time.sleep(3)
    results = [p.stop() for p in procs]
    got = keys(url, "filetick")
    payloads = rows(url, 1, "SELECT DISTINCT payload FROM sched_jobs WHERE slot_key LIKE "
                            "'filetick:%'")
    check(f"{db}: the file's schedule writes one row per slot, its payload the file's",
          all(rc == 0 for rc, _ in results) and len(got) >= 2 and
          all(n == 1 for n in got.values()) and payloads == [["from the file"]],
          f"{results} {got} {payloads}")


def main():
    next_slots()
    for db, url in urls.items():
        sql(url, DDL[db])
        refusals(db, url)
        last = side_by_side(db, url)
        skipped_while_down(db, url, last)
        caught_up(db, url)
        from_the_file(db, url)
    check.finish("schedule across processes")


if __name__ == "__main__":
    main()
