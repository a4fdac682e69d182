/* The OpenAI API's words: chat completions and completions (whole and as
 * server-sent events), log-probabilities, usage, and the model list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_util.h"
#include "server/response_parts.h"
#include "server/server_internal.h"

static json_t *usage_json(const sprout_result *r) {
    sp_usage u = sp_usage_of(r);
    return json_pack("{s:I, s:I, s:I, s:{s:I}}", "prompt_tokens", (json_int_t)u.prompt, "completion_tokens", (json_int_t)u.completion,
                     "total_tokens", (json_int_t)(u.prompt + u.completion), "prompt_tokens_details", "cached_tokens",
                     (json_int_t)u.cached);
}

/* llama-server's "timings": the prompt tokens computed and the tokens
 * generated with their times, and assisted generation's proposals
 * (draft_n) and those kept (draft_n_accepted), 0 without it. */
static json_t *timings_json(const sprout_result *r) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    sprout_result_metrics(r, &m);
    const double prompt_ms = m.prefill_tokens_per_s > 0 ? m.n_prefill_tokens / m.prefill_tokens_per_s * 1e3 : 0;
    const double predicted_ms = m.n_generated_tokens > 1 ? m.tpot_mean_ms * (m.n_generated_tokens - 1) : 0;
    return json_pack("{s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:i, s:i}", "prompt_n", m.n_prefill_tokens, "prompt_ms", prompt_ms,
                     "prompt_per_token_ms", m.n_prefill_tokens ? prompt_ms / m.n_prefill_tokens : 0.0, "prompt_per_second",
                     m.prefill_tokens_per_s, "predicted_n", m.n_generated_tokens, "predicted_ms", predicted_ms, "predicted_per_token_ms",
                     m.tpot_mean_ms, "predicted_per_second", m.decode_tokens_per_s, "draft_n", m.n_draft_tokens, "draft_n_accepted",
                     m.n_accepted_tokens);
}

static json_t *envelope(const sp_job *j, const char *object) {
    json_t *v = json_pack("{s:s, s:s, s:I, s:s, s:s}", "id", j->id, "object", object, "created", (json_int_t)j->created, "model",
                          j->model->name, "system_fingerprint", "sprout");
    /* a stream that will end with usage says "usage": null until then, as OpenAI's does */
    if (v && j->req.stream && j->req.include_usage) json_object_set_new(v, "usage", json_null());
    return v;
}

/* A token's text and bytes, as the logprobs objects give them. */
static void token_fields(const sp_job *j, sprout_token id, json_t *into) {
    const char *piece = "";
    size_t n = 0;
    sprout_token_to_piece(sprout_model_tokenizer(j->model->model), id, false, &piece, &n);
    json_object_set_new(into, "token", sp_json_text(piece, n));
    json_t *bytes = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(bytes, json_integer((unsigned char)piece[i]));
    json_object_set_new(into, "bytes", bytes);
}

/* Every token of a result with its log-probabilities (NULL if none were asked for). */
static sp_token_lp *result_logprobs(const sp_job *j, const sprout_result *r, size_t *n) {
    const sprout_token *toks = sprout_result_tokens(r, n);
    if (j->req.logprobs < 0) return NULL;
    sp_token_lp *list = calloc(*n ? *n : 1, sizeof *list);
    for (size_t i = 0; list && i < *n; i++) {
        const sprout_token *top_ids = NULL;
        const float *top_lp = NULL;
        size_t k = 0;
        list[i].id = toks[i];
        sprout_result_logprob(r, i, &list[i].logprob, &top_ids, &top_lp, &k);
        list[i].n_top = (int)(k < (size_t)j->req.logprobs ? k : (size_t)j->req.logprobs);
        for (int t = 0; t < list[i].n_top; t++) {
            list[i].top_ids[t] = top_ids[t];
            list[i].top_logprobs[t] = top_lp[t];
        }
    }
    return list;
}

/* Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...]} */
static json_t *chat_logprobs(const sp_job *j, const sp_token_lp *list, size_t n) {
    if (j->req.logprobs < 0 || !list) return json_null();
    json_t *content = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *entry = json_object();
        token_fields(j, list[i].id, entry);
        json_object_set_new(entry, "logprob", json_float32(list[i].logprob));
        json_t *tops = json_array();
        for (int t = 0; t < list[i].n_top; t++) {
            json_t *alt = json_object();
            token_fields(j, list[i].top_ids[t], alt);
            json_object_set_new(alt, "logprob", json_float32(list[i].top_logprobs[t]));
            json_array_append_new(tops, alt);
        }
        json_object_set_new(entry, "top_logprobs", tops);
        json_array_append_new(content, entry);
    }
    return json_pack("{s:o}", "content", content);
}

/* Completions: {tokens, token_logprobs, top_logprobs: [{text: lp}], text_offset};
 * *offset is where the first token's text starts, and is moved past the last. */
