/* Generation requests of both APIs: parse, build the prompt, check it
 * against the context, submit to the scheduler, then either stream what
 * the engine produces (a reader that the connection's thread pulls from)
 * or wait and answer once. A client that hangs up cancels its request at
 * once: the waits poll its socket. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_internal.h"
#include "server/reasoning.h"
#include "server/response_parts.h"
#include "server/tool_calls.h"

/* --- the job's life ---------------------------------------------------------------------------------------- */

static void job_free(sp_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu); /* the connection closed before the generation ended: its client left */
    if (j->sreq && !j->engine_done && !j->client_left) atomic_fetch_add(&j->srv->requests_cancelled, 1);
    pthread_mutex_unlock(&j->mu);
    sprout_request_free(j->sreq); /* cancels if still running */
    sp_api_request_free(&j->req);
    free(j->lora);
    sprout_free(j->prompt);
    free(j->out.data);
    free(j->reply.data);
    free(j->answer.data);
    sp_reasoning_free(&j->reasoning);
    free(j->pending);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->mu);
    sp_models_release(j->srv, j->model, j->keep_alive_ms);
    atomic_fetch_sub(&j->srv->active_jobs, 1);
    free(j);
}

/* Waits (mu held) for output or the end, cancelling if the client left. */
static void wait_for_engine(sp_job *j, bool want_output) {
    while (!j->engine_done && !(want_output && j->out.len > j->out_sent)) {
        sp_wait_a_while(&j->cond, &j->mu);
        if (!j->engine_done && !j->client_left && sp_client_gone(j->fd)) {
            j->client_left = true;
            atomic_fetch_add(&j->srv->requests_cancelled, 1);
            sprout_request_cancel(j->sreq);
        }
    }
}

/* Engine thread: a piece of text. */
static sprout_stream_status on_piece(const char *piece, size_t len, void *user) {
    sp_job *j = user;
    pthread_mutex_lock(&j->mu);
    (void)sp_oom_take();
    j->fmt->piece(j, piece, len, &j->out);
    if (sp_oom_take()) j->output_lost = true;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
    return SPROUT_STREAM_RUNNING;
}

/* Engine thread: a token joins the output; its log-probabilities wait for
 * the chunk that carries its text. */
static void on_token(sprout_request *req, sprout_token id, float logprob, const sprout_token *top_ids, const float *top_logprobs,
                     size_t n_top, void *user) {
    (void)req;
    sp_job *j = user;
    pthread_mutex_lock(&j->mu);
    if (j->n_pending == j->cap_pending) {
        size_t cap = j->cap_pending ? 2 * j->cap_pending : 16;
        sp_token_lp *more = realloc(j->pending, cap * sizeof *more);
        if (more) {
            j->pending = more;
            j->cap_pending = cap;
        }
    }
    if (j->n_pending < j->cap_pending) {
        sp_token_lp *e = &j->pending[j->n_pending++];
        e->id = id;
        e->logprob = logprob;
        e->n_top = (int)(n_top < (size_t)j->req.logprobs ? n_top : (size_t)j->req.logprobs);
        if (e->n_top > SP_MAX_TOP_LOGPROBS) e->n_top = SP_MAX_TOP_LOGPROBS;
        for (int t = 0; t < e->n_top; t++) {
            e->top_ids[t] = top_ids[t];
            e->top_logprobs[t] = top_logprobs[t];
        }
    }
    pthread_mutex_unlock(&j->mu);
}

/* --- assisted generation -------------------------------------------------------------------------------------- */

/* The server's assisted generation (a draft model or prompt lookup) for
 * this request, with its "speculative.*" overrides; n_max 0, or a server
 * without either, decodes plainly. */
static void assisted(const sp_server *srv, const sp_model_entry *e, sp_api_request *r) {
    const sp_server_options *o = &srv->opt;
    if (!e->draft && !o->lookup) return;
    sprout_generation_config *c = &r->cfg;
    c->num_assistant_tokens = r->speculative.n_max >= 0 ? r->speculative.n_max : o->assist_max;
    c->min_assistant_tokens = r->speculative.n_min >= 0 ? r->speculative.n_min : o->assist_min;
    c->assistant_confidence_threshold = r->speculative.p_min >= 0 ? r->speculative.p_min : o->draft_p_min;
    c->prompt_lookup = o->lookup;
    c->max_ngram_size = o->lookup_ngram;
}

