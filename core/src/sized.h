/* Structs a service fills begin with their size as the service was compiled. The library takes
 * each into a full-size copy of its own at the API boundary, so nothing past an older program's
 * struct is ever read, and the engine works on one layout only. */
#ifndef TABQ_SIZED_H
#define TABQ_SIZED_H

#include <stddef.h>
#include <tabq/tabq.h>

/* Copies the caller's struct `in` (its size in its first uint32_t) into `out`, `full` bytes,
 * zeroing what the caller's struct lacks. `type` names the struct in the refusal ("tabq_table");
 * `table` is the table concerned, or NULL. */
int tabq__sized_take(const void *in, void *out, size_t full, size_t min, const char *type,
                     const char *table, tabq_error *err);

#define TABQ_TAKE(in, out, min, table, err)                                                        \
  tabq__sized_take((in), (out), sizeof *(out), (min), #min, (table), (err))

/* The description, into a full-size copy (refusals name the table). */
int tabq__table_take(const tabq_table *in, tabq_table *out, tabq_error *err);

/* A subscription's options, into a full-size copy (refusals name `table`); an older program's,
 * without `lookahead`, with the look-ahead off as that program had it. */
int tabq__options_take(const tabq_subscription_options *in, tabq_subscription_options *out,
                       const char *table, tabq_error *err);

#endif
