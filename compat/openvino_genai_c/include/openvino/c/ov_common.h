/*
 * openvino/c/ov_common.h — the part of OpenVINO's C API common header that
 * the GenAI C API uses: the status codes (same names and values as
 * OpenVINO's ov_status_e), the callback calling convention, and the error
 * helpers. Written for sprout's compatibility library; no OpenVINO needed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#    define OPENVINO_C_API_EXTERN extern "C"
#else
#    define OPENVINO_C_API_EXTERN
#endif

#if defined(__GNUC__) || defined(__clang__)
#    define OPENVINO_C_API(...) OPENVINO_C_API_EXTERN __attribute__((visibility("default"))) __VA_ARGS__
#else
#    define OPENVINO_C_API(...) OPENVINO_C_API_EXTERN __VA_ARGS__
#endif

#ifndef OPENVINO_C_API_CALLBACK
#    define OPENVINO_C_API_CALLBACK
#endif

/* Every call's result. Negative values are errors; the message of the last
 * failing call on the calling thread is ov_get_last_err_msg(). */
typedef enum {
    OK = 0,
    GENERAL_ERROR = -1,
    NOT_IMPLEMENTED = -2,      /* a feature sprout does not have (beam search, another device's API) */
    NETWORK_NOT_LOADED = -3,
    PARAMETER_MISMATCH = -4,   /* values that do not go together (GenerationConfig::validate's checks) */
    NOT_FOUND = -5,            /* a missing file or device */
    OUT_OF_BOUNDS = -6,        /* a buffer too short, a value out of range */
    UNEXPECTED = -7,
    REQUEST_BUSY = -8,
    RESULT_NOT_READY = -9,
    NOT_ALLOCATED = -10,       /* out of memory */
    INFER_NOT_STARTED = -11,
    NETWORK_NOT_READ = -12,    /* a model file that is malformed or cannot be run */
    INFER_CANCELLED = -13,
    INVALID_C_PARAM = -14,     /* a NULL or unusable argument */
    UNKNOWN_C_ERROR = -15,
    NOT_IMPLEMENT_C_METHOD = -16,
    UNKNOW_EXCEPTION = -17     /* OpenVINO's spelling */
} ov_status_e;

/* A fixed English description of a status ("out of bounds"). */
OPENVINO_C_API(const char *) ov_get_error_info(ov_status_e status);

/* The message of the last failing call on this thread ("" if none). */
OPENVINO_C_API(const char *) ov_get_last_err_msg(void);

/* Frees a string the library allocated for the caller (none of the GenAI
 * calls do; kept for programs that call it). */
OPENVINO_C_API(void) ov_free(const char *content);
