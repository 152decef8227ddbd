/* Handlers the conformance kit's tests mount, shared with tabq's own live tests (which build this
 * file too): a recorder, exactly-once counting, and a sleep. */
#ifndef TABQ_KIT_HANDLERS_H
#define TABQ_KIT_HANDLERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <tabq/tabq.h>

/* A handler that records what it saw and answers with a scripted outcome. */
typedef struct recorder {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned calls;
  int64_t ids[64];
  long attempts[64];
  char payloads[64][32];
  tabq_outcome (*script)(struct recorder *r, tabq_delivery *d, unsigned call);
  void *extra;
} recorder;

void recorder_init(recorder *r);
void recorder_free(recorder *r);
tabq_outcome recorder_handler(tabq_delivery *d, void *user);
unsigned recorder_calls(recorder *r);
bool recorder_wait(recorder *r, unsigned calls, int timeout_ms);

/* A handler held at a gate: it marks itself in, then waits until the test opens the gate, and
 * acks. gate_wait_in waits until a delivery is in (held by its handler). */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool in, out;
} gate;

void gate_init(gate *g);
tabq_outcome wait_at_gate(tabq_delivery *d, void *user);
void gate_wait_in(gate *g);
void gate_open(gate *g);

void sleep_ms(int ms);

/* A batch handler that acks every row. */
void ack_every_row(tabq_delivery *const *ds, size_t n, tabq_outcome *out, void *user);

/* Exactly-once counting: reset, mount once_handler (it acks), then once_check asserts. */
#define ONCE_MAX 20000
void once_reset(int n);
tabq_outcome once_handler(tabq_delivery *d, void *user);
void once_check(void);

#endif
