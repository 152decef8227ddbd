/* An HTTP listener of tabq's (http_listen.h): libmicrohttpd on a socket tabq bound itself
 * (http_address.c), one thread per connection so a slow database read holds up no other
 * request, a request's checks in one place, and a site's reply sent with the headers every
 * answer carries (no caching, no sniffing, no framing). */
#include "http_listen.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "engine.h"
#include "error.h"
#include "http_address.h"
#include "http_auth.h"
#include "sized.h"

#define BODY_MAX (64 * 1024)

struct tabq_http_listener {
  struct MHD_Daemon *daemon;
  tabq_broker *b;
  int port;
  bool loopback;
  tabq_http_auth auth;
  tabq_http_serve_fn serve;
  void *site;
  void (*release)(void *site);
};

/* A request's body, gathered over libmicrohttpd's calls before it is answered. */
typedef struct pending {
  char *body;
  size_t len, cap;
  bool too_large;
} pending;

void tabq__http_take(tabq_http_reply *out, unsigned status, const char *type, char *body,
                     size_t len) {
  free(out->body);
  out->status = status;
  out->type = type;
  out->body = body;
  out->len = body ? len : 0;
}

void tabq__http_text(tabq_http_reply *out, unsigned status, const char *type, const char *text) {
  size_t len = strlen(text);
  char *copy = malloc(len + 1);
  if (copy)
    memcpy(copy, text, len + 1);
  tabq__http_take(out, status, type, copy, len);
}

void tabq__http_error(tabq_http_reply *out, unsigned status, const char *reason) {
  char line[512];
  snprintf(line, sizeof line, "%u: %s\n", status, reason);
  tabq__http_text(out, status, "text/plain; charset=utf-8", line);
}

