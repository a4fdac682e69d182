/* Operations endpoints: health, Prometheus metrics, the tokenizer
 * (llama.cpp server's /tokenize and /detokenize shapes), and the LoRA
 * adapters (llama.cpp server's /lora-adapters) with the one function that
 * gives every generation request its adapter set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_util.h"
#include "server/server_internal.h"

enum MHD_Result sp_handle_health(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    if (!atomic_load(&srv->ready)) return sp_reply_json(srv, c, 503, json_pack("{s:s}", "status", "loading model"));
    if (atomic_load(&srv->draining)) return sp_reply_json(srv, c, 503, json_pack("{s:s}", "status", "draining"));
    return sp_reply_json(srv, c, 200, json_pack("{s:s}", "status", "ok"));
}

static void metric(sp_buf *b, const char *name, const char *type, const char *help, double value) {
    char line[512];
    int n = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, value);
    if (n > 0) sp_buf_put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* --- LoRA adapters ----------------------------------------------------------------------------------------- */

/* The double nearest to f with the fewest digits that still reads back as
 * f: replies say 0.2, not 0.200000003. */
static double shortest(float f) {
    char text[32];
    for (int digits = 1; digits < 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)f);
        if ((float)strtod(text, NULL) == f) return strtod(text, NULL);
    }
    return (double)f;
}

/* The default scales now (n_lora floats). */
static void default_scales(sp_model_entry *e, float *out) {
    pthread_mutex_lock(&e->lora_lock);
    for (size_t i = 0; i < e->n_lora; i++) out[i] = e->lora_scales[i];
    pthread_mutex_unlock(&e->lora_lock);
}

/* Whether every id of the list names a loaded adapter; else the error. */
static bool ids_valid(const sp_model_entry *e, const sp_api_lora *list, const char *field, char *error, size_t error_size) {
    for (size_t i = 0; i < list->n; i++) {
        if ((size_t)list->id[i] < e->n_lora) continue;
        if (e->n_lora)
            snprintf(error, error_size, "%s%sinvalid adapter id %d (this server's adapters are 0..%zu)", field, *field ? ": " : "",
                     list->id[i], e->n_lora - 1);
        else snprintf(error, error_size, "%s%sinvalid adapter id %d (this server has no adapters)", field, *field ? ": " : "", list->id[i]);
        return false;
    }
    return true;
}

bool sp_lora_uses(sp_model_entry *e, const sp_api_lora *list, const char *field, sprout_lora_use *uses, size_t *n, char *error,
                  size_t error_size) {
    *n = 0;
    if (list->given && !ids_valid(e, list, field, error, error_size)) return false;
    float *scale = e->n_lora ? malloc(e->n_lora * sizeof *scale) : NULL;
    if (e->n_lora && !scale) {
        snprintf(error, error_size, "out of memory");
        return false;
    }
    if (list->given) {
        for (size_t i = 0; i < e->n_lora; i++) scale[i] = 0.f;
        for (size_t i = 0; i < list->n; i++) scale[list->id[i]] = list->scale[i];
    } else {
        default_scales(e, scale);
    }
    for (size_t i = 0; i < e->n_lora; i++)
        if (scale[i] != 0.f) uses[(*n)++] = (sprout_lora_use){e->loras[i], scale[i]};
    free(scale);
    return true;
}

json_t *sp_lora_json(sp_model_entry *e, bool extra) {
    float *scale = malloc((e->n_lora ? e->n_lora : 1) * sizeof *scale);
    json_t *list = json_array();
    if (!scale || !list) {
        free(scale);
        json_decref(list);
        return NULL;
    }
    default_scales(e, scale);
    for (size_t i = 0; i < e->n_lora; i++) {
        const char *path = e->lora_paths[i];
        json_t *item = json_pack("{s:I, s:o, s:f}", "id", (json_int_t)i, "path", json_string_lossy(path, strlen(path)), "scale",
                                 shortest(scale[i]));
        if (item && extra) { /* llama.cpp's fields from the adapter's metadata, which sprout does not read */
            json_object_set_new(item, "task_name", json_string(""));
            json_object_set_new(item, "prompt_prefix", json_string(""));
        }
        json_array_append_new(list, item);
    }
    free(scale);
    return list;
}

