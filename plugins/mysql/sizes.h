/* tabq — the MySQL driver's size limits: a statement's size against the session's
 * max_allowed_packet, and the messages for a value too long for its column and a statement too
 * long for the packet limit, which name the limit and what to change. */
#ifndef TABQ_MYSQL_SIZES_H
#define TABQ_MYSQL_SIZES_H

#include <stdbool.h>
#include <stdint.h>

#include <mysql.h>

/* The bytes of the COM_STMT_EXECUTE packet that carries `n` bound parameters, as Connector/C
 * writes it (types sent with every execute); the server refuses a packet of max_allowed_packet
 * bytes or more. */
uint64_t tabq_my_execute_size(const MYSQL_BIND *params, unsigned n);

/* A statement of `size` bytes over the session's max_allowed_packet `max` (0: unknown), for
 * `what` ("insert statement"). `sent`: the server refused it and ended the connection (err,
 * state and msg are its words); else it was refused before it was sent. TABQ_BACKEND. */
int tabq_my_fail_packet(const char *what, uint64_t size, uint64_t max, bool sent, unsigned err,
                        const char *state, const char *msg);

/* ER_DATA_TOO_LONG on the statement `sql` (what, err, state and msg as above): the column the
 * server names, its table (read from the statement) and its type and limit (read from the
 * catalog on `my`), and the type that would hold the value. TABQ_BACKEND. */
int tabq_my_fail_too_long(MYSQL *my, const char *sql, const char *what, unsigned err,
                          const char *state, const char *msg);

#endif