const char *tabq__http_arg(const tabq_http_request *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *tabq__http_header(const tabq_http_request *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static int hex(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Decodes `len` bytes of a form value ('+' a space, %XX a byte) into out: false when it does
 * not fit. */
static bool form_decode(const char *in, size_t len, char *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (n + 1 >= cap)
      return false;
    if (in[i] == '+')
      out[n++] = ' ';
    else if (in[i] == '%' && i + 2 < len && hex(in[i + 1]) >= 0 && hex(in[i + 2]) >= 0) {
      out[n++] = (char)(hex(in[i + 1]) * 16 + hex(in[i + 2]));
      i += 2;
    } else
      out[n++] = in[i];
  }
  out[n] = '\0';
  return true;
}

bool tabq__http_form(const tabq_http_request *r, const char *name, char *out, size_t cap) {
  size_t want = strlen(name);
  const char *p = r->body, *end = r->body + r->body_len;
  while (p && p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *stop = amp ? amp : end;
    const char *eq = memchr(p, '=', (size_t)(stop - p));
    if (eq && (size_t)(eq - p) == want && !memcmp(p, name, want))
      return form_decode(eq + 1, (size_t)(stop - eq - 1), out, cap);
    p = amp ? amp + 1 : end;
  }
  return false;
}

/* The checks every request meets, then the site. */
static void answer(tabq_http_listener *l, const tabq_http_request *r, const pending *p,
                   tabq_http_reply *out) {
  const char *host = tabq__http_header(r, MHD_HTTP_HEADER_HOST);
  if (l->loopback && host && !tabq__http_host_loopback(host)) {
    /* A page of another site reaching 127.0.0.1 through a name of its own (DNS rebinding)
     * sends its name here: it gets neither the figures nor the dashboard's CSRF token. */
    char why[256];
    snprintf(why, sizeof why,
             "Host '%.100s' is not a loopback name; this listener answers localhost, 127.0.0.1 "
             "and [::1] only",
             host);
    tabq__http_error(out, 403, why);
  } else if (!tabq__http_auth_ok(&l->auth, tabq__http_header(r, MHD_HTTP_HEADER_AUTHORIZATION))) {
    tabq__http_error(out, 401, "this listener asks for credentials (Authorization header)");
  } else if (p->too_large) {
    tabq__http_error(out, 413, "the request's body is larger than 64 KiB");
  } else if (atomic_load(&l->b->shut)) {
    tabq__http_error(out, 503, "the broker is shutting down");
  } else {
    l->serve(l->site, r, out);
  }
}

static enum MHD_Result send_reply(tabq_http_listener *l, struct MHD_Connection *c,
                                  tabq_http_reply *rep) {
  static char failed[] = "500: cannot allocate the reply\n";
  struct MHD_Response *res;
  if (rep->body) {
    res = MHD_create_response_from_buffer(rep->len, rep->body, MHD_RESPMEM_MUST_FREE);
    rep->body = NULL;
  } else {
    rep->status = 500;
    rep->type = "text/plain; charset=utf-8";
    res = MHD_create_response_from_buffer(sizeof failed - 1, failed, MHD_RESPMEM_PERSISTENT);
  }
  if (!res)
    return MHD_NO;
  MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, rep->type);
  MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(res, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(res, "X-Frame-Options", "DENY");
  MHD_add_response_header(res, "Referrer-Policy", "no-referrer");
  /* The dashboard's page runs its own script and stylesheet only, never one injected. */
  MHD_add_response_header(res, "Content-Security-Policy",
                          "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                          "form-action 'self'");
  if (rep->allow)
    MHD_add_response_header(res, MHD_HTTP_HEADER_ALLOW, rep->allow);
  if (rep->status == 401)
    MHD_add_response_header(res, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            l->auth.basic ? "Basic realm=\"tabq\", charset=\"UTF-8\""
                                          : "Bearer realm=\"tabq\"");
  enum MHD_Result ok = MHD_queue_response(c, rep->status, res);
  MHD_destroy_response(res);
  return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state) {
  (void)version;
  tabq_http_listener *l = cls;
  pending *p = *state;
  if (!p) { /* the headers: the body, if any, comes in the calls that follow */
    p = calloc(1, sizeof *p);
    *state = p;
    return p ? MHD_YES : MHD_NO;
  }
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    if (p->too_large || p->len + n > BODY_MAX) {
      p->too_large = true;
      return MHD_YES;
    }
    if (p->len + n + 1 > p->cap) {
      size_t cap = (p->len + n + 1) * 2;
      char *grown = realloc(p->body, cap);
      if (!grown)
        return MHD_NO;
      p->body = grown;
      p->cap = cap;
    }
    memcpy(p->body + p->len, upload, n);
    p->len += n;
    p->body[p->len] = '\0';
    return MHD_YES;
  }
  tabq_http_request r = {method, url, p->body ? p->body : "", p->len, c};
  tabq_http_reply rep = {0};
  answer(l, &r, p, &rep);
  return send_reply(l, c, &rep);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why) {
  (void)cls, (void)c, (void)why;
  pending *p = *state;
  if (p) {
    free(p->body);
    free(p);
    *state = NULL;
  }
}

static void listener_free(tabq_http_listener *l) {
  if (l->release)
    l->release(l->site);
  tabq__http_auth_free(&l->auth);
  free(l);
}

/* A remote address needs the option that allows it and credentials that guard it. */
static int check_remote(const tabq_http_addr *a, const tabq_listen_options *o, const char *address,
                        const char *what, tabq_error *err) {
  if ((o->basic_user != NULL) != (o->basic_password != NULL))
    return tabq__err_set(err, TABQ_INVALID, NULL, what,
                         "%s listener on %s: basic auth needs both basic_user and basic_password",
                         what, address);
  bool credentials = (o->bearer_token && *o->bearer_token) || o->basic_user;
  if (a->loopback)
    return TABQ_OK;
  if (!o->allow_remote)
    return tabq__err_set(err, TABQ_INVALID, NULL, what,
                         "%s listener: address %s is not a loopback address; listening there "
                         "needs tabq_listen_options.allow_remote and a bearer_token or "
                         "basic_user and basic_password",
                         what, address);
  if (!credentials)
    return tabq__err_set(err, TABQ_INVALID, NULL, what,
                         "%s listener: address %s is not a loopback address, and "
                         "tabq_listen_options.allow_remote needs a bearer_token or basic_user "
                         "and basic_password to guard it",
                         what, address);
  return TABQ_OK;
}

int tabq__http_listen(tabq_broker *b, const char *address, const tabq_listen_options *options,
                      const char *what, tabq_http_serve_fn serve, void *site,
                      void (*release)(void *site), tabq_http_listener **out, tabq_error *err) {
  tabq__err_clear(err);
  if (!b || !out) {
    if (release)
      release(site);
    return tabq__err_set(err, TABQ_INVALID, NULL, what, "the %s listener needs a broker and out",
                         what);
  }
  *out = NULL;
  tabq_listen_options o = TABQ_LISTEN_OPTIONS_INIT;
  tabq_http_addr a;
  int rc = options ? TABQ_TAKE(options, &o, TABQ_LISTEN_OPTIONS_SIZE_1_0, NULL, err) : TABQ_OK;
  if (!rc)
    rc = tabq__http_addr_parse(address, &a, err);
  if (!rc)
    rc = check_remote(&a, &o, address, what, err);
  tabq_http_listener *l = rc ? NULL : calloc(1, sizeof *l);
  if (!rc && !l)
    rc = tabq__err_set(err, TABQ_NOMEM, NULL, what, "cannot allocate the listener");
  if (rc) {
    if (release)
      release(site);
    return rc;
  }
  *l = (tabq_http_listener){
      .b = b, .loopback = a.loopback, .serve = serve, .site = site, .release = release};
  int fd = -1;
  rc = tabq__http_auth_init(&l->auth, &o, err);
  if (!rc)
    rc = tabq__http_bind(&a, address, &fd, &l->port, err);
  if (!rc) {
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_THREAD_PER_CONNECTION |
                     (a.sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    l->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, l, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_END);
    if (!l->daemon) {
      close(fd);
      rc = tabq__err_set(err, TABQ_IO, NULL, what, "cannot start the %s listener on %s", what,
                         address);
    }
  }
  if (rc) {
    listener_free(l);
    return rc;
  }
  *out = l;
  return TABQ_OK;
}

int tabq_http_port(const tabq_http_listener *l) {
  return l ? l->port : 0;
}

void tabq_http_stop(tabq_http_listener *l) {
  if (!l)
    return;
  MHD_stop_daemon(l->daemon); /* joins every connection's thread: no request runs after it */
  listener_free(l);
}
