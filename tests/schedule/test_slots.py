#!/usr/bin/env python3
"""Schedules' slots (docs/schedule.md) without a database, through tabq_schedule_next as the
slots_next program prints them:

- the cron parser and the next slots against Debian's python3-croniter, over a few hundred
  random expressions (lists, ranges, steps, names) from several start times, in UTC and in
  named zones away from their daylight saving changes;
- the refusals, each with the field and the character it names;
- the slots around daylight saving changes, against the policy docs/schedule.md states (a job
  of fixed times runs once per wall time, at the change for a skipped one; a wildcard job runs
  by the clock's elapsed time), each slot's wall time checked with zoneinfo;
- the slots' unique keys.

Usage: test_slots.py SLOTS_NEXT
"""
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytz
from croniter import croniter

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


class Slots:
    def __init__(self, program):
        self.p = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().rstrip("\n")

    def next(self, spec, zone, after, count):
        out = self.ask(f"{spec}\t{zone or '-'}\t{after}\t{count}")
        if out.startswith("ERR "):
            return out
        return [int(x) for x in out.split()]

    def key(self, name, spec, slot):
        return self.ask(f"KEY\t{name}\t{spec}\t{slot}")


MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
FIELDS = [(0, 59, None), (0, 23, None), (1, 31, None), (1, 12, MONTHS), (0, 6, DAYS)]


def item(rng, lo, hi, names):
    def val(v):
        if names and rng.random() < 0.4:
            n = names[v - lo]
            return n.upper() if rng.random() < 0.3 else n
        return str(v)

    kind = rng.randrange(6)
    if kind == 0:
        return "*"
    if kind == 1:
        return f"*/{rng.randint(2, max(2, (hi - lo) // 2))}"
    if kind == 2:
        return val(rng.randint(lo, hi))
    a = rng.randint(lo, hi)
    b = rng.randint(a, hi)
    if kind == 3:
        return f"{val(a)}-{val(b)}"
    if kind == 4:
        return f"{val(a)}-{val(b)}/{rng.randint(1, max(1, b - a + 1))}"
    return f"{val(a)}/{rng.randint(1, max(1, hi - a + 1))}"


