/* The schedule's spec parser and the next wall time of a cron expression (cron.h). */
#include "cron.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct field_def {
  const char *name;
  unsigned min, max;
  const char *const *names; /* three-letter names for min, min+1, ... (NULL: none) */
} field_def;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const day_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/* Day of week takes 0-7, 7 being Sunday as 0 is. */
static const field_def fields[5] = {
    {"minute", 0, 59, NULL},          {"hour", 0, 23, NULL},
    {"day of month", 1, 31, NULL},    {"month", 1, 12, month_names},
    {"day of week", 0, 7, day_names},
};

typedef struct parser {
  const char *spec;
  const char *p;
  unsigned field; /* 0-4 */
  unsigned *position;
  char *why;
  size_t cap;
} parser;

static int refuse_at(parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse_at(parser *ps, const char *at, const char *fmt, ...) {
  unsigned pos = (unsigned)(at - ps->spec) + 1;
  int n = snprintf(ps->why, ps->cap, "field %u (%s), position %u: ", ps->field + 1,
                   fields[ps->field].name, pos);
  if (n > 0 && (size_t)n < ps->cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->why + n, ps->cap - (size_t)n, fmt, ap);
    va_end(ap);
  }
  *ps->position = pos;
  return -1;
}

static int refuse_whole(char *why, size_t cap, unsigned *position, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse_whole(char *why, size_t cap, unsigned *position, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  *position = 0;
  return -1;
}

static bool field_char(char c) {
  return c && !isspace((unsigned char)c);
}

/* A number or (month, day of week) a three-letter name, into *v. */
static int value(parser *ps, unsigned *v) {
  const field_def *f = &fields[ps->field];
  const char *at = ps->p;
  if (isdigit((unsigned char)*at)) {
    unsigned long n = 0;
    const char *q = at;
    while (isdigit((unsigned char)*q)) {
      if (q - at >= 4)
        return refuse_at(ps, at, "the number is too long; %s is %u-%u", f->name, f->min, f->max);
      n = n * 10 + (unsigned)(*q++ - '0');
    }
    if (n < f->min || n > f->max)
      return refuse_at(ps, at, "%lu is out of %u-%u", n, f->min, f->max);
    ps->p = q;
    *v = (unsigned)n;
    return 0;
  }
  if (isalpha((unsigned char)*at)) {
    const char *q = at;
    while (isalpha((unsigned char)*q))
      q++;
    unsigned nnames = f->min == 1 ? 12 : 7;
    if (f->names && q - at == 3)
      for (unsigned i = 0; i < nnames; i++)
        if (!strncasecmp(at, f->names[i], 3)) {
          ps->p = q;
          *v = f->min + i;
          return 0;
        }
    if (f->names)
      return refuse_at(ps, at, "'%.*s' is not a %s name (%s)", (int)(q - at), at, f->name,
                       f->min == 1 ? "jan-dec" : "sun-sat");
    return refuse_at(ps, at, "'%.*s' is not a number; %s takes %u-%u", (int)(q - at), at, f->name,
                     f->min, f->max);
  }
  if (!field_char(*at))
    return refuse_at(ps, at, "a value is missing");
  return refuse_at(ps, at, "'%c' where a value was expected (a number, '*'%s)", *at,
                   f->names ? " or a name" : "");
}

/* One item of a list: '*', N, N-M, each with an optional /STEP; N/STEP runs from N to the
 * field's end. Sets the bits into *bits. */
static int item(parser *ps, uint64_t *bits) {
  const field_def *f = &fields[ps->field];
  unsigned lo = f->min, hi = f->max, step = 1;
  bool star = *ps->p == '*', range = false;
  if (star) {
    ps->p++;
  } else {
    if (value(ps, &lo))
      return -1;
    hi = lo;
    if (*ps->p == '-') {
      const char *dash = ps->p++;
      if (value(ps, &hi))
        return -1;
      if (hi < lo)
        return refuse_at(ps, dash, "the range %u-%u runs backwards", lo, hi);
      range = true;
    }
  }
  if (*ps->p == '/') {
    ps->p++;
    if (!isdigit((unsigned char)*ps->p))
      return refuse_at(ps, ps->p, "a step needs a number after '/'");
    const char *at = ps->p;
    unsigned long n = 0;
    while (isdigit((unsigned char)*ps->p)) {
      if (ps->p - at >= 4)
        return refuse_at(ps, at, "the step is too long");
      n = n * 10 + (unsigned)(*ps->p++ - '0');
    }
    if (n == 0)
      return refuse_at(ps, at, "a step of 0 never advances");
    if (n > f->max - f->min + 1u)
      return refuse_at(ps, at, "a step of %lu is more than %s's %u values", n, f->name,
                       f->max - f->min + 1u);
    if (!star && !range)
      hi = f->max; /* N/STEP */
    step = (unsigned)n;
  }
  for (unsigned v = lo; v <= hi; v += step)
    *bits |= 1ull << v;
  return 0;
}

static int field(parser *ps, uint64_t *bits, bool *star) {
  *bits = 0;
  *star = *ps->p == '*';
  for (;;) {
    if (item(ps, bits))
      return -1;
    if (*ps->p == ',') {
      ps->p++;
      continue;
    }
    if (field_char(*ps->p))
      return refuse_at(ps, ps->p, "unexpected '%c'", *ps->p);
    return 0;
  }
}

/* "every 30s", "@every 1h30m": units s, m, h, d; at most 366 days. */
static int interval(const char *spec, const char *p, tabq_cron *out, unsigned *position, char *why,
                    size_t cap) {
  int64_t total = 0;
  while (isspace((unsigned char)*p))
    p++;
  if (!*p)
    return refuse_whole(why, cap, position, "'%s' names no interval (\"every 30s\", \"every 5m\")",
                        spec);
  while (*p && !isspace((unsigned char)*p)) {
    const char *at = p;
    if (!isdigit((unsigned char)*p)) {
      *position = (unsigned)(p - spec) + 1;
      snprintf(why, cap, "interval, position %u: '%c' where a number was expected", *position, *p);
      return -1;
    }
    int64_t n = 0;
    while (isdigit((unsigned char)*p)) {
      if (p - at >= 9) {
        *position = (unsigned)(at - spec) + 1;
        snprintf(why, cap, "interval, position %u: the number is too long", *position);
        return -1;
      }
      n = n * 10 + (*p++ - '0');
    }
    int64_t unit = *p == 's' ? 1 : *p == 'm' ? 60 : *p == 'h' ? 3600 : *p == 'd' ? 86400 : 0;
    if (!unit) {
      *position = (unsigned)(p - spec) + 1;
      snprintf(why, cap, "interval, position %u: a unit is needed after %lld: s, m, h or d",
               *position, (long long)n);
      return -1;
    }
    p++;
    total += n * unit;
    if (total > 366 * 86400) {
      *position = (unsigned)(at - spec) + 1;
      snprintf(why, cap, "interval, position %u: longer than 366 days", *position);
      return -1;
    }
  }
  while (isspace((unsigned char)*p))
    p++;
  if (*p) {
    *position = (unsigned)(p - spec) + 1;
    snprintf(why, cap, "interval, position %u: unexpected '%c' after the interval", *position, *p);
    return -1;
  }
  if (total == 0)
    return refuse_whole(why, cap, position, "an interval of 0 never advances");
  out->interval_s = total;
  return 0;
}

static const struct {
  const char *name, *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

int tabq__cron_parse(const char *spec, tabq_cron *out, unsigned *position, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  *position = 0;
  if (!spec)
    return refuse_whole(why, cap, position, "no spec: a cron expression or an interval");
  const char *s = spec;
  while (isspace((unsigned char)*s))
    s++;
  if (!strncasecmp(s, "every", 5) && (isspace((unsigned char)s[5]) || !s[5]))
    return interval(spec, s + 5, out, position, why, cap);
  if (!strncasecmp(s, "@every", 6) && (isspace((unsigned char)s[6]) || !s[6]))
    return interval(spec, s + 6, out, position, why, cap);
  if (*s == '@') {
    size_t len = 0;
    while (field_char(s[len]))
      len++;
    for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
      if (strlen(macros[i].name) == len && !strncasecmp(s, macros[i].name, len)) {
        const char *rest = s + len;
        while (isspace((unsigned char)*rest))
          rest++;
        if (*rest) {
          *position = (unsigned)(rest - spec) + 1;
          snprintf(why, cap, "position %u: unexpected text after %s", *position, macros[i].name);
          return -1;
        }
        int rc = tabq__cron_parse(macros[i].expr, out, position, why, cap);
        return rc;
      }
    *position = (unsigned)(s - spec) + 1;
    snprintf(why, cap,
             "position %u: '%.*s' is not a macro tabq knows (@yearly, @annually, @monthly, "
             "@weekly, @daily, @midnight, @hourly, @every)",
             *position, (int)len, s);
    return -1;
  }
  if (!*s)
    return refuse_whole(why, cap, position, "the spec is empty: a cron expression or an interval");
  unsigned nfields = 0;
  for (const char *q = s; *q;) {
    while (isspace((unsigned char)*q))
      q++;
    if (!*q)
      break;
    nfields++;
    while (field_char(*q))
      q++;
  }
  if (nfields != 5)
    return refuse_whole(why, cap, position,
                        "'%s' has %u fields; a cron expression has 5: minute, hour, day of "
                        "month, month, day of week",
                        spec, nfields);
  parser ps = {.spec = spec, .p = s, .position = position, .why = why, .cap = cap};
  uint64_t bits[5];
  bool star[5];
  for (ps.field = 0; ps.field < 5; ps.field++) {
    while (isspace((unsigned char)*ps.p))
      ps.p++;
    if (field(&ps, &bits[ps.field], &star[ps.field]))
      return -1;
  }
  out->minutes = bits[0];
  out->hours = (uint32_t)bits[1];
  out->days = (uint32_t)bits[2];
  out->months = (uint32_t)bits[3];
  out->weekdays = (uint32_t)((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is Sunday */
  out->dom_star = star[2];
  out->dow_star = star[4];
  out->wildcard = star[0] || star[1];
  /* An expression no date satisfies ("0 0 30 2 *") would leave the scheduler waiting forever. */
  if (tabq__cron_next_wall(out, 0) < 0)
    return refuse_whole(why, cap, position, "'%s' matches no date: it would never fire", spec);
  return 0;
}

/* ---- The civil calendar (proleptic Gregorian) ---------------------------------------------- */

int64_t tabq__days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                  /* 0-399 */
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* 0-365, from March */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* 0-146096 */
  return era * 146097 + doe - 719468;
}

void tabq__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d) {
  days += 719468;
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  int64_t doe = days - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static unsigned days_in_month(int64_t y, unsigned m) {
  static const unsigned n[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : n[m - 1];
}

static bool day_allowed(const tabq_cron *c, int64_t y, unsigned m, unsigned d) {
  int64_t days = tabq__days_from_civil(y, m, d);
  unsigned wday = (unsigned)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
  bool dom = c->days >> d & 1, dow = c->weekdays >> wday & 1;
  if (c->dom_star || c->dow_star)
    return dom && dow;
  return dom || dow;
}

int64_t tabq__cron_next_wall(const tabq_cron *c, int64_t wall_s) {
  int64_t t = wall_s >= 0 ? (wall_s + 59) / 60 * 60 : -((-wall_s) / 60 * 60);
  int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  int64_t rem = t - days * 86400;
  unsigned hh = (unsigned)(rem / 3600), mm = (unsigned)(rem % 3600 / 60);
  int64_t y;
  unsigned mo, d;
  tabq__civil_from_days(days, &y, &mo, &d);
  int64_t last_year = y + 30;
  for (;;) {
    if (y > last_year)
      return -1;
    if (!(c->months >> mo & 1)) {
      d = 1, hh = 0, mm = 0;
      if (++mo > 12)
        mo = 1, y++;
      continue;
    }
    if (!day_allowed(c, y, mo, d)) {
      hh = 0, mm = 0;
      if (++d > days_in_month(y, mo)) {
        d = 1;
        if (++mo > 12)
          mo = 1, y++;
      }
      continue;
    }
    if (!(c->hours >> hh & 1)) {
      mm = 0;
      if (++hh > 23) {
        hh = 0;
        if (++d > days_in_month(y, mo)) {
          d = 1;
          if (++mo > 12)
            mo = 1, y++;
        }
      }
      continue;
    }
    if (!(c->minutes >> mm & 1)) {
      if (++mm > 59) {
        mm = 0;
        if (++hh > 23) {
          hh = 0;
          if (++d > days_in_month(y, mo)) {
            d = 1;
            if (++mo > 12)
              mo = 1, y++;
          }
        }
      }
      continue;
    }
    return tabq__days_from_civil(y, mo, d) * 86400 + hh * 3600 + mm * 60;
  }
}
