/* tabq — times as SQLite text.
 *
 * SQLite has no time type; the dialect stores times as "YYYY-MM-DD HH:MM:SS.ffffff" in UTC. The
 * fixed width (always six fraction digits) makes text comparison equal time comparison, so
 * `locked_until <= ?NOW` and the lease token `locked_until = ?TOKEN` are exact. The calendar is
 * plain arithmetic on days (proleptic Gregorian), so it needs no time zone, no libc state and no
 * lock. */
#include "sqlite_plugin.h"

#define US_PER_SEC INT64_C(1000000)
#define SEC_PER_DAY INT64_C(86400)
/* Days from 0000-03-01 to 1970-01-01: years counted from March put the leap day last. */
#define EPOCH_SHIFT INT64_C(719468)
#define DAYS_PER_ERA INT64_C(146097) /* 400 Gregorian years */

/* Quotient and remainder rounded towards minus infinity, without overflow at INT64_MIN. */
static void floor_divmod(int64_t a, int64_t b, int64_t *q, int64_t *r) {
  *q = a / b;
  *r = a % b;
  if (*r < 0) {
    *r += b;
    *q -= 1;
  }
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  if (m <= 2)
    y -= 1;
  int64_t era, yoe;
  floor_divmod(y, 400, &era, &yoe);
  unsigned mp = m > 2 ? m - 3 : m + 9;                 /* March = 0 */
  int64_t doy = (153 * mp + 2) / 5 + d - 1;            /* [0, 365] */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; /* [0, 146096] */
  return era * DAYS_PER_ERA + doe - EPOCH_SHIFT;
}

static void civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d) {
  int64_t era, doe;
  floor_divmod(days + EPOCH_SHIFT, DAYS_PER_ERA, &era, &doe);
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
  int64_t mp = (5 * doy + 2) / 153;                                    /* March = 0 */
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static void put_digits(char *at, int64_t value, int width) {
  for (int i = width - 1; i >= 0; i--) {
    at[i] = (char)('0' + value % 10);
    value /= 10;
  }
}

bool tabq_sqlite_time_format(int64_t time_us, char out[TABQ_SQLITE_TIME_LEN + 1]) {
  int64_t secs, frac, days, sod, y;
  unsigned m, d;
  floor_divmod(time_us, US_PER_SEC, &secs, &frac);
  floor_divmod(secs, SEC_PER_DAY, &days, &sod);
  civil_from_days(days, &y, &m, &d);
  if (y < 0 || y > 9999)
    return false; /* a fifth digit or a sign would break the fixed width */
  put_digits(out, y, 4);
  out[4] = '-';
  put_digits(out + 5, m, 2);
  out[7] = '-';
  put_digits(out + 8, d, 2);
  out[10] = ' ';
  put_digits(out + 11, sod / 3600, 2);
  out[13] = ':';
  put_digits(out + 14, sod / 60 % 60, 2);
  out[16] = ':';
  put_digits(out + 17, sod % 60, 2);
  out[19] = '.';
  put_digits(out + 20, frac, 6);
  out[TABQ_SQLITE_TIME_LEN] = '\0';
  return true;
}

/* Reads `width` decimal digits; false on anything else. */
static bool get_digits(const char *at, int width, int64_t *value) {
  int64_t v = 0;
  for (int i = 0; i < width; i++) {
    if (at[i] < '0' || at[i] > '9')
      return false;
    v = v * 10 + (at[i] - '0');
  }
  *value = v;
  return true;
}

static unsigned days_in_month(int64_t y, unsigned m) {
  static const unsigned len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : len[m - 1];
}

bool tabq_sqlite_time_parse(const char *text, size_t len, int64_t *time_us) {
  int64_t y, mo, d, h, mi, s, frac = 0;
  if (len < 19 || len > TABQ_SQLITE_TIME_LEN)
    return false;
  if (!get_digits(text, 4, &y) || text[4] != '-' || !get_digits(text + 5, 2, &mo) ||
      text[7] != '-' || !get_digits(text + 8, 2, &d) || (text[10] != ' ' && text[10] != 'T') ||
      !get_digits(text + 11, 2, &h) || text[13] != ':' || !get_digits(text + 14, 2, &mi) ||
      text[16] != ':' || !get_digits(text + 17, 2, &s))
    return false;
  if (len > 19) {
    int width = (int)(len - 20);
    if (text[19] != '.' || width == 0 || !get_digits(text + 20, width, &frac))
      return false;
    for (int i = width; i < 6; i++)
      frac *= 10; /* ".5" is half a second */
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, (unsigned)mo) || h > 23 || mi > 59 ||
      s > 59)
    return false;
  int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
  *time_us = ((days * SEC_PER_DAY + h * 3600 + mi * 60 + s) * US_PER_SEC) + frac;
  return true;
}
