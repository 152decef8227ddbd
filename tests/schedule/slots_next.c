/* Prints a schedule's next slots for the test's oracle (test_cron_oracle.py): each line of stdin,
 * "SPEC<TAB>ZONE<TAB>AFTER<TAB>COUNT" (AFTER in seconds since 1970 UTC, ZONE "-" for UTC), gets
 * one line of COUNT slots in seconds, each the next after the one before, or "ERR CODE POSITION
 * MESSAGE" for a refusal. A line "KEY<TAB>NAME<TAB>SPEC<TAB>SLOT" prints tabq_schedule_key's key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/schedule.h>

int main(void) {
  char line[1024];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "KEY\t", 4)) {
      char *name = strtok(line + 4, "\t"), *spec = strtok(NULL, "\t"), *slot = strtok(NULL, "\t");
      char key[256];
      int n = tabq_schedule_key(name, spec, strtoll(slot ? slot : "0", NULL, 10) * 1000000, key,
                                sizeof key);
      printf("%s\n", n < 0 ? "ERR" : key);
      fflush(stdout);
      continue;
    }
    char *rest = line, *spec = strsep(&rest, "\t"), *zone = strsep(&rest, "\t"),
         *after = strsep(&rest, "\t"), *count = strsep(&rest, "\t");
    if (!spec || !zone || !after || !count) {
      fprintf(stderr, "slots_next: a line needs SPEC, ZONE, AFTER and COUNT\n");
      return 2;
    }
    int64_t t = strtoll(after, NULL, 10) * 1000000;
    long n = strtol(count, NULL, 10);
    for (long i = 0; i < n; i++) {
      tabq_error err;
      int64_t next;
      int rc = tabq_schedule_next(spec, strcmp(zone, "-") ? zone : NULL, t, &next, &err);
      if (rc) {
        printf("ERR %s %u %s", tabq_code_name(rc), err.position, err.message);
        break;
      }
      printf("%s%lld", i ? " " : "", (long long)(next / 1000000));
      t = next;
    }
    printf("\n");
    fflush(stdout);
  }
  return 0;
}
