/* A schedule's slots in its zone, and their keys (schedule_slots.h). The zone's offsets and
 * transitions come from ICU's calendar (Debian's libicu), so no wall time is ever computed
 * through the process's TZ or localtime. */
#include "schedule_slots.h"

#include <stdio.h>
#include <string.h>
#include <unicode/ucal.h>
#include <unicode/ustring.h>

#include "error.h"

static bool utc_name(const char *name) {
  return !name || !name[0] || !strcmp(name, "UTC") || !strcmp(name, "Etc/UTC");
}

int tabq__zone_open(const char *name, tabq_zone *z, tabq_error *err) {
  memset(z, 0, sizeof *z);
  if (utc_name(name)) {
    strcpy(z->name, "UTC");
    return TABQ_OK;
  }
  size_t len = strlen(name);
  bool plain = len < sizeof z->name;
  for (size_t i = 0; plain && i < len; i++)
    plain = (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') ||
            (name[i] >= '0' && name[i] <= '9') || strchr("/_+-", name[i]);
  if (!plain)
    return tabq__err_set(err, TABQ_INVALID, NULL, "schedule",
                         "zone '%.80s' is not an IANA zone name (\"Europe/Berlin\", \"UTC\")",
                         name);
  UChar id[64], canonical[128];
  u_charsToUChars(name, id, (int32_t)len + 1);
  UBool system = 0;
  UErrorCode st = U_ZERO_ERROR;
  ucal_getCanonicalTimeZoneID(id, (int32_t)len, canonical, 128, &system, &st);
  if (U_FAILURE(st) || !system)
    return tabq__err_set(err, TABQ_INVALID, NULL, "schedule",
                         "zone '%s' is not a zone the time zone database knows (an IANA name "
                         "such as \"Europe/Berlin\", or \"UTC\")",
                         name);
  st = U_ZERO_ERROR;
  UCalendar *cal = ucal_open(id, (int32_t)len, "en_US_POSIX", UCAL_GREGORIAN, &st);
  if (U_FAILURE(st) || !cal)
    return tabq__err_set(err, TABQ_NOMEM, NULL, "schedule", "cannot open a calendar of zone %s: %s",
                         name, u_errorName(st));
  z->cal = cal;
  memcpy(z->name, name, len + 1);
  return TABQ_OK;
}

void tabq__zone_close(tabq_zone *z) {
  if (z->cal)
    ucal_close(z->cal);
  z->cal = NULL;
}

/* The zone's offset from UTC at `t`, in seconds (standard and daylight saving together). */
static int64_t offset_at(tabq_zone *z, int64_t t) {
  if (!z->cal)
    return 0;
  UErrorCode st = U_ZERO_ERROR;
  ucal_setMillis(z->cal, (UDate)t * 1000.0, &st);
  int32_t zone = ucal_get(z->cal, UCAL_ZONE_OFFSET, &st);
  int32_t dst = ucal_get(z->cal, UCAL_DST_OFFSET, &st);
  return U_FAILURE(st) ? 0 : ((int64_t)zone + dst) / 1000;
}

/* The zone's transition after `t` (next) or at or before it (previous), in seconds. */
static bool transition(tabq_zone *z, int64_t t, bool next, int64_t *at) {
  if (!z->cal)
    return false;
  UErrorCode st = U_ZERO_ERROR;
  ucal_setMillis(z->cal, (UDate)t * 1000.0, &st);
  UDate d = 0;
  UBool found = ucal_getTimeZoneTransitionDate(
      z->cal, next ? UCAL_TZ_TRANSITION_NEXT : UCAL_TZ_TRANSITION_PREVIOUS_INCLUSIVE, &d, &st);
  if (U_FAILURE(st) || !found)
    return false;
  *at = (int64_t)(d / 1000.0);
  return true;
}

int tabq__spec_parse(const char *spec, const char *zone, tabq_cron *c, tabq_error *err) {
  char why[256];
  unsigned position;
  if (tabq__cron_parse(spec, c, &position, why, sizeof why)) {
    int rc = tabq__err_set(err, TABQ_INVALID, NULL, "schedule", "spec '%.200s': %s",
                           spec ? spec : "", why);
    if (err)
      err->position = position;
    return rc;
  }
  if (c->interval_s && !utc_name(zone))
    return tabq__err_set(err, TABQ_INVALID, NULL, "schedule",
                         "spec '%.200s' is an interval, counted from 1970 UTC; a zone (%.80s) "
                         "applies to cron expressions only",
                         spec, zone);
  return TABQ_OK;
}

int64_t tabq__slot_next(const tabq_cron *c, tabq_zone *z, int64_t after_s) {
  if (c->interval_s) {
    int64_t k = after_s >= 0 ? after_s / c->interval_s : -((-after_s - 1) / c->interval_s) - 1;
    return (k + 1) * c->interval_s;
  }
  /* Walk the zone's spans of one offset from `t` on: in each, the wall times are UTC + offset,
   * so the expression's next wall time there is one slot, unless the span ends first. */
  int64_t t = after_s + 1; /* the earliest instant allowed */
  for (int spans = 0; spans < 400; spans++) {
    int64_t off = offset_at(z, t), end = 0;
    bool ends = transition(z, t, true, &end);
    int64_t wall = tabq__cron_next_wall(c, t + off);
    if (wall < 0)
      return -1;
    int64_t u = wall - off;
    if (!ends || u < end) {
      /* In a repeated hour (the clocks went back at `start`), a job of fixed times runs at the
       * wall time's first pass only. */
      int64_t start;
      if (!c->wildcard && transition(z, u, false, &start)) {
        int64_t before = offset_at(z, start - 1);
        if (before > off && wall < start + before) {
          t = u + 1;
          continue;
        }
      }
      return u;
    }
    /* The span ends first. Where the clocks go forward at `end`, the wall times they skip
     * never come: a job of fixed times that names one of them runs at the change instead. */
    int64_t after = offset_at(z, end);
    if (!c->wildcard && after > off) {
      int64_t skipped = tabq__cron_next_wall(c, end + off);
      if (skipped >= 0 && skipped < end + after)
        return end;
    }
    t = end;
  }
  return -1;
}

int tabq__slot_key(const char *name, const tabq_cron *c, int64_t slot_s, char *buf, size_t cap) {
  int64_t days = slot_s >= 0 ? slot_s / 86400 : -((-slot_s + 86399) / 86400);
  int64_t rem = slot_s - days * 86400;
  int64_t y;
  unsigned m, d;
  tabq__civil_from_days(days, &y, &m, &d);
  unsigned hh = (unsigned)(rem / 3600), mm = (unsigned)(rem % 3600 / 60), ss = (unsigned)(rem % 60);
  if (c->interval_s % 60)
    return snprintf(buf, cap, "%s:%04lld-%02u-%02uT%02u:%02u:%02uZ", name, (long long)y, m, d, hh,
                    mm, ss);
  return snprintf(buf, cap, "%s:%04lld-%02u-%02uT%02u:%02uZ", name, (long long)y, m, d, hh, mm);
}

static int64_t floor_s(int64_t us) {
  return us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
}

int tabq_schedule_next(const char *spec, const char *zone, int64_t after_us, int64_t *next_us,
                       tabq_error *err) {
  tabq__err_clear(err);
  if (!next_us)
    return tabq__err_set(err, TABQ_INVALID, NULL, "schedule",
                         "tabq_schedule_next needs somewhere to write the slot");
  tabq_cron c;
  tabq_zone z;
  int rc = tabq__spec_parse(spec, zone, &c, err);
  if (!rc)
    rc = tabq__zone_open(zone, &z, err);
  if (rc)
    return rc;
  int64_t next = tabq__slot_next(&c, &z, floor_s(after_us));
  tabq__zone_close(&z);
  if (next < 0)
    return tabq__err_set(err, TABQ_INVALID, NULL, "schedule",
                         "spec '%.200s' has no slot in the 30 years after that time", spec);
  *next_us = next * 1000000;
  return TABQ_OK;
}

int tabq_schedule_key(const char *name, const char *spec, int64_t slot_us, char *buf, size_t cap) {
  tabq_cron c;
  char why[256];
  unsigned position;
  if (!name || tabq__cron_parse(spec, &c, &position, why, sizeof why))
    return -1;
  return tabq__slot_key(name, &c, floor_s(slot_us), buf, cap);
}