def field(rng, i):
    lo, hi, names = FIELDS[i]
    if rng.random() < [0.15, 0.3, 0.6, 0.6, 0.6][i]:
        return "*"
    items = [item(rng, lo, hi, names) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    return ",".join(items)


def expressions(rng, n):
    out = []
    while len(out) < n:
        out.append(" ".join(field(rng, i) for i in range(5)))
    return out


def same_day_rule(expr):
    """Whether croniter joins the day fields as crontab(5) does for this expression: it takes
    a field that covers every value, or lists '*' anywhere, as '*', where cron asks whether the
    field begins with '*'."""
    fields = expr.split()
    exp = croniter.expand(expr)[0]
    cron_star = fields[2].startswith("*") or fields[4].startswith("*")
    iter_star = "*" in exp[2] or "*" in exp[4]
    return cron_star == iter_star


def scan(expr, start, count):
    """The next slots by the plainest reading there is: every day from the start's, every hour
    and minute of it in order, with the sets croniter expands and cron's rule for the days."""
    fields = expr.split()
    exp = croniter.expand(expr)[0]
    full = [range(60), range(24), range(1, 32), range(1, 13), range(7)]
    sets = [set(full[i]) if "*" in exp[i] else {v % 7 if i == 4 else v for v in exp[i]}
            for i in range(5)]
    either = not (fields[2].startswith("*") or fields[4].startswith("*"))
    out, day = [], start.replace(hour=0, minute=0, second=0, microsecond=0)
    while len(out) < count:
        dom, dow = day.day in sets[2], (day.isoweekday() % 7) in sets[4]
        if day.month in sets[3] and ((dom or dow) if either else (dom and dow)):
            for h in sorted(sets[1]):
                for m in sorted(sets[0]):
                    t = day.replace(hour=h, minute=m)
                    if t > start and len(out) < count:
                        out.append(int(t.timestamp()))
        day += timedelta(days=1)
    return out


def oracle(slots, rng):
    starts = [datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2027, 2, 27, 23, 59, 30,
              tzinfo=timezone.utc), datetime(2028, 2, 28, 13, 7, tzinfo=timezone.utc),
              datetime(2026, 12, 31, 23, 59, 59, tzinfo=timezone.utc)]
    compared = croniter_off = 0
    for expr in expressions(rng, 400):
        if not same_day_rule(expr):
            continue
        for start in rng.sample(starts, 2):
            it = croniter(expr, start)
            want = [int(it.get_next(float)) for _ in range(5)]
            got = slots.next(expr, None, int(start.timestamp()), 5)
            compared += 1
            if got == want:
                continue
            # croniter 1.3.5 misses the first days of a month after a day-of-month step
            # ("*/5" from 28 February gives 6 March, not 1 March): the plain scan decides.
            truth = scan(expr, start, 5)
            check(got == truth, f"'{expr}' after {start}: tabq {got}, croniter {want}, "
                  f"the scan {truth}")
            croniter_off += want != truth
    print(f"oracle, UTC: {compared} expressions x start times; croniter agrees with tabq on "
          f"{compared - croniter_off}, the plain scan on the other {croniter_off}")
    check(compared >= 500 and croniter_off * 10 < compared,
          f"the oracle compared too few ({compared}) or croniter differed too often "
          f"({croniter_off})")

    # Named zones, away from their changes: croniter's own handling of a change is not cron's.
    zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney",
             "America/Sao_Paulo", "Asia/Tokyo"]
    compared = 0
    for expr in expressions(rng, 200):
        if not same_day_rule(expr):
            continue
        zone = rng.choice(zones)
        tz = pytz.timezone(zone)
        start = tz.localize(datetime(2026, rng.randint(1, 12), rng.randint(1, 28),
                                     rng.randint(0, 23), rng.randint(0, 59)))
        it = croniter(expr, start)
        want = [int(it.get_next(float)) for _ in range(3)]
        first = int(start.timestamp())
        if want[-1] - first > 2 * 366 * 86400:
            continue
        if len({ZoneInfo(zone).utcoffset(datetime.fromtimestamp(t)) for t in
                list(range(first, want[-1], 6 * 3600)) + [want[-1]]}) > 1:
            continue
        got = slots.next(expr, zone, int(start.timestamp()), 3)
        compared += 1
        if got != want:
            # As in UTC: the plain scan, on the zone's wall times (no change in between).
            naive = start.replace(tzinfo=None)
            truth = [int(tz.localize(datetime.fromtimestamp(t, timezone.utc).replace(
                tzinfo=None)).timestamp()) for t in scan(expr, naive.replace(tzinfo=timezone.utc), 3)]
            check(got == truth, f"'{expr}' in {zone} after {start}: tabq {got}, croniter {want}"
                  f", the scan {truth}")
    print(f"oracle, zones: {compared} expressions compared")


REFUSALS = [
    ("0 25 * * *", 3, "field 2 (hour), position 3: 25 is out of 0-23"),
    ("*/5 25 * * *", 5, "field 2 (hour), position 5: 25 is out of 0-23"),
    ("60 * * * *", 1, "field 1 (minute), position 1: 60 is out of 0-59"),
    ("0 0 0 * *", 5, "field 3 (day of month), position 5: 0 is out of 1-31"),
    ("0 0 * 13 *", 7, "field 4 (month), position 7: 13 is out of 1-12"),
    ("0 0 * * 8", 9, "field 5 (day of week), position 9: 8 is out of 0-7"),
    ("0 0 * foo *", 7, "field 4 (month), position 7: 'foo' is not a month name (jan-dec)"),
    ("0 0 * * mon-xyz", 13, "field 5 (day of week), position 13: 'xyz' is not a day of week name"),
    ("0 mon * * *", 3, "field 2 (hour), position 3: 'mon' is not a number"),
    ("*/0 * * * *", 3, "field 1 (minute), position 3: a step of 0 never advances"),
    ("5-1 * * * *", 2, "field 1 (minute), position 2: the range 5-1 runs backwards"),
    ("1,,2 * * * *", 3, "field 1 (minute), position 3: '," ),
    ("1x * * * *", 2, "field 1 (minute), position 2: unexpected 'x'"),
    ("*/ * * * *", 3, "field 1 (minute), position 3: a step needs a number after '/'"),
    ("0 0 * *", 0, "has 4 fields; a cron expression has 5"),
    ("0 0 * * * *", 0, "has 6 fields"),
    ("", 0, "the spec is empty"),
    ("0 0 30 2 *", 0, "matches no date: it would never fire"),
    ("0 0 31 4,6,9,11 *", 0, "matches no date"),
    ("@reboot", 1, "position 1: '@reboot' is not a macro tabq knows"),
    ("@daily x", 8, "position 8: unexpected text after @daily"),
    ("every 0s", 0, "an interval of 0 never advances"),
    ("every", 0, "names no interval"),
    ("every 5", 8, "interval, position 8: a unit is needed after 5"),
    ("@every 5x", 9, "interval, position 9: a unit is needed"),
    ("every 400d", 7, "longer than 366 days"),
    ("every 5m now", 10, "interval, position 10: unexpected 'n'"),
]


