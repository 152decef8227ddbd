/* The rules of a mount (a subscription's options against its table) and of names that routes and
 * subscriptions by name take: checked without a database, when a subscription opens and when an
 * app's description is read, so a description file is refused for what a subscription would be. */
#include <stdint.h>
#include <string.h>
#include <unistr.h>

#include "deadline.h"
#include "error.h"
#include "mount.h"

static int mount_broken(tabq_error *err, const tabq_table *t, const char *detail) {
  return tabq__err_set(err, TABQ_DECLARATION, t->name, NULL, "subscription to table %s: %s",
                       t->name, detail);
}

/* prefetch (docs/prefetch.md): rows that wait their turn in the process must hold nothing but
 * their lease. */
static int check_prefetch(const tabq_table *t, const tabq_subscription_options *o,
                          tabq_error *err) {
  if (o->lookahead != TABQ_LOOKAHEAD_ADAPTIVE && o->lookahead != TABQ_LOOKAHEAD_OFF)
    return mount_broken(err, t, "lookahead is TABQ_LOOKAHEAD_ADAPTIVE or TABQ_LOOKAHEAD_OFF");
  if (o->acks != TABQ_ACKS_DEFAULT && o->acks != TABQ_ACKS_ALONE)
    return mount_broken(err, t, "acks is TABQ_ACKS_DEFAULT or TABQ_ACKS_ALONE");
  if (o->lookahead_wait_ms > 60000)
    return mount_broken(err, t, "lookahead_wait_ms is at most 60,000 (a minute)");
  /* The adaptive look-ahead takes no rows where prefetch is refused (lookahead.c): a default
   * needs no refusal. A set prefetch fixes the look-ahead, whatever `lookahead` says. */
  if (!o->prefetch)
    return TABQ_OK;
  if (o->prefetch > 1000)
    return mount_broken(err, t, "prefetch is at most 1,000 rows");
  if (o->batch_handler)
    return mount_broken(err, t,
                        "prefetch serves a handler of one delivery; a batch handler's claim takes "
                        "its batch already");
  if (tabq_table_form(t) != TABQ_FORM_LEASE)
    return mount_broken(err, t,
                        "prefetch serves the lease form: a row lock or advisory row waiting its "
                        "turn would hold a transaction or a lock, and a connection");
  if (o->transactional)
    return mount_broken(err, t,
                        "transactional and prefetch exclude each other: each waiting row would "
                        "hold a connection for its transaction");
  if (o->workers_by_key)
    return mount_broken(err, t,
                        "workers_by_key keeps rows waiting behind their key already; prefetch "
                        "is not for it");
  if (t->fifo)
    return mount_broken(err, t,
                        "a FIFO table hands out one row of a group at a time; prefetch is not "
                        "served");
  return TABQ_OK;
}

