/* tracing: a trace context carried through a SQLite queue, and a span per delivery.
 *
 * A "request" with a trace of its own publishes three jobs, each carrying the request's
 * `traceparent` and `tracestate` headers. The delivery hooks open a span for each delivery,
 * a child of the publisher's span, and end it when the row is settled — here a line printed in
 * the shape a tracing library would export; a service would call its OpenTelemetry (or other)
 * SDK in the same two places instead. The program checks itself: every span belongs to the
 * request's trace, names the publisher's span as its parent, and ends with its row's outcome.
 *
 *   tracing [DATABASE_FILE]        (default: tracing.db, created afresh) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <tabq/trace.h>
#include <unistd.h>

static const tabq_table jobs = {
    .size = sizeof(tabq_table),
    .name = "jobs",
    .id = {.name = "id", .generated = true},
    .attempt = {.name = "attempt", .generated = true},
    .locked_until = {.name = "locked_until"},
    .retry_after = {.name = "retry_after"},
    .headers = {.name = "headers"},
    .payload = {.name = "payload"},
};

#define JOBS 3
static tabq_broker *broker;
static atomic_int ended, wrong;

/* The publisher's span: in a service, the current span of the request being served. */
static char request_trace[33], request_span[17];

static void random_hex(char *out, size_t digits) {
  unsigned char bytes[16];
  if (getrandom(bytes, digits / 2, 0) != (ssize_t)(digits / 2))
    memset(bytes, 0x5a, sizeof bytes);
  for (size_t i = 0; i < digits / 2; i++)
    sprintf(out + 2 * i, "%02x", bytes[i]);
}

/* A span as a tracing library keeps it: ids, parent, start. */
typedef struct span {
  char trace_id[33], span_id[17], parent_id[17];
  bool has_parent;
} span;

static void *span_start(tabq_delivery *d, void *user) {
  (void)user;
  span *sp = calloc(1, sizeof *sp);
  if (!sp)
    return NULL;
  tabq_trace_context parent = TABQ_TRACE_CONTEXT_INIT;
  if ((sp->has_parent = tabq_delivery_trace(d, &parent))) {
    memcpy(sp->trace_id, parent.trace_id, sizeof sp->trace_id);
    memcpy(sp->parent_id, parent.parent_id, sizeof sp->parent_id);
  } else {
    random_hex(sp->trace_id, 32); /* no parent: the span starts a trace of its own */
  }
  random_hex(sp->span_id, 16);
  return sp;
}

static void span_end(tabq_delivery *d, const tabq_delivery_end *e, void *token, void *user) {
  (void)user;
  span *sp = token;
  if (!sp)
    return;
  printf("span %s trace=%s parent=%s name=\"process %s\" job=%lld attempt=%ld outcome=%s "
         "handler=%.1fms total=%.1fms\n",
         sp->span_id, sp->trace_id, sp->has_parent ? sp->parent_id : "-", tabq_delivery_queue(d),
         (long long)tabq_delivery_id(d), tabq_delivery_attempt(d), tabq_outcome_name(e->outcome),
         (double)e->handler_us / 1000, (double)e->total_us / 1000);
  if (!sp->has_parent || strcmp(sp->trace_id, request_trace) ||
      strcmp(sp->parent_id, request_span) || e->code != TABQ_OK)
    atomic_fetch_add(&wrong, 1);
  free(sp);
  /* The first attempt of job 2 retries: 4 spans in all. */
  if (atomic_fetch_add(&ended, 1) + 1 == JOBS + 1)
    tabq_stop(broker);
}

static tabq_outcome handle(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *text = tabq_delivery_payload(d, &len);
  if (len == 5 && !memcmp(text, "flaky", 5) && tabq_delivery_attempt(d) == 1)
    return tabq_retry_after(10);
  return tabq_ack();
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "tracing.db";
  char url[512];
  snprintf(url, sizeof url, "sqlite:%s", file);
  unlink(file);

  tabq_error err;
  if (tabq_connect(url, NULL, &broker, &err) ||
      tabq_exec(broker,
                "CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1,"
                " locked_until TEXT, retry_after TEXT, headers TEXT, payload BLOB NOT NULL)",
                &err))
    return fprintf(stderr, "%s\n", err.message), 1;

  /* The request's trace context, as its own headers would carry it to a downstream call. */
  random_hex(request_trace, 32);
  random_hex(request_span, 16);
  char traceparent[56];
  snprintf(traceparent, sizeof traceparent, "00-%s-%s-01", request_trace, request_span);
  const tabq_header trace[] = {{"traceparent", traceparent}, {"tracestate", "tabq=example"}};
  const char *texts[JOBS] = {"resize", "flaky", "notify"};
  for (int i = 0; i < JOBS; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.payload = texts[i];
    m.payload_len = strlen(texts[i]);
    m.headers = trace;
    m.nheaders = 2;
    if (tabq_publish(broker, &jobs, &m, &err))
      return fprintf(stderr, "%s\n", err.message), 1;
  }
  printf("request trace=%s span=%s published %d jobs\n", request_trace, request_span, JOBS);

  tabq_delivery_hooks hooks = TABQ_DELIVERY_HOOKS_INIT;
  hooks.on_delivery_start = span_start;
  hooks.on_delivery_end = span_end;
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "jobs";
  o.handler = handle;
  o.poll_interval_ms = 20;
  if (tabq_set_delivery_hooks(broker, &hooks, &err) ||
      tabq_subscribe(broker, &jobs, &o, NULL, &err))
    return fprintf(stderr, "%s: %s\n", tabq_code_name(err.code), err.message), 1;
  tabq_run(broker);
  tabq_close(broker);
  int bad = atomic_load(&wrong);
  printf("%d spans, %d not children of the request's span\n", atomic_load(&ended), bad);
  return bad || atomic_load(&ended) != JOBS + 1;
}
