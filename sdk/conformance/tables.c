/* Every table description, option set and message the kit builds: one file, so a change of
 * these structs (a size member, an INIT macro) is made here once. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kit.h"

/* The variants of {jobs} the kit describes: the common roles; acks set processed_at; with the
 * partition key; every role at once. */
enum { PLAIN, MARKED, KEYED, EVERY, VARIANTS };

static tabq_table jobs_in(tabq_form form, int variant) {
  /* The advisory key names the table, so runs and tests sharing a database never share keys. */
  static char key[VARIANTS][80];
  tabq_table t = {
      .size = sizeof(tabq_table),
      .name = jobs_name(),
      .id = {.name = "id", .generated = true},
      .group = {.name = "queue"},
      .priority = {.name = "priority"},
      .retry_after = {.name = "retry_after"},
      .attempt = {.name = "attempt", .generated = true},
      .headers = {.name = "headers"},
      .payload = {.name = "payload"},
  };
  if (variant == MARKED || variant == EVERY)
    t.processed_at.name = "processed_at";
  if (variant == KEYED || variant == EVERY)
    t.partition_key.name = "partition_key";
  if (form == TABQ_FORM_LEASE)
    t.locked_until.name = "locked_until";
  else if (form == TABQ_FORM_ADVISORY) {
    strcpy(key[variant], jobs_name());
    strcat(key[variant], "-{id}");
    t.advisory_lock = key[variant];
  }
  return t;
}

/* Built once per test and form: subscriptions keep reading the description they were given,
 * and a publisher is known by the description's address. */
static const tabq_table *cached(int variant) {
  static tabq_table t[VARIANTS];
  static char made_for[VARIANTS][48];
  static tabq_form made_form[VARIANTS];
  if (strcmp(made_for[variant], jobs_name()) || made_form[variant] != kit.form) {
    t[variant] = jobs_in(kit.form, variant);
    strcpy(made_for[variant], jobs_name());
    made_form[variant] = kit.form;
  }
  return &t[variant];
}

const tabq_table *jobs_table(void) {
  return cached(PLAIN);
}

const tabq_table *marked_table(void) {
  return cached(MARKED);
}

const tabq_table *keyed_table(void) {
  return cached(KEYED);
}

const tabq_table *every_role_table(void) {
  return cached(EVERY);
}

const tabq_table *unique_table(void) {
  static tabq_table t;
  t = *marked_table();
  t.unique_key = (tabq_col){.name = "ukey"};
  return &t;
}

tabq_table table_in_form(tabq_form form) {
  return jobs_in(form, PLAIN);
}

/* The refusal tables take the lease form where the plugin serves it, as tabq's own tests always
 * did; elsewhere the suite's form. */
tabq_table table_for_refusal(refusal_table which) {
  tabq_form form = kit.plugin.forms & TABQ_FORM_LEASE ? TABQ_FORM_LEASE : kit.form;
  tabq_table full = jobs_in(form, PLAIN);
  tabq_table t = {.size = sizeof(tabq_table),
                  .name = full.name,
                  .id = {.name = "id"},
                  .group = {.name = "queue"},
                  .locked_until = full.locked_until,
                  .advisory_lock = full.advisory_lock,
                  .payload = {.name = "payload"}};
  switch (which) {
  case TABLE_NO_HEADERS:
    t.id.generated = true;
    break;
  case TABLE_NO_ATTEMPT:
    break;
  case TABLE_MISSING_COLUMN:
    if (form == TABQ_FORM_LEASE)
      t.locked_until.name = "lease_ends";
    else
      t.retry_after.name = "lease_ends";
    break;
  case TABLE_MISSING:
    t.name = "nope";
    break;
  }
  return t;
}

tabq_broker_options broker_options(unsigned poll_ms, unsigned pool_size) {
  tabq_broker_options o = {
      .size = sizeof(tabq_broker_options), .poll_interval_ms = poll_ms, .pool_size = pool_size};
  return o;
}

tabq_subscription_options sub_options(const char *queue, tabq_handler handler, void *user) {
  tabq_subscription_options o = {
      .size = sizeof(tabq_subscription_options), .queue = queue, .handler = handler, .user = user};
  return o;
}

tabq_subscription_options batch_options(const char *queue, tabq_batch_handler handler, void *user,
                                        unsigned batch) {
  tabq_subscription_options o = {.size = sizeof(tabq_subscription_options),
                                 .queue = queue,
                                 .batch_handler = handler,
                                 .user = user,
                                 .batch = batch};
  return o;
}

tabq_message message(const char *group, const void *payload, size_t len) {
  tabq_message m = {
      .size = sizeof(tabq_message), .group = group, .payload = payload, .payload_len = len};
  return m;
}

void stats_of(const tabq_subscription *s, tabq_stats *out) {
  tabq_subscription_stats(s, out, sizeof *out);
}

void stats_after(const tabq_subscription *s, uint64_t settled, tabq_stats *out) {
  for (int waited_ms = 0;; waited_ms += 5) {
    stats_of(s, out);
    uint64_t n = out->acked + out->retried + out->dead_lettered + out->failed + out->lease_lost +
                 out->released;
    if (n >= settled || waited_ms >= 10000)
      return;
    nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
  }
}

/* The row mode table: no payload, six data columns of declared types. */
static const tabq_col row_columns[] = {
    {.name = "n", .type = TABQ_T_INT},   {.name = "r", .type = TABQ_T_REAL},
    {.name = "t", .type = TABQ_T_TEXT},  {.name = "b", .type = TABQ_T_BYTES},
    {.name = "at", .type = TABQ_T_TIME}, {.name = "doc", .type = TABQ_T_JSON},
};

const tabq_table *rows_table(void) {
  static tabq_table t;
  static char key[80];
  t = (tabq_table){
      .size = sizeof(tabq_table),
      .name = rows_name(),
      .id = {.name = "id", .generated = true},
      .group = {.name = "queue"},
      .retry_after = {.name = "retry_after"},
      .attempt = {.name = "attempt", .generated = true},
      .headers = {.name = "headers"},
      .data = row_columns,
      .ndata = sizeof row_columns / sizeof row_columns[0],
  };
  if (kit.form == TABQ_FORM_LEASE)
    t.locked_until.name = "locked_until";
  else if (kit.form == TABQ_FORM_ADVISORY) {
    snprintf(key, sizeof key, "%s-{id}", rows_name());
    t.advisory_lock = key;
  }
  return &t;
}
