/* LLMPipeline through the C API: a sprout model and pipeline, the default
 * GenerationConfig, and the chat state openvino_genai keeps (a text chat
 * runs on sprout's chat session; a ChatHistory is rendered whole and its
 * cached prefix reused). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ovc_internal.h"

/* What a chat has been driven with: openvino_genai refuses to switch. */
typedef enum { CHAT_OFF, CHAT_STARTED, CHAT_TEXT, CHAT_HISTORY } chat_state;

struct ov_genai_llm_pipeline_opaque {
    sprout_model *model, *draft_model;
    sprout_pipeline *pipe, *draft;
    ov_genai_generation_config *config; /* the default */
    bool own_template;                  /* the GGUF has tokenizer.chat_template */
    chat_state chat;
    /* the call in progress: its streamer, and the piece handed to it with
     * a NUL after it */
    const streamer_callback *streamer;
    char *piece;
    size_t piece_cap;
    bool piece_oom;
};

typedef struct properties {
    int32_t n_threads;
    const char *draft_model;
} properties;

static ov_status_e parse_int(const char *key, const char *value, int32_t *out) {
    char *end;
    const long v = strtol(value, &end, 10);
    if (end == value || *end || v < 0 || v > SPROUT_MAX_THREADS)
        return ovc_fail(PARAMETER_MISMATCH, "property %s: '%s' is not a thread count (0 to %d)", key, value, SPROUT_MAX_THREADS);
    *out = (int32_t)v;
    return OK;
}

static ov_status_e read_properties(size_t n_args, va_list ap, properties *props) {
    for (size_t i = 0; i < n_args; i += 2) {
        const char *key = va_arg(ap, const char *), *value = va_arg(ap, const char *);
        if (!key || !value) return ovc_fail(INVALID_C_PARAM, "property %zu: NULL key or value", i / 2);
        ov_status_e st = OK;
        if (strcmp(key, "INFERENCE_NUM_THREADS") == 0) st = parse_int(key, value, &props->n_threads);
        else if (strcmp(key, "draft_model") == 0) props->draft_model = value;
        if (st != OK) return st;
    }
    return OK;
}

static ov_status_e load(const char *path, const properties *props, sprout_model **model, sprout_pipeline **pipe) {
    char *file = NULL;
    ov_status_e st = ovc_find_model(path, &file);
    if (st != OK) return st;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = props->n_threads};
    st = ovc_from_sprout(sprout_model_load(file, &mp, model));
    free(file);
    if (st == OK && !sprout_model_generates(*model))
        return ovc_fail(NOT_IMPLEMENTED, "%s: an embedding model, it does not generate text", path);
    return st == OK ? ovc_from_sprout(sprout_pipeline_create(*model, NULL, pipe)) : st;
}

void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline *pipe) {
    if (!pipe) return;
    sprout_pipeline_free(pipe->pipe); /* before its draft, and both before their models */
    sprout_pipeline_free(pipe->draft);
    sprout_model_free(pipe->model);
    sprout_model_free(pipe->draft_model);
    ov_genai_generation_config_free(pipe->config);
    free(pipe->piece);
    free(pipe);
}

/* The pipeline's default: GenerationConfig's, ending at the model's EOS. */
static ov_status_e default_config(ov_genai_llm_pipeline *p) {
    ov_status_e st = ov_genai_generation_config_create(&p->config);
    const sprout_token eos = sprout_tokenizer_special(sprout_model_tokenizer(p->model), SPROUT_SPECIAL_EOS);
    if (st == OK && eos >= 0) {
        p->config->eos_token_id = eos;
        st = ovc_config_add_stop_token(p->config, eos);
    }
    return st;
}

static ov_status_e create(const char *models_path, const char *device, size_t n_args, va_list ap, ov_genai_llm_pipeline **out) {
    if (strcasecmp(device, "CPU") != 0 && strcasecmp(device, "AUTO") != 0)
        return ovc_fail(NOT_FOUND, "device '%s' is not available: sprout runs models on the CPU (device \"CPU\")", device);
    properties props = {0};
    ov_status_e st = read_properties(n_args, ap, &props);
    if (st != OK) return st;
    ov_genai_llm_pipeline *p = calloc(1, sizeof *p);
    if (!p) return ovc_fail(NOT_ALLOCATED, "out of memory");
    st = load(models_path, &props, &p->model, &p->pipe);
    if (st == OK && props.draft_model) {
        st = load(props.draft_model, &props, &p->draft_model, &p->draft);
        if (st == OK) st = ovc_from_sprout(sprout_pipeline_set_draft(p->pipe, p->draft));
    }
    if (st == OK) st = default_config(p);
    if (st != OK) {
        ov_genai_llm_pipeline_free(p);
        return st;
    }
    p->own_template = sprout_gguf_find(sprout_model_gguf(p->model), "tokenizer.chat_template") != NULL;
    *out = p;
    return OK;
}

