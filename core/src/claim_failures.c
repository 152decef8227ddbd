/* A subscription whose claims keep failing (the server gone, the disk full, the file locked by
 * another process): the first failure is logged as an error, then one line a minute says it
 * goes on, and one line says when claims succeed again; meanwhile each failed claim waits twice
 * as long as the one before, from one poll interval up to five seconds (or the poll interval,
 * when that is longer), so a lasting fault neither floods the log nor keeps a worker spinning
 * against the server. A wake-up (a publish through the broker) still claims at once. */
#include "engine.h"
#include "clock.h"
#include "log.h"

#define BACKOFF_CAP_MS 5000
#define REPEAT_LOG_MS 60000

int64_t tabq__claim_failed(tabq_subscription *s, const tabq_error *err) {
  int64_t now = tabq__mono_ms();
  if (s->claim_failures++ == 0) {
    s->claim_failing_since_ms = now;
    s->claim_next_log_ms = now + REPEAT_LOG_MS;
    tabq__logf(&s->b->log, TABQ_LOG_ERROR, "claim on table %s failed (%s): %s", s->t->name,
               tabq_code_name(err->code), err->message);
  } else if (now >= s->claim_next_log_ms) {
    s->claim_next_log_ms = now + REPEAT_LOG_MS;
    tabq__logf(&s->b->log, TABQ_LOG_ERROR,
               "claims on table %s still fail: %u failures in %lld s, the last (%s): %s",
               s->t->name, s->claim_failures, (long long)((now - s->claim_failing_since_ms) / 1000),
               tabq_code_name(err->code), err->message);
  }
  int64_t cap = s->poll_ms > BACKOFF_CAP_MS ? s->poll_ms : BACKOFF_CAP_MS;
  int64_t wait = s->poll_ms;
  for (unsigned i = 1; i < s->claim_failures && wait < cap; i++)
    wait *= 2;
  return now + (wait < cap ? wait : cap);
}

void tabq__claim_succeeded(tabq_subscription *s) {
  if (!s->claim_failures)
    return;
  tabq__logf(&s->b->log, TABQ_LOG_INFO,
             "claims on table %s succeed again, after %u failures in %lld s", s->t->name,
             s->claim_failures, (long long)((tabq__mono_ms() - s->claim_failing_since_ms) / 1000));
  s->claim_failures = 0;
}