/* A finished generation's proposals and those kept, for /metrics. */
static void count_assisted(sp_server *srv, const sprout_result *r) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    if (!r || sprout_result_metrics(r, &m) != SPROUT_OK) return;
    atomic_fetch_add(&srv->draft_tokens, (unsigned long long)m.n_draft_tokens);
    atomic_fetch_add(&srv->draft_accepted, (unsigned long long)m.n_accepted_tokens);
}

/* Engine thread: the end. */
static void on_done(sprout_request *req, void *user) {
    (void)req;
    sp_job *j = user;
    pthread_mutex_lock(&j->mu);
    j->engine_done = true;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
}

/* The connection's thread pulls the stream from here. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    sp_job *j = cls;
    pthread_mutex_lock(&j->mu);
    wait_for_engine(j, true);
    if (j->out.len == j->out_sent && j->engine_done && !j->final_written) {
        pthread_mutex_unlock(&j->mu);
        sprout_result *r = NULL;
        sprout_status st = sprout_request_wait(j->sreq, &r);
        count_assisted(j->srv, r);
        sp_request_stats_observe(j, st == SPROUT_OK ? r : NULL);
        pthread_mutex_lock(&j->mu);
        (void)sp_oom_take();
        j->fmt->stream_end(j, st, r, &j->out);
        if (sp_oom_take()) j->output_lost = true;
        j->final_written = true;
        sprout_result_free(r);
    }
    ssize_t n = 0;
    if (j->output_lost) { /* what follows a lost chunk would lie: the client sees the stream cut short */
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (j->out.len > j->out_sent) {
        size_t avail = j->out.len - j->out_sent;
        n = (ssize_t)(avail < max ? avail : max);
        memcpy(buf, j->out.data + j->out_sent, (size_t)n);
        j->out_sent += (size_t)n;
        if (j->out_sent == j->out.len) j->out.len = j->out_sent = 0;
    } else {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

static void stream_free(void *cls) { job_free(cls); }

/* --- the prompt ------------------------------------------------------------------------------------------------ */

/* Messages for a generate request that is not raw: its system and prompt. */
static char *generate_messages(const sp_api_request *r) {
    json_t *msgs = json_array();
    bool ok = msgs != NULL;
    if (ok && r->system && *r->system) ok = !json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", r->system));
    if (ok) ok = !json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", r->prompt ? r->prompt : ""));
    char *text = ok ? json_dumps(msgs, JSON_COMPACT) : NULL;
    json_decref(msgs);
    return text;
}

/* The conversation as the model's Modelfile frames it, as Ollama does: its
 * SYSTEM first unless the request brings a system message, then its
 * MESSAGEs (after the request's system message), then the request's. A
 * new JSON text (free), NULL when out of memory. */
static char *modelfile_messages(const sprout_store_model *sm, const char *request_messages) {
    if (!sm) return strdup(request_messages);
    json_t *asked = json_loads(request_messages, 0, NULL);
    json_t *preset = sm ? json_loads(sprout_store_model_messages_json(sm), 0, NULL) : NULL;
    const char *system = sm ? sprout_store_model_system(sm) : NULL;
    const json_t *first = json_array_get(asked, 0);
    const bool has_system = json_is_string(json_object_get(first, "role")) && !strcmp(json_string_value(json_object_get(first, "role")), "system");
    char *text = NULL;
    json_t *all = json_array();
    if (asked && all) {
        size_t next = 0;
        if (has_system) json_array_append(all, json_array_get(asked, next++));
        else if (system && *system) json_array_append_new(all, json_pack("{s:s, s:s}", "role", "system", "content", system));
        if (json_is_array(preset)) json_array_extend(all, preset);
        for (; next < json_array_size(asked); next++) json_array_append(all, json_array_get(asked, next));
        text = json_dumps(all, JSON_COMPACT);
    }
    json_decref(all);
    json_decref(preset);
    json_decref(asked);
    return text;
}

/* Ollama's `context`: the ids of an earlier exchange go first; the new
 * prompt follows without a second BOS. */
static sprout_status prepend_context(sp_job *j) {
    const sp_api_request *r = &j->req;
    const int32_t n_vocab = sprout_model_n_vocab(j->model->model);
    for (size_t i = 0; i < r->n_context; i++)
        if (r->context[i] >= n_vocab) {
            snprintf(j->error, sizeof j->error, "context[%zu]: token id %d is outside the vocabulary (0..%d)", i, r->context[i],
                     n_vocab - 1);
            return SPROUT_ERR_INVALID_ARGUMENT;
        }
    const sprout_token bos = sprout_tokenizer_special(sprout_model_tokenizer(j->model->model), SPROUT_SPECIAL_BOS);
    const size_t skip = j->n_prompt > 0 && bos >= 0 && j->prompt[0] == bos ? 1 : 0;
    sprout_token *ids = malloc((r->n_context + j->n_prompt) * sizeof *ids);
    if (!ids) return SPROUT_ERR_OUT_OF_MEMORY;
    memcpy(ids, r->context, r->n_context * sizeof *ids);
    memcpy(ids + r->n_context, j->prompt + skip, (j->n_prompt - skip) * sizeof *ids);
    sprout_free(j->prompt);
    j->prompt = ids;
    j->n_prompt = r->n_context + j->n_prompt - skip;
    return SPROUT_OK;
}

/* A chat prompt through the template, with the request's variables; and
 * whether the reply's reasoning is to come apart (OpenAI chat always, as
 * llama.cpp's server does; Ollama when asked with think), starting inside
 * a <think> block when the prompt opened one. */
/* Whether any offered tool is strict (OpenAI's function.strict). */
static bool any_strict(const json_t *tools) {
    for (size_t i = 0; i < json_array_size(tools); i++)
        if (json_is_true(json_object_get(json_object_get(json_array_get(tools, i), "function"), "strict"))) return true;
    return false;
}

/* A reply that must call a tool (tool_choice "required" or a named
 * function), or may call strict tools (tool_choice "auto"), when the
 * request brings no grammar or schema of its own: the grammar of one call
 * whose arguments are valid against the tool's parameters. Where the
 * prompt teaches the Hermes/Qwen <tool_call> shape, that shape, and under
 * "auto" lazily, from the first "<tool_call>" the model writes on (text
 * before it is free); a forced call with another template, the bare
 * object (Llama 3.x's form, which the parser takes from any model). */
static sprout_status forced_call_grammar(sp_job *j, const char *prompt_text, size_t prompt_len) {
    sp_api_request *r = &j->req;
    if (r->cfg.grammar || r->cfg.json_schema || r->cfg.json_object || !r->vars_json) return SPROUT_OK;
    const bool tagged = memmem(prompt_text, prompt_len, "<tool_call>", strlen("<tool_call>")) != NULL;
    json_t *vars = json_loads(r->vars_json, 0, NULL);
    const json_t *tools = json_object_get(vars, "tools");
    if (!r->tool_required && !(tagged && any_strict(tools))) {
        json_decref(vars);
        return SPROUT_OK;
    }
    r->grammar = vars ? sp_tool_call_grammar(tools, r->tool_name, tagged, j->error, sizeof j->error) : NULL;
    if (r->grammar && !r->tool_required) r->cfg.grammar_trigger = "<tool_call>";
    json_decref(vars);
    if (!r->grammar) return j->error[0] && strcmp(j->error, "out of memory") ? SPROUT_ERR_UNSUPPORTED : SPROUT_ERR_OUT_OF_MEMORY;
    r->cfg.grammar = r->grammar;
    r->structured_param = "tools";
    return SPROUT_OK;
}

static sprout_status chat_prompt(sp_job *j, const char *request_messages) {
    char *text = NULL, *messages_json = modelfile_messages(j->model->store_model, request_messages);
    size_t text_len = 0;
    if (!messages_json) return SPROUT_ERR_OUT_OF_MEMORY;
    sprout_status st = sprout_model_chat_prompt_vars(j->model->model, j->model->chat_template, messages_json, j->req.vars_json, true,
                                                     &text, &text_len, &j->prompt, &j->n_prompt);
    free(messages_json);
    /* a harmony reply's headers are never the answer, think or not */
    j->split_reasoning = j->req.kind == SP_API_OPENAI_CHAT || j->req.think == 1 ||
                         (st == SPROUT_OK && sp_reasoning_harmony_prompt(text, text_len));
    j->reasoning_opened = st == SPROUT_OK && sp_reasoning_opened_by(text, text_len);
    sp_reasoning_init(&j->reasoning, j->reasoning_opened);
    if (st == SPROUT_OK) st = forced_call_grammar(j, text, text_len);
    sprout_free(text);
    return st;
}

static sprout_status build_prompt(sp_job *j) {
    const sp_api_request *r = &j->req;
    const sprout_model *model = j->model->model;
    /* a suffix asks for the middle between the prompt and it (code models' FIM tokens, no template) */
    if (r->suffix && (r->kind == SP_API_OPENAI_COMPLETION || r->kind == SP_API_OLLAMA_GENERATE))
        return sprout_model_fim_prompt(model, r->prompt ? r->prompt : "", r->suffix, &j->prompt, &j->n_prompt);
    switch (r->kind) {
    case SP_API_OPENAI_CHAT:
    case SP_API_OLLAMA_CHAT:
        return chat_prompt(j, r->messages_json);
    case SP_API_OPENAI_COMPLETION:
        /* as llama.cpp's server: special-token text in a raw prompt is parsed */
        return sprout_model_tokenize_prompt(model, r->prompt, strlen(r->prompt), true, &j->prompt, &j->n_prompt);
    case SP_API_OLLAMA_GENERATE: {
        sprout_status st;
        if (r->raw) st = sprout_model_tokenize_prompt(model, r->prompt, strlen(r->prompt), true, &j->prompt, &j->n_prompt);
        else {
            char *msgs = generate_messages(r);
            st = msgs ? chat_prompt(j, msgs) : SPROUT_ERR_OUT_OF_MEMORY;
            free(msgs);
        }
        return st == SPROUT_OK && r->n_context ? prepend_context(j) : st;
    }
    }
    return SPROUT_ERR_INTERNAL;
}


/* A 404 for a model that is not there, naming those that are. */
static enum MHD_Result reply_unknown_model(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *name) {
    char names[2048];
    sp_models_names(srv, names, sizeof names);
    return sp_reply_error(srv, c, style, 404, "model", "model \"%s\" not found (this server has %s)", name ? name : "", names);
}

/* --- the handler ---------------------------------------------------------------------------------------------- */

/* A step that failed for want of memory (whatever its message says) is the
 * server's error, not the client's. */
static unsigned failed_status(sprout_status st) { return sp_oom_take() || st == SPROUT_ERR_OUT_OF_MEMORY ? 500 : 400; }

enum MHD_Result sp_handle_generation(sp_server *srv, struct MHD_Connection *c, sp_api_kind kind, const char *url, const char *body,
                                     size_t len) {
    const sp_api_style style = sp_style_of(url);
    (void)sp_oom_take(); /* an earlier request's on this thread */
    sp_job *j = calloc(1, sizeof *j);
    if (!j) return MHD_NO;
    atomic_fetch_add(&srv->active_jobs, 1);
    j->srv = srv;
    j->t_arrival_ms = sp_fleet_now_ms();
    j->fd = -1;
    j->keep_alive_ms = SP_KEEP_DEFAULT;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cond, NULL);
    static const sp_api_format *const formats[] = {&sp_openai_chat_format, &sp_openai_completion_format, &sp_ollama_chat_format,
                                                   &sp_ollama_generate_format};
    j->fmt = formats[kind];
    enum MHD_Result res;
    char error[512];
    if (!sp_api_request_parse(kind, body, len, &j->req, error, sizeof error)) {
        char param[64];
        sp_error_param(error, param, sizeof param);
        const unsigned status = failed_status(SPROUT_OK);
        res = status == 500 ? sp_reply_error(srv, c, style, 500, NULL, "out of memory")
                            : sp_reply_error(srv, c, style, 400, *param ? param : NULL, "%s", error);
        job_free(j);
        return res;
    }
    sp_api_request *r = &j->req;
    if (kind == SP_API_OLLAMA_CHAT || kind == SP_API_OLLAMA_GENERATE) {
        if (!sp_keep_alive_parse(body, len, &j->keep_alive_ms, error, sizeof error)) {
            res = failed_status(SPROUT_OK) == 500 ? sp_reply_error(srv, c, style, 500, NULL, "out of memory")
                                                  : sp_reply_error(srv, c, style, 400, "keep_alive", "%s", error);
            job_free(j);
            return res;
        }
    }
    const bool empty = (kind == SP_API_OLLAMA_CHAT && r->n_messages == 0) ||
                       (kind == SP_API_OLLAMA_GENERATE && (!r->prompt || !*r->prompt) && !r->suffix);
    if (empty && j->keep_alive_ms == 0) { /* `ollama stop`: unload, and load nothing to do it */
        res = sp_models_unload(srv, r->model) ? sp_reply_json(srv, c, 200, sp_ollama_loaded(r->model, kind, "unload"))
                                              : reply_unknown_model(srv, c, style, r->model);
        job_free(j);
        return res;
    }
    char base[256];
    int32_t adapter = -1; /* a LoRA adapter named in "model": the model it belongs to, with it applied */
    const bool by_adapter = sp_fleet_adapter_of(srv, r->model, base, sizeof base, &adapter);
    if (!(j->model = sp_models_acquire(srv, c, style, by_adapter ? base : r->model, &res))) {
        job_free(j);
        return res;
    }
    sp_model_entry *e = j->model;
    /* the Modelfile's PARAMETERs under the request's options: parse again over them */
    if (e->store_model) {
        sp_api_request_free(r);
        if (!sp_api_request_parse_over(kind, body, len, e->store_model, r, error, sizeof error)) {
            res = sp_reply_error(srv, c, style, failed_status(SPROUT_OK), NULL, "%s", error);
            job_free(j);
            return res;
        }
    }
    if (by_adapter && !r->lora.given) { /* the adapter alone, at its default scale (1 when that is 0: it was asked for) */
        pthread_mutex_lock(&e->lora_lock);
        const float scale = e->lora_scales[adapter];
        pthread_mutex_unlock(&e->lora_lock);
        r->lora = (sp_api_lora){.given = true, .n = 1, .id = {adapter}, .scale = {scale != 0.f ? scale : 1.f}};
    }
    /* the adapters: the request's "lora" or the model's defaults, for every endpoint here */
    j->lora = malloc((e->n_lora ? e->n_lora : 1) * sizeof *j->lora);
    if (!j->lora || !sp_lora_uses(e, &r->lora, "lora", j->lora, &r->cfg.n_lora, error, sizeof error)) {
        res = j->lora ? sp_reply_error(srv, c, style, 400, "lora", "%s", error) : MHD_NO;
        job_free(j);
        return res;
    }
    r->cfg.lora = j->lora;
    if (empty) { /* a preload: the model is in */
        res = sp_reply_json(srv, c, 200, sp_ollama_loaded(e->name, kind, "load"));
        job_free(j);
        return res;
    }
    sprout_status st = build_prompt(j);
    if (st == SPROUT_OK && sp_oom_take()) { /* a message the prompt lost, or a failure the library absorbed: not the prompt asked for */
        st = SPROUT_ERR_OUT_OF_MEMORY;
        snprintf(j->error, sizeof j->error, "out of memory");
    }
    if (st != SPROUT_OK) {
        res = sp_reply_error(srv, c, style, failed_status(st), NULL, "%s", j->error[0] ? j->error : sprout_last_error());
        job_free(j);
        return res;
    }
    /* the context: the slot's, or less if the request asks (Ollama's num_ctx) */
    int32_t n_ctx = e->n_ctx;
    if (r->num_ctx > 0 && r->num_ctx < n_ctx) n_ctx = r->num_ctx;
    if (j->n_prompt >= (size_t)n_ctx) {
        res = sp_reply_error(srv, c, style, 400, kind == SP_API_OPENAI_CHAT || kind == SP_API_OLLAMA_CHAT ? "messages" : "prompt",
                             "the prompt has %zu tokens but the context holds %d", j->n_prompt, n_ctx);
        job_free(j);
        return res;
    }
    /* a context that shifts has room for any length the request asks */
    r->cfg.context_shift = srv->opt.context_shift;
    const int32_t room = n_ctx - (int32_t)j->n_prompt;
    if (!r->max_tokens_set || (!r->cfg.context_shift && r->cfg.max_new_tokens > room)) r->cfg.max_new_tokens = room;
    if (!r->seed_set) r->cfg.seed = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull + atomic_fetch_add(&srv->seed_counter, 1);
    assisted(srv, j->model, r);
    /* the server's --grammar or --json-schema, for a request that brings no structured output of its own (as
     * llama-server's defaults) */
    if (!r->cfg.grammar && !r->cfg.json_schema && !r->cfg.json_object) {
        r->cfg.grammar = srv->opt.grammar;
        r->cfg.json_schema = srv->opt.json_schema;
    }
    /* "logprobs" alone asks for the chosen token's; the library counts alternatives */
    if (r->logprobs >= 0) r->cfg.logprobs = r->logprobs > 0 ? r->logprobs : 1;

    j->fd = sp_connection_fd(c);
    j->created = (int64_t)time(NULL);
    static atomic_ullong serial;
    snprintf(j->id, sizeof j->id, "%s-%llx%llx", kind == SP_API_OPENAI_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)j->created,
             (unsigned long long)atomic_fetch_add(&serial, 1));
    if (r->echo && r->prompt) j->text_offset = strlen(r->prompt);
    if (r->stream && r->echo && r->prompt) j->fmt->piece(j, r->prompt, strlen(r->prompt), &j->out);

    sprout_request_params rp = {.struct_size = sizeof rp,
                                .prompt = j->prompt,
                                .n_prompt = j->n_prompt,
                                .config = &r->cfg,
                                .streamer = r->stream ? on_piece : NULL,
                                .on_done = on_done,
                                .user = j,
                                .on_token = r->stream && r->logprobs >= 0 ? on_token : NULL};
    j->t_submit_ms = sp_fleet_now_ms();
    pthread_rwlock_rdlock(&e->sched_lock);
    st = e->sched && !atomic_load(&srv->stopping) ? sprout_scheduler_submit(e->sched, &rp, &j->sreq) : SPROUT_ERR_BUSY;
    pthread_rwlock_unlock(&e->sched_lock);
    if (st != SPROUT_OK) {
        const bool busy = st == SPROUT_ERR_BUSY;
        /* a bad grammar (FORMAT, "grammar:LINE:COL: ...") or a schema keyword sprout cannot enforce (UNSUPPORTED,
         * naming it): the field that brought it */
        const bool structured = (st == SPROUT_ERR_FORMAT || st == SPROUT_ERR_UNSUPPORTED) && r->structured_param;
        const char *why = busy && atomic_load(&srv->stopping) ? "the server is shutting down" : sprout_last_error();
        const bool prefix = structured && strncmp(why, r->structured_param, strlen(r->structured_param)); /* "grammar:1:5: ..." names it */
        res = sp_reply_error(srv, c, style, busy ? 503 : failed_status(st), structured ? r->structured_param : NULL, "%s%s%s",
                             prefix ? r->structured_param : "", prefix ? ": " : "", why);
        job_free(j);
        return res;
    }

    if (r->stream) {
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, j, stream_free);
        if (!resp) {
            job_free(j);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", j->fmt->stream_type);
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        sp_add_common_headers(j->srv, c, resp);
        res = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp); /* the job now belongs to the response */
        return res;
    }
    pthread_mutex_lock(&j->mu);
    wait_for_engine(j, false);
    pthread_mutex_unlock(&j->mu);
    sprout_result *result = NULL;
    st = sprout_request_wait(j->sreq, &result);
    count_assisted(srv, result);
    sp_request_stats_observe(j, st == SPROUT_OK ? result : NULL);
    if (st == SPROUT_OK) sp_fleet_note_cached(sp_usage_of(result).cached);
    if (st == SPROUT_ERR_CANCELLED) /* still queued when the server shut down */
        res = sp_reply_error(srv, c, style, 503, NULL, "the server is shutting down");
    else if (st != SPROUT_OK) res = sp_reply_error(srv, c, style, 500, NULL, "generation failed: %s", sprout_last_error());
    else {
        (void)sp_oom_take();
        json_t *v = j->fmt->response(j, result);
        if (sp_oom_take()) { /* a part of the answer is missing: not to be sent as if whole */
            json_decref(v);
            res = sp_reply_error(srv, c, style, 500, NULL, "out of memory while writing the answer");
        } else {
            res = sp_reply_json(srv, c, 200, v);
        }
    }
    sprout_result_free(result);
    job_free(j);
    return res;
}
