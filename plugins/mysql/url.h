/* tabq — the MySQL/MariaDB driver's URLs.
 *
 * mysql://user:password@host:port/database?socket=/path&connect_timeout=SECONDS&sql_mode=MODES
 *   &statement_timeout=SECONDS,
 * and the same under mariadb://. User, password, database and values are percent-decoded; the
 * port defaults to 3306; the host may be empty when a socket is given. connect_timeout bounds
 * the whole connect, session setup included (TABQ_MY_DEFAULT_CONNECT_TIMEOUT_S unless set; 0: no
 * bound). sql_mode sets the session's SQL mode at connect (the server's global mode unless set).
 * statement_timeout bounds every statement on the server (MariaDB's max_statement_time; MySQL's
 * max_execution_time, which covers SELECTs only) and every read and write of a reply on the
 * client, TABQ_MY_REPLY_GRACE_S later (TABQ_MY_DEFAULT_STATEMENT_TIMEOUT_S unless set; 0: neither,
 * the server's own settings stand). */
#ifndef TABQ_MYSQL_URL_H
#define TABQ_MYSQL_URL_H

#include <stddef.h>

#define TABQ_MY_URL_SHOWN 512 /* room for a URL in messages, password removed */
#define TABQ_MY_DEFAULT_PORT 3306
/* Without a bound, a server that accepts TCP and never answers keeps a connect waiting for as
 * long as the kernel keeps the socket open. */
#define TABQ_MY_DEFAULT_CONNECT_TIMEOUT_S 10
/* A server that stops answering while its kernel keeps the connection open (a paused server:
 * keepalives see nothing wrong) would keep a statement waiting for ever. */
#define TABQ_MY_DEFAULT_STATEMENT_TIMEOUT_S 30
#define TABQ_MY_MAX_STATEMENT_TIMEOUT_S 86400
/* What the client waits for a reply beyond the statement timeout: the server's own cancel
 * arrives first whenever the server still answers. */
#define TABQ_MY_REPLY_GRACE_S 2

typedef struct tabq_my_url {
  char *store; /* the decoded parts, one after another (the host's allocator: free it) */
  size_t used, cap;
  const char *user, *password, *host, *database, *socket;
  const char *sql_mode; /* NULL: the server's global mode */
  unsigned port, connect_timeout, statement_timeout;
} tabq_my_url;

/* Parses `url` into u (zeroed by the caller); a refusal names `shown`, the URL as messages
 * show it, and the rule. */
int tabq_my_parse_url(const char *url, tabq_my_url *u, const char *shown);
/* The URL as messages may show it, the password of its user info replaced; buf returned. */
const char *tabq_my_shown_url(const char *url, char buf[TABQ_MY_URL_SHOWN]);

#endif