static json_t *completion_logprobs(const sp_job *j, const sp_token_lp *list, size_t n, size_t *offset) {
    if (j->req.logprobs < 0 || !list) return json_null();
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offsets = json_array();
    const sprout_tokenizer *tok = sprout_model_tokenizer(j->model->model);
    for (size_t i = 0; i < n; i++) {
        const char *piece = "";
        size_t len = 0;
        sprout_token_to_piece(tok, list[i].id, false, &piece, &len);
        json_array_append_new(tokens, sp_json_text(piece, len));
        json_array_append_new(lps, json_float32(list[i].logprob));
        json_array_append_new(offsets, json_integer((json_int_t)*offset));
        *offset += len;
        json_t *alts = json_object();
        for (int t = 0; t < list[i].n_top; t++) {
            sprout_token_to_piece(tok, list[i].top_ids[t], false, &piece, &len);
            json_t *key = sp_json_text(piece, len);
            if (key) json_object_set_new(alts, json_string_value(key), json_float32(list[i].top_logprobs[t]));
            json_decref(key);
        }
        json_array_append_new(tops, alts);
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops, "text_offset", offsets);
}

/* The log-probabilities of the tokens streamed since the last chunk (mu held). */
static json_t *take_pending(sp_job *j, bool chat) {
    json_t *v = chat ? chat_logprobs(j, j->pending, j->n_pending) : completion_logprobs(j, j->pending, j->n_pending, &j->text_offset);
    j->n_pending = 0;
    return v;
}

/* --- chat -------------------------------------------------------------------------------------------------------- */

/* A chunk; it carries the log-probabilities of the tokens streamed since the
 * last one, unless it is the opening role chunk, which has no text. */
/* A chunk; the last (finish given) carries the result's timings. */
static void chat_chunk(sp_job *j, json_t *delta, const char *finish, const sprout_result *end, sp_buf *out) {
    json_t *v = envelope(j, "chat.completion.chunk");
    const bool with_logprobs = j->n_pending && j->role_sent;
    json_t *choice = json_pack("{s:i, s:o, s:o}", "index", 0, "delta", delta, "logprobs", with_logprobs ? take_pending(j, true) : json_null());
    json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
    json_object_set_new(v, "choices", json_pack("[o]", choice));
    if (end) json_object_set_new(v, "timings", timings_json(end));
    sp_buf_json(out, "data: ", v, "\n\n");
}

static void open_chat_stream(sp_job *j, sp_buf *out) {
    if (!j->role_sent) {
        chat_chunk(j, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL, NULL, out);
        j->role_sent = true;
    }
}

/* A streamed piece (or, final, the end): its reasoning and its answer text, each as a delta. */
static void chat_parts(sp_job *j, const char *text, size_t len, bool final, sp_buf *out) {
    sp_buf reasoning = {0};
    const char *send;
    size_t n;
    sp_chat_piece_parts(j, text, len, final, &reasoning, &send, &n);
    open_chat_stream(j, out);
    if (reasoning.len)
        chat_chunk(j, json_pack("{s:o}", "reasoning_content", sp_json_text(reasoning.data, reasoning.len)), NULL, NULL, out);
    if (n) chat_chunk(j, json_pack("{s:o}", "content", sp_json_text(send, n)), NULL, NULL, out);
    free(reasoning.data);
}

static void chat_piece(sp_job *j, const char *text, size_t len, sp_buf *out) { chat_parts(j, text, len, false, out); }

/* Calls as OpenAI words them: an id each, and the arguments as JSON text;
 * `indexed` adds the index a stream's deltas carry. */
static json_t *openai_tool_calls(const sp_job *j, const json_t *calls, bool indexed) {
    json_t *list = json_array();
    size_t i;
    const json_t *call;
    json_array_foreach(calls, i, call) {
        const json_t *args = json_object_get(call, "arguments");
        char *text = json_is_string(args) ? strdup(json_string_value(args)) : json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER);
        const char *serial = strchr(j->id, '-'); /* the response id's own part: "chatcmpl-<this>" */
        char id[96];
        snprintf(id, sizeof id, "call_%s_%zu", serial ? serial + 1 : j->id, i);
        json_t *v = json_pack("{s:s, s:s, s:{s:O, s:s}}", "id", id, "type", "function", "function", "name",
                              json_object_get(call, "name"), "arguments", text ? text : "{}");
        if (v && indexed) json_object_set_new(v, "index", json_integer((json_int_t)i));
        json_array_append_new(list, v);
        free(text);
    }
    return list;
}

static void stream_error(sp_job *j, sprout_status st, sp_buf *out) {
    (void)j;
    char message[600];
    snprintf(message, sizeof message, "generation failed: %s", sprout_last_error());
    const bool shutdown = st == SPROUT_ERR_BUSY || st == SPROUT_ERR_CANCELLED;
    sp_buf_json(out, "data: ", sp_error_json(SP_STYLE_OPENAI, shutdown ? 503 : 500, NULL, message), "\n\n");
    sp_buf_put(out, "data: [DONE]\n\n", 14);
}

/* The usage chunk (when asked for) and the end marker. */
static void stream_close(sp_job *j, const char *object, const sprout_result *r, sp_buf *out) {
    if (j->req.include_usage) {
        json_t *v = envelope(j, object);
        json_object_set_new(v, "choices", json_array());
        json_object_set_new(v, "usage", usage_json(r));
        sp_buf_json(out, "data: ", v, "\n\n");
    }
    sp_buf_put(out, "data: [DONE]\n\n", 14);
}

