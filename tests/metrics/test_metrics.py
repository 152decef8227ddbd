#!/usr/bin/env python3
"""tabq_metrics_write, read by a real Prometheus text parser (prometheus_client's, Debian's
python3-prometheus-client): metrics_service drains rows of known outcomes on SQLite, PostgreSQL
and MariaDB, prints its metrics, and each figure must be what the drain did.

usage: test_metrics.py METRICS_SERVICE DESCRIPTION_FILE"""
import os
import subprocess
import sys
import tempfile

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402

service, description = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="tabq-metrics.")
DDL = {
    "sqlite": "DROP TABLE IF EXISTS metrics_jobs;"
              "CREATE TABLE metrics_jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
              " attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, retry_after TEXT,"
              " payload BLOB NOT NULL)",
    "postgres": "DROP TABLE IF EXISTS metrics_jobs;"
                "CREATE TABLE metrics_jobs (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL,"
                " attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, retry_after TIMESTAMPTZ,"
                " payload BYTEA NOT NULL)",
    "mysql": "DROP TABLE IF EXISTS metrics_jobs;"
             "CREATE TABLE metrics_jobs (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
             " queue VARCHAR(191) NOT NULL, attempt INT NOT NULL DEFAULT 1,"
             " locked_until DATETIME(6) NULL, retry_after DATETIME(6) NULL,"
             " payload MEDIUMBLOB NOT NULL) ENGINE=InnoDB",
}
urls = database_urls(f"{work}/metrics.db")

check = Checks()


ACKS, DROPS, FAILS, DELAYS = 7, 3, 4, 2
for db, url in urls.items():
    env = dict(os.environ, METRICS_DDL=DDL[db], METRICS_SLOW_MS="20")
    env.pop("TABQ_URL", None)
    r = subprocess.run([service, description, "--url", url, str(ACKS), str(DROPS), str(FAILS),
                        str(DELAYS)],
                       capture_output=True, text=True, env=env, timeout=120)
    text = r.stdout.split("# metrics\n", 1)[1] if "# metrics\n" in r.stdout else ""
    check(f"{db}: the service drains and prints its metrics, exit 0",
          r.returncode == 0 and text, f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    samples = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        parsed = True
    except Exception as e:  # the parser refuses what is not the format
        parsed, samples = False, {}
        check(f"{db}: the text parses", False, e)
    if parsed:
        check(f"{db}: the text parses as Prometheus exposition", len(samples) > 10, text)

    def value(name, **labels):
        labels = dict({"table": "metrics_jobs", "queue": "work"}, **labels)
        return samples.get((name, tuple(sorted(labels.items()))))

    runs = ACKS + DROPS + 2 * FAILS + 2 * DELAYS
    want = {
        ("tabq_claimed_total", ()): runs,
        ("tabq_deliveries_total", ("ack",)): ACKS + DELAYS,
        ("tabq_deliveries_total", ("drop",)): DROPS,
        ("tabq_deliveries_total", ("retry",)): FAILS,
        ("tabq_deliveries_total", ("retry_after",)): DELAYS,
        ("tabq_deliveries_total", ("dead_letter",)): FAILS,
        ("tabq_deliveries_total", ("released",)): 0,
        ("tabq_decode_failures_total", ()): 0,
        ("tabq_lease_lost_total", ()): 0,
        ("tabq_settlement_failures_total", ()): 0,
    }
    for (name, outcome), expected in want.items():
        got = value(name, **({"outcome": outcome[0]} if outcome else {}))
        label = f"{name}{{outcome={outcome[0]}}}" if outcome else name
        check(f"{db}: {label} is {expected}", got == expected, f"got {got}")
    claims = value("tabq_claims_total")
    check(f"{db}: claims counted", claims is not None and claims >= 1, claims)
    trips = value("tabq_claim_round_trips_total")
    check(f"{db}: claim round trips counted, at least one a claim",
          trips is not None and claims is not None and trips >= claims, (trips, claims))

    def broker(name):
        return samples.get((name, ()))
    check(f"{db}: the pool's size is reported", (broker("tabq_pool_connections") or 0) >= 2,
          broker("tabq_pool_connections"))
    check(f"{db}: no connection in use after the stop",
          broker("tabq_pool_connections_in_use") == 0
          and broker("tabq_pool_connections_held_by_deliveries") == 0,
          (broker("tabq_pool_connections_in_use"),
           broker("tabq_pool_connections_held_by_deliveries")))
    check(f"{db}: connections opened are counted", (broker("tabq_pool_connects_total") or 0) >= 1,
          broker("tabq_pool_connects_total"))
    check(f"{db}: no take of a connection timed out", broker("tabq_pool_timeouts_total") == 0,
          broker("tabq_pool_timeouts_total"))
    # Handler durations: every call slept 20 ms.
    name = "tabq_handler_duration_seconds"
    count = value(name + "_count")
    check(f"{db}: {name}_count is every handler call, {runs}", count == runs, count)
    check(f"{db}: {name} has none at or under 10 ms (each slept 20)",
          value(name + "_bucket", le="0.01") == 0, value(name + "_bucket", le="0.01"))
    check(f"{db}: {name} +Inf bucket holds them all",
          value(name + "_bucket", le="+Inf") == runs, value(name + "_bucket", le="+Inf"))
    total = value(name + "_sum")
    check(f"{db}: {name}_sum is at least {runs} x 20 ms",
          total is not None and total >= runs * 0.02, total)
    info = [k for k in samples if k[0] == "tabq_info"]
    check(f"{db}: tabq_info names the dialect",
          len(info) == 1 and dict(info[0][1]).get("dialect") in ("sqlite", "postgres", "mysql"),
          info)

check.finish("metrics")
