/* tabq — the server dialects' test tables: see server_tables.h. */
#include "server_tables.h"

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
    .headers = {"headers"},
    .payload = {"payload"},
    .data = job_data,
    .ndata = 2,
};

const tabq_table thumbs = {
    .size = sizeof(tabq_table),
    .name = "app.thumbs",
    .id = {"id", .generated = true},
    .attempt = {"attempt", .generated = true},
    .locked_until = {"locked_until"},
    .payload = {"payload"},
};

/* No attempt, no group, no time: a row lock claim that only selects. */
const tabq_table plain = {
    .size = sizeof(tabq_table), .name = "plain_jobs", .id = {"id"}, .payload = {"payload"}};
const tabq_table bare = {
    .size = sizeof(tabq_table), .name = "bare", .id = {"id"}, .locked_until = {"lu"}};
const tabq_table all_generated = {.size = sizeof(tabq_table),
                                  .name = "ev",
                                  .id = {"id", .generated = true},
                                  .locked_until = {"lu"}};

static const tabq_col adv_data[] = {{.name = "account"}};
const tabq_table advj = {
    .size = sizeof(tabq_table),
    .name = "adv_jobs",
    .id = {"id"},
    .group = {"queue"},
    .priority = {"priority"},
    .retry_after = {"retry_after"},
    .attempt = {"attempt"},
    .processed_at = {"processed_at"},
    .data = adv_data,
    .ndata = 1,
    .advisory_lock = "acct-{account}",
};
const tabq_table adv_min = {.size = sizeof(tabq_table),
                            .name = "k",
                            .id = {"id"},
                            .payload = {"payload"},
                            .advisory_lock = "k-{id}"};

tabq_table leased_jobs(void) {
  tabq_table t = jobs;
  t.locked_until = (tabq_col){.name = "locked_until"};
  return t;
}
