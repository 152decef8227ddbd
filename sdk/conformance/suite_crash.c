#include "kit.h"

const kit_test crash_tests[] = {
    {NULL, NULL, 0, NULL},
};