ov_status_e ov_genai_llm_pipeline_create(const char *models_path, const char *device, const size_t property_args_size,
                                         ov_genai_llm_pipeline **pipe, ...) {
    if (!pipe) return ovc_fail(INVALID_C_PARAM, "llm_pipeline_create: NULL output");
    *pipe = NULL;
    if (!models_path || !device) return ovc_fail(INVALID_C_PARAM, "llm_pipeline_create: NULL models_path or device");
    if (property_args_size % 2)
        return ovc_fail(INVALID_C_PARAM, "llm_pipeline_create: %zu property arguments: they come in key/value pairs",
                        property_args_size);
    va_list ap;
    va_start(ap, pipe);
    const ov_status_e st = create(models_path, device, property_args_size, ap, pipe);
    va_end(ap);
    return st;
}

static sprout_stream_status on_piece(const char *piece, size_t len, void *user) {
    ov_genai_llm_pipeline *p = user;
    if (len + 1 > p->piece_cap) {
        const size_t cap = len + 1 > 2 * p->piece_cap ? len + 1 : 2 * p->piece_cap;
        char *grown = realloc(p->piece, cap);
        if (!grown) {
            p->piece_oom = true;
            return SPROUT_STREAM_STOP;
        }
        p->piece = grown;
        p->piece_cap = cap;
    }
    memcpy(p->piece, piece, len);
    p->piece[len] = '\0';
    switch (p->streamer->callback_func(p->piece, p->streamer->args)) {
    case OV_GENAI_STREAMING_STATUS_STOP: return SPROUT_STREAM_STOP;
    case OV_GENAI_STREAMING_STATUS_CANCEL: return SPROUT_STREAM_CANCEL;
    default: return SPROUT_STREAM_RUNNING;
    }
}

/* The config a call runs with: the caller's or the pipeline's, its EOS
 * filled in from the model when unset, and validated. */
static ov_status_e resolve_config(const ov_genai_llm_pipeline *p, const ov_genai_generation_config *config,
                                  ov_genai_generation_config **out) {
    ov_genai_generation_config *c = ovc_config_dup(config ? config : p->config);
    if (!c) return ovc_fail(NOT_ALLOCATED, "out of memory");
    ov_status_e st = OK;
    if (c->eos_token_id == -1 && p->config->eos_token_id >= 0) {
        c->eos_token_id = p->config->eos_token_id;
        st = ovc_config_add_stop_token(c, c->eos_token_id);
    }
    if (st == OK) st = ovc_config_validate(c);
    if (st != OK) {
        ov_genai_generation_config_free(c);
        return st;
    }
    *out = c;
    return OK;
}

/* One generate call's inputs: a prompt as tokens, or (in a text chat) the
 * user's message for sprout's chat session. */
typedef struct call {
    sprout_token *ids;
    size_t n_ids;
    const char *chat_message;
    size_t n_prompt_estimate; /* for max_length in a chat: the rendered prompt's length */
    char *rendered;           /* the template's output (sprout's allocation) */
    const char *text;         /* the prompt's text as tokenized, which echo puts first */
    size_t text_len;
    double t_start, template_ms, tokenize_ms;
} call;

static ov_status_e run(ov_genai_llm_pipeline *p, const call *c, const ov_genai_generation_config *config,
                       const streamer_callback *streamer, ov_genai_decoded_results **results) {
    ov_genai_generation_config *resolved = NULL;
    ov_status_e st = resolve_config(p, config, &resolved);
    ovc_sprout_config sc = {0};
    const size_t n_prompt = c->chat_message ? c->n_prompt_estimate : c->n_ids;
    if (st == OK)
        st = ovc_config_to_sprout(resolved, sprout_model_tokenizer(p->model), n_prompt, sprout_pipeline_n_ctx(p->pipe), &sc);
    /* sprout echoes text prompts only: the prompt's text is put first here */
    sc.cfg.echo = false;
    sprout_result *r = NULL;
    const double before_ms = ovc_now_ms() - c->t_start;
    if (st == OK) {
        p->streamer = streamer;
        p->piece_oom = false;
        const sprout_streamer thunk = streamer ? on_piece : NULL;
        const sprout_status ss = c->chat_message ? sprout_chat_generate(p->pipe, c->chat_message, &sc.cfg, thunk, p, &r)
                                                 : sprout_generate_tokens(p->pipe, c->ids, c->n_ids, &sc.cfg, thunk, p, &r);
        p->streamer = NULL;
        st = ovc_from_sprout(ss);
        if (st == OK && p->piece_oom) st = ovc_fail(NOT_ALLOCATED, "out of memory passing a piece to the streamer");
    }
    if (st == OK && results) {
        sprout_perf_metrics sm = {.struct_size = sizeof sm};
        struct ov_genai_perf_metrics_opaque m;
        size_t len = 0;
        const char *text = sprout_result_text(r, &len);
        const size_t echo_len = resolved->echo && !c->chat_message ? c->text_len : 0;
        char *joined = malloc(echo_len + len + 1);
        if (!joined) st = ovc_fail(NOT_ALLOCATED, "out of memory");
        if (st == OK && (st = ovc_from_sprout(sprout_result_metrics(r, &sm))) == OK) {
            if (echo_len) memcpy(joined, c->text, echo_len);
            if (len) memcpy(joined + echo_len, text, len);
            ovc_metrics_from_sprout(&m, &sm, before_ms, c->template_ms, c->tokenize_ms, ovc_now_ms() - c->t_start);
            st = ovc_results_make(joined, echo_len + len, &m, results);
        }
        free(joined);
    }
    sprout_result_free(r);
    ovc_sprout_config_free(&sc);
    ov_genai_generation_config_free(resolved);
    return st;
}

