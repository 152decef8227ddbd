/* Who may ask an HTTP listener of tabq's (tabq/http.h): the Authorization header a request
 * must carry when the options set a bearer token or basic auth credentials. */
#ifndef TABQ_HTTP_AUTH_H
#define TABQ_HTTP_AUTH_H

#include <stdbool.h>

#include <tabq/http.h>

typedef struct tabq_http_auth {
  char *bearer; /* "Bearer TOKEN", or NULL */
  char *basic;  /* "Basic base64(user:password)", or NULL */
} tabq_http_auth;

/* The headers the options accept. TABQ_NOMEM. */
int tabq__http_auth_init(tabq_http_auth *a, const tabq_listen_options *o, tabq_error *err);
void tabq__http_auth_free(tabq_http_auth *a);
bool tabq__http_auth_required(const tabq_http_auth *a);
/* Whether `header` (the request's Authorization, NULL when absent) is one the options accept;
 * compared in a time that does not depend on where it differs. */
bool tabq__http_auth_ok(const tabq_http_auth *a, const char *header);
/* Equal strings, in a time that does not depend on where they differ (tokens, CSRF). */
bool tabq__http_secret_equal(const char *given, const char *want);

#endif
