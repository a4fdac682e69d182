/* The Ollama API's words: generate and chat (NDJSON streams or one object,
 * durations in nanoseconds), and the model endpoints: tags, show, ps,
 * version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json_util.h"
#include "server/response_parts.h"
#include "server/server_internal.h"

/* RFC 3339 with nanoseconds, as Ollama writes times. */
static json_t *timestamp(int64_t seconds, long nanos) {
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
    return timestamp((int64_t)ts.tv_sec, ts.tv_nsec);
}

static json_t *head(const sp_job *j, bool done) {
    return json_pack("{s:s, s:o, s:b}", "model", j->srv->model_name, "created_at", now(), "done", done);
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

json_t *sp_ollama_loaded(const sp_server *srv, sp_api_kind kind) {
    json_t *v = json_pack("{s:s, s:o, s:b, s:s}", "model", srv->model_name, "created_at", now(), "done", 1, "done_reason", "load");
    if (kind == SP_API_OLLAMA_CHAT) json_object_set_new(v, "message", json_pack("{s:s, s:s}", "role", "assistant", "content", ""));
    else json_object_set_new(v, "response", json_string(""));
    return v;
}

static json_t *message(const char *text, size_t len) {
    return json_pack("{s:s, s:o}", "role", "assistant", "content", json_string_lossy(text, len));
}

static void set_text(const sp_job *j, json_t *v, const char *text, size_t len) {
    if (j->req.kind == SP_API_OLLAMA_CHAT) json_object_set_new(v, "message", message(text, len));
    else json_object_set_new(v, "response", json_string_lossy(text, len));
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
    json_object_set_new(into, "thinking", json_string_lossy(thinking->data, thinking->len));
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

/* --- models ---------------------------------------------------------------------------------------------------------- */

/* "1.1B", "260K": the parameter count as Ollama shows it. */
static json_t *parameter_size(const sprout_gguf *g) {
    double n = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) n += (double)sprout_gguf_tensor_elements(g, i);
    char text[32];
    if (n >= 1e9) snprintf(text, sizeof text, "%.1fB", n / 1e9);
    else if (n >= 1e6) snprintf(text, sizeof text, "%.0fM", n / 1e6);
    else snprintf(text, sizeof text, "%.0fK", n / 1e3);
    return json_string(text);
}

static json_t *details(const sp_server *srv) {
    const sprout_gguf *g = sprout_model_gguf(srv->model);
    const char *arch = sprout_model_architecture(srv->model);
    uint32_t ftype = 0;
    const char *quant = sprout_gguf_get_u32(g, "general.file_type", &ftype) == SPROUT_OK ? sprout_file_type_name(ftype) : NULL;
    return json_pack("{s:s, s:s, s:s, s:[s], s:o, s:s}", "parent_model", "", "format", "gguf", "family", arch, "families", arch,
                     "parameter_size", parameter_size(g), "quantization_level", quant ? quant : "unknown");
}

/* A stable digest-like id for the file (its name, size and time). */
static json_t *digest(const sp_server *srv) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = srv->opt.model_path; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h ^= srv->model_bytes * 31 + (uint64_t)srv->model_mtime;
    char text[80];
    snprintf(text, sizeof text, "%016llx%016llx%016llx%016llx", (unsigned long long)h, (unsigned long long)(h * 3),
             (unsigned long long)(h * 5), (unsigned long long)(h * 7));
    return json_string(text);
}

static json_t *model_entry(const sp_server *srv) {
    char name[300];
    snprintf(name, sizeof name, "%s:latest", srv->model_name);
    return json_pack("{s:s, s:s, s:o, s:I, s:o, s:o}", "name", name, "model", name, "modified_at", timestamp(srv->model_mtime, 0),
                     "size", (json_int_t)srv->model_bytes, "digest", digest(srv), "details", details(srv));
}

enum MHD_Result sp_handle_ollama_tags(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    return sp_reply_json(srv, c, 200, json_pack("{s:[o]}", "models", model_entry(srv)));
}

enum MHD_Result sp_handle_ollama_ps(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    json_t *m = model_entry(srv);
    json_object_set_new(m, "expires_at", timestamp((int64_t)time(NULL) + 10 * 365 * 86400, 0)); /* never unloaded */
    json_object_set_new(m, "size_vram", json_integer(0));
    return sp_reply_json(srv, c, 200, json_pack("{s:[o]}", "models", m));
}

enum MHD_Result sp_handle_ollama_version(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    return sp_reply_json(srv, c, 200, json_pack("{s:s}", "version", sprout_version()));
}

/* A body naming the model (`model`, or the older `name`): the parsed body
 * when it names the one served, else NULL after the reply (400, 404). */