static ov_status_e check_generate_args(const ov_genai_llm_pipeline *pipe, const void *input, const streamer_callback *streamer,
                                       ov_genai_decoded_results **results, const char *fn) {
    if (results) *results = NULL;
    if (!pipe || !input) return ovc_fail(INVALID_C_PARAM, "%s: NULL pipeline or input", fn);
    if (!streamer && !results) return ovc_fail(INVALID_C_PARAM, "%s: neither a streamer nor results to return", fn);
    if (streamer && !streamer->callback_func) return ovc_fail(INVALID_C_PARAM, "%s: the streamer has no callback_func", fn);
    return OK;
}

/* messages (a JSON array) rendered with the model's template and
 * tokenized as the template wants, each step timed. */
static ov_status_e templated_prompt(const ov_genai_llm_pipeline *p, const json_t *messages, const json_t *vars, call *c) {
    char *messages_json = json_dumps(messages, JSON_COMPACT);
    char *vars_json = vars ? json_dumps(vars, JSON_COMPACT) : NULL;
    ov_status_e st = messages_json && (!vars || vars_json) ? OK : ovc_fail(NOT_ALLOCATED, "out of memory");
    double t = ovc_now_ms();
    if (st == OK)
        st = ovc_from_sprout(sprout_model_chat_prompt_vars(p->model, NULL, messages_json, vars_json, true, &c->rendered,
                                                           &c->text_len, NULL, NULL));
    c->text = c->rendered;
    c->template_ms = ovc_now_ms() - t;
    t = ovc_now_ms();
    if (st == OK) st = ovc_from_sprout(sprout_model_tokenize_prompt(p->model, c->text, c->text_len, true, &c->ids, &c->n_ids));
    c->tokenize_ms = ovc_now_ms() - t;
    free(messages_json);
    free(vars_json);
    return st;
}

