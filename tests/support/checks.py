"""What the tests that drive tabq's programs as processes share: one line a check ("ok - ..." or
"not ok - ..." with the detail indented below), the three databases' URLs, and the exit status.

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
    from checks import Checks, database_urls"""
import os
import sys


class Checks:
    def __init__(self):
        self.failures = 0
        self.count = 0

    def __call__(self, name, ok, detail=""):
        self.count += 1
        print(("ok - " if ok else "not ok - ") + name)
        if not ok:
            self.failures += 1
            print("    " + str(detail).replace("\n", "\n    "))

    def finish(self, label):
        """Prints the counts and exits: 1 when a check failed or none ran."""
        print(f"{label}: {self.count - self.failures} passed, {self.failures} failed")
        sys.exit(1 if self.failures or not self.count else 0)


def database_urls(sqlite_file):
    """SQLite on `sqlite_file`, and the PostgreSQL and MariaDB servers ./dev test starts; exits
    naming the variable when one is not set."""
    urls = {"sqlite": f"sqlite:{sqlite_file}"}
    for db, var in (("postgres", "TABQ_TEST_POSTGRES_URL"), ("mysql", "TABQ_TEST_MYSQL_URL")):
        if not os.environ.get(var):
            sys.exit(f"{var} is not set (./dev test sets it)")
        urls[db] = os.environ[var]
    return urls
