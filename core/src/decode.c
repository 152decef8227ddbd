/* Decoding (SPEC 7): before a handler sees a row, the row mode columns are read as their
 * declared types, the headers checked (where a codec is set) and the codec run. A row that
 * fails any of it is settled by the subscription's decode policy instead — drop, retry after a
 * delay, or dead letter — its attempt counted, and counted in the decode_failed count. */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "error.h"
#include "sized.h"

static int refuse(tabq_error *err, const tabq_subscription *s, const char *detail) {
  return tabq__err_set(err, TABQ_DECLARATION, s->t->name, NULL, "subscription to table %s: %s",
                       s->t->name, detail);
}

static bool declares_types(const tabq_table *t) {
  for (size_t i = 0; i < t->ndata; i++)
    if (t->data[i].type != TABQ_T_NULL)
      return true;
  return false;
}

int tabq__decode_open(tabq_subscription *s, const tabq_subscription_options *o, tabq_error *err) {
  const tabq_table *t = s->t;
  s->typed_rows = !t->payload.name && declares_types(t);
  switch (o->on_decode_failure) {
  case TABQ_DECODE_DROP:
    break;
  case TABQ_DECODE_RETRY_AFTER:
    if (!t->retry_after.name)
      return refuse(err, s,
                    "the decode policy retry_after needs a retry_after column (without one the "
                    "row would come back at once, and fail again)");
    if (!o->decode_retry_ms)
      return refuse(err, s, "the decode policy retry_after needs decode_retry_ms above 0");
    break;
  case TABQ_DECODE_DEAD_LETTER:
    if (!o->dead_letter_group && !o->dead_letter_table)
      return refuse(err, s,
                    "the decode policy dead_letter needs the mount's dead letter (max_attempts "
                    "with a dead letter group or table)");
    break;
  default:
    return refuse(err, s,
                  "on_decode_failure is none of TABQ_DECODE_DROP, _RETRY_AFTER, "
                  "_DEAD_LETTER");
  }
  if (o->decode_retry_ms && o->on_decode_failure != TABQ_DECODE_RETRY_AFTER)
    return refuse(err, s, "decode_retry_ms needs the decode policy TABQ_DECODE_RETRY_AFTER");
  if (!o->codec)
    return TABQ_OK;
  int rc = TABQ_TAKE(o->codec, &s->codec, TABQ_CODEC_SIZE_1_0, t->name, err);
  if (rc)
    return rc;
  const char *name = s->codec.name ? s->codec.name : "(unnamed)";
  char detail[256];
  if (t->payload.name && !s->codec.decode) {
    snprintf(detail, sizeof detail,
             "codec %s has no decode, and the table's rows carry a payload (column %s)", name,
             t->payload.name);
    return refuse(err, s, detail);
  }
  if (!t->payload.name && !s->codec.decode_row) {
    snprintf(detail, sizeof detail,
             "codec %s decodes payloads, and the table is in row mode (no payload column): give "
             "a codec with decode_row, or none (declared column types are checked without one)",
             name);
    return refuse(err, s, detail);
  }
  s->has_codec = true;
  return TABQ_OK;
}

tabq_outcome tabq__decode_outcome(const tabq_subscription *s) {
  switch (s->o.on_decode_failure) {
  case TABQ_DECODE_RETRY_AFTER:
    return tabq_retry_after(s->o.decode_retry_ms);
  case TABQ_DECODE_DEAD_LETTER:
    return tabq_dead_letter();
  default:
    return tabq_drop();
  }
}

/* Headers must be one JSON object of string values; parsed here, they serve the handler's
 * reads too. */
