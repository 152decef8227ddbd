/* The report: one line per test and per skip as they come, a line per form, the closing summary
 * line CI reads, and JUnit XML. Fed by CUnit's run handlers. */
#ifndef TABQ_CONFORMANCE_REPORT_H
#define TABQ_CONFORMANCE_REPORT_H

#include <stdbool.h>

/* Installs the CUnit handlers. */
void report_begin(void);
/* A test (or a whole form, name "(form)") not run, and why. */
void report_skip(const char *form, const char *name, const char *why);
/* Prints the per-form and summary lines; writes JUnit XML when `junit` is set. Returns whether
 * every test run passed; false also when the file cannot be written. */
bool report_end(const char *junit);

#endif
