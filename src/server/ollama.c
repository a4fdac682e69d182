/* The Ollama API's words: generate and chat (NDJSON streams or one object,
 * durations in nanoseconds). The model endpoints are in models_api.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json_util.h"
#include "server/response_parts.h"
#include "server/server_internal.h"

json_t *sp_rfc3339(int64_t seconds, long nanos) {
    char when[64];
    time_t t = (time_t)seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%09ldZ", nanos);
    return json_string(when);
}

static json_t *now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return sp_rfc3339((int64_t)ts.tv_sec, ts.tv_nsec);
}

static json_t *head(const sp_job *j, bool done) {
    return json_pack("{s:s, s:o, s:b}", "model", j->model->name, "created_at", now(), "done", done);
}

/* The closing fields: why it ended, counts and durations (ns). */
static void add_totals(const sp_job *j, const sprout_result *r, json_t *v) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    sprout_result_metrics(r, &m);
    const double prompt_ms = m.prefill_tokens_per_s > 0 ? m.n_prefill_tokens / m.prefill_tokens_per_s * 1e3 : 0;
    const double eval_ms = m.total_ms - m.ttft_ms + m.tpot_mean_ms > 0 ? m.total_ms - m.ttft_ms + m.tpot_mean_ms : 0;
    json_object_set_new(v, "done_reason", json_string(sp_finish_word(r)));
    json_object_set_new(v, "total_duration", json_integer((json_int_t)(m.total_ms * 1e6)));
    json_object_set_new(v, "load_duration", json_integer((json_int_t)(m.load_ms * 1e6)));
    json_object_set_new(v, "prompt_eval_count", json_integer(m.n_prompt_tokens));
    json_object_set_new(v, "prompt_eval_duration", json_integer((json_int_t)(prompt_ms * 1e6)));
    json_object_set_new(v, "eval_count", json_integer(m.n_generated_tokens));
    json_object_set_new(v, "eval_duration", json_integer((json_int_t)(eval_ms * 1e6)));
    if (j->req.kind == SP_API_OLLAMA_GENERATE) { /* the conversation's tokens, for callers that pass it back */
        json_t *context = json_array();
        size_t np, n;
        const sprout_token *p = sprout_result_prompt_tokens(r, &np), *t = sprout_result_tokens(r, &n);
        for (size_t i = 0; i < np; i++) json_array_append_new(context, json_integer(p[i]));
        for (size_t i = 0; i < n; i++) json_array_append_new(context, json_integer(t[i]));
        json_object_set_new(v, "context", context);
    }
}

json_t *sp_ollama_loaded(const char *model, sp_api_kind kind, const char *reason) {
    json_t *v = json_pack("{s:o, s:o, s:b, s:s}", "model", sp_json_text(model ? model : "", model ? strlen(model) : 0), "created_at",
                          now(), "done", 1, "done_reason", reason);
    if (kind == SP_API_OLLAMA_CHAT) json_object_set_new(v, "message", json_pack("{s:s, s:s}", "role", "assistant", "content", ""));
    else json_object_set_new(v, "response", json_string(""));
    return v;
}

static json_t *message(const char *text, size_t len) {
    return json_pack("{s:s, s:o}", "role", "assistant", "content", sp_json_text(text, len));
}

static void set_text(const sp_job *j, json_t *v, const char *text, size_t len) {
    if (j->req.kind == SP_API_OLLAMA_CHAT) json_object_set_new(v, "message", message(text, len));
    else json_object_set_new(v, "response", sp_json_text(text, len));
}

/* Calls as Ollama words them: {"function": {"name", "arguments": {...}}}. */
static json_t *ollama_tool_calls(const json_t *calls) {
    json_t *list = json_array();
    size_t i;
    const json_t *call;
    json_array_foreach(calls, i, call) {
        json_array_append_new(list, json_pack("{s:{s:O, s:O}}", "function", "name", json_object_get(call, "name"), "arguments",
                                              json_object_get(call, "arguments")));
    }
    return list;
}

/* Reasoning apart (think): chat's message.thinking, generate's thinking. */
static void set_thinking(const sp_job *j, json_t *v, const sp_buf *thinking) {
    if (!thinking->len) return;
    json_t *into = j->req.kind == SP_API_OLLAMA_CHAT ? json_object_get(v, "message") : v;
    json_object_set_new(into, "thinking", sp_json_text(thinking->data, thinking->len));
}

/* A streamed piece (or, final, the end): one line with its thinking and its text, if either. */
static void parts(sp_job *j, const char *text, size_t len, bool final, sp_buf *out) {
    sp_buf thinking = {0};
    const char *send;
    size_t n;
    sp_chat_piece_parts(j, text, len, final, &thinking, &send, &n);
    if (n || thinking.len) {
        json_t *v = head(j, false);
        set_text(j, v, send, n);
        set_thinking(j, v, &thinking);
        sp_buf_json(out, "", v, "\n");
    }
    free(thinking.data);
}

static void piece(sp_job *j, const char *text, size_t len, sp_buf *out) { parts(j, text, len, false, out); }

static void stream_end(sp_job *j, sprout_status st, const sprout_result *r, sp_buf *out) {
    if (st != SPROUT_OK) {
        char text[600];
        snprintf(text, sizeof text, "generation failed: %s", sprout_last_error());
        sp_buf_json(out, "", sp_error_json(SP_STYLE_OLLAMA, 500, NULL, text), "\n");
        return;
    }
    parts(j, "", 0, true, out);
    char *held = NULL;
    size_t held_len = 0;
    json_t *calls = sp_chat_held_calls(j, &held, &held_len);
    if (held_len || calls) { /* what waited in case it was a tool call */
        json_t *v = head(j, false);
        set_text(j, v, held ? held : "", held_len);
        if (calls) json_object_set_new(json_object_get(v, "message"), "tool_calls", ollama_tool_calls(calls));
        sp_buf_json(out, "", v, "\n");
    }
    free(held);
    json_decref(calls);
    json_t *v = head(j, true);
    set_text(j, v, "", 0);
    add_totals(j, r, v);
    sp_buf_json(out, "", v, "\n");
}

static json_t *response(sp_job *j, const sprout_result *r) {
    size_t len;
    const char *text = sprout_result_text(r, &len);
    char *content = NULL;
    size_t content_len = 0;
    sp_buf thinking = {0};
    json_t *calls = sp_chat_reply_parts(j, text, len, &thinking, &content, &content_len);
    json_t *v = head(j, true);
    set_text(j, v, content ? content : "", content_len);
    set_thinking(j, v, &thinking);
    if (calls) json_object_set_new(json_object_get(v, "message"), "tool_calls", ollama_tool_calls(calls));
    json_decref(calls);
    free(content);
    free(thinking.data);
    add_totals(j, r, v);
    return v;
}

const sp_api_format sp_ollama_chat_format = {"application/x-ndjson", piece, stream_end, response};
const sp_api_format sp_ollama_generate_format = {"application/x-ndjson", piece, stream_end, response};
