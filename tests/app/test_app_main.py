#!/usr/bin/env python3
"""tabq_app_main as a service's main(): app_service (a real process) run on SQLite, PostgreSQL and
MariaDB: it drains its jobs and stops, a SIGTERM lets the deliveries in work settle and exits 0,
--workers reaches the subscription, --check, --print-schema and --asyncapi print and exit, and
what it refuses (an unbound handler, an unknown option,
an unreachable database) ends in one line on stderr and exit 2, never a hang.

usage: test_app_main.py APP_SERVICE DESCRIPTION_FILE"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402

service, description = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="tabq-app-main.")
DDL = {
    "sqlite": "CREATE TABLE IF NOT EXISTS app_jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
              " attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL);"
              "DELETE FROM app_jobs",
    "postgres": "DROP TABLE IF EXISTS app_jobs;"
                "CREATE TABLE app_jobs (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL,"
                " attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, payload BYTEA NOT NULL)",
    "mysql": "DROP TABLE IF EXISTS app_jobs;"
             "CREATE TABLE app_jobs (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT NULL,"
             " attempt INT NOT NULL DEFAULT 1, locked_until DATETIME NULL, payload MEDIUMBLOB NOT NULL)"
             " ENGINE=InnoDB",
}
urls = database_urls(f"{work}/app.db")

check = Checks()


def run(args, db=None, env=None, timeout=60):
    e = dict(os.environ, **(env or {}))
    e.pop("TABQ_URL", None)
    if db:
        e["APP_DDL"] = DDL[db]
    return subprocess.run([service, description] + args, capture_output=True, text=True,
                          env=e, timeout=timeout)


def summary(out):
    line = [l for l in out.splitlines() if l.startswith("handled ")]
    if not line:
        return None
    w = line[-1].split()
    return int(w[1]), int(w[3]), int(w[5])


for db, url in urls.items():
    r = run(["--url", url, "20"], db)
    check(f"{db}: the service drains its 20 jobs and stops, exit 0",
          r.returncode == 0 and summary(r.stdout) == (20, 0, summary(r.stdout)[2] if summary(r.stdout) else -1),
          f"exit {r.returncode}\n{r.stdout}{r.stderr}")

    r = run(["--url", url, "--workers", "3", "9"], db, {"SLOW_MS": "150"})
    s = summary(r.stdout)
    check(f"{db}: --workers 3 runs three handlers at once (the file says 2)",
          r.returncode == 0 and s is not None and s[0] == 9 and s[2] == 3,
          f"exit {r.returncode}\n{r.stdout}{r.stderr}")

    # SIGTERM while handlers work: they settle, the rest stays, exit 0.
    e = dict(os.environ, APP_DDL=DDL[db], SLOW_MS="400")
    e.pop("TABQ_URL", None)
    p = subprocess.Popen([service, description, "--url", url, "--log-level", "info", "10", "wait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    assert p.stdout.readline().strip() == "running"
    time.sleep(0.6)
    p.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    took = time.monotonic() - t0
    s = summary(out)
    check(f"{db}: SIGTERM lets the deliveries in work settle and exits 0",
          p.returncode == 0 and s is not None and s[0] >= 2 and s[0] + s[1] == 10 and took < 10
          and "letting deliveries in work settle" in err,
          f"exit {p.returncode} after {took:.1f} s\n{out}{err}")

    r = run(["--url", url, "3"], db, {"UNBOUND": "1"})
    check(f"{db}: a handler the service did not bind: exit 2, naming it",
          r.returncode == 2 and "bind 'work'" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"exit {r.returncode}\n{r.stderr}")

# A table's retention (docs/retention.md): the run prunes the finished rows the acks mark, and a
# description naming a processed_at column the table lacks ends the run: exit 2, naming it.
RETAINED_DDL = {
    "sqlite": "DROP TABLE IF EXISTS app_jobs;" + DDL["sqlite"].replace("payload BLOB", "done_at TEXT, payload BLOB"),
    "postgres": DDL["postgres"].replace("payload BYTEA", "done_at TIMESTAMPTZ, payload BYTEA"),
    "mysql": DDL["mysql"].replace("payload MEDIUMBLOB", "done_at DATETIME(6) NULL, payload MEDIUMBLOB"),
}
with open(description) as f:
    app_doc = json.load(f)
app_doc["tables"][0]["processed_at"] = "done_at"
app_doc["tables"][0]["retention"] = {"processed_age_ms": 100, "interval_ms": 50, "batch": 7}
retained = os.path.join(work, "retained.tabq.json")
with open(retained, "w") as f:
    json.dump(app_doc, f)
app_doc["tables"][0]["processed_at"] = "finished_at"
wrong = os.path.join(work, "retained-wrong.tabq.json")
with open(wrong, "w") as f:
    json.dump(app_doc, f)
for db, url in urls.items():
    e = dict(os.environ, APP_DDL=RETAINED_DDL[db])
    e.pop("TABQ_URL", None)
    r = subprocess.run([service, retained, "--url", url, "20", "pruned"], capture_output=True,
                       text=True, env=e, timeout=60)
    check(f"{db}: the file's retention prunes the 20 finished rows, exit 0",
          r.returncode == 0 and (summary(r.stdout) or (0, -1))[:2] == (20, 0),
          f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    r = subprocess.run([service, wrong, "--url", url, "3"], capture_output=True, text=True,
                       env=e, timeout=60)
    check(f"{db}: a retained table without its processed_at column: exit 2, naming it",
          r.returncode == 2 and "finished_at" in r.stderr
          and len(r.stderr.splitlines()) == 1, f"exit {r.returncode}\n{r.stdout}{r.stderr}")

# The one-shot modes. The table exists (the runs above made it, without a claim-order index).
broken = os.path.join(work, "broken.tabq.json")
with open(description) as f:
    text = f.read()
with open(broken, "w") as f:
    f.write(text.replace('"payload": "payload"', '"payload": "body"'))
for db, url in urls.items():
    r = run(["--url", url, "--print-schema"])
    check(f"{db}: --print-schema prints the table and its claim-order index, exit 0",
          r.returncode == 0 and "CREATE TABLE" in r.stdout and "app_jobs_claim" in r.stdout,
          f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    r = run(["--url", url, "--check"])
    check(f"{db}: --check on the table: no error, the missing index a warning, exit 0",
          r.returncode == 0 and " 0 errors" in r.stdout and "claim-order index" in r.stdout,
          f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    r = subprocess.run([service, broken, "--url", url, "--check"], capture_output=True,
                       text=True, timeout=60)
    check(f"{db}: --check on a description naming a column the table lacks: exit 1, naming it",
          r.returncode == 1 and "error" in r.stdout and "body" in r.stdout,
          f"exit {r.returncode}\n{r.stdout}{r.stderr}")

r = run(["--asyncapi", "--url", "postgres://svc:secret@127.0.0.1:5432/jobs?password=other"])
try:
    doc = json.loads(r.stdout)
except ValueError:
    doc = {}
check("--asyncapi: a document of the app with the URL as its server, no password, exit 0",
      r.returncode == 0 and doc.get("asyncapi", "").startswith("3.") and "secret" not in r.stdout
      and "other" not in r.stdout and len(doc.get("servers", {})) == 1, r.stdout + r.stderr)
r = run(["--asyncapi"])
check("--asyncapi without a URL: a document without servers, exit 0",
      r.returncode == 0 and json.loads(r.stdout or "{}").get("servers", {}) == {},
      r.stdout + r.stderr)
r = run(["--check", "--print-schema", "--url", urls["sqlite"]])
check("--check with --print-schema: exit 2, one at a time", r.returncode == 2
      and "one at a time" in r.stderr, r.stderr)
r = run(["--check"])
check("--check without a URL: exit 2 saying so", r.returncode == 2 and "TABQ_URL" in r.stderr,
      r.stderr)

unreachable = {
    "postgres": "postgres://tabq:secret@127.0.0.1:1/nothing?connect_timeout=3",
    "mysql": "mysql://tabq:secret@127.0.0.1:1/nothing",
    "sqlite": f"sqlite:{work}/no/such/folder/app.db",
}
for db, url in unreachable.items():
    t0 = time.monotonic()
    r = run(["--url", url, "1"], timeout=30)
    took = time.monotonic() - t0
    check(f"{db}: a database that cannot be reached: one line on stderr, exit 2, in {took:.1f} s",
          r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "connecting" in r.stderr
          and "secret" not in r.stderr and took < 15,
          f"exit {r.returncode}\n{r.stderr}")

r = run(["1"])
check("no URL and no TABQ_URL: exit 2 saying so", r.returncode == 2 and "TABQ_URL" in r.stderr,
      r.stderr)
r = run(["--bogus"])
check("an unknown option: exit 2 naming it", r.returncode == 2 and "--bogus" in r.stderr, r.stderr)
r = run(["--workers", "0"])
check("--workers 0: exit 2", r.returncode == 2 and "--workers" in r.stderr, r.stderr)
r = run(["--help"])
check("--help: the manual, exit 0",
      r.returncode == 0 and "SYNOPSIS" in r.stdout and "EXIT STATUS" in r.stdout
      and "the service tabq_app_main's test runs" in r.stdout, r.stdout + r.stderr)
r = run(["--version"])
check("--version: the app's version and tabq's", r.returncode == 0 and
      r.stdout.startswith("app-main-test 0.1.0 (tabq "), r.stdout)

check.finish("app_main")
