/* The statement check's report: what check.c adds to it. */
#ifndef TABQ_CHECK_REPORT_H
#define TABQ_CHECK_REPORT_H

#include <tabq/check.h>

/* Appends a copy of `in` and of its strings (NULL ones as ""): TABQ_OK or TABQ_NOMEM. */
int tabq__report_add(tabq_check_report *r, const tabq_check_item *in);

#endif
