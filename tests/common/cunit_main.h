/* The main every CUnit suite shares: each test file defines register_tests(). */
#ifndef TABQ_TEST_CUNIT_MAIN_H
#define TABQ_TEST_CUNIT_MAIN_H

#include <CUnit/Basic.h>

/* Adds the file's suites and tests to the registry; returns 0 on success. */
int register_tests(void);

/* A suite with its tests, from a NULL-terminated CU_TestInfo array. */
#define ADD_SUITE(name, init, clean, tests)                                                        \
  do {                                                                                             \
    CU_pSuite suite_ = CU_add_suite(name, init, clean);                                            \
    if (!suite_)                                                                                   \
      return -1;                                                                                   \
    for (CU_TestInfo *t_ = (tests); t_->pName; t_++)                                               \
      if (!CU_add_test(suite_, t_->pName, t_->pTestFunc))                                          \
        return -1;                                                                                 \
  } while (0)

#endif
