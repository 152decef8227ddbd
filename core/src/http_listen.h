/* An HTTP listener of tabq's (tabq/http.h) on libmicrohttpd: the checks every request meets
 * (a loopback Host on a loopback listener, the Authorization the options ask for, a broker not
 * shutting down), then a site's `serve` with the request and a reply to fill. The metrics
 * endpoint (metrics_listen.c) and the dashboard (web.c) are sites. */
#ifndef TABQ_HTTP_LISTEN_H
#define TABQ_HTTP_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

#include <tabq/http.h>

struct MHD_Connection;

/* A request, valid during `serve`. A POST's body (up to 64 KiB) is read whole first. */
typedef struct tabq_http_request {
  const char *method;
  const char *path;
  const char *body;
  size_t body_len;
  struct MHD_Connection *conn;
} tabq_http_request;

/* What `serve` answers: a status, a content type and a body that the listener frees. */
typedef struct tabq_http_reply {
  unsigned status;
  const char *type;
  char *body; /* malloc()ed */
  size_t len;
  const char *allow; /* a 405's Allow header */
} tabq_http_reply;

typedef void (*tabq_http_serve_fn)(void *site, const tabq_http_request *r, tabq_http_reply *out);

/* Starts a listener on `address` for `b`'s site: requests are answered by `serve(site, ...)` on
 * the listener's threads; tabq_http_stop() ends them, then calls `release(site)`. Refusals
 * (TABQ_INVALID: the address, a remote address without allow_remote and credentials; TABQ_IO:
 * the address in use) name the address; `release` is called on failure too. `what` names the
 * site in messages ("metrics"). */
int tabq__http_listen(tabq_broker *b, const char *address, const tabq_listen_options *options,
                      const char *what, tabq_http_serve_fn serve, void *site,
                      void (*release)(void *site), tabq_http_listener **out, tabq_error *err);

/* Replies: a copy of `text` (NUL-terminated), or `len` bytes of `body` taken (malloc()ed; NULL
 * gives a 500). */
void tabq__http_text(tabq_http_reply *out, unsigned status, const char *type, const char *text);
void tabq__http_take(tabq_http_reply *out, unsigned status, const char *type, char *body,
                     size_t len);
/* A one-line plain text reply, "STATUS: reason\n". */
void tabq__http_error(tabq_http_reply *out, unsigned status, const char *reason);

/* A query argument of the request's URL, NULL when absent. */
const char *tabq__http_arg(const tabq_http_request *r, const char *name);
/* A request header, NULL when absent. */
const char *tabq__http_header(const tabq_http_request *r, const char *name);
/* A field of an application/x-www-form-urlencoded body, decoded into `out` (at most cap - 1
 * bytes): false when absent or too long. */
bool tabq__http_form(const tabq_http_request *r, const char *name, char *out, size_t cap);

#endif
