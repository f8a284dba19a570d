/* test_gradients.c — the exact pullback against central finite differences. */
#include <criterion/criterion.h>

#include "test_util.h"