int tabq__mount_check(const tabq_table *t, const tabq_subscription_options *o, tabq_error *err) {
  if (!o || (!o->handler == !o->batch_handler))
    return tabq__err_set(err, TABQ_INVALID, t->name, NULL,
                         "subscription to table %s: give exactly one of handler and batch_handler",
                         t->name);
  if (t->group.name && (!o->queue || !o->queue[0]))
    return mount_broken(err, t, "the table has a group column, so the subscription needs a queue");
  if (o->queue && u8_check((const uint8_t *)o->queue, strlen(o->queue)))
    return mount_broken(err, t, "the queue name is not valid UTF-8");
  bool dead_letter = o->dead_letter_group || o->dead_letter_table;
  if (o->max_attempts && !dead_letter)
    return mount_broken(err, t, "max_attempts needs a dead letter (group or table)");
  if (dead_letter && !o->max_attempts)
    return mount_broken(err, t, "a dead letter needs max_attempts");
  if (o->max_attempts && !t->attempt.name)
    return mount_broken(err, t, "max_attempts needs a column that plays the attempt role");
  if (o->dead_letter_group && o->dead_letter_table)
    return mount_broken(err, t, "give a dead letter group or a dead letter table, not both");
  if (o->dead_letter_group && !t->group.name)
    return mount_broken(err, t,
                        "a dead letter group needs a group column; use a dead letter table");
  if (o->dead_letter_table && !strcmp(o->dead_letter_table, t->name))
    return mount_broken(err, t, "the dead letter table is the table itself");
  if (t->fifo && o->workers > 1)
    return mount_broken(err, t, "one worker serves a FIFO subscription; workers must be 1");
  if (o->workers_by_key && !t->partition_key.name)
    return mount_broken(err, t, "workers_by_key needs a partition_key column");
  if (o->workers_by_key && o->workers && o->workers != o->workers_by_key)
    return mount_broken(err, t,
                        "workers_by_key sets the worker count; leave workers 0 or give the same "
                        "number");
  if (o->workers_by_key && o->batch_handler)
    return mount_broken(err, t,
                        "workers_by_key serves a handler of one delivery: a batch handler is not "
                        "served (a batch would mix keys)");
  if (t->fifo && o->workers_by_key > 1)
    return mount_broken(err, t, "one worker serves a FIFO subscription; workers_by_key must be 1");
  if (o->coalesce_acks && o->batch_handler)
    return mount_broken(err, t,
                        "coalesce_acks serves a handler of one delivery; a batch handler's acks "
                        "settle together already");
  if (o->coalesce_acks && tabq_table_form(t) != TABQ_FORM_LEASE)
    return mount_broken(err, t,
                        "coalesce_acks serves the lease form: a row lock or advisory delivery "
                        "settles on the connection that holds it");
  if (o->transactional && o->batch_handler)
    return mount_broken(err, t,
                        "transactional serves a handler of one delivery: a batch has no one "
                        "transaction of its handler's");
  if (o->transactional && o->coalesce_acks)
    return mount_broken(err, t,
                        "transactional and coalesce_acks exclude each other: a transactional "
                        "ack commits in the delivery's own transaction");
  if (o->coalesce_window_us && !o->coalesce_acks)
    return mount_broken(err, t, "coalesce_window_us needs coalesce_acks");
  if (o->coalesce_window_us > 1000000)
    return mount_broken(err, t, "coalesce_window_us is at most 1,000,000 (one second)");
  int rc = check_prefetch(t, o, err);
  return rc ? rc : tabq__deadline_mount_rule(t, o, err);
}

/* Non-empty UTF-8, with '*' only as a route's last byte: a publish or a subscription names one
 * name, and a '*' inside a name would read as a pattern nowhere else. */
int tabq__route_name_check(const char *name, bool route, const char *what, tabq_error *err) {
  if (!name || !name[0])
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "%s needs a name; it is empty", what);
  size_t len = strlen(name);
  if (u8_check((const uint8_t *)name, len))
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL, "%s: the name is not valid UTF-8", what);
  const char *star = strchr(name, '*');
  if (star && !route)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "%s '%s': a name with '*' is a route's pattern; give one name it covers",
                         what, name);
  if (star && star != name + len - 1)
    return tabq__err_set(err, TABQ_INVALID, NULL, NULL,
                         "%s '%s': '*' may only end a name, where it makes a prefix", what, name);
  return TABQ_OK;
}

/* What a subscription by name leaves to the broker or refuses (SPEC 9): the name is its queue,
 * the broker's poll interval and lease are its own, and it has no dead letter. */
int tabq__by_name_check(const char *name, const tabq_table *t, const tabq_subscription_options *o,
                        tabq_error *err) {
  const char *rule = NULL;
  if (o->queue)
    rule = "the name is the queue; leave options.queue NULL";
  else if (o->max_attempts || o->dead_letter_group || o->dead_letter_table)
    rule = "a subscription by name takes no max_attempts or dead letter; subscribe to the table "
           "with tabq_subscribe() for those";
  else if (o->lease_s || o->poll_interval_ms)
    rule = "a subscription by name takes the broker's lease and poll interval; set them in "
           "tabq_broker_options, or subscribe to the table with tabq_subscribe()";
  if (!rule)
    return TABQ_OK;
  return tabq__err_set(err, TABQ_DECLARATION, t->name, NULL,
                       "subscription by name '%s' (table %s): %s", name, t->name, rule);
}
