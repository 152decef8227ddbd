/* tabq — fuzz target: the core's reading of a database URL of any scheme, as the AsyncAPI
 * document names its server (core/src/asyncapi_url.c, tabq__asyncapi_server): the scheme, the
 * host and port, the database. A server object never holds the URL's password. */
#include <jansson.h>
#include <string.h>

#include "asyncapi_url.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *url = fuzz_cstr(data, size);
  json_t *server = NULL;
  char *id = NULL;
  tabq_error err = {0};
  if (tabq__asyncapi_server(url, 0, &server, &id, &err) == TABQ_OK) {
    FUZZ_CHECK(json_is_object(server) && id && *id, "a server object and its id");
    /* The password of scheme://user:password@ (8 characters or more, so it is no accident) is
     * nowhere. */
    const char *auth = strchr(url, ':'); /* scheme://user:password@host... alone */
    if (auth && strncmp(auth, "://", 3))
      auth = NULL;
    const char *at = auth ? strchr(auth + 3, '@') : NULL;
    const char *colon = at ? memchr(auth + 3, ':', (size_t)(at - auth - 3)) : NULL;
    if (colon && at - colon > 8) {
      char *dump = json_dumps(server, JSON_COMPACT);
      char *password = strndup(colon + 1, (size_t)(at - colon - 1));
      /* The rest of the URL without it: a password that is also the host may show. */
      char *rest = malloc(strlen(url) + 1);
      if (!dump || !password || !rest)
        abort();
      memcpy(rest, url, (size_t)(colon - url));
      strcpy(rest + (colon - url), at);
      FUZZ_CHECK(strstr(rest, password) || !strstr(dump, password), "%s shows '%s'", dump,
                 password);
      free(rest);
      free(password);
      free(dump);
    }
  } else {
    FUZZ_CHECK(err.message[0], "a refusal says why");
  }
  json_decref(server);
  free(id);
  free(url);
  return 0;
}
