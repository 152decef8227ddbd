#!/usr/bin/env python3
"""tabq pause and tabq resume as processes on SQLite, PostgreSQL and MariaDB, against a service
(app_service, run by tabq_app_main) whose description file carries the controls table: paused
before it starts, the service claims nothing of what it publishes; resumed, it drains. The rows
of the controls table are read directly; --show, --json, --controls given on the command line,
and what the command refuses (no controls table, one missing a column, a queue missing), each in
one line on stderr, exit 2, nothing changed.

usage: test_pause_cmd.py TABQ SQL_RUN APP_SERVICE DESCRIPTION_FILE"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402

tabq, sql_run, service, desc = sys.argv[1:5]
work = tempfile.mkdtemp(prefix="tabq-pause.")
TYPES = {  # id, text, time, payload
    "sqlite": ("INTEGER PRIMARY KEY", "TEXT", "TEXT", "BLOB"),
    "postgres": ("BIGSERIAL PRIMARY KEY", "TEXT", "TIMESTAMPTZ", "BYTEA"),
    "mysql": ("BIGINT AUTO_INCREMENT PRIMARY KEY", "VARCHAR(191)", "DATETIME(6) NULL",
              "MEDIUMBLOB"),
}
urls = database_urls(f"{work}/pause.db")
check = Checks()


def ddl(db):
    ident, text, time_, blob = TYPES[db]
    return ("DROP TABLE IF EXISTS pz_jobs; DROP TABLE IF EXISTS pz_controls;"
            " DROP TABLE IF EXISTS pz_bad_controls;"
            f"CREATE TABLE pz_jobs (id {ident}, queue {text} NOT NULL,"
            f" attempt INTEGER NOT NULL DEFAULT 1, locked_until {time_}, payload {blob} NOT NULL);"
            f"CREATE TABLE pz_controls (queue_table {text} NOT NULL, queue {text} NOT NULL,"
            f" paused INTEGER NOT NULL DEFAULT 0, paused_at {time_},"
            " PRIMARY KEY (queue_table, queue));"
            f"CREATE TABLE pz_bad_controls (queue_table {text} NOT NULL, queue {text} NOT NULL)")


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


def run(*args):
    e = dict(os.environ)
    e.pop("TABQ_URL", None)
    return subprocess.run([tabq] + list(args), capture_output=True, text=True, env=e, timeout=60,
                          stdin=subprocess.DEVNULL)


def show(r):
    return f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"


def one_line_exit_2(name, r, part):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(name, r.returncode == 2 and len(lines) == 1 and r.stderr.startswith("tabq ") and
          part in r.stderr, show(r))


def count(url):
    return int(rows(url, 1, "SELECT COUNT(*) FROM pz_jobs")[0][0])


def wait_count(url, want, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if count(url) == want:
            return True
        time.sleep(0.05)
    return count(url) == want


one_table = os.path.join(work, "one.json")
with open(one_table, "w") as f:
    json.dump({"name": "pz_jobs", "id": {"column": "id", "generated": True}, "group": "queue",
               "attempt": {"column": "attempt", "generated": True},
               "locked_until": "locked_until", "payload": "payload"}, f)

for db, url in urls.items():
    for stmt in ddl(db).split(";"):
        sql(url, stmt)
    base = ["--url", url, "--table", desc]
    controls = "SELECT queue_table, queue, paused FROM pz_controls"

    # Refusals first: nothing written.
    r = run("pause", "--url", url, "--table", one_table, "--queue", "work")
    one_line_exit_2(f"{db}: pause with no controls table anywhere: exit 2", r, "no controls table")
    r = run("pause", *base)
    one_line_exit_2(f"{db}: pause without --queue on a table with a group: exit 2", r,
                    "name the queue")
    r = run("pause", "--url", url, "--table", one_table, "--queue", "work", "--controls",
            "pz_bad_controls:queue_table,queue,paused")
    one_line_exit_2(f"{db}: a controls table without its paused column: exit 2", r,
                    "pz_bad_controls")
    r = run("pause", *base, "--queue", "work", "--controls", "pz_controls:queue_table")
    one_line_exit_2(f"{db}: --controls with too few columns: exit 2", r, "--controls")
    check(f"{db}: the refusals wrote nothing", rows(url, 3, controls) == [], rows(url, 3, controls))

    # Paused before the service starts: it claims none of its five jobs.
    r = run("pause", *base, "--queue", "work")
    check(f"{db}: pause writes the queue's row paused, exit 0",
          r.returncode == 0 and "queue work of table pz_jobs paused" in r.stdout and
          rows(url, 3, controls) == [["pz_jobs", "work", "1"]], show(r))
    e = dict(os.environ)
    e.pop("TABQ_URL", None)
    p = subprocess.Popen([service, desc, "--url", url, "5", "wait"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=e)
    started = p.stdout.readline().strip()
    time.sleep(1.0)  # ten of its poll intervals
    check(f"{db}: the paused service claimed none of its 5 jobs",
          started == "running" and count(url) == 5, (started, count(url)))
    r = run("resume", *base, "--queue", "work", "--show", "--json")
    check(f"{db}: --show --json tells paused and changes nothing",
          r.returncode == 0 and json.loads(r.stdout or "{}") ==
          {"table": "pz_jobs", "queue": "work", "paused": True} and count(url) == 5, show(r))

    # Resumed from the command line with the controls given by flags: it drains.
    r = run("resume", "--url", url, "--table", one_table, "--queue", "work", "--controls",
            "pz_controls")
    check(f"{db}: resume with --controls NAME writes the row running, exit 0",
          r.returncode == 0 and "queue work of table pz_jobs resumed" in r.stdout and
          rows(url, 3, controls) == [["pz_jobs", "work", "0"]] and
          rows(url, 1, "SELECT COUNT(*) FROM pz_controls WHERE paused_at IS NULL") == [["1"]],
          show(r))
    check(f"{db}: resumed, the service drains its jobs", wait_count(url, 0, 15), count(url))
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    check(f"{db}: the service handled 5 and exits 0",
          p.returncode == 0 and "handled 5 " in out, f"exit {p.returncode}\n{out}{err}")
    r = run("pause", *base, "--queue", "work", "--show")
    check(f"{db}: --show tells running", r.returncode == 0 and
          "queue work of table pz_jobs is running" in r.stdout, show(r))

check.finish("tabq pause")
