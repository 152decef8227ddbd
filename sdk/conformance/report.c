#include "report.h"

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { PASSED, FAILED, SKIPPED } status;

typedef struct result {
  char form[16];
  char name[128];
  status st;
  char message[768];
  double seconds;
} result;

static result *results;
static size_t nresults, capresults;
static struct timespec started;

static const char *forms[] = {"rowlock", "lease", "advisory"};

static result *add(const char *form, const char *name, status st) {
  if (nresults == capresults) {
    capresults = capresults ? capresults * 2 : 64;
    results = realloc(results, capresults * sizeof *results);
    if (!results) {
      fputs("conformance: out of memory\n", stderr);
      exit(2);
    }
  }
  result *r = &results[nresults++];
  memset(r, 0, sizeof *r);
  snprintf(r->form, sizeof r->form, "%s", form);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->st = st;
  return r;
}

static void print_line(const result *r) {
  static const char *const words[] = {"PASS", "FAIL", "SKIP"};
  if (r->st == PASSED)
    printf("%-8s %s  %s (%.1f s)\n", r->form, words[r->st], r->name, r->seconds);
  else
    printf("%-8s %s  %s: %s\n", r->form, words[r->st], r->name, r->message);
  fflush(stdout);
}

void report_skip(const char *form, const char *name, const char *why) {
  result *r = add(form, name, SKIPPED);
  snprintf(r->message, sizeof r->message, "%s", why);
  print_line(r);
}

static void test_start(const CU_pTest test, const CU_pSuite suite) {
  (void)test, (void)suite;
  clock_gettime(CLOCK_MONOTONIC, &started);
}

static void test_complete(const CU_pTest test, const CU_pSuite suite,
                          const CU_pFailureRecord failure) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  result *r = add(suite->pName, test->pName, failure ? FAILED : PASSED);
  r->seconds =
      (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
  size_t len = 0;
  unsigned count = 0;
  for (CU_pFailureRecord f = failure; f; f = f->pNext, count++) {
    if (len + 8 >= sizeof r->message)
      continue;
    const char *file = f->strFileName ? strrchr(f->strFileName, '/') : NULL;
    len += (size_t)snprintf(r->message + len, sizeof r->message - len, "%s%s:%u: %s",
                            count ? "; " : "", file ? file + 1 : f->strFileName, f->uiLineNumber,
                            f->strCondition ? f->strCondition : "");
  }
  if (len >= sizeof r->message)
    memcpy(r->message + sizeof r->message - 4, "...", 4);
  print_line(r);
}

void report_begin(void) {
  CU_set_test_start_handler(test_start);
  CU_set_test_complete_handler(test_complete);
}

static void count(const char *form, unsigned n[3]) {
  n[0] = n[1] = n[2] = 0;
  for (size_t i = 0; i < nresults; i++)
    if (!form || !strcmp(results[i].form, form))
      n[results[i].st]++;
}

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++)
    switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
        fputc(*s, f);
    }
}

static bool write_junit(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "conformance: cannot write %s\n", path);
    return false;
  }
  unsigned all[3];
  count(NULL, all);
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(f, "<testsuites name=\"tabq-conformance\" tests=\"%u\" failures=\"%u\" skipped=\"%u\">\n",
          all[0] + all[1] + all[2], all[1], all[2]);
  for (size_t k = 0; k < 3; k++) {
    unsigned n[3];
    count(forms[k], n);
    if (!n[0] && !n[1] && !n[2])
      continue;
    double seconds = 0;
    for (size_t i = 0; i < nresults; i++)
      if (!strcmp(results[i].form, forms[k]))
        seconds += results[i].seconds;
    fprintf(f,
            "  <testsuite name=\"%s\" tests=\"%u\" failures=\"%u\" skipped=\"%u\" "
            "time=\"%.3f\">\n",
            forms[k], n[0] + n[1] + n[2], n[1], n[2], seconds);
    for (size_t i = 0; i < nresults; i++) {
      const result *r = &results[i];
      if (strcmp(r->form, forms[k]))
        continue;
      fprintf(f, "    <testcase classname=\"%s\" name=\"", r->form);
      xml_text(f, r->name);
      fprintf(f, "\" time=\"%.3f\"", r->seconds);
      if (r->st == PASSED) {
        fputs("/>\n", f);
        continue;
      }
      fprintf(f, ">\n      <%s message=\"", r->st == FAILED ? "failure" : "skipped");
      xml_text(f, r->message);
      fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n", f);
  }
  fputs("</testsuites>\n", f);
  return fclose(f) == 0;
}

bool report_end(const char *junit) {
  for (size_t k = 0; k < 3; k++) {
    unsigned n[3];
    count(forms[k], n);
    if (n[0] || n[1] || n[2])
      printf("form %s: %u passed, %u failed, %u skipped\n", forms[k], n[0], n[1], n[2]);
  }
  unsigned all[3];
  count(NULL, all);
  bool written = !junit || write_junit(junit);
  printf("conformance: %u passed, %u failed, %u skipped\n", all[0], all[1], all[2]);
  fflush(stdout);
  return written && all[1] == 0;
}