/* GET /lora-adapters: llama.cpp server's list. */
enum MHD_Result sp_handle_lora_list(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    return sp_reply_json(srv, c, 200, srv->pinned ? sp_lora_json(srv->pinned, true) : json_array()); /* the -m model's */
}

/* POST /lora-adapters: new default scales, as llama.cpp's server sets them
 * (the adapters listed at their scales, the others 0). Requests running
 * keep the set they started with (the scheduler copied it). */
enum MHD_Result sp_handle_lora_set(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    sp_api_lora list;
    char error[512];
    sp_model_entry *e = srv->pinned; /* the -m model's; a store model's ADAPTERs are its Modelfile's */
    if (!e) return sp_reply_error(srv, c, SP_STYLE_OPENAI, 400, NULL, "the adapters of a model served with -m only");
    if (!sp_api_lora_parse(body, len, &list, error, sizeof error) || !ids_valid(e, &list, "", error, sizeof error))
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 400, NULL, "%s", error);
    pthread_mutex_lock(&e->lora_lock);
    for (size_t i = 0; i < e->n_lora; i++) e->lora_scales[i] = 0.f;
    for (size_t i = 0; i < list.n; i++) e->lora_scales[list.id[i]] = list.scale[i];
    pthread_mutex_unlock(&e->lora_lock);
    return sp_reply_json(srv, c, 200, json_pack("{s:b}", "success", 1));
}

void sp_put_label(sp_buf *b, const char *s) {
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (esc) sp_buf_put(b, esc, 2);
        else sp_buf_put(b, s, 1);
    }
}

/* A gauge per adapter: its default scale, labelled with its id and path. */
static void lora_metrics(sp_model_entry *e, sp_buf *b) {
    float *scale = e->n_lora ? malloc(e->n_lora * sizeof *scale) : NULL;
    if (!scale) return;
    default_scales(e, scale);
    static const char head[] = "# HELP sprout_lora_adapter_scale The default scale of each LoRA adapter (requests without \"lora\").\n"
                               "# TYPE sprout_lora_adapter_scale gauge\n";
    sp_buf_put(b, head, sizeof head - 1);
    for (size_t i = 0; i < e->n_lora; i++) {
        char text[96];
        snprintf(text, sizeof text, "sprout_lora_adapter_scale{id=\"%zu\",path=\"", i);
        sp_buf_put(b, text, strlen(text));
        sp_put_label(b, e->lora_paths[i]);
        snprintf(text, sizeof text, "\"} %.9g\n", shortest(scale[i]));
        sp_buf_put(b, text, strlen(text));
    }
    free(scale);
}

/* Every loaded model's scheduler counters, summed. */
typedef struct model_totals {
    sprout_scheduler_stats *st;
    int n_models;
    uint64_t bytes;
    size_t kv_bytes_per_token; /* the loaded models' caches together */
} model_totals;

static void add_model_stats(sp_model_entry *e, void *user) {
    model_totals *t = user;
    sprout_scheduler_stats one = {.struct_size = sizeof one};
    pthread_rwlock_rdlock(&e->sched_lock);
    const bool ok = e->sched && sprout_scheduler_stats_get(e->sched, &one) == SPROUT_OK;
    if (ok) t->kv_bytes_per_token += sprout_scheduler_kv_bytes_per_token(e->sched);
    pthread_rwlock_unlock(&e->sched_lock);
    t->n_models++;
    t->bytes += e->mem_bytes;
    if (!ok) return;
    sprout_scheduler_stats *s = t->st;
    sp_stats_add(s, &one);
    s->n_slots += one.n_slots;
    s->busy_slots += one.busy_slots;
    s->queued += one.queued;
}

