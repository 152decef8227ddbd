/* Deadlines (docs/deadlines.md): a handler's time budget, the rules that refuse what cannot be
 * honoured, and the watchdog that settles a row whose budget ran out. */
#ifndef TABQ_DEADLINE_H
#define TABQ_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <tabq/tabq.h>

struct tabq_subscription;
struct tabq_delivery;

/* deadline_rules.c: R-DESC-1's rule for deadline_column (it names a data column that holds
 * integers); and the mount's rules for deadline_ms, on_deadline and deadline_retry_ms against
 * the table's form and the options (transactional and batch handlers are refused). */
int tabq__deadline_table_rule(const tabq_table *t, tabq_error *err);
int tabq__deadline_mount_rule(const tabq_table *t, const tabq_subscription_options *o,
                              tabq_error *err);
/* Whether a subscription of these options on t has deadlines at all. */
static inline bool tabq__deadline_used(const tabq_table *t, const tabq_subscription_options *o) {
  return o->deadline_ms || t->deadline_column;
}

/* deadline_slot.c: what the settlements and the lease extender ask of a delivery. */
/* True on the watchdog's thread while it settles a delivery whose deadline passed: a
 * delivery's leaving work (tabq__leave_work) records it in d->by_deadline. */
extern __thread bool tabq__deadline_settling __attribute__((tls_model("initial-exec")));
/* The lease extender, with d->mu held: caps the expiry *until it would write at the deadline
 * plus a guard of one second (so the core's settlement at the deadline runs under the
 * delivery's own token); true when that leaves nothing to extend (skip the row). */
bool tabq__deadline_lease_cap(const struct tabq_delivery *d, int64_t *until);

/* deadline.c: the subscription's watchdog. */
/* Allocates s->deadlines where the subscription has deadlines (nothing otherwise), with the
 * deadline column's place in the projection. */
int tabq__deadline_open(struct tabq_subscription *s, tabq_error *err);
void tabq__deadline_free(struct tabq_subscription *s);
/* Starts the watchdog thread (nothing without deadlines); stops and joins it. */
int tabq__deadline_start(struct tabq_subscription *s, tabq_error *err);
void tabq__deadline_stop(struct tabq_subscription *s);
/* Right before the handler gets d: its deadline from now (none without a budget); and right
 * after it returned: the deadline cleared, once a settlement the watchdog runs has ended. */
void tabq__deadline_arm(struct tabq_delivery *d);
void tabq__deadline_disarm(struct tabq_delivery *d);

#endif
