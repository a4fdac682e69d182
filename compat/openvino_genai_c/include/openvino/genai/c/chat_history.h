/*
 * openvino/genai/c/chat_history.h — a conversation (ov::genai::ChatHistory):
 * messages as JSON objects ({"role": ..., "content": ...} and any other
 * fields the chat template reads), tools, and extra template variables.
 * Containers passed in are copied; containers handed out are new ones the
 * caller frees.
 */
#pragma once

#include "json_container.h"
#include "visibility.h"
#include <stddef.h>

typedef struct ov_genai_chat_history_opaque ov_genai_chat_history;

typedef enum {
    OV_GENAI_CHAT_HISTORY_OK = 0,
    OV_GENAI_CHAT_HISTORY_INVALID_PARAM = -1,
    OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS = -2,
    OV_GENAI_CHAT_HISTORY_EMPTY = -3,
    OV_GENAI_CHAT_HISTORY_INVALID_JSON = -4,
    OV_GENAI_CHAT_HISTORY_ERROR = -5
} ov_genai_chat_history_status_e;

OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history);
/* From an array of message objects; INVALID_JSON for anything else. */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_create_from_json_container(
    ov_genai_chat_history** history,
    const ov_genai_json_container* messages);
OPENVINO_GENAI_C_EXPORTS void ov_genai_chat_history_free(ov_genai_chat_history* history);

/* Appends a message object; INVALID_JSON for anything but an object. */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_push_back(
    ov_genai_chat_history* history,
    const ov_genai_json_container* message);
/* EMPTY when there is nothing to remove. */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_pop_back(ov_genai_chat_history* history);

OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_messages(
    const ov_genai_chat_history* history,
    ov_genai_json_container** messages);
/* OUT_OF_BOUNDS for an index past the end. */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_message(
    const ov_genai_chat_history* history,
    size_t index,
    ov_genai_json_container** message);
/* EMPTY for an empty history. */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_first(
    const ov_genai_chat_history* history,
    ov_genai_json_container** message);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_last(
    const ov_genai_chat_history* history,
    ov_genai_json_container** message);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_clear(ov_genai_chat_history* history);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_size(
    const ov_genai_chat_history* history,
    size_t* size);
/* *empty: 1 when there are no messages, else 0. */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_empty(
    const ov_genai_chat_history* history,
    int* empty);

/* Tools (an array; the chat template sees it as `tools` when not empty)
 * and extra template variables (an object: each key becomes a variable of
 * the template, such as enable_thinking). */
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(
    ov_genai_chat_history* history,
    const ov_genai_json_container* tools);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_tools(
    const ov_genai_chat_history* history,
    ov_genai_json_container** tools);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(
    ov_genai_chat_history* history,
    const ov_genai_json_container* extra_context);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_extra_context(
    const ov_genai_chat_history* history,
    ov_genai_json_container** extra_context);