enum MHD_Result sp_handle_metrics(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    pthread_mutex_lock(&srv->models_lock);
    st = srv->retired; /* the counters of models since unloaded: they go on counting */
    pthread_mutex_unlock(&srv->models_lock);
    st.n_slots = st.busy_slots = st.queued = 0;
    model_totals totals = {.st = &st};
    sp_models_each_loaded(srv, add_model_stats, &totals);
    sp_buf b = {0};
    metric(&b, "sprout_http_requests_total", "counter", "HTTP requests received.", (double)atomic_load(&srv->http_requests));
    metric(&b, "sprout_http_errors_total", "counter", "HTTP responses with a 4xx or 5xx status.", (double)atomic_load(&srv->http_errors));
    metric(&b, "sprout_http_timeouts_total", "counter", "Connections cut because a request's headers or body came too slowly.",
           (double)sp_guard_timeouts(srv));
    metric(&b, "sprout_http_refused_total", "counter", "Requests refused (403) for their Host or Origin.", (double)sp_guard_refused(srv));
    metric(&b, "sprout_requests_total", "counter", "Generation requests finished.", (double)st.requests_done);
    metric(&b, "sprout_requests_cancelled_total", "counter", "Generation requests cut short because the client hung up.",
           (double)atomic_load(&srv->requests_cancelled));
    metric(&b, "sprout_requests_rejected_total", "counter", "Generation requests turned away with a full queue.",
           (double)st.requests_rejected);
    metric(&b, "sprout_prompt_tokens_total", "counter", "Prompt tokens received.", (double)st.prompt_tokens);
    metric(&b, "sprout_prompt_tokens_cached_total", "counter", "Prompt tokens reused from the KV cache.",
           (double)st.cached_prompt_tokens);
    metric(&b, "sprout_generated_tokens_total", "counter", "Tokens generated.", (double)st.generated_tokens);
    metric(&b, "sprout_forward_passes_total", "counter", "Batched forward passes run.", (double)st.steps);
    metric(&b, "sprout_draft_tokens_total", "counter", "Tokens proposed by assisted generation (draft model or prompt lookup).",
           (double)atomic_load(&srv->draft_tokens));
    metric(&b, "sprout_draft_accepted_total", "counter", "Proposed tokens kept (each saved a forward pass).",
           (double)atomic_load(&srv->draft_accepted));
    metric(&b, "sprout_tokens_per_second", "gauge", "Generated tokens per second of engine time, since the start.",
           st.busy_ms > 0 ? (double)st.generated_tokens / (st.busy_ms / 1e3) : 0);
    metric(&b, "sprout_slots", "gauge", "Generation slots.", st.n_slots);
    metric(&b, "sprout_busy_slots", "gauge", "Slots generating now.", st.busy_slots);
    metric(&b, "sprout_queue_length", "gauge", "Requests waiting for a slot.", st.queued);
    metric(&b, "sprout_models_loaded", "gauge", "Models loaded now.", totals.n_models);
    metric(&b, "sprout_models_memory_bytes", "gauge", "Memory of the models loaded (mapped files and KV caches, estimated).",
           (double)totals.bytes);
    metric(&b, "sprout_kv_cache_bytes_per_token", "gauge", "KV cache bytes one token takes (keys and values, every layer), the loaded models' together.",
           (double)totals.kv_bytes_per_token);
    metric(&b, "sprout_model_loads_total", "counter", "Models loaded.", (double)atomic_load(&srv->model_loads));
    metric(&b, "sprout_model_unloads_total", "counter", "Models unloaded (keep_alive, eviction).", (double)atomic_load(&srv->model_unloads));
    metric(&b, "sprout_model_load_failures_total", "counter", "Model loads that failed.", (double)atomic_load(&srv->model_load_failures));
    if (srv->pinned) lora_metrics(srv->pinned, &b);
    sp_metrics_vllm(srv, &b);
    if (!b.data) return MHD_NO;
    enum MHD_Result res = sp_reply_text(srv, c, 200, "text/plain; version=0.0.4", b.data);
    free(b.data);
    return res;
}


