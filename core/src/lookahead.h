/* The look-ahead of a lease subscription (lookahead.c, docs/prefetch.md), under s->mu: set up
 * when the subscription is made (its slots added to s->nslots), the rows a claim takes ahead of
 * the idle workers now, and a delivery's time (from a worker taking it to its settlement)
 * learnt. */
#ifndef TABQ_LOOKAHEAD_H
#define TABQ_LOOKAHEAD_H

#include <stdint.h>

#include "engine.h"

void tabq__lookahead_open(tabq_subscription *s);
unsigned tabq__lookahead(const tabq_subscription *s);
void tabq__lookahead_took(tabq_subscription *s, int64_t us);

#endif
