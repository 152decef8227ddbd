/* The statement check's report as text (tabq/check.h), as tabq_app_main --check and
 * `tabq check` print it: one line an item, its message and statement indented below. */
#include <stdio.h>
#include <string.h>

#include <tabq/check.h>

static const char *severity_name(tabq_check_severity s) {
  return s == TABQ_CHECK_OK ? "ok" : s == TABQ_CHECK_WARNING ? "warning" : "error";
}

int tabq_check_report_print(const tabq_check_report *r, FILE *out, bool all) {
  size_t n = tabq_check_report_count(r), counts[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    const tabq_check_item *it = tabq_check_report_item(r, i);
    counts[it->severity]++;
    if (it->severity == TABQ_CHECK_OK && !all)
      continue;
    fprintf(out, "%-7s %s: %s\n", severity_name(it->severity), it->table, it->purpose);
    if (it->severity == TABQ_CHECK_OK)
      continue;
    fprintf(out, "        %s", it->message);
    if (it->sqlstate[0])
      fprintf(out, " [%s]", it->sqlstate);
    if (it->position)
      fprintf(out, " (at character %u)", (unsigned)it->position);
    fprintf(out, "\n");
    if (it->sql[0] && !strstr(it->message, it->sql)) /* a warning's message holds its sql */
      fprintf(out, "        %s\n", it->sql);
  }
  fprintf(out, "%zu statement%s: %zu ok, %zu warning%s, %zu error%s\n", n, n == 1 ? "" : "s",
          counts[TABQ_CHECK_OK], counts[TABQ_CHECK_WARNING],
          counts[TABQ_CHECK_WARNING] == 1 ? "" : "s", counts[TABQ_CHECK_ERROR],
          counts[TABQ_CHECK_ERROR] == 1 ? "" : "s");
  return ferror(out) ? -1 : 0;
}
