/* The C API's error reporting (OpenVINO's ov_status_e and last message),
 * sprout's statuses mapped onto it, and small shared helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ovc_internal.h"

static _Thread_local char last_message[1024];

ov_status_e ovc_fail(ov_status_e status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    return status;
}

ov_status_e ovc_from_sprout(sprout_status status) {
    static const ov_status_e map[] = {
        [SPROUT_OK] = OK,
        [SPROUT_ERR_INVALID_ARGUMENT] = PARAMETER_MISMATCH,
        [SPROUT_ERR_IO] = NOT_FOUND,
        [SPROUT_ERR_FORMAT] = NETWORK_NOT_READ,
        [SPROUT_ERR_UNSUPPORTED] = NOT_IMPLEMENTED,
        [SPROUT_ERR_OUT_OF_MEMORY] = NOT_ALLOCATED,
        [SPROUT_ERR_NOT_FOUND] = NOT_FOUND,
        [SPROUT_ERR_TYPE_MISMATCH] = PARAMETER_MISMATCH,
        [SPROUT_ERR_OUT_OF_RANGE] = OUT_OF_BOUNDS,
        [SPROUT_ERR_INTERNAL] = GENERAL_ERROR,
        [SPROUT_ERR_CANCELLED] = INFER_CANCELLED,
        [SPROUT_ERR_BUSY] = REQUEST_BUSY,
    };
    if (status == SPROUT_OK) return OK;
    const ov_status_e st = (unsigned)status < sizeof map / sizeof map[0] ? map[status] : GENERAL_ERROR;
    return ovc_fail(st, "%s: %s", sprout_status_str(status), sprout_last_error());
}

const char *ov_get_error_info(ov_status_e status) {
    static const char *const info[] = {
        "success",
        "general error",
        "not implemented",
        "model not loaded",
        "parameter mismatch",
        "not found",
        "out of bounds",
        "unexpected error",
        "request is busy",
        "result is not ready",
        "not allocated",
        "inference not started",
        "model not read",
        "inference cancelled",
        "invalid C parameter",
        "unknown C error",
        "C method not implemented",
        "unknown exception",
    };
    const int i = -(int)status;
    return i >= 0 && i < (int)(sizeof info / sizeof info[0]) ? info[i] : "unknown status";
}

const char *ov_get_last_err_msg(void) { return last_message; }

void ov_free(const char *content) { free((void *)content); }

double ovc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

ovc_copy_result ovc_copy_out(const char *text, size_t len, char *output, size_t *output_size) {
    const size_t need = len + 1;
    if (!output) {
        *output_size = need;
        return OVC_COPY_OK;
    }
    if (*output_size < need) {
        *output_size = need;
        return OVC_COPY_SHORT;
    }
    if (len) memcpy(output, text, len);
    output[len] = '\0';
    *output_size = need;
    return OVC_COPY_OK;
}
