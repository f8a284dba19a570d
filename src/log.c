/* SPDX-License-Identifier: BSD-2-Clause */
/* log.c — the user's logger callback; the library never prints. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static emb_log_fn log_fn;
static void *log_user;
static EmbLogLevel log_max = EMB_LOG_WARN;

void emb_set_logger(emb_log_fn fn, void *user, EmbLogLevel max_level)
{
    log_fn = fn;
    log_user = user;
    log_max = max_level;
}

void emb__log(EmbLogLevel level, const char *fmt, ...)
{
    if (!log_fn || level > log_max)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_fn(log_user, level, msg);
}
