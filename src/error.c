/* SPDX-License-Identifier: BSD-2-Clause */
/* error.c — error codes, their names, and the thread-local "last error" message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "internal.h"

static _Thread_local char last_message[512];

/* The message, formatted aside first: an argument may be last_message itself. */
static int record(int code, const char *fmt, va_list ap)
{
    char msg[sizeof last_message];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(last_message, msg, sizeof msg);
    if (code)
        emb__log(EMB_LOG_DEBUG, "%s: %s", emb_strerror(code), last_message);
    return code;
}

int emb__fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return code;
}

int emb_set_error(int code, const char *fmt, ...)
{
    if (!fmt)
        return emb__fail(code, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return code;
}

void emb__clear_error(void)
{
    last_message[0] = '\0';
}

const char *emb_last_error(void)
{
    return last_message;
}

const char *emb_strerror(int code)
{
    switch (code) {
    case EMB_OK: return "success";
    case EMB_EINVAL: return "invalid argument";
    case EMB_ENULL: return "null pointer";
    case EMB_ENOMEM: return "out of memory";
    case EMB_ERANGE: return "id out of range";
    case EMB_EOFFSETS: return "invalid bag offsets";
    case EMB_ESTRIDE: return "stride smaller than the feature size";
    case EMB_EDTYPE: return "element type mismatch or unsupported";
    case EMB_EOVERFLOW: return "size overflow";
    case EMB_ENOTSUP: return "not supported";
    case EMB_ESHAPE: return "shape mismatch";
    case EMB_EIO: return "input/output error";
    case EMB_ECORRUPT: return "corrupt or truncated file";
    case EMB_ENODEV: return "no device available";
    case EMB_EDEVICE: return "device error";
    case EMB_ENOTFOUND: return "not found";
    case EMB_EEXIST: return "already exists";
    case EMB_ENONFINITE: return "non-finite value";
    case EMB_EBUSY: return "in use";
    default: return "unknown error";
    }
}

size_t emb_dtype_size(EmbDtype dtype)
{
    switch (dtype) {
    case EMB_F32: return 4;
    case EMB_F16: return 2;
    case EMB_BF16: return 2;
    default: return 0;
    }
}

size_t emb_dtype_row_bytes(EmbDtype dtype, int32_t featuresize)
{
    return emb__row_bytes(dtype, featuresize);
}

const char *emb_dtype_name(EmbDtype dtype)
{
    switch (dtype) {
    case EMB_F32: return "f32";
    case EMB_F16: return "f16";
    case EMB_BF16: return "bf16";
    case EMB_INT8: return "int8";
    case EMB_INT4: return "int4";
    default: return "?";
    }
}
