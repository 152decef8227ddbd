#!/usr/bin/env python3
"""tabq_metrics_listen: a service serving its metrics on an HTTP listener of tabq's own, scraped
over HTTP on SQLite, PostgreSQL and MariaDB and read by prometheus_client's parser; and what the
listener refuses: an address that is not loopback without allow_remote and credentials, a
missing or wrong token, an address in use, a Host header that is not loopback, a scrape once the
broker shuts down (503). Only loopback addresses are ever bound or connected to.

usage: test_metrics_listen.py LISTEN_SERVICE DESCRIPTION_FILE"""
import base64
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
from metrics_tables import DDL  # noqa: E402

service, description = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="tabq-metrics-listen.")
urls = database_urls(f"{work}/metrics.db")
check = Checks()
ACKS, FAILS = 6, 2


class Service:
    """listen_service as a process, one command a line, one answer a line."""

    def __init__(self, db, url):
        env = dict(os.environ, LISTEN_DDL=DDL[db])
        self.p = subprocess.Popen([service, description, url, str(ACKS), str(FAILS)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.first = self.p.stdout.readline().strip()

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def listen(self, what, args):
        answer = self.ask(f"{what} {args}")
        return int(answer.split()[1]) if answer.startswith("port ") else answer

    def quit(self):
        answer = self.ask("quit")
        self.p.wait(timeout=60)
        return answer, self.p.returncode, self.p.stderr.read()


def get(port, path, method="GET", headers=None, host="127.0.0.1", body=None):
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    out = (r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode())
    c.close()
    return out


def samples_of(text):
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    labels = dict({"table": "metrics_jobs", "queue": "work"}, **labels)
    return samples.get((name, tuple(sorted(labels.items()))))


for db, url in urls.items():
    s = Service(db, url)
    check(f"{db}: the service drains its rows", s.first == "drained",
          s.first + s.p.stderr.read() if s.first != "drained" else "")
    if s.first != "drained":
        continue
    port = s.listen("metrics", "127.0.0.1:0")
    check(f"{db}: tabq_metrics_listen on 127.0.0.1:0 picks a port", isinstance(port, int) and
          port > 0, port)
    if not isinstance(port, int):
        s.quit()
        continue
    status, headers, text = get(port, "/metrics")
    check(f"{db}: GET /metrics: 200, the exposition format's content type",
          status == 200 and headers.get("content-type") ==
          "text/plain; version=0.0.4; charset=utf-8", (status, headers))
    try:
        samples = samples_of(text)
    except Exception as e:  # the parser refuses what is not the format
        samples = {}
        check(f"{db}: the scrape parses", False, e)
    check(f"{db}: the scrape parses as Prometheus exposition, the drain's figures in it",
          value(samples, "tabq_claimed_total") == ACKS + 2 * FAILS and
          value(samples, "tabq_deliveries_total", outcome="dead_letter") == FAILS,
          (value(samples, "tabq_claimed_total"),
           value(samples, "tabq_deliveries_total", outcome="dead_letter"), text[:2000]))
    status, _, _ = get(port, "/metrics", method="HEAD")
    check(f"{db}: HEAD /metrics: 200", status == 200, status)
    if db != "sqlite":
        s.ask("shutdown")
        status, _, body = get(port, "/metrics")
        check(f"{db}: a scrape after the broker shut down: 503, one line",
              status == 503 and body.count("\n") == 1 and "shutting down" in body, (status, body))
        answer, code, err = s.quit()
        check(f"{db}: the listener stops, then the broker closes: exit 0",
              answer == "bye" and code == 0, (answer, code, err))
        continue

    # ---- What the listener refuses (the listener is the same on every database) -------------
    status, _, body = get(port, "/nothing")
    check("a path other than /metrics: 404", status == 404 and "/metrics" in body, (status, body))
    status, headers, _ = get(port, "/metrics", method="POST", body="x")
    check("POST /metrics: 405, Allow: GET, HEAD",
          status == 405 and headers.get("allow") == "GET, HEAD", (status, headers))
    status, _, body = get(port, "/metrics", headers={"Host": "attacker.example:80"})
    check("a Host that is not loopback (DNS rebinding): 403 naming it",
          status == 403 and "attacker.example" in body, (status, body))
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        status, _, _ = get(port, "/metrics", headers={"Host": host})
        check(f"Host {host}: 200", status == 200, status)
    answer = s.listen("metrics", f"127.0.0.1:{port}")
    check(f"the same address again: refused, IO, the message names 127.0.0.1:{port} in use",
          isinstance(answer, str) and answer.startswith("error IO") and
          f"127.0.0.1:{port}" in answer and "in use" in answer, answer)
    # Held by another process too.
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    busy = holder.getsockname()[1]
    answer = s.listen("metrics", f"127.0.0.1:{busy}")
    check("an address another process listens on: refused, IO, naming it",
          isinstance(answer, str) and answer.startswith("error IO") and
          f"127.0.0.1:{busy}" in answer, answer)
    holder.close()
    for address in ("0.0.0.0:0", "[::]:0", "192.0.2.10:9464"):
        answer = s.listen("metrics", address)
        check(f"{address} without allow_remote: refused, INVALID, naming the address and the "
              "option", isinstance(answer, str) and answer.startswith("error INVALID") and
              address in answer and "allow_remote" in answer, answer)
    answer = s.listen("metrics", "0.0.0.0:0 remote")
    check("allow_remote without a token or basic auth: refused, INVALID",
          isinstance(answer, str) and answer.startswith("error INVALID") and
          "bearer_token" in answer, answer)
    for address in ("nonsense", "127.0.0.1:99999", "example.com:80", "::1:9464"):
        answer = s.listen("metrics", address)
        check(f"address '{address}': refused, INVALID, naming it",
              isinstance(answer, str) and answer.startswith("error INVALID") and address in answer,
              answer)
    v6 = s.listen("metrics", "[::1]:0")
    if isinstance(v6, int):
        status, _, text = get(v6, "/metrics", host="::1")
        check("[::1]:0: a scrape over IPv6 loopback, 200", status == 200 and
              "tabq_claimed_total" in text, status)
    else:
        check("[::1]:0 listens (or the machine has no IPv6 loopback)",
              "Cannot assign" in v6 or "not available" in v6, v6)
    # Credentials, on loopback (where the options may ask for them too).
    tport = s.listen("metrics", "127.0.0.1:0 token s3cret")
    status, headers, body = get(tport, "/metrics")
    check("with a bearer token: a scrape without it gets 401 and a Bearer challenge",
          status == 401 and "Bearer" in headers.get("www-authenticate", ""), (status, headers))
    status, _, _ = get(tport, "/metrics", headers={"Authorization": "Bearer wrong"})
    check("... a wrong token: 401", status == 401, status)
    status, _, _ = get(tport, "/metrics", headers={"Authorization": "Bearer s3cret"})
    check("... the token: 200", status == 200, status)
    bport = s.listen("metrics", "127.0.0.1:0 basic ops pa55")
    good = base64.b64encode(b"ops:pa55").decode()
    bad = base64.b64encode(b"ops:nope").decode()
    status, headers, _ = get(bport, "/metrics")
    check("with basic auth: 401 and a Basic challenge (a browser asks)",
          status == 401 and headers.get("www-authenticate", "").startswith("Basic"), headers)
    status, _, _ = get(bport, "/metrics", headers={"Authorization": "Basic " + bad})
    check("... a wrong password: 401", status == 401, status)
    status, _, _ = get(bport, "/metrics", headers={"Authorization": "Basic " + good})
    check("... the user and password: 200", status == 200, status)
    # Shutdown: every listener answers 503 until it is stopped, then the broker closes, while
    # scrapes keep coming: each is answered 200 or 503, or finds nothing listening.
    seen, stop = set(), threading.Event()

    def scrape():
        while not stop.is_set():
            try:
                seen.add(get(port, "/metrics")[0])
            except OSError:
                seen.add("refused")
    scrapers = [threading.Thread(target=scrape) for _ in range(3)]
    for t in scrapers:
        t.start()
    check("shutdown", s.ask("shutdown") == "shut down")
    status, headers, body = get(port, "/metrics")
    check("a scrape after tabq_shutdown: 503 with a one-line reason",
          status == 503 and body.count("\n") == 1 and "shutting down" in body, (status, body))
    answer, code, err = s.quit()
    stop.set()
    for t in scrapers:
        t.join()
    check("scrapes racing the shutdown and the stop: 200, 503 or refused, nothing else",
          seen <= {200, 503, "refused"} and 503 in seen, seen)
    check("the listeners stop, then the broker closes: exit 0", answer == "bye" and code == 0,
          (answer, code, err))
    try:
        get(port, "/metrics")
        check("after tabq_http_stop nothing listens", False)
    except OSError:
        check("after tabq_http_stop nothing listens", True)

check.finish("metrics_listen")
