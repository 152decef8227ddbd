#include "cunit_main.h"

#include <stdio.h>

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 2;
  if (register_tests() != 0) {
    fprintf(stderr, "cannot register the tests: %s\n", CU_get_error_msg());
    CU_cleanup_registry();
    return 2;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  /* A suite whose init failed runs none of its tests: that is a failure too. */
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
                    CU_get_number_of_suites_failed();
  unsigned run = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  return failed || !run ? 1 : 0;
}