enum MHD_Result sp_handle_tokenize(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res = MHD_NO;
    json_t *req = sp_parse_object(srv, c, SP_STYLE_OPENAI, body, len, &res);
    if (!req) return res;
    const json_t *content = json_object_get(req, "content"), *add = json_object_get(req, "add_special"),
                 *parse = json_object_get(req, "parse_special"), *pieces = json_object_get(req, "with_pieces");
    const char *bad = !json_is_string(content)            ? "content: expected a string"
                      : add && !json_is_boolean(add)       ? "add_special: expected a boolean"
                      : parse && !json_is_boolean(parse)   ? "parse_special: expected a boolean"
                      : pieces && !json_is_boolean(pieces) ? "with_pieces: expected a boolean"
                                                           : NULL;
    if (bad) {
        res = sp_reply_error(srv, c, SP_STYLE_OPENAI, 400, NULL, "%s", bad);
        json_decref(req);
        return res;
    }
    sp_model_entry *e = sp_models_acquire(srv, c, SP_STYLE_OPENAI, json_string_value(json_object_get(req, "model")), &res);
    if (!e) {
        json_decref(req);
        return res;
    }
    const sprout_tokenizer *tok = sprout_model_tokenizer(e->model);
    const unsigned flags = (json_is_true(add) ? SPROUT_TOKENIZE_ADD_SPECIAL : 0) | (!parse || json_is_true(parse) ? SPROUT_TOKENIZE_PARSE_SPECIAL : 0);
    const char *text = json_string_value(content);
    const size_t text_len = json_string_length(content);
    size_t cap = text_len + 16, n = 0;
    sprout_token *ids = malloc(cap * sizeof *ids);
    sprout_status st = ids ? sprout_tokenize(tok, text, text_len, flags, ids, cap, &n) : SPROUT_ERR_OUT_OF_MEMORY;
    if (st == SPROUT_ERR_OUT_OF_RANGE) {
        sprout_token *more = realloc(ids, (n ? n : 1) * sizeof *ids);
        st = more ? sprout_tokenize(tok, text, text_len, flags, ids = more, n, &n) : SPROUT_ERR_OUT_OF_MEMORY;
    }
    if (st != SPROUT_OK) {
        res = sp_reply_error(srv, c, SP_STYLE_OPENAI, 500, NULL, "%s", sprout_last_error());
    } else {
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++) {
            if (!json_is_true(pieces)) {
                json_array_append_new(list, json_integer(ids[i]));
                continue;
            }
            const char *piece = "";
            size_t plen = 0;
            sprout_token_to_piece(tok, ids[i], true, &piece, &plen);
            json_array_append_new(list, json_pack("{s:i, s:o}", "id", ids[i], "piece", json_string_lossy(piece, plen)));
        }
        res = sp_reply_json(srv, c, 200, json_pack("{s:o}", "tokens", list));
    }
    free(ids);
    json_decref(req);
    sp_models_release(srv, e, SP_KEEP_DEFAULT);
    return res;
}

enum MHD_Result sp_handle_detokenize(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res = MHD_NO;
    json_t *req = sp_parse_object(srv, c, SP_STYLE_OPENAI, body, len, &res);
    if (!req) return res;
    const json_t *tokens = json_object_get(req, "tokens");
    if (!json_is_array(tokens)) {
        res = sp_reply_error(srv, c, SP_STYLE_OPENAI, 400, "tokens", "tokens: expected an array of token ids");
        json_decref(req);
        return res;
    }
    sp_model_entry *e = sp_models_acquire(srv, c, SP_STYLE_OPENAI, json_string_value(json_object_get(req, "model")), &res);
    if (!e) {
        json_decref(req);
        return res;
    }
    const int32_t n_vocab = sprout_model_n_vocab(e->model);
    const size_t n = json_array_size(tokens);
    sprout_token *ids = malloc((n ? n : 1) * sizeof *ids);
    for (size_t i = 0; ids && i < n; i++) {
        const json_t *id = json_array_get(tokens, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= n_vocab) {
            res = sp_reply_error(srv, c, SP_STYLE_OPENAI, 400, "tokens", "tokens[%zu]: expected a token id in 0..%d", i, n_vocab - 1);
            free(ids);
            json_decref(req);
            sp_models_release(srv, e, SP_KEEP_DEFAULT);
            return res;
        }
        ids[i] = (sprout_token)json_integer_value(id);
    }
    const sprout_tokenizer *tok = sprout_model_tokenizer(e->model);
    size_t text_len = 0;
    char *text = NULL;
    sprout_status st = ids ? sprout_detokenize(tok, ids, n, 0, NULL, 0, &text_len) : SPROUT_ERR_OUT_OF_MEMORY;
    if (st == SPROUT_OK || st == SPROUT_ERR_OUT_OF_RANGE) {
        text = malloc(text_len + 1);
        st = text ? sprout_detokenize(tok, ids, n, 0, text, text_len, &text_len) : SPROUT_ERR_OUT_OF_MEMORY;
    }
    if (st != SPROUT_OK) res = sp_reply_error(srv, c, SP_STYLE_OPENAI, 500, NULL, "%s", sprout_last_error());
    else res = sp_reply_json(srv, c, 200, json_pack("{s:o}", "content", json_string_lossy(text, text_len)));
    free(text);
    free(ids);
    json_decref(req);
    sp_models_release(srv, e, SP_KEEP_DEFAULT);
    return res;
}
