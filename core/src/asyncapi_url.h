/* A database URL as an AsyncAPI server object (docs/asyncapi.md): its protocol, and only what
 * names where the server is (host and port, the database's name); never the user, the password,
 * a query option, a socket's or a database file's path. */
#ifndef TABQ_ASYNCAPI_URL_H
#define TABQ_ASYNCAPI_URL_H

#include <jansson.h>
#include <stddef.h>
#include <tabq/tabq.h>

/* The server object of `url`, the `index`-th URL given (from 0, for messages), in *out (a new
 * reference), and in *id the name its key in `servers` starts from ("postgresql", "mysql",
 * "mariadb", "sqlite", or a third-party scheme in lower case, '_' for other characters; free()
 * it). A URL that does not parse is TABQ_INVALID; the message names the URL by its position and
 * its scheme, never its text. */
int tabq__asyncapi_server(const char *url, size_t index, json_t **out, char **id, tabq_error *err);

#endif
