/* tabq — the AsyncAPI 3.0 document of an app (SPEC 12, docs/asyncapi.md).
 *
 * The document says what an app's queues carry, for the people and tools that read AsyncAPI: a
 * channel per queue, a receive operation per subscription, a send operation per route, the
 * payload schemas the description gives, and a server per database URL. It is made from the
 * app and the URLs alone: nothing is connected and no plugin is loaded, so it can be written in
 * a build or a CI job with no database at hand.
 *
 *   char *doc;
 *   const char *urls[] = {"postgresql://svc:secret@db.internal:5432/jobs"};
 *   if (tabq_asyncapi(app, urls, 1, &doc, &err) == TABQ_OK) {
 *     fputs(doc, stdout);   // servers.postgresql: {"host": "db.internal:5432", ...}
 *     free(doc);
 *   }
 *
 * A server carries only the host and port of its URL (and the database's name as its
 * pathname): never the user, the password, a query option, a socket's path or an SQLite file's
 * path. */
#ifndef TABQ_ASYNCAPI_H
#define TABQ_ASYNCAPI_H

#include <stddef.h>

#include <tabq/app.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The AsyncAPI 3.0.0 document of `app` as JSON text (two-space indents, a final newline) in
 * *out_json: free() it. `urls` holds `nurls` database URLs, one server each, in that order
 * (`urls` may be NULL when `nurls` is 0: a document without servers); the URLs tabq_connect()
 * takes, and those of a third-party dialect's scheme, which becomes the server's protocol.
 *
 * Fails, with nothing returned, with TABQ_INVALID for a missing argument or a URL that does
 * not parse (the message names the URL by its position and scheme, never by its text, which
 * may hold a password), TABQ_DECLARATION for a payload schema that is not a JSON object (err.table
 * names the table), TABQ_NOMEM. */
TABQ_API int tabq_asyncapi(const tabq_app *app, const char *const *urls, size_t nurls,
                           char **out_json, tabq_error *err);

#ifdef __cplusplus
}
#endif

#endif
