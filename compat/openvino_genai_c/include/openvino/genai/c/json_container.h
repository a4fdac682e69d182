/*
 * openvino/genai/c/json_container.h — a JSON value (ov::genai::JsonContainer)
 * for chat messages, tools and template variables.
 */
#pragma once

#include "visibility.h"
#include <stddef.h>

typedef struct ov_genai_json_container_opaque ov_genai_json_container;

typedef enum {
    OV_GENAI_JSON_CONTAINER_OK = 0,
    OV_GENAI_JSON_CONTAINER_INVALID_PARAM = -1,
    OV_GENAI_JSON_CONTAINER_INVALID_JSON = -2,
    OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS = -3,
    OV_GENAI_JSON_CONTAINER_ERROR = -4
} ov_genai_json_container_status_e;

/* An empty object. */
OPENVINO_GENAI_C_EXPORTS ov_genai_json_container_status_e ov_genai_json_container_create(ov_genai_json_container** container);
/* Any JSON text (object, array or scalar); INVALID_JSON if it is not. */
OPENVINO_GENAI_C_EXPORTS ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(
    ov_genai_json_container** container,
    const char* json_str);
OPENVINO_GENAI_C_EXPORTS ov_genai_json_container_status_e ov_genai_json_container_create_object(ov_genai_json_container** container);
OPENVINO_GENAI_C_EXPORTS ov_genai_json_container_status_e ov_genai_json_container_create_array(ov_genai_json_container** container);
OPENVINO_GENAI_C_EXPORTS void ov_genai_json_container_free(ov_genai_json_container* container);

/* Compact JSON text. output NULL: *output_size gets the size needed (the
 * text and its NUL); a buffer of less than that: OUT_OF_BOUNDS, with
 * *output_size set to the size needed. */
OPENVINO_GENAI_C_EXPORTS ov_genai_json_container_status_e ov_genai_json_container_to_json_string(
    const ov_genai_json_container* container,
    char* output,
    size_t* output_size);

/* A deep copy. */
OPENVINO_GENAI_C_EXPORTS ov_genai_json_container_status_e ov_genai_json_container_copy(
    const ov_genai_json_container* source,
    ov_genai_json_container** target);
