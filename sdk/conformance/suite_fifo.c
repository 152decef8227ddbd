#include "kit.h"

const kit_test fifo_tests[] = {
    {NULL, NULL, 0, NULL},
};