def refusals(slots):
    for spec, position, text in REFUSALS:
        out = slots.next(spec, None, 0, 1)
        check(isinstance(out, str) and out.startswith(f"ERR INVALID {position} ") and text in out,
              f"refusal of '{spec}': want position {position} and '{text}', got {out!r}")
    out = slots.next("*/15 * * * *", "Mars/Olympus", 0, 1)
    check(isinstance(out, str) and "zone 'Mars/Olympus' is not a zone" in out, f"zone: {out!r}")
    out = slots.next("*/15 * * * *", "Europe/Berlin;rm", 0, 1)
    check(isinstance(out, str) and "is not an IANA zone name" in out, f"zone chars: {out!r}")
    out = slots.next("every 30s", "Europe/Berlin", 0, 1)
    check(isinstance(out, str) and "applies to cron expressions only" in out,
          f"interval with zone: {out!r}")
    print(f"refusals: {len(REFUSALS) + 3} checked")


def utc(*a):
    return int(datetime(*a, tzinfo=timezone.utc).timestamp())


def walls(got, zone):
    return [datetime.fromtimestamp(t, ZoneInfo(zone)).strftime("%m-%d %H:%M%z") for t in got]


def dst(slots):
    cases = [
        # Berlin 2026: clocks forward at 01:00 UTC on 29 March (02:00 CET -> 03:00 CEST), back
        # at 01:00 UTC on 25 October (03:00 CEST -> 02:00 CET).
        # A fixed time in the skipped hour runs at the change, once.
        ("30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), [utc(2026, 3, 29, 1),
                                                               utc(2026, 3, 30, 0, 30)]),
        # Several skipped fixed times run once, together, at the change.
        ("0,30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), [utc(2026, 3, 29, 1),
                                                                 utc(2026, 3, 30, 0)]),
        # A wildcard job keeps the clock's pace over the change.
        ("*/30 * * * *", "Europe/Berlin", utc(2026, 3, 29, 0), [utc(2026, 3, 29, 0, 30),
                                                                utc(2026, 3, 29, 1),
                                                                utc(2026, 3, 29, 1, 30)]),
        # A wildcard job's skipped wall time does not run (02:15 does not exist that night).
        ("15 * * * *", "Europe/Berlin", utc(2026, 3, 29, 0), [utc(2026, 3, 29, 0, 15),
                                                              utc(2026, 3, 29, 1, 15)]),
        ("* 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), [utc(2026, 3, 30, 0),
                                                              utc(2026, 3, 30, 0, 1)]),
        # A fixed time in the repeated hour runs at its first pass only.
        ("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), [utc(2026, 10, 25, 0, 30),
                                                                utc(2026, 10, 26, 1, 30)]),
        ("30 2 * * *", "Europe/Berlin", utc(2026, 10, 25, 0, 45), [utc(2026, 10, 26, 1, 30)]),
        # A wildcard job runs in both passes.
        ("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 25, 0), [utc(2026, 10, 25, 0, 30),
                                                                 utc(2026, 10, 25, 1),
                                                                 utc(2026, 10, 25, 1, 30),
                                                                 utc(2026, 10, 25, 2)]),
        ("0 * * * *", "Europe/Berlin", utc(2026, 10, 24, 23, 30), [utc(2026, 10, 25, 0),
                                                                   utc(2026, 10, 25, 1),
                                                                   utc(2026, 10, 25, 2)]),
        # New York 2026: forward at 07:00 UTC on 8 March, back at 06:00 UTC on 1 November.
        ("0 2 * * *", "America/New_York", utc(2026, 3, 7, 12), [utc(2026, 3, 8, 7),
                                                                utc(2026, 3, 9, 6)]),
        ("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12), [utc(2026, 11, 1, 5, 30),
                                                                   utc(2026, 11, 2, 6, 30)]),
        # A zone half an hour off UTC, and a zone without changes.
        ("0 9 * * *", "Asia/Kolkata", utc(2026, 6, 1), [utc(2026, 6, 1, 3, 30),
                                                        utc(2026, 6, 2, 3, 30)]),
        ("0 0 1 * *", "Asia/Tokyo", utc(2026, 6, 1), [utc(2026, 6, 30, 15),
                                                      utc(2026, 7, 31, 15)]),
        # Lord Howe moves its clocks by half an hour: 02:00 -> 02:30 on 4 October 2026
        # (15:30 UTC on the 3rd), 02:00 -> 01:30 on 5 April 2026 (15:00 UTC on the 4th).
        ("15 2 * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 12), [utc(2026, 10, 3, 15, 30),
                                                                     utc(2026, 10, 4, 15, 15)]),
        ("45 1 * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 12), [utc(2026, 4, 4, 14, 45),
                                                                    utc(2026, 4, 5, 15, 15)]),
    ]
    for spec, zone, after, want in cases:
        got = slots.next(spec, zone, after, len(want))
        check(got == want, f"DST '{spec}' in {zone} after {after}: tabq {got} "
              f"({walls(got, zone) if isinstance(got, list) else ''}), want {want} "
              f"({walls(want, zone)})")
    # Every slot of a fixed-time job over a year falls on a wall time the expression names,
    # or on a change (the skipped case); and no wall time runs twice.
    for zone in ["Europe/Berlin", "America/New_York", "Australia/Sydney"]:
        got = slots.next("30 2 * * *", zone, utc(2026, 1, 1), 366)
        seen = set()
        for t in got:
            local = datetime.fromtimestamp(t, ZoneInfo(zone))
            before = datetime.fromtimestamp(t - 1, ZoneInfo(zone))
            at_change = before.utcoffset() != local.utcoffset()
            check((local.hour, local.minute) == (2, 30) or at_change,
                  f"{zone}: slot {local} is neither 02:30 nor a change")
            check(local.date() not in seen, f"{zone}: two slots on {local.date()}")
            seen.add(local.date())
        check(len(seen) == 366, f"{zone}: {len(seen)} days with a slot in 366")
    print(f"daylight saving: {len(cases)} cases and three years of days checked")


