/* What a delivery's deadline asks of the settlements and of the lease extender
 * (docs/deadlines.md): which settlement was the watchdog's, and how far a lease may move. */
#include "deadline.h"
#include "engine.h"

__thread bool tabq__deadline_settling __attribute__((tls_model("initial-exec")));

/* The guard past the deadline: the lease still holds while the watchdog settles the row, so
 * no other claim can take it between the deadline and that settlement. */
#define GUARD_US 1000000

bool tabq__deadline_lease_cap(const tabq_delivery *d, int64_t *until) {
  if (!d->deadline_us)
    return false;
  int64_t cap = d->deadline_us + GUARD_US;
  if (d->sub->claim_flags & TABQ_LEASE_WHOLE_SECONDS)
    cap = (cap + 999999) / 1000000 * 1000000;
  if (*until > cap)
    *until = cap;
  return *until <= d->token; /* the lease reaches that far already */
}
