/* test_semantics.c — TF / DeepRec pooling semantics on hand-computed cases. */
#include <criterion/criterion.h>

#include "test_util.h"