def intervals_and_keys(slots):
    check(slots.next("every 30s", None, 5, 3) == [30, 60, 90], "every 30s")
    check(slots.next("@every 1h30m", None, utc(2026, 1, 1), 2) ==
          [utc(2026, 1, 1, 1, 30), utc(2026, 1, 1, 3)], "@every 1h30m from the epoch")
    check(slots.next("every 1s", None, 100, 3) == [101, 102, 103], "every 1s")
    check(slots.next("EVERY 2m", None, 0, 1) == [120], "EVERY 2m")
    check(slots.next("@HOURLY", None, 0, 2) == [3600, 7200], "@HOURLY")
    check(slots.next("@weekly", None, 0, 1) == [3 * 86400], "@weekly: Sunday 4 January 1970")
    check(slots.key("nightly", "0 3 * * *", utc(2026, 12, 4, 3)) == "nightly:2026-12-04T03:00Z",
          "cron key")
    check(slots.key("tick", "every 5s", utc(2026, 12, 4, 12, 0, 5)) == "tick:2026-12-04T12:00:05Z",
          "seconds key")
    check(slots.key("tick", "every 2m", utc(2026, 12, 4, 12, 2)) == "tick:2026-12-04T12:02Z",
          "minutes key of an interval")
    check(slots.key("x", "0 0 30 2 *", 0) == "ERR", "key of a refused spec")
    print("intervals and keys checked")


def main():
    slots = Slots(sys.argv[1])
    rng = random.Random(20)
    oracle(slots, rng)
    refusals(slots)
    dst(slots)
    intervals_and_keys(slots)
    slots.p.stdin.close()
    slots.p.wait()
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
