/* tabq — a delivery as a claim fills it, for the decoder targets: a broker and a subscription
 * of the engine's own types around `table`, and a driver whose cells the target gives. */
#ifndef TABQ_FUZZ_DELIVERY_H
#define TABQ_FUZZ_DELIVERY_H

#include "engine.h"
#include "fuzz.h"

typedef struct fuzz_delivery {
  tabq_broker *b;
  tabq_subscription *s;
  tabq_delivery d;
  tabq_value cells[16]; /* what the driver reads: the projection's columns in order */
  tabq_value filled[16];
} fuzz_delivery;

/* Opens the subscription with `options` (tabq__decode_open); false when it refuses them. */
bool fuzz_delivery_open(fuzz_delivery *f, const tabq_table *table,
                        const tabq_subscription_options *options);
/* Fills the delivery from f->cells as tabq__delivery_fill does from a claim's row. */
void fuzz_delivery_fill(fuzz_delivery *f);
/* Ends the delivery (tabq__delivery_done) and frees what it held. */
void fuzz_delivery_end(fuzz_delivery *f);
void fuzz_delivery_close(fuzz_delivery *f);

#endif