static bool check_headers(tabq_delivery *d, char *why, size_t cap) {
  int col = d->sub->proj.headers;
  if (col < 0 || d->cells[col].type == TABQ_T_NULL)
    return true;
  const tabq_value *v = &d->cells[col];
  if (v->type != TABQ_T_TEXT && v->type != TABQ_T_JSON && v->type != TABQ_T_BYTES) {
    snprintf(why, cap, "the headers column holds no text");
    return false;
  }
  json_error_t jerr;
  json_t *h = json_loadb(v->u.buf.ptr, v->u.buf.len, JSON_DECODE_ANY, &jerr);
  if (!h) {
    snprintf(why, cap, "the headers are not JSON: %s", jerr.text);
    return false;
  }
  d->headers = h; /* freed by tabq__delivery_done, whatever follows */
  if (!json_is_object(h)) {
    snprintf(why, cap, "the headers are JSON but not an object");
    return false;
  }
  const char *name;
  json_t *value;
  json_object_foreach(h, name, value) {
    if (!json_is_string(value)) {
      snprintf(why, cap, "header %.60s is not a string", name);
      return false;
    }
  }
  return true;
}

static bool run_codec(tabq_delivery *d, char *why, size_t cap) {
  tabq_subscription *s = d->sub;
  const tabq_codec *c = &s->codec;
  void *out = NULL;
  int rc;
  why[0] = '\0';
  if (s->t->payload.name) {
    const tabq_value *v = s->proj.payload >= 0 ? &d->cells[s->proj.payload] : NULL;
    bool has = v && tabq__has_buffer(v->type);
    rc = c->decode(has ? v->u.buf.ptr : "", has ? v->u.buf.len : 0, &out, why, cap, c->user);
  } else {
    rc = c->decode_row(d, &out, why, cap, c->user);
  }
  if (rc) {
    if (!why[0])
      snprintf(why, cap, "codec %s refused it", c->name ? c->name : "(unnamed)");
    return false;
  }
  d->decoded = out;
  d->has_decoded = true;
  return true;
}

static void log_failure(tabq_delivery *d, const char *why, tabq_outcome policy) {
  tabq_subscription *s = d->sub;
  const char *what = policy.kind == TABQ_OUTCOME_RETRY_AFTER   ? "retried after a delay"
                     : policy.kind == TABQ_OUTCOME_DEAD_LETTER ? "dead-lettered"
                                                               : "dropped";
  char id[TABQ__ID_SHOWN];
  tabq__logf(&s->b->log, TABQ_LOG_WARN, "table %s: row %s does not decode (%s); it is %s",
             s->t->name, tabq__id_shown(&d->id, id), why, what);
}

bool tabq__decode_gate(tabq_delivery *d, tabq_outcome *policy) {
  tabq_subscription *s = d->sub;
  if (!s->typed_rows && !s->has_codec)
    return true;
  char why[256];
  bool ok = (!s->typed_rows || tabq__row_read(d, why, sizeof why)) &&
            (!s->has_codec || (check_headers(d, why, sizeof why) && run_codec(d, why, sizeof why)));
  if (ok)
    return true;
  *policy = tabq__decode_outcome(s);
  tabq__count(&d->counts, TABQ__N_DECODE_FAILED, 1);
  log_failure(d, why, *policy);
  return false;
}

void tabq__decode_release(tabq_delivery *d) {
  if (!d->has_decoded)
    return;
  const tabq_codec *c = &d->sub->codec;
  if (c->release)
    c->release(d->decoded, c->user);
  d->decoded = NULL;
  d->has_decoded = false;
}

void *tabq_delivery_decoded(const tabq_delivery *d) {
  return d->has_decoded ? d->decoded : NULL;
}

/* ---- The built-in JSON codec ---- */

static int json_decode(const void *payload, size_t len, void **out, char *why, size_t cap,
                       void *user) {
  (void)user;
  json_error_t jerr;
  json_t *j = json_loadb(payload, len, JSON_DECODE_ANY, &jerr);
  if (!j) {
    snprintf(why, cap, "the payload is not JSON: %s (at byte %d)", jerr.text, jerr.position);
    return 1;
  }
  *out = j;
  return 0;
}

static void json_release(void *decoded, void *user) {
  (void)user;
  json_decref(decoded);
}

static const tabq_codec json_codec = {
    .size = sizeof(tabq_codec),
    .name = "json",
    .decode = json_decode,
    .release = json_release,
};

const tabq_codec *tabq_json_codec(void) {
  return &json_codec;
}
