#!/usr/bin/env python3
"""tabq_metrics_write, read by a real Prometheus text parser (prometheus_client's, Debian's
python3-prometheus-client): metrics_service drains rows of known outcomes on SQLite, PostgreSQL
and MariaDB, prints its metrics, and each figure must be what the drain did. The rows wait 300 ms
before the subscription starts, which their queue latency shows; the same drain with a claim and a
fetch of the service's own (OWN_DESCRIPTION_FILE) measures no queue latency.

usage: test_metrics.py METRICS_SERVICE DESCRIPTION_FILE OWN_DESCRIPTION_FILE"""
import os
import subprocess
import sys
import tempfile

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks, database_urls  # noqa: E402
from metrics_tables import DDL  # noqa: E402

service, description, own_description = sys.argv[1], sys.argv[2], sys.argv[3]
work = tempfile.mkdtemp(prefix="tabq-metrics.")
urls = database_urls(f"{work}/metrics.db")

check = Checks()


ACKS, DROPS, FAILS, DELAYS = 7, 3, 4, 2
WAIT_MS = 300  # the published rows wait this long before the subscription starts


def drain(db, url, file, what):
    """Runs the service's drain on `file`; its samples by (name, labels)."""
    env = dict(os.environ, METRICS_DDL=DDL[db], METRICS_SLOW_MS="20", METRICS_WAIT_MS=str(WAIT_MS))
    env.pop("TABQ_URL", None)
    r = subprocess.run([service, file, "--url", url, str(ACKS), str(DROPS), str(FAILS),
                        str(DELAYS)],
                       capture_output=True, text=True, env=env, timeout=120)
    text = r.stdout.split("# metrics\n", 1)[1] if "# metrics\n" in r.stdout else ""
    check(f"{db}{what}: the service drains and prints its metrics, exit 0",
          r.returncode == 0 and text, f"exit {r.returncode}\n{r.stdout}{r.stderr}")
    samples = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        parsed = True
    except Exception as e:  # the parser refuses what is not the format
        parsed, samples = False, {}
        check(f"{db}{what}: the text parses", False, e)
    if parsed:
        check(f"{db}{what}: the text parses as Prometheus exposition", len(samples) > 10, text)
    return samples


for db, url in urls.items():
    samples = drain(db, url, description, "")

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
        ("tabq_deadline_expired_total", ()): 0,
        ("tabq_deferred_total", ()): 0,
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
    # Queue latency: a sample at every handler call. Every row waited WAIT_MS before the
    # subscription started, and a plain retry leaves retry_after as it was, so every call but the
    # second of a row retried after 10 ms counts from before the wait.
    name = "tabq_queue_latency_seconds"
    count = value(name + "_count")
    check(f"{db}: {name}_count is every handler call, {runs}", count == runs, count)
    check(f"{db}: {name} +Inf bucket holds them all",
          value(name + "_bucket", le="+Inf") == runs, value(name + "_bucket", le="+Inf"))
    waited = runs - DELAYS
    quick = value(name + "_bucket", le="0.25")
    check(f"{db}: {name}: {waited} calls waited over 250 ms (the rows waited {WAIT_MS})",
          count is not None and quick is not None and count - quick >= waited, (count, quick))
    total = value(name + "_sum")
    check(f"{db}: {name}_sum is at least {waited} x {WAIT_MS} ms",
          total is not None and total >= waited * WAIT_MS / 1000, total)
    check(f"{db}: {name}: no call waited a minute (the due time read right)",
          value(name + "_bucket", le="60") == runs, value(name + "_bucket", le="60"))
    info = [k for k in samples if k[0] == "tabq_info"]
    check(f"{db}: tabq_info names the dialect",
          len(info) == 1 and dict(info[0][1]).get("dialect") in ("sqlite", "postgres", "mysql"),
          info)

    # A claim and a fetch of the service's own return the projection without the due time.
    own = drain(db, url, own_description, " (own claim and fetch)")

    def own_value(name):
        return own.get((name, (("queue", "work"), ("table", "metrics_jobs"))))
    calls = own_value("tabq_handler_duration_seconds_count")
    check(f"{db} (own claim and fetch): every handler call timed, {runs}", calls == runs, calls)
    check(f"{db} (own claim and fetch): tabq_queue_latency_seconds is written, with no samples",
          own_value("tabq_queue_latency_seconds_count") == 0
          and own_value("tabq_queue_latency_seconds_bucket") is None
          and own.get(("tabq_queue_latency_seconds_bucket",
                       (("le", "+Inf"), ("queue", "work"), ("table", "metrics_jobs")))) == 0,
          own_value("tabq_queue_latency_seconds_count"))

check.finish("metrics")
