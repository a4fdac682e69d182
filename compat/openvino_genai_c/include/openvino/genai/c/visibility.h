/*
 * openvino/genai/c/visibility.h — how the GenAI C API's functions are
 * declared: C linkage, and exported from the shared library (the rest of
 * the library is hidden).
 */
#pragma once

#ifndef OPENVINO_GENAI_EXTERN_C
#    ifdef __cplusplus
#        define OPENVINO_GENAI_EXTERN_C extern "C"
#    else
#        define OPENVINO_GENAI_EXTERN_C
#    endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#    define OPENVINO_GENAI_C_EXPORTS OPENVINO_GENAI_EXTERN_C __attribute__((visibility("default")))
#else
#    define OPENVINO_GENAI_C_EXPORTS OPENVINO_GENAI_EXTERN_C
#endif