/* The messages of sprout's chat session and then `next` as a user turn. */
static json_t *session_messages(const ov_genai_llm_pipeline *p, const char *next) {
    json_t *messages = json_array();
    const size_t n = sprout_chat_history_length(p->pipe);
    for (size_t i = 0; messages && i < n; i++) {
        const char *role, *content;
        if (sprout_chat_history_message(p->pipe, i, &role, &content) != SPROUT_OK ||
            json_array_append_new(messages, json_pack("{s:s, s:s}", "role", role, "content", content)) != 0) {
            json_decref(messages);
            return NULL;
        }
    }
    if (messages && json_array_append_new(messages, json_pack("{s:s, s:s}", "role", "user", "content", next)) != 0) {
        json_decref(messages);
        return NULL;
    }
    return messages;
}

ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline *pipe, const char *inputs, const ov_genai_generation_config *config,
                                           const streamer_callback *streamer, ov_genai_decoded_results **results) {
    ov_status_e st = check_generate_args(pipe, inputs, streamer, results, __func__);
    if (st != OK) return st;
    if (pipe->chat == CHAT_HISTORY)
        return ovc_fail(PARAMETER_MISMATCH, "this chat was driven with a ChatHistory: continue with it or start a new chat");
    call c = {.t_start = ovc_now_ms()};
    if (pipe->chat != CHAT_OFF) {
        pipe->chat = CHAT_TEXT;
        c.chat_message = inputs;
        /* only max_length needs the prompt's length before sprout renders it */
        const ov_genai_generation_config *effective = config ? config : pipe->config;
        const bool need_length = effective->max_new_tokens == SIZE_MAX && effective->max_length != SIZE_MAX;
        json_t *messages = need_length ? session_messages(pipe, inputs) : NULL;
        if (need_length && !messages) return ovc_fail(PARAMETER_MISMATCH, "the message is not valid UTF-8 (or memory ran out)");
        if (messages) {
            st = templated_prompt(pipe, messages, NULL, &c);
            c.n_prompt_estimate = c.n_ids;
            sprout_free(c.ids);
            sprout_free(c.rendered);
            c.ids = NULL;
            c.rendered = NULL;
            c.template_ms = c.tokenize_ms = 0; /* not part of the call proper */
            json_decref(messages);
        }
    } else if (pipe->own_template) {
        json_t *messages = json_pack("[{s:s, s:s}]", "role", "user", "content", inputs);
        st = messages ? templated_prompt(pipe, messages, NULL, &c) : ovc_fail(PARAMETER_MISMATCH, "the prompt is not valid UTF-8");
        json_decref(messages);
    } else {
        const double t = ovc_now_ms();
        st = ovc_from_sprout(sprout_model_tokenize_prompt(pipe->model, inputs, strlen(inputs), false, &c.ids, &c.n_ids));
        c.tokenize_ms = ovc_now_ms() - t;
        c.text = inputs;
        c.text_len = strlen(inputs);
    }
    if (st == OK) st = run(pipe, &c, config, streamer, results);
    sprout_free(c.ids);
    sprout_free(c.rendered);
    return st;
}

ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline *pipe, const ov_genai_chat_history *history,
                                                        const ov_genai_generation_config *config,
                                                        const streamer_callback *streamer, ov_genai_decoded_results **results) {
    ov_status_e st = check_generate_args(pipe, history, streamer, results, __func__);
    if (st != OK) return st;
    if (pipe->chat == CHAT_TEXT)
        return ovc_fail(PARAMETER_MISMATCH, "this chat was driven with text inputs: continue with them or start a new chat");
    if (!json_array_size(history->messages)) return ovc_fail(PARAMETER_MISMATCH, "the chat history is empty");
    if (pipe->chat == CHAT_STARTED) pipe->chat = CHAT_HISTORY;
    /* extra_context's keys are template variables; tools one more */
    json_t *vars = json_copy(history->extra);
    if (vars && json_array_size(history->tools)) json_object_set(vars, "tools", history->tools);
    call c = {.t_start = ovc_now_ms()};
    st = vars ? templated_prompt(pipe, history->messages, vars, &c) : ovc_fail(NOT_ALLOCATED, "out of memory");
    json_decref(vars);
    if (st == OK) st = run(pipe, &c, config, streamer, results);
    sprout_free(c.ids);
    sprout_free(c.rendered);
    return st;
}

ov_status_e ov_genai_llm_pipeline_start_chat(ov_genai_llm_pipeline *pipe) {
    if (!pipe) return ovc_fail(INVALID_C_PARAM, "start_chat: NULL pipeline");
    ov_status_e st = ovc_from_sprout(sprout_chat_start(pipe->pipe, NULL));
    if (st == OK) pipe->chat = CHAT_STARTED;
    return st;
}

ov_status_e ov_genai_llm_pipeline_finish_chat(ov_genai_llm_pipeline *pipe) {
    if (!pipe) return ovc_fail(INVALID_C_PARAM, "finish_chat: NULL pipeline");
    sprout_chat_finish(pipe->pipe);
    pipe->chat = CHAT_OFF;
    return OK;
}

ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline *pipe, ov_genai_generation_config **config) {
    if (!pipe || !config) return ovc_fail(INVALID_C_PARAM, "get_generation_config: NULL pipeline or output");
    *config = ovc_config_dup(pipe->config);
    return *config ? OK : ovc_fail(NOT_ALLOCATED, "out of memory");
}

ov_status_e ov_genai_llm_pipeline_set_generation_config(ov_genai_llm_pipeline *pipe, ov_genai_generation_config *config) {
    if (!pipe || !config) return ovc_fail(INVALID_C_PARAM, "set_generation_config: NULL pipeline or config");
    ov_genai_generation_config *c = ovc_config_dup(config);
    if (!c) return ovc_fail(NOT_ALLOCATED, "out of memory");
    ov_status_e st = OK;
    /* what the new config leaves unset stays the pipeline's */
    const size_t n_keep = c->n_stop_token_ids == 0 ? pipe->config->n_stop_token_ids : 0;
    for (size_t i = 0; st == OK && i < n_keep; i++)
        st = ovc_config_add_stop_token(c, pipe->config->stop_token_ids[i]);
    if (st == OK && c->eos_token_id == -1 && pipe->config->eos_token_id >= 0) {
        c->eos_token_id = pipe->config->eos_token_id;
        st = ovc_config_add_stop_token(c, c->eos_token_id);
    }
    if (st == OK) st = ovc_config_validate(c);
    if (st != OK) {
        ov_genai_generation_config_free(c);
        return st;
    }
    ov_genai_generation_config_free(pipe->config);
    pipe->config = c;
    return OK;
}
