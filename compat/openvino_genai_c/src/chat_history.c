/* ChatHistory through the C API: a JSON array of message objects, plus the
 * tools and extra template variables its chat template may read. */
#include <stdlib.h>

#include "ovc_internal.h"

typedef ov_genai_chat_history_status_e hstatus;

static hstatus fail(hstatus st, ov_status_e ov, const char *fn, const char *what) {
    ovc_fail(ov, "%s: %s", fn, what);
    return st;
}

#define NULL_ARG() fail(OV_GENAI_CHAT_HISTORY_INVALID_PARAM, INVALID_C_PARAM, __func__, "NULL argument")
#define NO_MEMORY() fail(OV_GENAI_CHAT_HISTORY_ERROR, NOT_ALLOCATED, __func__, "out of memory")

/* A new container holding a copy of value. */
static hstatus hand_out(const json_t *value, ov_genai_json_container **out, const char *fn) {
    json_t *copy = json_deep_copy(value);
    ov_genai_json_container *c = copy ? malloc(sizeof *c) : NULL;
    if (!c) {
        json_decref(copy);
        return fail(OV_GENAI_CHAT_HISTORY_ERROR, NOT_ALLOCATED, fn, "out of memory");
    }
    c->value = copy;
    *out = c;
    return OV_GENAI_CHAT_HISTORY_OK;
}

static bool all_objects(const json_t *array) {
    size_t i;
    const json_t *m;
    json_array_foreach(array, i, m) if (!json_is_object(m)) return false;
    return true;
}

ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history **history) {
    if (!history) return NULL_ARG();
    ov_genai_chat_history *h = malloc(sizeof *h);
    if (!h) return NO_MEMORY();
    h->messages = json_array();
    h->tools = json_array();
    h->extra = json_object();
    if (!h->messages || !h->tools || !h->extra) {
        ov_genai_chat_history_free(h);
        return NO_MEMORY();
    }
    *history = h;
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_create_from_json_container(ov_genai_chat_history **history,
                                                                                const ov_genai_json_container *messages) {
    if (!history || !messages) return NULL_ARG();
    if (!json_is_array(messages->value) || !all_objects(messages->value))
        return fail(OV_GENAI_CHAT_HISTORY_INVALID_JSON, PARAMETER_MISMATCH, __func__, "the messages are not an array of objects");
    ov_genai_chat_history *h;
    hstatus st = ov_genai_chat_history_create(&h);
    if (st != OV_GENAI_CHAT_HISTORY_OK) return st;
    json_t *copy = json_deep_copy(messages->value);
    if (!copy) {
        ov_genai_chat_history_free(h);
        return NO_MEMORY();
    }
    json_decref(h->messages);
    h->messages = copy;
    *history = h;
    return OV_GENAI_CHAT_HISTORY_OK;
}

void ov_genai_chat_history_free(ov_genai_chat_history *history) {
    if (!history) return;
    json_decref(history->messages);
    json_decref(history->tools);
    json_decref(history->extra);
    free(history);
}

ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history *history,
                                                              const ov_genai_json_container *message) {
    if (!history || !message) return NULL_ARG();
    if (!json_is_object(message->value))
        return fail(OV_GENAI_CHAT_HISTORY_INVALID_JSON, PARAMETER_MISMATCH, __func__, "a message must be a JSON object");
    json_t *copy = json_deep_copy(message->value);
    if (!copy || json_array_append_new(history->messages, copy) != 0) return NO_MEMORY();
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_pop_back(ov_genai_chat_history *history) {
    if (!history) return NULL_ARG();
    const size_t n = json_array_size(history->messages);
    if (!n) return fail(OV_GENAI_CHAT_HISTORY_EMPTY, OUT_OF_BOUNDS, __func__, "the history is empty");
    json_array_remove(history->messages, n - 1);
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_messages(const ov_genai_chat_history *history,
                                                                 ov_genai_json_container **messages) {
    if (!history || !messages) return NULL_ARG();
    return hand_out(history->messages, messages, __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_message(const ov_genai_chat_history *history, size_t index,
                                                                ov_genai_json_container **message) {
    if (!history || !message) return NULL_ARG();
    if (index >= json_array_size(history->messages))
        return fail(OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS, OUT_OF_BOUNDS, __func__, "no message at that index");
    return hand_out(json_array_get(history->messages, index), message, __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_first(const ov_genai_chat_history *history,
                                                              ov_genai_json_container **message) {
    if (!history || !message) return NULL_ARG();
    if (!json_array_size(history->messages)) return fail(OV_GENAI_CHAT_HISTORY_EMPTY, OUT_OF_BOUNDS, __func__, "the history is empty");
    return hand_out(json_array_get(history->messages, 0), message, __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_last(const ov_genai_chat_history *history,
                                                             ov_genai_json_container **message) {
    if (!history || !message) return NULL_ARG();
    const size_t n = json_array_size(history->messages);
    if (!n) return fail(OV_GENAI_CHAT_HISTORY_EMPTY, OUT_OF_BOUNDS, __func__, "the history is empty");
    return hand_out(json_array_get(history->messages, n - 1), message, __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_clear(ov_genai_chat_history *history) {
    if (!history) return NULL_ARG();
    json_array_clear(history->messages);
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_size(const ov_genai_chat_history *history, size_t *size) {
    if (!history || !size) return NULL_ARG();
    *size = json_array_size(history->messages);
    return OV_GENAI_CHAT_HISTORY_OK;
}

ov_genai_chat_history_status_e ov_genai_chat_history_empty(const ov_genai_chat_history *history, int *empty) {
    if (!history || !empty) return NULL_ARG();
    *empty = json_array_size(history->messages) == 0;
    return OV_GENAI_CHAT_HISTORY_OK;
}

/* Replaces *slot with a copy of value, which must pass is_kind. */
static hstatus replace(json_t **slot, const ov_genai_json_container *value, int (*is_kind)(const json_t *), const char *fn,
                       const char *kind) {
    if (!is_kind(value->value)) return fail(OV_GENAI_CHAT_HISTORY_INVALID_JSON, PARAMETER_MISMATCH, fn, kind);
    json_t *copy = json_deep_copy(value->value);
    if (!copy) return fail(OV_GENAI_CHAT_HISTORY_ERROR, NOT_ALLOCATED, fn, "out of memory");
    json_decref(*slot);
    *slot = copy;
    return OV_GENAI_CHAT_HISTORY_OK;
}

static int is_array(const json_t *v) { return json_is_array(v); }
static int is_object(const json_t *v) { return json_is_object(v); }

ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(ov_genai_chat_history *history,
                                                              const ov_genai_json_container *tools) {
    if (!history || !tools) return NULL_ARG();
    return replace(&history->tools, tools, is_array, __func__, "tools must be a JSON array");
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_tools(const ov_genai_chat_history *history,
                                                              ov_genai_json_container **tools) {
    if (!history || !tools) return NULL_ARG();
    return hand_out(history->tools, tools, __func__);
}

ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(ov_genai_chat_history *history,
                                                                      const ov_genai_json_container *extra_context) {
    if (!history || !extra_context) return NULL_ARG();
    return replace(&history->extra, extra_context, is_object, __func__, "the extra context must be a JSON object");
}

ov_genai_chat_history_status_e ov_genai_chat_history_get_extra_context(const ov_genai_chat_history *history,
                                                                      ov_genai_json_container **extra_context) {
    if (!history || !extra_context) return NULL_ARG();
    return hand_out(history->extra, extra_context, __func__);
}
