/* tabq — trace context through the queue, and hooks around each delivery (docs/tracing.md).
 *
 * A publish carries a W3C trace context as two headers, `traceparent` and `tracestate` (a
 * table with a headers column); a publish whose `traceparent` is not one is refused. The
 * handler reads its parent with tabq_delivery_trace(). The delivery hooks let a service open a
 * span when a handler starts and end it when its row is settled, with whatever tracing library
 * it uses: tabq links none.
 *
 *   static void *start(tabq_delivery *d, void *user) {
 *     tabq_trace_context parent = TABQ_TRACE_CONTEXT_INIT;
 *     bool has = tabq_delivery_trace(d, &parent);
 *     return my_span_start(tabq_delivery_queue(d), has ? &parent : NULL);
 *   }
 *   static void end(tabq_delivery *d, const tabq_delivery_end *e, void *span, void *user) {
 *     my_span_end(span, tabq_outcome_name(e->outcome), e->code, e->total_us);
 *   }
 *   tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
 *   hooks.on_delivery_start = start;
 *   hooks.on_delivery_end = end;
 *   tabq_set_delivery_hooks(broker, &hooks, &err);   // before the first subscription
 */
#ifndef TABQ_TRACE_H
#define TABQ_TRACE_H

#include <tabq/tabq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A W3C trace context (https://www.w3.org/TR/trace-context/), as parsed from its headers. */
typedef struct tabq_trace_context {
  uint32_t size;          /* sizeof(tabq_trace_context): TABQ_TRACE_CONTEXT_INIT sets it */
  uint8_t version;        /* 0 today */
  uint8_t flags;          /* bit 0: sampled */
  char trace_id[33];      /* 32 lowercase hex digits, never all zero */
  char parent_id[17];     /* 16 lowercase hex digits, never all zero: the publisher's span */
  const char *tracestate; /* the vendors' list as carried, NULL when absent; borrowed */
} tabq_trace_context;

#define TABQ_TRACE_CONTEXT_INIT TABQ_SIZED_INIT(tabq_trace_context)

/* Parses a `traceparent` value (and keeps `tracestate`, which may be NULL) into `out`, `size`
 * bytes of it (out->size as the caller compiled it). False when it is no valid trace context:
 * a version ff or of other than two hex digits, an id of the wrong length, upper case, all
 * zeros, or a version 00 value with anything after its flags. */
TABQ_API bool tabq_trace_parse(const char *traceparent, const char *tracestate,
                               tabq_trace_context *out);

/* The trace context the delivery's row carries in its headers: true with `out` filled (the
 * tracestate borrowed for the handler's call), false when the row has no headers, no
 * `traceparent`, or one that does not parse. */
TABQ_API bool tabq_delivery_trace(tabq_delivery *d, tabq_trace_context *out);

/* The description's table name, and the queue the delivery's subscription reads ("" for a
 * table without a group column and a subscription without a label). */
TABQ_API const char *tabq_delivery_table(const tabq_delivery *d);
TABQ_API const char *tabq_delivery_queue(const tabq_delivery *d);

/* What on_delivery_end learns. */
typedef struct tabq_delivery_end {
  uint32_t size; /* the bytes tabq filled: members are only appended */
  /* What the row was settled as (ACK, DROP, RETRY, RETRY_AFTER, DEAD_LETTER: a retry at
   * max_attempts reads DEAD_LETTER), or NONE when it was given back unsettled. */
  tabq_outcome_kind outcome;
  tabq_code code;     /* the settlement's result: TABQ_OK, or why it did not take effect */
  int64_t handler_us; /* the handler's call (a batch handler's whole call) */
  int64_t total_us;   /* from on_delivery_start's call to the settlement's end */
} tabq_delivery_end;

typedef struct tabq_delivery_hooks {
  uint32_t size; /* sizeof(tabq_delivery_hooks): TABQ_DELIVERY_HOOKS_INIT sets it */
  /* Called on the handler's thread just before the handler, for each delivery a handler gets
   * (each row of a batch, before the batch handler's call); rows that never reach a handler
   * (they did not decode) are not seen. What it returns is given to on_delivery_end. */
  void *(*on_delivery_start)(tabq_delivery *d, void *user);
  /* Called on the same thread after the row's settlement (or its failure), the delivery still
   * readable; `token` is what on_delivery_start returned. */
  void (*on_delivery_end)(tabq_delivery *d, const tabq_delivery_end *end, void *token, void *user);
  void *user;
} tabq_delivery_hooks;

#define TABQ_DELIVERY_HOOKS_INIT TABQ_SIZED_INIT(tabq_delivery_hooks)

/* Sets the broker's delivery hooks (copied; NULL clears them). Only before the broker's first
 * subscription: TABQ_INVALID after, as the workers read them without a lock. */
TABQ_API int tabq_set_delivery_hooks(tabq_broker *b, const tabq_delivery_hooks *hooks,
                                     tabq_error *err);

/* "ack", "drop", "retry", "retry_after", "dead_letter", "none". */
TABQ_API const char *tabq_outcome_name(tabq_outcome_kind kind);

#ifdef __cplusplus
}
#endif

#endif
