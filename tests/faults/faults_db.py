"""What the fault tests share: the drained table's SQL on each database, tabq's connections as
the server lists them, and SQL run through sql_run (no database client needed)."""
import subprocess
import time

SQL_RUN = "sql_run"  # set by the test to the built helper
POOL = 6  # fault_worker's default pool_size

DDL = {
    "postgres": "CREATE TABLE {t} (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, retry_after "
                "TIMESTAMPTZ, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, "
                "payload BYTEA NOT NULL)",
    "mysql": "CREATE TABLE {t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT NULL, "
             "retry_after DATETIME(6) NULL, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME "
             "NULL, payload BLOB NOT NULL, INDEX claim_order (queue, retry_after, id)) "
             "ENGINE=InnoDB",
}
FILL = {
    "postgres": "INSERT INTO {t} (queue, payload) SELECT 'q', 'x' FROM generate_series(1, {n})",
    # MariaDB's sequence engine (a recursive CTE stops at max_recursive_iterations, 1000)
    "mysql": "INSERT INTO {t} (queue, payload) SELECT 'q', 'x' FROM seq_1_to_{n}",
}
# The workers' connections as the server lists them (the checker's own left out). On PostgreSQL
# by the application name worker_url gives them: PgBouncer's server connections, idle from
# earlier tests, carry their last client's name, "tabq".
MINE = {
    "postgres": "FROM pg_stat_activity WHERE application_name = 'tabq_faults' "
                "AND pid <> pg_backend_pid()",
    "mysql": "FROM information_schema.processlist WHERE user = 'tabq' AND id <> CONNECTION_ID() "
             "AND command <> 'Killed'",
}


def worker_url(db, url):
    """The URL the workers connect with: on PostgreSQL, named for MINE."""
    if db != "postgres":
        return url
    return url + ("&" if "?" in url else "?") + "application_name=tabq_faults"


def sql(url, text, cells=0, tries=60):
    """Runs SQL (a query when cells > 0: its rows as lists of strings), waiting out a server that
    is coming back."""
    args = [SQL_RUN, url] + (["-q", str(cells)] if cells else []) + [text]
    for _ in range(tries):
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode == 0:
            return [line.split("\t") for line in r.stdout.splitlines()]
        time.sleep(0.25)
    raise RuntimeError(f"{text}: {r.stderr.strip()}")


def scalar(url, text):
    return int(sql(url, text, 1)[0][0])


def wait_up(url, what):
    sql(url, "SELECT 1", 1, tries=240)


