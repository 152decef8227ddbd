#!/usr/bin/env python3
"""The dashboard (tabq web, tabq_web_listen) on SQLite, PostgreSQL and MariaDB: a headless
Chromium (cdp.py) opens the page, the figures it renders are compared with counts made by SQL
directly, a queue's rows are listed, its requeue button is pressed and the rows are checked in
the database; a screenshot is saved. Over plain HTTP: a POST without or with a wrong CSRF token
is 403 and changes no row, a Host that is not loopback is 403; the command refuses a non-loopback
address without --allow-remote, --allow-remote without credentials, and an address in use; and a
page asked for while the broker shuts down is 503. Only loopback addresses are used.

usage: test_web.py TABQ SQL_RUN DESCRIPTION LISTEN_SERVICE METRICS_DESCRIPTION WORKDIR"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
from cdp import Browser  # noqa: E402

tabq, sql_run, desc, listen_service, metrics_desc, workdir = sys.argv[1:7]
os.makedirs(workdir, exist_ok=True)
work = tempfile.mkdtemp(prefix="tabq-web.", dir=workdir)
urls = database_urls(f"{work}/web.db")
check = Checks()

PAST, FUTURE, CUT = "2020-01-01 00:00:00", "2040-01-01 00:00:00", "2030-01-01 00:00:00"


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


def scalar(url, text):
    return int(rows(url, 1, text)[0][0])


def counts(url, queue, dead_where):
    """What the dashboard should show for a queue, counted by SQL directly (every time in the
    rows is 2020 or 2040, so 2030 stands for now)."""
    base = f"FROM web_jobs WHERE queue = '{queue}' AND processed_at IS NULL"
    return {
        "due": scalar(url, f"SELECT COUNT(*) {base} AND (retry_after IS NULL OR retry_after <= "
                           f"'{CUT}') AND (locked_until IS NULL OR locked_until <= '{CUT}')"),
        "delayed": scalar(url, f"SELECT COUNT(*) {base} AND retry_after > '{CUT}' AND "
                               f"(locked_until IS NULL OR locked_until <= '{CUT}')"),
        "in_work": scalar(url, f"SELECT COUNT(*) {base} AND locked_until > '{CUT}'"),
        "processed": scalar(url, f"SELECT COUNT(*) FROM web_jobs WHERE queue = '{queue}' "
                                 "AND processed_at IS NOT NULL"),
        "dead": scalar(url, f"SELECT COUNT(*) {dead_where}"),
    }


def lay_out(url):
    """work: 5 due, 2 delayed, 2 in work, 3 processed, 3 dead letters in its group; mail: 2 due
    and 2 dead letters in the dead letter table."""
    sql(url, "DROP TABLE IF EXISTS web_jobs_dead; DROP TABLE IF EXISTS web_jobs")
    r = run_tabq("schema", "--url", url, "--table", desc, "--apply")
    if r.returncode:
        sys.exit(f"tabq schema --apply: {r.stderr}")
    values = []
    for i in range(5):
        values.append(f"('work', {i % 2}, '{PAST}', {1 + i % 3}, NULL, NULL, 'due job {i}')")
    for i in range(2):
        values.append(f"('work', 0, '{FUTURE}', 2, NULL, NULL, 'delayed job {i}')")
    for i in range(2):
        values.append(f"('work', 0, '{PAST}', 2, NULL, '{FUTURE}', 'job in work {i}')")
    for i in range(3):
        values.append(f"('work', 0, '{PAST}', 1, '{PAST}', NULL, 'done job {i}')")
    for i in range(3):
        values.append(f"('work.dead', 0, '{PAST}', 3, NULL, NULL, 'dead job {i}')")
    for i in range(2):
        values.append(f"('mail', 0, '{PAST}', 1, NULL, NULL, 'mail {i}')")
    sql(url, "INSERT INTO web_jobs (queue, priority, retry_after, attempt, processed_at,"
             " locked_until, payload) VALUES " + ", ".join(values) + ";"
             "INSERT INTO web_jobs_dead (id, queue, priority, retry_after, attempt, payload)"
             f" VALUES (900, 'mail', 0, '{PAST}', 3, 'dead mail 0'),"
             f" (901, 'mail', 0, '{PAST}', 3, 'dead mail 1')")


def run_tabq(*args, timeout=60):
    env = dict(os.environ)
    env.pop("TABQ_URL", None)
    return subprocess.run([tabq] + list(args), capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL)


class Web:
    """tabq web as a process; its first line says where it serves."""

    def __init__(self, url, *extra):
        env = dict(os.environ)
        env.pop("TABQ_URL", None)
        self.p = subprocess.Popen([tabq, "web", "--url", url, "--table", desc, *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env, stdin=subprocess.DEVNULL)
        self.line = self.p.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:(\d+)/)", self.line)
        self.base, self.port = (m.group(1), int(m.group(2))) if m else (None, None)

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        code = self.p.wait(timeout=30)
        return code, time.monotonic() - t0, self.p.stderr.read()


def http(base, path, data=None, headers=None):
    req = urllib.request.Request(base + path.lstrip("/"), headers=headers or {},
                                 data=None if data is None else
                                 urllib.parse.urlencode(data).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


# What the page shows: every queue row's cells by their data-field.
READ_QUEUES = """JSON.stringify([...document.querySelectorAll('#queues tbody tr')].map(tr => {
  const o = {table: tr.dataset.table, queue: tr.dataset.queue};
  tr.querySelectorAll('td[data-field]').forEach(td => o[td.dataset.field] = td.textContent);
  return o;
}))"""


def page_queues(browser):
    return {q["queue"]: q for q in json.loads(browser.eval(READ_QUEUES) or "[]")}


def as_shown(n):
    return str(n)


try:
    browser = Browser(os.path.join(workdir, "chromium"))
except Exception as e:  # noqa: BLE001 - said as a failed check
    browser = None
    check("chromium starts headless and answers on its DevTools port", False, e)

for db, url in urls.items():
    lay_out(url)
    dead_group = "FROM web_jobs WHERE queue = 'work.dead' AND processed_at IS NULL"
    dead_table = "FROM web_jobs_dead WHERE queue = 'mail'"
    web = Web(url, "--listen", "127.0.0.1:0")
    check(f"{db}: tabq web says where it serves", web.base is not None,
          web.line + (web.p.stderr.read() if web.base is None else ""))
    if web.base is None:
        continue
    want_work = counts(url, "work", dead_group)
    want_mail = counts(url, "mail", dead_table)
    check(f"{db}: the rows laid out are what the test counts",
          want_work == {"due": 5, "delayed": 2, "in_work": 2, "processed": 3, "dead": 3} and
          want_mail == {"due": 2, "delayed": 0, "in_work": 0, "processed": 0, "dead": 2},
          (want_work, want_mail))

    # ---- The page in a real browser -----------------------------------------------------------
    if browser:
        browser.navigate(web.base)
        ready = browser.wait_for("document.querySelectorAll('#queues tbody tr').length >= 2")
        shown = page_queues(browser)
        check(f"{db}: the page renders a line per queue", ready and set(shown) == {"work", "mail"},
              shown)
        for queue, want in (("work", want_work), ("mail", want_mail)):
            got = {k: shown.get(queue, {}).get(k) for k in want}
            check(f"{db}: the page's figures for {queue} are the database's "
                  f"(due {want['due']}, delayed {want['delayed']}, in work {want['in_work']}, "
                  f"processed {want['processed']}, dead {want['dead']})",
                  got == {k: as_shown(v) for k, v in want.items()}, (got, want))
        oldest = browser.eval("document.querySelector('tr[data-queue=work] "
                              "td[data-field=oldest_due]').dataset.ms")
        check(f"{db}: the oldest due row's age is shown (due since 2020)",
              oldest and int(oldest) > 5 * 365 * 86400 * 1000 and
              shown["work"]["oldest_due"].endswith("d"), (oldest, shown.get("work")))
        # The work queue's rows.
        browser.eval("document.querySelector('tr[data-queue=work]').click()")
        listed = browser.wait_for(
            "document.querySelectorAll('#rows-due tbody tr').length === 5 &&"
            " document.querySelectorAll('#rows-dead tbody tr').length === 3 &&"
            " document.querySelectorAll('#rows-in_work tbody tr').length === 2 &&"
            " JSON.stringify([...document.querySelectorAll('#rows-due tbody tr')]"
            ".map(tr => tr.dataset.id))")
        want_order = [r[0] for r in rows(
            url, 1, f"SELECT id FROM web_jobs WHERE queue = 'work' AND processed_at IS NULL AND "
                    f"retry_after <= '{CUT}' AND (locked_until IS NULL OR locked_until <= "
                    f"'{CUT}') ORDER BY priority, retry_after, id")]
        check(f"{db}: the queue's due rows are listed in claim order, its rows in work and its "
              "dead letters beside them", listed and json.loads(listed) == want_order,
              (listed, want_order))
        dead_ids = browser.eval("JSON.stringify([...document.querySelectorAll('#rows-dead tbody "
                                "tr')].map(tr => tr.dataset.id))")
        want_dead = [r[0] for r in rows(url, 1, f"SELECT id {dead_group} ORDER BY id")]
        check(f"{db}: the dead letters listed are the group's rows",
              json.loads(dead_ids or "[]") == want_dead, (dead_ids, want_dead))
        if db == "postgres" or (db == "sqlite" and not os.environ.get("TABQ_TEST_POSTGRES_URL")):
            path = os.path.join(workdir, "dashboard.png")
            browser.screenshot(path)
            with open(path, "rb") as f:
                png = f.read()
            check(f"{db}: a screenshot is saved ({path})",
                  png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, len(png))
        # Requeue: two clicks (the first asks), then the rows have moved in the database.
        before_due = want_work["due"]
        browser.eval("document.getElementById('requeue').click()")
        armed = browser.eval("document.getElementById('requeue').textContent")
        browser.eval("document.getElementById('requeue').click()")
        result = browser.wait_for("document.getElementById('action-result').textContent")
        after = counts(url, "work", dead_group)
        check(f"{db}: pressing requeue (and confirming) moves the 3 dead letters back: the "
              "database has 0 dead and 3 more due", "confirm" in (armed or "") and
              result == "moved 3 dead letters back into work" and after["dead"] == 0 and
              after["due"] == before_due + 3, (armed, result, after))
        back = rows(url, 2, "SELECT attempt, COUNT(*) FROM web_jobs WHERE queue = 'work' AND "
                            "payload LIKE 'dead job%' GROUP BY attempt")
        check(f"{db}: the requeued rows are due at attempt 1", back == [["1", "3"]], back)
        refreshed = browser.wait_for(
            "(() => { const tr = document.querySelector('tr[data-queue=work]');"
            " return tr && tr.querySelector('td[data-field=dead]').textContent === '0' &&"
            " tr.querySelector('td[data-field=due]').textContent; })()")
        check(f"{db}: the page shows the new figures live (dead 0, due {before_due + 3})",
              refreshed == str(before_due + 3), refreshed)

    # ---- Plain HTTP: the CSRF token, the Host, the methods ------------------------------------
    status, page = http(web.base, "/")
    token = re.search(r'name="tabq-csrf" content="([0-9a-f]{64})"', page)
    check(f"{db}: the page carries a 64-hex-digit CSRF token", status == 200 and token, status)
    token = token.group(1) if token else ""
    snapshot = rows(url, 3, "SELECT id, queue, attempt FROM web_jobs_dead ORDER BY id")
    for what, fields in (("without a CSRF token", {"queue": "mail"}),
                         ("with a wrong CSRF token", {"queue": "mail", "csrf": "0" * 64}),
                         ("with the token of another listener", {"queue": "mail",
                                                                 "csrf": token[::-1]})):
        status, body = http(web.base, "/api/requeue", data=fields)
        check(f"{db}: POST /api/requeue {what}: 403, nothing moved",
              status == 403 and "CSRF" in body and
              rows(url, 3, "SELECT id, queue, attempt FROM web_jobs_dead ORDER BY id") == snapshot,
              (status, body))
    processed = scalar(url, "SELECT COUNT(*) FROM web_jobs WHERE processed_at IS NOT NULL")
    status, body = http(web.base, "/api/purge", data={"older_than_s": "0"})
    check(f"{db}: POST /api/purge without a CSRF token: 403, nothing deleted",
          status == 403 and processed == scalar(
              url, "SELECT COUNT(*) FROM web_jobs WHERE processed_at IS NOT NULL"), (status, body))
    status, _ = http(web.base, "/api/requeue")
    check(f"{db}: GET /api/requeue: 405", status == 405, status)
    status, body = http(web.base, "/api/stats", headers={"Host": "rebind.example:80"})
    check(f"{db}: a Host that is not loopback: 403, no figures", status == 403 and
          "rebind.example" in body and "queues" not in body, (status, body))
    status, body = http(web.base, "/api/requeue", data={"queue": "mail", "csrf": token})
    moved = rows(url, 3, "SELECT id, queue, attempt FROM web_jobs WHERE id IN (900, 901)"
                         " ORDER BY id")
    check(f"{db}: POST /api/requeue with the token: the mail dead letters move back",
          status == 200 and json.loads(body).get("moved") == 2 and
          moved == [["900", "mail", "1"], ["901", "mail", "1"]] and
          scalar(url, "SELECT COUNT(*) FROM web_jobs_dead") == 0, (status, body, moved))
    status, body = http(web.base, "/api/purge", data={"older_than_s": "86400", "csrf": token})
    check(f"{db}: POST /api/purge with the token: the 3 finished rows of 2020 are deleted",
          status == 200 and json.loads(body).get("processed") == 3 and
          scalar(url, "SELECT COUNT(*) FROM web_jobs WHERE processed_at IS NOT NULL") == 0,
          (status, body))
    status, body = http(web.base, "/api/rows?table=web_jobs&queue=nosuch&kind=dead")
    check(f"{db}: rows of a queue without a dead letter: 400 naming it",
          status == 400 and "nosuch" in body, (status, body))
    status, body = http(web.base, "/metrics")
    check(f"{db}: /metrics beside the dashboard", status == 200 and "tabq_info" in body, status)

    # ---- The command's refusals -----------------------------------------------------------------
    if db == "sqlite":
        r = run_tabq("web", "--url", url, "--table", desc, "--listen", f"127.0.0.1:{web.port}")
        check("tabq web on an address in use: exit 2, one line naming it",
              r.returncode == 2 and f"127.0.0.1:{web.port}" in r.stderr and "in use" in r.stderr
              and len(r.stderr.splitlines()) == 1, (r.returncode, r.stderr))
        for address in ("0.0.0.0:8089", "[::]:8089", "192.0.2.1:8089"):
            r = run_tabq("web", "--url", url, "--table", desc, "--listen", address)
            check(f"tabq web --listen {address} without --allow-remote: exit 2, naming the "
                  "address and the flag", r.returncode == 2 and address in r.stderr and
                  "--allow-remote" in r.stderr, (r.returncode, r.stderr))
        r = run_tabq("web", "--url", url, "--table", desc, "--listen", "0.0.0.0:8089",
                     "--allow-remote")
        check("tabq web --allow-remote without --token or --user: exit 2, naming --token",
              r.returncode == 2 and "--token" in r.stderr, (r.returncode, r.stderr))
        r = run_tabq("web", "--url", url, "--table", desc, "--listen", "nonsense")
        check("tabq web --listen nonsense: exit 2, naming it",
              r.returncode == 2 and "nonsense" in r.stderr, (r.returncode, r.stderr))
        tok = Web(url, "--listen", "127.0.0.1:0", "--token", "s3cret")
        status, _ = http(tok.base, "/api/stats")
        status2, _ = http(tok.base, "/api/stats", headers={"Authorization": "Bearer s3cret"})
        check("tabq web --token: 401 without it, 200 with it", (status, status2) == (401, 200),
              (status, status2))
        tok.stop()
    code, took, err = web.stop()
    check(f"{db}: Ctrl-C stops tabq web, exit 0 ({took:.1f}s)", code == 0 and took < 10,
          (code, err))

if browser:
    browser.close()

# ---- A page asked for while the broker shuts down: 503 ------------------------------------------
svc = subprocess.Popen([listen_service, metrics_desc, urls["sqlite"].replace("web.db", "svc.db"),
                        "3", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, LISTEN_DDL="CREATE TABLE metrics_jobs (id INTEGER "
                                "PRIMARY KEY, queue TEXT NOT NULL, attempt INTEGER NOT NULL "
                                "DEFAULT 1, locked_until TEXT, retry_after TEXT, payload BLOB "
                                "NOT NULL)"))


def ask(line):
    svc.stdin.write(line + "\n")
    svc.stdin.flush()
    return svc.stdout.readline().strip()


first = svc.stdout.readline().strip()
answer = ask("web 127.0.0.1:0") if first == "drained" else first
port = int(answer.split()[1]) if answer.startswith("port ") else None
check("tabq_web_listen in a service listens", port is not None, answer + svc.stderr.read()
      if port is None else "")
if port:
    base = f"http://127.0.0.1:{port}/"
    status, page = http(base, "/")
    token = re.search(r'content="([0-9a-f]{64})"', page)
    check("the service's dashboard answers before shutdown", status == 200 and token, status)
    check("shutdown", ask("shutdown") == "shut down")
    for path, data in (("/", None), ("/api/stats", None), ("/metrics", None),
                       ("/api/requeue", {"csrf": token.group(1) if token else ""})):
        status, body = http(base, path, data=data)
        check(f"{'POST' if data else 'GET'} {path} while the broker shuts down: 503, one line",
              status == 503 and body.count("\n") == 1 and "shutting down" in body, (status, body))
check("the service stops its listener, then closes: exit 0",
      ask("quit") == "bye" and svc.wait(timeout=30) == 0, svc.stderr.read())

check.finish("web")
