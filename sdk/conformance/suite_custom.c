#include "kit.h"

const kit_test custom_tests[] = {
    {NULL, NULL, 0, NULL},
};
