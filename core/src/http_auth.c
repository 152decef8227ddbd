/* The Authorization an HTTP listener accepts (http_auth.h): the expected header values are
 * rendered once at start, so a request is one comparison per scheme, none of which stops at the
 * first differing byte. */
#include "http_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static char *base64(const char *in, size_t len) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *out = malloc((len + 2) / 3 * 4 + 1), *p = out;
  if (!out)
    return NULL;
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned char)in[i] << 16;
    if (i + 1 < len)
      v |= (unsigned char)in[i + 1] << 8;
    if (i + 2 < len)
      v |= (unsigned char)in[i + 2];
    *p++ = digits[(v >> 18) & 63];
    *p++ = digits[(v >> 12) & 63];
    *p++ = i + 1 < len ? digits[(v >> 6) & 63] : '=';
    *p++ = i + 2 < len ? digits[v & 63] : '=';
  }
  *p = '\0';
  return out;
}

static char *joined(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s%s", a, b);
  return s;
}

int tabq__http_auth_init(tabq_http_auth *a, const tabq_listen_options *o, tabq_error *err) {
  memset(a, 0, sizeof *a);
  bool fail = false;
  if (o->bearer_token && *o->bearer_token)
    fail |= !(a->bearer = joined("Bearer ", o->bearer_token));
  if (o->basic_user && o->basic_password) {
    size_t n = strlen(o->basic_user) + strlen(o->basic_password) + 2;
    char *pair = malloc(n), *encoded = NULL;
    if (pair) {
      snprintf(pair, n, "%s:%s", o->basic_user, o->basic_password);
      encoded = base64(pair, n - 1);
    }
    fail |= !encoded || !(a->basic = joined("Basic ", encoded));
    free(pair);
    free(encoded);
  }
  if (fail) {
    tabq__http_auth_free(a);
    return tabq__err_set(err, TABQ_NOMEM, NULL, "listen", "cannot allocate the credentials");
  }
  return TABQ_OK;
}

void tabq__http_auth_free(tabq_http_auth *a) {
  free(a->bearer);
  free(a->basic);
  a->bearer = a->basic = NULL;
}

bool tabq__http_auth_required(const tabq_http_auth *a) {
  return a->bearer || a->basic;
}

bool tabq__http_secret_equal(const char *given, const char *want) {
  if (!given || !want)
    return false;
  size_t n = strlen(want), m = strlen(given);
  unsigned char diff = n != m;
  for (size_t i = 0; i < n; i++)
    diff |= (unsigned char)want[i] ^ (unsigned char)(i < m ? given[i] : 0);
  return diff == 0;
}

bool tabq__http_auth_ok(const tabq_http_auth *a, const char *header) {
  if (!tabq__http_auth_required(a))
    return true;
  bool ok = false;
  ok |= a->bearer && tabq__http_secret_equal(header, a->bearer);
  ok |= a->basic && tabq__http_secret_equal(header, a->basic);
  return ok;
}
