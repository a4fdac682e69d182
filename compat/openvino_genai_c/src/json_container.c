/* JsonContainer through the C API, over jansson values. */
#include <stdlib.h>
#include <string.h>

#include "ovc_internal.h"

static ov_genai_json_container_status_e wrap(json_t *value, ov_genai_json_container **out) {
    if (!value) return OV_GENAI_JSON_CONTAINER_ERROR;
    ov_genai_json_container *c = malloc(sizeof *c);
    if (!c) {
        json_decref(value);
        ovc_fail(NOT_ALLOCATED, "out of memory");
        return OV_GENAI_JSON_CONTAINER_ERROR;
    }
    c->value = value;
    *out = c;
    return OV_GENAI_JSON_CONTAINER_OK;
}

static ov_genai_json_container_status_e null_arg(const char *fn) {
    ovc_fail(INVALID_C_PARAM, "%s: NULL argument", fn);
    return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
}

ov_genai_json_container_status_e ov_genai_json_container_create(ov_genai_json_container **container) {
    return ov_genai_json_container_create_object(container);
}

ov_genai_json_container_status_e ov_genai_json_container_create_object(ov_genai_json_container **container) {
    if (!container) return null_arg(__func__);
    return wrap(json_object(), container);
}

ov_genai_json_container_status_e ov_genai_json_container_create_array(ov_genai_json_container **container) {
    if (!container) return null_arg(__func__);
    return wrap(json_array(), container);
}

ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(ov_genai_json_container **container,
                                                                                 const char *json_str) {
    if (!container || !json_str) return null_arg(__func__);
    json_error_t err;
    json_t *value = json_loads(json_str, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (!value) {
        ovc_fail(PARAMETER_MISMATCH, "invalid JSON at line %d, column %d: %s", err.line, err.column, err.text);
        return OV_GENAI_JSON_CONTAINER_INVALID_JSON;
    }
    return wrap(value, container);
}

void ov_genai_json_container_free(ov_genai_json_container *container) {
    if (!container) return;
    json_decref(container->value);
    free(container);
}

ov_genai_json_container_status_e ov_genai_json_container_to_json_string(const ov_genai_json_container *container, char *output,
                                                                        size_t *output_size) {
    if (!container || !output_size) return null_arg(__func__);
    char *text = json_dumps(container->value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) {
        ovc_fail(NOT_ALLOCATED, "out of memory");
        return OV_GENAI_JSON_CONTAINER_ERROR;
    }
    const ovc_copy_result r = ovc_copy_out(text, strlen(text), output, output_size);
    free(text);
    if (r == OVC_COPY_SHORT) {
        ovc_fail(OUT_OF_BOUNDS, "to_json_string: the buffer holds less than the %zu bytes needed", *output_size);
        return OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS;
    }
    return OV_GENAI_JSON_CONTAINER_OK;
}

ov_genai_json_container_status_e ov_genai_json_container_copy(const ov_genai_json_container *source,
                                                              ov_genai_json_container **target) {
    if (!source || !target) return null_arg(__func__);
    return wrap(json_deep_copy(source->value), target);
}
