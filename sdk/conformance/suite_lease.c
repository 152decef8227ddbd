#include "kit.h"

const kit_test lease_tests[] = {
    {NULL, NULL, 0, NULL},
};
