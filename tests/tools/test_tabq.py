#!/usr/bin/env python3
"""The tabq command, run as a process on SQLite, PostgreSQL and MariaDB: every subcommand's
output (text and --json) checked against the rows it reads or writes, and what each refuses:
an unreachable database or a wrong password (one line on stderr, exit 2, never a hang), a table
whose columns do not match its description (requeue and purge change nothing), bad options.

usage: test_tabq.py TABQ SQL_RUN DESCRIPTION_FILE"""
import fcntl
import json
import os
import pty
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402

tabq, sql_run, desc = sys.argv[1], sys.argv[2], sys.argv[3]
work = tempfile.mkdtemp(prefix="tabq-command.")
DDL = {
    "sqlite": "DROP TABLE IF EXISTS tq_jobs; DROP TABLE IF EXISTS tq_jobs_dead;"
              "CREATE TABLE tq_jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
              " priority INTEGER NOT NULL DEFAULT 0, retry_after TEXT,"
              " attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT,"
              " headers TEXT, payload BLOB NOT NULL);"
              "CREATE INDEX tq_claim ON tq_jobs (queue, priority, retry_after, id);"
              "CREATE TABLE tq_jobs_dead (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
              " priority INTEGER NOT NULL DEFAULT 0, retry_after TEXT,"
              " attempt INTEGER NOT NULL DEFAULT 1, processed_at TEXT, locked_until TEXT,"
              " headers TEXT, payload BLOB NOT NULL)",
    "postgres": "DROP TABLE IF EXISTS tq_jobs, tq_jobs_dead;"
                "CREATE TABLE tq_jobs (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL,"
                " priority INTEGER NOT NULL DEFAULT 0, retry_after TIMESTAMPTZ,"
                " attempt INTEGER NOT NULL DEFAULT 1, processed_at TIMESTAMPTZ,"
                " locked_until TIMESTAMPTZ, headers JSONB, payload BYTEA NOT NULL);"
                "CREATE INDEX tq_claim ON tq_jobs (queue, priority, retry_after, id);"
                "CREATE TABLE tq_jobs_dead (LIKE tq_jobs INCLUDING DEFAULTS)",
    "mysql": "DROP TABLE IF EXISTS tq_jobs, tq_jobs_dead;"
             "CREATE TABLE tq_jobs (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
             " queue VARCHAR(191) NOT NULL, priority INT NOT NULL DEFAULT 0,"
             " retry_after DATETIME(6) NULL, attempt INT NOT NULL DEFAULT 1,"
             " processed_at DATETIME(6) NULL, locked_until DATETIME NULL, headers JSON NULL,"
             " payload MEDIUMBLOB NOT NULL, INDEX tq_claim (queue, priority, retry_after, id))"
             " ENGINE=InnoDB;"
             "CREATE TABLE tq_jobs_dead LIKE tq_jobs",
}
urls = database_urls(f"{work}/jobs.db")

check = Checks()


