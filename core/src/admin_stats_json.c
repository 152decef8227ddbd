/* The counts of tabq_admin_stats_read as one JSON document: what `tabq stats --json` prints and
 * the dashboard's /api/stats serves (docs/tools.md). A count the table cannot tell is null. */
#include <stdlib.h>
#include <tabq/admin.h>

#include "admin_sql.h"

static json_t *count(int64_t n) {
  return n < 0 ? json_null() : json_integer(n);
}

json_t *tabq__admin_stats_doc(const tabq_admin_stats *s) {
  json_t *queues = json_array();
  for (size_t i = 0; i < tabq_admin_stats_count(s); i++) {
    const tabq_queue_stats *q = tabq_admin_stats_get(s, i);
    json_t *hist = json_object();
    for (size_t k = 0; k < q->nattempts; k++) {
      char key[24];
      snprintf(key, sizeof key, "%lld", (long long)q->attempts[k].attempt);
      json_object_set_new(hist, key, json_integer(q->attempts[k].rows));
    }
    json_array_append_new(
        queues, json_pack("{s:s,s:s?,s:o,s:o,s:o,s:o,s:o,s:s?,s:o,s:o}", "table", q->table, "queue",
                          q->queue, "due", count(q->due), "delayed", count(q->delayed), "in_work",
                          count(q->in_work), "processed", count(q->processed), "dead",
                          count(q->dead), "dead_in", q->dead_in, "oldest_due_ms",
                          count(q->oldest_due_ms), "attempts", hist));
  }
  return json_pack("{s:I,s:o}", "time_us", (json_int_t)tabq_admin_stats_time(s), "queues", queues);
}

char *tabq_admin_stats_json(const tabq_admin_stats *s) {
  json_t *doc = s ? tabq__admin_stats_doc(s) : NULL;
  char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(doc);
  return text;
}