static void chat_stream_end(sp_job *j, sprout_status st, const sprout_result *r, sp_buf *out) {
    if (st != SPROUT_OK) {
        stream_error(j, st, out);
        return;
    }
    chat_parts(j, "", 0, true, out);
    if (sprout_result_finish_reason(r) == SPROUT_FINISH_STOP_STRING) j->n_pending = 0; /* tokens of text that was cut */
    char *held = NULL;
    size_t held_len = 0;
    json_t *calls = sp_chat_held_calls(j, &held, &held_len);
    if (held_len) chat_chunk(j, json_pack("{s:o}", "content", sp_json_text(held, held_len)), NULL, NULL, out);
    free(held);
    if (calls) chat_chunk(j, json_pack("{s:o}", "tool_calls", openai_tool_calls(j, calls, true)), NULL, NULL, out);
    chat_chunk(j, json_object(), calls ? "tool_calls" : sp_finish_word(r), r, out);
    json_decref(calls);
    stream_close(j, "chat.completion.chunk", r, out);
}

static json_t *chat_response(sp_job *j, const sprout_result *r) {
    size_t len;
    const char *text = sprout_result_text(r, &len);
    size_t n = 0;
    sp_token_lp *lps = result_logprobs(j, r, &n);
    char *content = NULL;
    size_t content_len = 0;
    sp_buf reasoning = {0};
    json_t *calls = sp_chat_reply_parts(j, text, len, &reasoning, &content, &content_len);
    json_t *msg = json_pack("{s:s, s:o}", "role", "assistant", "content",
                            calls && !content_len ? json_null() : sp_json_text(content ? content : "", content_len));
    if (reasoning.len) json_object_set_new(msg, "reasoning_content", sp_json_text(reasoning.data, reasoning.len));
    free(reasoning.data);
    if (calls) json_object_set_new(msg, "tool_calls", openai_tool_calls(j, calls, false));
    json_t *v = envelope(j, "chat.completion");
    json_object_set_new(v, "choices", json_pack("[{s:i, s:o, s:o, s:s}]", "index", 0, "message", msg, "logprobs", chat_logprobs(j, lps, n),
                                                "finish_reason", calls ? "tool_calls" : sp_finish_word(r)));
    json_decref(calls);
    free(content);
    free(lps);
    json_object_set_new(v, "usage", usage_json(r));
    json_object_set_new(v, "timings", timings_json(r));
    return v;
}

const sp_api_format sp_openai_chat_format = {"text/event-stream", chat_piece, chat_stream_end, chat_response};

/* --- completions ------------------------------------------------------------------------------------------------- */

static void completion_chunk(sp_job *j, json_t *text, const char *finish, const sprout_result *end, sp_buf *out) {
    json_t *v = envelope(j, "text_completion");
    json_t *choice = json_pack("{s:o, s:i, s:o}", "text", text, "index", 0, "logprobs", j->n_pending ? take_pending(j, false) : json_null());
    json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
    json_object_set_new(v, "choices", json_pack("[o]", choice));
    if (end) json_object_set_new(v, "timings", timings_json(end));
    sp_buf_json(out, "data: ", v, "\n\n");
}

static void completion_piece(sp_job *j, const char *text, size_t len, sp_buf *out) {
    completion_chunk(j, sp_json_text(text, len), NULL, NULL, out);
}

static void completion_stream_end(sp_job *j, sprout_status st, const sprout_result *r, sp_buf *out) {
    if (st != SPROUT_OK) {
        stream_error(j, st, out);
        return;
    }
    if (sprout_result_finish_reason(r) == SPROUT_FINISH_STOP_STRING) j->n_pending = 0; /* tokens of text that was cut */
    completion_chunk(j, json_string(""), sp_finish_word(r), r, out);
    stream_close(j, "text_completion", r, out);
}

static json_t *completion_response(sp_job *j, const sprout_result *r) {
    size_t len;
    const char *text = sprout_result_text(r, &len);
    sp_buf all = {0};
    if (j->req.echo && j->req.prompt) sp_buf_put(&all, j->req.prompt, strlen(j->req.prompt));
    sp_buf_put(&all, text, len);
    json_t *v = envelope(j, "text_completion");
    size_t n = 0, offset = j->req.echo && j->req.prompt ? strlen(j->req.prompt) : 0;
    sp_token_lp *lps = result_logprobs(j, r, &n);
    json_object_set_new(v, "choices", json_pack("[{s:o, s:i, s:o, s:s}]", "text", sp_json_text(all.data ? all.data : "", all.len),
                                                "index", 0, "logprobs", completion_logprobs(j, lps, n, &offset), "finish_reason",
                                                sp_finish_word(r)));
    free(lps);
    free(all.data);
    json_object_set_new(v, "usage", usage_json(r));
    json_object_set_new(v, "timings", timings_json(r));
    return v;
}

const sp_api_format sp_openai_completion_format = {"text/event-stream", completion_piece, completion_stream_end, completion_response};
