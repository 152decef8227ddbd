/* tabq — error codes and log levels shared by the core and every dialect plugin.
 *
 * One X-macro list gives the enum and the text of tabq_strerror(), so the two never drift.
 * Values are part of the plugin ABI: new codes are only ever appended. */
#ifndef TABQ_CODES_H
#define TABQ_CODES_H

#define TABQ_CODE_LIST(X)                                                                          \
  X(OK, "no error")                                                                                \
  X(DECLARATION, "the table description or the mount breaks a rule")                               \
  X(SCHEMA, "the database lacks a table or column a statement needs")                              \
  X(DIALECT, "the dialect does not build this form, level or feature")                             \
  X(SERVER_TOO_OLD, "the database server is older than the feature needs")                         \
  X(BACKEND, "the database or its driver failed")                                                  \
  X(LEASE_LOST, "the lease ended and another claim may own the row")                               \
  X(CLOSED, "the broker or the delivery is closed")                                                \
  X(NO_ROUTE, "no route leads this name to a table")                                               \
  X(HEADER, "the headers cannot be written or read")                                               \
  X(BATCH_ROLLED_BACK, "another settlement of the batch failed and rolled the batch back")         \
  X(TRANSACTION_HELD, "a transaction is still open on this delivery")                              \
  X(PLUGIN, "a dialect plugin cannot be loaded")                                                   \
  X(POOL_TIMEOUT, "no pooled connection became free in time")                                      \
  X(IO, "an operating system call failed")                                                         \
  X(NOMEM, "out of memory")                                                                        \
  X(INVALID, "an argument is invalid")                                                             \
  X(DUPLICATE, "a row holds the message's unique key already, so nothing was written")             \
  X(NOT_FOUND, "no such row: nothing was changed")

typedef enum tabq_code {
#define TABQ_CODE_ENUM_(name, text) TABQ_##name,
  TABQ_CODE_LIST(TABQ_CODE_ENUM_)
#undef TABQ_CODE_ENUM_
      TABQ_CODE_COUNT_
} tabq_code;

/* Log levels, for the broker's log callback and the host's log service. */
typedef enum tabq_log_level {
  TABQ_LOG_ERROR = 0,
  TABQ_LOG_WARN,
  TABQ_LOG_INFO,
  TABQ_LOG_DEBUG,
} tabq_log_level;

#endif
