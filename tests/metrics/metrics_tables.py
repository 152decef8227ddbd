"""The table the metrics tests' services drain, as each database writes it: one definition for
test_metrics.py and test_metrics_listen.py (the service takes it as METRICS_DDL)."""

DDL = {
    "sqlite": "DROP TABLE IF EXISTS metrics_jobs;"
              "CREATE TABLE metrics_jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
              " attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, retry_after TEXT,"
              " payload BLOB NOT NULL)",
    "postgres": "DROP TABLE IF EXISTS metrics_jobs;"
                "CREATE TABLE metrics_jobs (id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL,"
                " attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ,"
                " retry_after TIMESTAMPTZ, payload BYTEA NOT NULL)",
    "mysql": "DROP TABLE IF EXISTS metrics_jobs;"
             "CREATE TABLE metrics_jobs (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
             " queue VARCHAR(191) NOT NULL, attempt INT NOT NULL DEFAULT 1,"
             " locked_until DATETIME(6) NULL, retry_after DATETIME(6) NULL,"
             " payload MEDIUMBLOB NOT NULL) ENGINE=InnoDB",
}
