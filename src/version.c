/* SPDX-License-Identifier: BSD-2-Clause */
/* version.c — emb_version(): the version this library was built as. */
#include "embtables/common.h"
#include "embtables/version.h"

#define EMB_STR2(x) #x
#define EMB_STR(x) EMB_STR2(x)

const char *emb_version(void)
{
    return EMB_STR(EMB_VERSION_MAJOR) "." EMB_STR(EMB_VERSION_MINOR) "." EMB_STR(EMB_VERSION_PATCH);
}
