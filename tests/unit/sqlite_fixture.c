/* tabq — the SQLite dialect tests' tables: see sqlite_fixture.h. */
#include "sqlite_fixture.h"

static const tabq_col job_data[] = {{.name = "title"}, {.name = "size", .generated = true}};

const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {"id", .generated = true},
    .group = {"queue"},
    .priority = {"priority"},
    .partition_key = {"pkey"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt"},
    .processed_at = {"processed_at"},
    .locked_until = {"locked_until"},
    .headers = {"headers"},
    .payload = {"payload"},
    .data = job_data,
    .ndata = 2,
};

const tabq_table thumbs = {
    .size = sizeof(tabq_table),
    .name = "main.thumbs",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

const tabq_table bare = {
    .size = sizeof(tabq_table), .name = "bare", .id = {"id"}, .locked_until = {"lu"}};
const tabq_table all_generated = {.size = sizeof(tabq_table),
                                  .name = "ev",
                                  .id = {"id", .generated = true},
                                  .locked_until = {"lu"}};
const tabq_table plain = {
    .size = sizeof(tabq_table), .name = "plain_jobs", .id = {"id"}, .payload = {"payload"}};
const tabq_table adv = {
    .size = sizeof(tabq_table), .name = "adv_jobs", .id = {"id"}, .advisory_lock = "k-{id}"};

tabq_build lease_of(const tabq_table *t) {
  tabq_build b = {.table = t, .form = TABQ_FORM_LEASE};
  return b;
}
