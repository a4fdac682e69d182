#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { SP_ERROR_MAX = 1024 };

/* Thread-local so that a server answering many clients on many threads never
 * shows one client's error to another. */
static _Thread_local char last_error[SP_ERROR_MAX];

const char *sprout_version(void) {
#define SP_STR2(x) #x
#define SP_STR(x) SP_STR2(x)
    return SP_STR(SPROUT_VERSION_MAJOR) "." SP_STR(SPROUT_VERSION_MINOR) "." SP_STR(SPROUT_VERSION_PATCH);
}

const char *sprout_status_str(sprout_status status) {
    switch (status) {
    case SPROUT_OK: return "ok";
    case SPROUT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case SPROUT_ERR_IO: return "input/output error";
    case SPROUT_ERR_FORMAT: return "format error";
    case SPROUT_ERR_UNSUPPORTED: return "unsupported";
    case SPROUT_ERR_OUT_OF_MEMORY: return "out of memory";
    case SPROUT_ERR_NOT_FOUND: return "not found";
    case SPROUT_ERR_TYPE_MISMATCH: return "type mismatch";
    case SPROUT_ERR_OUT_OF_RANGE: return "out of range";
    case SPROUT_ERR_INTERNAL: return "internal error";
    case SPROUT_ERR_CANCELLED: return "cancelled";
    case SPROUT_ERR_BUSY: return "busy";
    }
    return "unknown status";
}

const char *sprout_last_error(void) { return last_error; }

sprout_status sp_fail(sprout_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void sp_error_prefix(const char *fmt, ...) {
    char prefix[SP_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    /* joined by hand: the result is cut at the buffer's end on purpose */
    char joined[SP_ERROR_MAX];
    size_t plen = strlen(prefix), mlen = strlen(last_error), o = 0;
    for (size_t i = 0; i < plen && o < SP_ERROR_MAX - 1; i++) joined[o++] = prefix[i];
    for (size_t i = 0; i < 2 && o < SP_ERROR_MAX - 1; i++) joined[o++] = ": "[i];
    for (size_t i = 0; i < mlen && o < SP_ERROR_MAX - 1; i++) joined[o++] = last_error[i];
    joined[o] = 0;
    memcpy(last_error, joined, o + 1);
}