def run(*args, stdin=None, env=None, timeout=60):
    e = dict(os.environ)
    e.pop("TABQ_URL", None)
    e.update(env or {})
    return subprocess.run([tabq] + list(args), capture_output=True, text=True, env=e,
                          timeout=timeout, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def on_terminal(args, answer=None, timeout=30):
    """Runs tabq with stdin and stderr on a pseudo-terminal that is its controlling terminal
    (where the progress line and the confirmation go), stdout piped. Writes `answer` once the
    prompt shows. Returns (exit status, what the terminal showed, stdout)."""
    master, slave = pty.openpty()
    e = dict(os.environ)
    e.pop("TABQ_URL", None)
    p = subprocess.Popen([tabq] + list(args), stdin=slave, stdout=subprocess.PIPE, stderr=slave,
                         env=e, start_new_session=True,
                         preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    shown, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and b"[y/N]" in shown:
                os.write(master, answer.encode())
                answer = None
        elif p.poll() is not None:
            break
    out = p.stdout.read().decode()
    p.wait(timeout=timeout)
    os.close(master)
    return p.returncode, shown.decode(errors="replace"), out


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


def show(r):
    return f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"


def as_json(r):
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def one_line_exit_2(name, r):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(name, r.returncode == 2 and len(lines) == 1 and r.stderr.startswith("tabq "),
          show(r))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- Every subcommand: its manual page, exit 0 --------------------------------------------
commands = ["schema", "check", "plugins", "publish", "stats", "requeue", "purge", "cancel",
            "asyncapi", "web"]
r = run("--help")
check("tabq --help lists every subcommand and the exit codes",
      r.returncode == 0 and all(c in r.stdout for c in commands) and "EXIT STATUS" in r.stdout,
      show(r))
for c in commands:
    r = run(c, "--help")
    check(f"tabq {c} --help is a manual page",
          r.returncode == 0 and all(h in r.stdout for h in
                                    ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "--json",
                                     "EXIT STATUS")), show(r))
    r = run(c, "--no-such-option")
    one_line_exit_2(f"tabq {c}: an unknown option, exit 2", r)
r = run("frobnicate")
check("an unknown subcommand: exit 2", r.returncode == 2 and "frobnicate" in r.stderr, show(r))

# ---- plugins -------------------------------------------------------------------------------
r = run("plugins", "--json")
doc = as_json(r)
check("plugins --json: every built dialect loads, none refused, exit 0",
      r.returncode == 0 and doc and
      {p["name"] for p in doc["plugins"] if p["loaded"]} >= {"sqlite", "postgres", "mysql"},
      show(r))
schemes = {s["scheme"]: s for s in (doc or {}).get("schemes", [])}
for db, url in urls.items():
    scheme = url.split(":")[0]
    p = [p for p in (doc or {}).get("plugins", []) if scheme in p["schemes"]]
    forms = "lease advisory" if db == "sqlite" else "rowlock lease advisory"
    check(f"plugins: {db}'s scheme '{scheme}' is won by a loaded plugin of ABI 1.x serving "
          f"{forms}",
          scheme in schemes and schemes[scheme].get("file") and p and p[0]["loaded"] and
          p[0]["abi"].startswith("1.") and p[0]["forms"] == forms,
          json.dumps(doc, indent=1)[:2000])
r = run("plugins")
check("plugins: the text names the folders, each plugin and its ABI",
      r.returncode == 0 and "folders searched" in r.stdout and "ABI" in r.stdout and
      "schemes:" in r.stdout, show(r))
# A second folder first in the search order with a copy of the sqlite plugin: it wins the
# scheme, the installed one is shadowed.
installed = [p for p in doc["plugins"] if p["name"] == "sqlite"][0]
first = os.path.join(work, "first")
os.mkdir(first, 0o755)
shutil.copy(installed["file"], first)
shutil.copy(installed["manifest"], first)
r = run("plugins", "--json", env={"TABQ_PLUGIN_PATH": first})
d2 = as_json(r) or {}
s2 = {s["scheme"]: s for s in d2.get("schemes", [])}.get("sqlite", {})
check("plugins: a copy earlier in TABQ_PLUGIN_PATH wins sqlite: and shadows the installed file",
      r.returncode == 0 and s2.get("file", "").startswith(first) and
      s2.get("shadows") == [installed["file"]], show(r))
r = run("plugins", env={"TABQ_PLUGIN_PATH": first})
check("plugins: the text says which file it shadows",
      "shadows " + installed["file"] in r.stdout, show(r))
os.remove(os.path.join(first, os.path.basename(installed["file"])))
r = run("plugins", "--no-load", env={"TABQ_PLUGIN_PATH": first})
check("plugins: a manifest naming a missing file is shown missing, exit 1",
      r.returncode == 1 and "(missing)" in r.stdout, show(r))
r = run("plugins", env={"TABQ_PLUGIN_PATH": "relative/dir"})
one_line_exit_2("plugins: a relative TABQ_PLUGIN_PATH is refused in one line, exit 2", r)

# ---- Per database --------------------------------------------------------------------------
for db, url in urls.items():
    # schema and check, from no table at all: the check fails, the schema makes it pass.
    sql(url, "DROP TABLE IF EXISTS tq_jobs_dead; DROP TABLE IF EXISTS tq_jobs")
    base = ["--url", url, "--table", desc]
    r = run("check", *base)
    check(f"{db}: check before the tables exist: errors naming tq_jobs, no index warning, exit 1",
          r.returncode == 1 and "error   tq_jobs:" in r.stdout and " 0 ok, 0 warnings," in r.stdout,
          show(r))
    r = run("schema", *base)
    check(f"{db}: schema prints the table, its index and the dead letter table, creates nothing",
          r.returncode == 0 and "CREATE TABLE" in r.stdout and "tq_jobs_claim" in r.stdout
          and "tq_jobs_dead" in r.stdout and run("check", *base).returncode == 1, show(r))
    r = run("schema", *base, "--json")
    check(f"{db}: schema --json: the dialect and the text", (as_json(r) or {}).get("dialect")
          in ("sqlite", "postgres", "mysql") and "CREATE" in (as_json(r) or {}).get("sql", ""),
          show(r))
    r = run("schema", *base, "--apply")
    check(f"{db}: schema --apply creates them", r.returncode == 0 and "applied" in r.stdout,
          show(r))
    r = run("check", *base, "--json")
    doc = as_json(r) or {}
    check(f"{db}: check on the schema it rendered: every statement ok, no warning, exit 0",
          r.returncode == 0 and doc.get("worst") == "ok" and len(doc.get("items", [])) > 10,
          show(r))
    r = run("schema", *base, "--apply")
    check(f"{db}: schema --apply again: the database refuses, exit 1, one line",
          r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "schema" in r.stderr,
          show(r))
    r = run("schema", *base, "--apply", "--if-not-exists")
    check(f"{db}: schema --apply --if-not-exists again: exit 0", r.returncode == 0, show(r))
    r = run("check", "--url", url, "--table", desc, "--table", desc, "--all")
    check(f"{db}: check of two files lists every statement of both, exit 0",
          r.returncode == 0 and r.stdout.count("ok      tq_jobs: publish: insert\n") == 2,
          show(r))
    r = run("asyncapi", *base)
    doc = as_json(r) or {}
    proto = {"sqlite": "sqlite", "postgres": "postgresql", "mysql": "mysql"}[db]
    check(f"{db}: asyncapi: the app's document, the URL its one {proto} server, exit 0",
          r.returncode == 0 and doc.get("asyncapi") == "3.0.0" and
          [v.get("protocol") for v in doc.get("servers", {}).values()] == [proto] and
          {"work", "mail"} <= set(doc.get("channels", {})), show(r))
    sql(url, "ALTER TABLE tq_jobs RENAME COLUMN priority TO prio")
    r = run("check", *base)
    check(f"{db}: check on a table that lost a column: errors naming it, exit 1",
          r.returncode == 1 and "priority" in r.stdout and "error" in r.stdout, show(r))

    sql(url, DDL[db])
    pub = ["publish"] + base + ["--table-name", "tq_jobs"]

    # publish: an argument, a file, stdin; headers, delay, priority.
    r = run(*pub, "--queue", "work", "job 1", "--header", "trace=abc", "--header", "k=v")
    check(f"{db}: publish from an argument", r.returncode == 0 and "published 1 row" in r.stdout,
          show(r))
    path = os.path.join(work, "payload.bin")
    with open(path, "wb") as f:
        f.write(b"job 2 from a file")
    r = run(*pub, "--queue", "work", "--file", path, "--priority", "-5", "--json")
    check(f"{db}: publish --file --json",
          r.returncode == 0 and (as_json(r) or {}).get("payload_bytes") == 17, show(r))
    r = run(*pub, "--queue", "work", stdin="job 3 from stdin")
    check(f"{db}: publish from stdin", r.returncode == 0, show(r))
    r = run(*pub, "--queue", "work", "--delay", "1h", "later")
    check(f"{db}: publish --delay 1h", r.returncode == 0, show(r))
    r = run(*pub, "--queue", "mail", "mail 1")
    check(f"{db}: publish into a second queue", r.returncode == 0, show(r))
    got = rows(url, 4, "SELECT id, queue, priority, payload FROM tq_jobs ORDER BY id")
    check(f"{db}: publish wrote the five rows, priority and payloads as given",
          [g[1:] for g in got] == [["work", "0", "job 1"], ["work", "-5", "job 2 from a file"],
                                   ["work", "0", "job 3 from stdin"], ["work", "0", "later"],
                                   ["mail", "0", "mail 1"]], got)
    hdr = rows(url, 1, "SELECT headers FROM tq_jobs WHERE id = 1")
    check(f"{db}: publish wrote the headers",
          hdr and json.loads(hdr[0][0]) == {"trace": "abc", "k": "v"}, hdr)
    late = rows(url, 1, "SELECT COUNT(*) FROM tq_jobs WHERE retry_after > "
                + {"sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now', '+50 minutes')",
                   "postgres": "now() + interval '50 minutes'",
                   "mysql": "UTC_TIMESTAMP(6) + INTERVAL 50 MINUTE"}[db])
    check(f"{db}: publish --delay 1h set retry_after an hour ahead", late == [["1"]], late)
    # publish refuses
    r = run(*pub, "job without a queue")
    one_line_exit_2(f"{db}: publish without --queue on a table with a group column: exit 2", r)
    r = run(*pub, "--queue", "work", "--priority", "high", "x")
    one_line_exit_2(f"{db}: publish --priority high: exit 2", r)
    r = run("publish", "--url", url, "--table", desc, "--queue", "work", "x")
    one_line_exit_2(f"{db}: publish to a two-table file without --table-name: exit 2", r)
    r = run(*pub, "--queue", "work", "--header", "novalue", "x")
    one_line_exit_2(f"{db}: publish --header without '=': exit 2", r)

    # publish --unique-key on a table the schema command made with its unique index.
    unique = os.path.join(work, "unique.tabq.json")
    with open(unique, "w") as f:
        json.dump({"name": "tq_unique", "id": {"column": "id", "generated": True},
                   "group": "queue", "processed_at": "processed_at",
                   "locked_until": "locked_until", "payload": "payload", "unique_key": "ukey"}, f)
    sql(url, "DROP TABLE IF EXISTS tq_unique")
    r = run("schema", "--url", url, "--table", unique, "--apply")
    check(f"{db}: schema --apply of a unique_key table", r.returncode == 0, show(r))
    upub = ["publish", "--url", url, "--table", unique, "--queue", "work"]
    r = run(*upub, "--unique-key", "report:7", "first")
    check(f"{db}: publish --unique-key: written, exit 0",
          r.returncode == 0 and "published 1 row" in r.stdout, show(r))
    r = run(*upub, "--unique-key", "report:7", "second", "--json")
    doc = as_json(r) or {}
    check(f"{db}: publish of a held key: nothing written, the holder named, exit 1",
          r.returncode == 1 and doc.get("published") == 0 and doc.get("duplicate_of") == 1
          and rows(url, 1, "SELECT count(*) FROM tq_unique") == [["1"]], show(r))
    sql(url, "DROP TABLE tq_unique")

    # Lay out every state: a dead letter in the group, a processed row long ago, a held lease,
    # a dead letter in the table.
    sql(url, "UPDATE tq_jobs SET queue = 'work.dead', attempt = 3 WHERE id = 1;"
             "UPDATE tq_jobs SET processed_at = '2020-01-01 00:00:00' WHERE id = 2;"
             "UPDATE tq_jobs SET locked_until = '2040-01-01 00:00:00', attempt = 2 WHERE id = 5;"
             "UPDATE tq_jobs SET retry_after = '2020-01-01 00:00:00' WHERE id = 3;"
             "INSERT INTO tq_jobs_dead (id, queue, attempt, retry_after, payload)"
             " VALUES (100, 'mail', 3, '2020-01-01 00:00:00', 'old mail')")

    # stats
    r = run("stats", *base, "--json")
    doc = as_json(r) or {}
    q = {x["queue"]: x for x in doc.get("queues", [])}
    w, m = q.get("work", {}), q.get("mail", {})
    check(f"{db}: stats work: 1 due, 1 delayed, 0 in work, 1 processed, 1 dead (group)",
          r.returncode == 0 and (w.get("due"), w.get("delayed"), w.get("in_work"),
                                 w.get("processed"), w.get("dead"), w.get("dead_in")) ==
          (1, 1, 0, 1, 1, "group work.dead"), show(r))
    check(f"{db}: stats mail: 0 due, 1 in work (a lease), 1 dead (table)",
          (m.get("due"), m.get("in_work"), m.get("dead"), m.get("dead_in")) ==
          (0, 1, 1, "table tq_jobs_dead"), show(r))
    check(f"{db}: stats: the oldest due row has waited since 2020, the attempts by count",
          (w.get("oldest_due_ms") or 0) > 5 * 365 * 86400 * 1000 and
          w.get("attempts") == {"1": 2} and m.get("attempts") == {"2": 1}, show(r))
    check(f"{db}: stats: the dead letter group is no queue of its own",
          "work.dead" not in q and len(q) == 2, show(r))
    r = run("stats", *base)
    check(f"{db}: stats as text, and no progress line when stderr is no terminal",
          r.returncode == 0 and "tq_jobs" in r.stdout and "work" in r.stdout and
          r.stderr == "", show(r))
    t0 = time.monotonic()
    r = run("stats", *base, "--watch", "0.3", "--rounds", "3", "--json")
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    check(f"{db}: stats --watch --rounds 3 --json: three documents, one a line",
          r.returncode == 0 and len(lines) == 3 and
          all(json.loads(l)["queues"] for l in lines) and time.monotonic() - t0 >= 0.6, show(r))

    # requeue
    before = rows(url, 4, "SELECT id, queue, attempt, payload FROM tq_jobs ORDER BY id")
    r = run("requeue", *base, "--dry-run", "--json")
    check(f"{db}: requeue --dry-run counts 2 and moves nothing",
          r.returncode == 0 and (as_json(r) or {}).get("would_move") == 2 and
          rows(url, 4, "SELECT id, queue, attempt, payload FROM tq_jobs ORDER BY id") == before,
          show(r))
    r = run("requeue", *base, "--queue", "nosuch")
    check(f"{db}: requeue --queue of no subscription: refused, exit 1",
          r.returncode == 1 and "nosuch" in r.stderr, show(r))
    # A table another version of the description describes: refused, nothing changed.
    sql(url, "ALTER TABLE tq_jobs RENAME COLUMN headers TO hdrs")
    r = run("requeue", *base)
    check(f"{db}: requeue on a table whose columns differ: refused naming the table, exit 1",
          r.returncode == 1 and "tq_jobs" in r.stderr and "SCHEMA" in r.stderr, show(r))
    r = run("purge", *base, "--older-than", "1d")
    check(f"{db}: purge on a table whose columns differ: refused, exit 1",
          r.returncode == 1 and "SCHEMA" in r.stderr, show(r))
    after = rows(url, 4, "SELECT id, queue, attempt, payload FROM tq_jobs ORDER BY id")
    check(f"{db}: ... and nothing changed", after == before, after)
    sql(url, "ALTER TABLE tq_jobs RENAME COLUMN hdrs TO headers")
    code, shown, out = on_terminal(["stats"] + base)
    check(f"{db}: stats on a terminal draws a progress line on stderr and clears it",
          code == 0 and "\r\x1b[Kcounting" in shown and shown.endswith("\r\x1b[K") and
          "work" in out, repr(shown))
    code, shown, out = on_terminal(["requeue"] + base + ["--queue", "work"], answer="n\n")
    check(f"{db}: requeue on a terminal asks with the count; 'n' moves nothing, exit 1",
          code == 1 and "move 1 dead letter back into work? [y/N]" in shown and
          "nothing moved" in shown and
          rows(url, 4, "SELECT id, queue, attempt, payload FROM tq_jobs ORDER BY id") == before,
          repr(shown))
    code, shown, out = on_terminal(["requeue"] + base + ["--queue", "work"], answer="y\n")
    check(f"{db}: requeue on a terminal, answered y: 1 moved back",
          code == 0 and "moved 1 dead letter back into work" in out, repr(shown) + out)
    sql(url, "UPDATE tq_jobs SET queue = 'work.dead', attempt = 3 WHERE id = 1")
    r = run("requeue", *base, "--queue", "work")
    check(f"{db}: requeue --queue work: 1 moved back", r.returncode == 0 and
          "moved 1 dead letter back into work" in r.stdout, show(r))
    r = run("requeue", *base, "--json", "--batch", "1")
    check(f"{db}: requeue the rest: 1 from the dead letter table",
          r.returncode == 0 and (as_json(r) or {}).get("moved") == 1, show(r))
    got = rows(url, 3, "SELECT id, queue, attempt FROM tq_jobs WHERE id IN (1, 100) ORDER BY id")
    left = rows(url, 1, "SELECT COUNT(*) FROM tq_jobs_dead")
    check(f"{db}: requeued rows are back in their queue at attempt 1, the dead table empty",
          got == [["1", "work", "1"], ["100", "mail", "1"]] and left == [["0"]], (got, left))
    r = run("stats", *base, "--json")
    q = {x["queue"]: x for x in (as_json(r) or {}).get("queues", [])}
    check(f"{db}: stats after requeue: no dead letters, work has 2 due",
          q.get("work", {}).get("dead") == 0 and q.get("work", {}).get("due") == 2 and
          q.get("mail", {}).get("dead") == 0, show(r))

    # purge
    sql(url, "UPDATE tq_jobs SET queue = 'work.dead', retry_after = '2020-01-01 00:00:00'"
             " WHERE id = 3;"
             "INSERT INTO tq_jobs_dead (id, queue, attempt, retry_after, payload)"
             " VALUES (101, 'mail', 3, '2020-01-01 00:00:00', 'old'),"
             " (102, 'mail', 3, '2039-01-01 00:00:00', 'new');"
             "UPDATE tq_jobs SET processed_at = '2039-01-01 00:00:00' WHERE id = 4")
    r = run("purge", *base, "--older-than", "1d", "--dry-run", "--json")
    d = as_json(r) or {}
    check(f"{db}: purge --dry-run: 1 processed row and 2 dead letters, nothing deleted",
          r.returncode == 0 and (d.get("processed"), d.get("dead_letters")) == (1, 2) and
          rows(url, 1, "SELECT COUNT(*) FROM tq_jobs") == [["6"]], show(r))
    r = run("purge", *base, "--older-than", "1d", "--batch", "1")
    check(f"{db}: purge --batch 1 deletes them one a transaction",
          r.returncode == 0 and "deleted 1 processed row and 2 dead letters" in r.stdout, show(r))
    got = rows(url, 1, "SELECT id FROM tq_jobs ORDER BY id")
    dead = rows(url, 1, "SELECT id FROM tq_jobs_dead ORDER BY id")
    check(f"{db}: purge kept what is newer and what is unfinished",
          [g[0] for g in got] == ["1", "4", "5", "100"] and dead == [["102"]], (got, dead))
    # cancel: a queued row finished, then not found (exit 3), nothing changed by a refusal
    sql(url, "INSERT INTO tq_jobs (id, queue, attempt, retry_after, payload)"
             " VALUES (200, 'work', 1, '2020-01-01 00:00:00', 'cancel me')")
    r = run("cancel", *base, "--in", "tq_jobs", "200")
    check(f"{db}: cancel finishes a queued row (processed_at set), exit 0",
          r.returncode == 0 and "cancelled row 200 of table tq_jobs" in r.stdout and
          rows(url, 1, "SELECT COUNT(*) FROM tq_jobs WHERE id = 200 AND processed_at IS NOT NULL")
          == [["1"]], show(r))
    before = rows(url, 2, "SELECT COUNT(*), COUNT(processed_at) FROM tq_jobs")
    r = run("cancel", *base, "--in", "tq_jobs", "200", "--json")
    check(f"{db}: cancel of a finished row: not found, exit 3, nothing changed",
          r.returncode == 3 and "NOT_FOUND" in r.stderr and
          rows(url, 2, "SELECT COUNT(*), COUNT(processed_at) FROM tq_jobs") == before, show(r))
    r = run("cancel", *base, "--in", "tq_jobs", "987654")
    check(f"{db}: cancel of an unknown id: exit 3", r.returncode == 3, show(r))
    r = run("cancel", *base, "200")
    one_line_exit_2(f"{db}: cancel without --in where the file has two tables: exit 2", r)
    r = run("cancel", *base, "--in", "tq_jobs", "twelve")
    one_line_exit_2(f"{db}: cancel of an id that is no integer: exit 2", r)
    sql(url, "DELETE FROM tq_jobs WHERE id = 200")
    # A row lock table without a group, processed_at or dead letter: what it cannot tell is
    # null, not a guess; purge finds nothing to delete, requeue nothing to move.
    sql(url, "DROP TABLE IF EXISTS tq_plain;"
             "CREATE TABLE tq_plain (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
             " payload " + {"sqlite": "BLOB", "postgres": "BYTEA", "mysql": "BLOB"}[db] +
             " NOT NULL);"
             "INSERT INTO tq_plain (id, attempt, payload) VALUES (1, 1, 'a'), (2, 4, 'b')")
    plain = os.path.join(work, "plain.json")
    with open(plain, "w") as f:
        json.dump({"name": "tq_plain", "id": "id", "attempt": "attempt", "payload": "payload"},
                  f)
    r = run("stats", "--url", url, "--table", plain, "--json")
    q = (as_json(r) or {}).get("queues", [{}])
    check(f"{db}: stats on a row lock table without a group: one line, unknowns null",
          r.returncode == 0 and len(q) == 1 and
          (q[0].get("queue"), q[0].get("due"), q[0].get("in_work"), q[0].get("processed"),
           q[0].get("dead"), q[0].get("attempts")) ==
          (None, 2, None, None, None, {"1": 1, "4": 1}), show(r))
    r = run("purge", "--url", url, "--table", plain, "--older-than", "0s", "--json")
    check(f"{db}: purge on a table without processed_at deletes nothing",
          r.returncode == 0 and (as_json(r) or {}).get("processed") == 0 and
          rows(url, 1, "SELECT COUNT(*) FROM tq_plain") == [["2"]], show(r))
    r = run("requeue", "--url", url, "--table", plain)
    check(f"{db}: requeue with no dead letter anywhere: refused, exit 1",
          r.returncode == 1 and "dead letter" in r.stderr, show(r))

    r = run("purge", *base)
    one_line_exit_2(f"{db}: purge without --older-than: exit 2", r)
    r = run("purge", *base, "--older-than", "soon")
    one_line_exit_2(f"{db}: purge --older-than soon: exit 2", r)

# ---- Unreachable databases and wrong passwords: one line, exit 2, never a hang -------------
port = free_port()
bad = {
    "postgres (nobody listens)": f"postgres://tabq@127.0.0.1:{port}/tabq_test",
    "mysql (nobody listens)": f"mysql://tabq:tabq@127.0.0.1:{port}/tabq_test",
    "sqlite (no such folder)": f"sqlite:{work}/no/such/folder/jobs.db",
    "mysql (wrong password)": urls["mysql"].replace("tabq:tabq@", "tabq:wrong@"),
    # The test server trusts loopback connections, so a password is never asked: a user that
    # does not exist is refused at the same step.
    "postgres (no such user)": urls["postgres"].replace("tabq@", "nosuchuser@"),
}
for what, url in bad.items():
    for c in ("schema", "check", "publish", "stats", "requeue", "purge"):
        args = {"publish": ["--table-name", "tq_jobs", "--queue", "work", "x"],
                "purge": ["--older-than", "1d"]}.get(c, [])
        t0 = time.monotonic()
        r = run(c, "--url", url, "--table", desc, *args, timeout=30)
        one_line_exit_2(f"{c} on {what}: one line, exit 2 "
                        f"({time.monotonic() - t0:.1f}s)", r)
r = run("stats", "--table", desc)
one_line_exit_2("stats with no --url and no TABQ_URL: exit 2", r)
r = run("asyncapi", "--table", desc, env={"TABQ_URL": "postgres://svc:hunter2@127.0.0.1:1/db"})
check("asyncapi takes TABQ_URL as its server, never its password, and connects to nothing",
      r.returncode == 0 and "127.0.0.1:1" in r.stdout and "hunter2" not in r.stdout
      and "svc" not in r.stdout, show(r))
r = run("asyncapi", "--table", desc, "--url", "postgres://svc:hunter2@[::1/db")
one_line_exit_2("asyncapi with a URL that does not parse: exit 2", r)
check("... and the line does not repeat its password", "hunter2" not in r.stderr, show(r))
r = run("stats", "--table", desc, env={"TABQ_URL": urls["sqlite"]})
check("stats takes TABQ_URL when --url is not given", r.returncode == 0, show(r))
r = run("stats", "--url", urls["sqlite"], "--table", os.path.join(work, "nosuch.json"))
one_line_exit_2("stats on a description file that is not there: exit 2", r)

shutil.rmtree(work, ignore_errors=True)
check.finish("tabq")
