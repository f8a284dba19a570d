/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * label.c — how a table is named in error messages (emb__table_label, table_impl.h). The
 * bottom of src/tables/: every file of the folder names tables, this one calls none.
 */
#include <stdio.h>

#include "tables/table_impl.h"

const char *emb__table_label(const EmbTable *t)
{
    static _Thread_local char buf[EMB_NAME_MAX + 16];
    if (!t || !t->name[0])
        return "unnamed table";
    snprintf(buf, sizeof buf, "table \"%s\"", t->name);
    return buf;
}