static json_t *naming_request(sp_server *srv, struct MHD_Connection *c, const char *body, size_t len, enum MHD_Result *res) {
    json_t *req = sp_parse_object(srv, c, SP_STYLE_OLLAMA, body, len, res);
    if (!req) return NULL;
    const json_t *name = json_object_get(req, "model");
    if (!name || json_is_null(name)) name = json_object_get(req, "name");
    if (name && !json_is_string(name)) {
        json_decref(req);
        *res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 400, "model", "model: expected a string");
        return NULL;
    }
    if (!sp_model_name_matches(srv, name ? json_string_value(name) : NULL)) {
        *res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 404, "model", "model '%s' not found (this server has '%s' and downloads nothing)",
                              json_string_value(name), srv->model_name);
        json_decref(req);
        return NULL;
    }
    return req;
}

/* POST /api/pull: the model served is there already; sprout fetches no others. */
enum MHD_Result sp_handle_ollama_pull(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res = MHD_NO;
    json_t *req = naming_request(srv, c, body, len, &res);
    if (!req) return res;
    const json_t *stream = json_object_get(req, "stream");
    const bool ndjson = !json_is_false(stream); /* Ollama streams unless told not to */
    json_decref(req);
    if (!ndjson) return sp_reply_json(srv, c, 200, json_pack("{s:s}", "status", "success"));
    return sp_reply_text(srv, c, 200, "application/x-ndjson", "{\"status\":\"success\"}\n");
}

/* "WORD value\n", a line of a Modelfile. */
static void modelfile_line(sp_buf *b, const char *word, const char *value) {
    sp_buf_put(b, word, strlen(word));
    sp_buf_put(b, " ", 1);
    sp_buf_put(b, value, strlen(value));
    sp_buf_put(b, "\n", 1);
}

enum MHD_Result sp_handle_ollama_show(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res = MHD_NO;
    json_t *req = naming_request(srv, c, body, len, &res);
    if (!req) return res;
    const bool verbose = json_is_true(json_object_get(req, "verbose"));
    json_decref(req);

    const sprout_gguf *g = sprout_model_gguf(srv->model);
    json_t *info = json_object();
    for (int64_t i = 0; i < sprout_gguf_kv_count(g); i++) {
        const sprout_gguf_value *v = sprout_gguf_kv_value(g, i);
        const bool big = sprout_gguf_value_type(v) == SPROUT_GGUF_ARRAY && sprout_gguf_array_len(v) > 64;
        /* vocabularies are large: Ollama leaves them out unless asked */
        json_object_set_new(info, sprout_gguf_kv_key(g, i), big && !verbose ? json_null() : json_gguf_value(v, UINT64_MAX, false));
    }
    const char *tmpl = "";
    size_t tmpl_len = 0;
    if (sprout_template_for_model(g, NULL, &tmpl, &tmpl_len) != SPROUT_OK) tmpl_len = 0;
    /* Ollama's Modelfile: an ADAPTER line per adapter, in id order */
    sp_buf modelfile = {0};
    static const char header[] = "# Modelfile generated by sprout\n";
    sp_buf_put(&modelfile, header, sizeof header - 1);
    modelfile_line(&modelfile, "FROM", srv->opt.model_path);
    for (size_t i = 0; i < srv->n_lora; i++) modelfile_line(&modelfile, "ADAPTER", srv->opt.lora_paths[i]);
    char parameters[256];
    snprintf(parameters, sizeof parameters, "num_ctx %d\ntemperature 0.8\ntop_k 40\ntop_p 0.9\nrepeat_penalty 1.1\n",
             srv->n_ctx);
    /* as Ollama words them: text or embeddings, and tools where the template renders them */
    json_t *capabilities = json_array();
    if (!sprout_model_generates(srv->model)) json_array_append_new(capabilities, json_string("embedding"));
    else {
        json_array_append_new(capabilities, json_string("completion"));
        const sprout_tokenizer *tok = sprout_model_tokenizer(srv->model);
        if (tok && sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_PRE) >= 0 && sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_SUF) >= 0 &&
            sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_MID) >= 0)
            json_array_append_new(capabilities, json_string("insert"));
        if (tmpl_len && memmem(tmpl, tmpl_len, "tools", 5)) json_array_append_new(capabilities, json_string("tools"));
    }
    json_t *v = json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "modelfile", json_string_lossy(modelfile.data, modelfile.len),
                          "parameters", parameters, "template", json_string_lossy(tmpl, tmpl_len), "details", details(srv), "model_info",
                          info, "capabilities", capabilities, "modified_at", timestamp(srv->model_mtime, 0), "adapters",
                          sp_lora_json(srv, false));
    free(modelfile.data);
    return sp_reply_json(srv, c, 200, v);
}
