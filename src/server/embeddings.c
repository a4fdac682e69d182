/* Embedding requests of both APIs: parse, tokenize each input, submit them
 * all to the scheduler (they batch with each other and with generations),
 * wait, answer in the API's shape. A client that hangs up cancels what is
 * left at once: the wait polls its socket. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json_util.h"
#include "server/server_internal.h"

/* What the engine thread reports: how many requests have ended. */
typedef struct embed_wait {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    size_t ended;
} embed_wait;

static void on_embed_done(sprout_request *req, void *user) {
    (void)req;
    embed_wait *w = user;
    pthread_mutex_lock(&w->mu);
    w->ended++;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

/* One input's work: its ids, its request, then its vector. */
typedef struct embed_item {
    sprout_token *ids;
    size_t n_ids;
    sprout_request *req;
    sprout_result *result;
} embed_item;

typedef struct embed_job {
    sp_server *srv;
    sp_model_entry *model; /* held until the reply */
    sp_embed_request req;
    embed_item *items;
    size_t n_items;
    embed_wait wait;
    int fd;
    char error[512];
    unsigned status; /* the HTTP status of the error */
    const char *param;
    char param_buf[64]; /* a parse error's field */
} embed_job;

/* The field that holds the texts. */
static const char *inputs_key(const embed_job *j) { return j->req.kind == SP_EMBED_OLLAMA_LEGACY ? "prompt" : "input"; }

static bool job_fail(embed_job *j, unsigned status, const char *param, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool job_fail(embed_job *j, unsigned status, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->error, sizeof j->error, fmt, ap);
    va_end(ap);
    j->status = status;
    j->param = param;
    return false;
}

/* Each input's ids within the context: a text as the model tokenizes a
 * prompt (BOS and EOS as it wants), OpenAI's ids as they are; too long, an
 * error unless the request lets it be cut (Ollama's truncate: the first
 * tokens, ending with EOS where the model adds one). */
static bool tokenize_inputs(embed_job *j, int32_t n_ctx) {
    const sprout_model *m = j->model->model;
    const sprout_tokenizer *tok = sprout_model_tokenizer(m);
    const sprout_token eos = tok && sprout_tokenizer_adds_eos(tok) ? sprout_tokenizer_special(tok, SPROUT_SPECIAL_EOS) : -1;
    const char *key = inputs_key(j);
    for (size_t i = 0; i < j->req.n_inputs; i++) {
        const sp_embed_input *in = &j->req.inputs[i];
        embed_item *it = &j->items[i];
        if (in->text) {
            if (sprout_model_tokenize_prompt(m, in->text, strlen(in->text), false, &it->ids, &it->n_ids) != SPROUT_OK)
                return job_fail(j, 400, key, "%s[%zu]: %s", key, i, sprout_last_error());
        } else {
            if (!(it->ids = malloc(in->n_ids * sizeof *it->ids))) return job_fail(j, 500, NULL, "out of memory");
            memcpy(it->ids, in->ids, in->n_ids * sizeof *it->ids);
            it->n_ids = in->n_ids;
        }
        if (it->n_ids == 0) return job_fail(j, 400, key, "%s[%zu]: no tokens (the model adds no BOS)", key, i);
        if (it->n_ids <= (size_t)n_ctx) continue;
        if (j->req.kind == SP_EMBED_OPENAI || !j->req.truncate)
            return job_fail(j, 400, key, "%s[%zu] has %zu tokens but at most %d fit", key, i, it->n_ids, n_ctx);
        const bool ends_in_eos = eos >= 0 && it->ids[it->n_ids - 1] == eos;
        it->n_ids = (size_t)n_ctx;
        if (ends_in_eos) it->ids[it->n_ids - 1] = eos;
    }
    return true;
}

/* Runs every item through the scheduler, a window of them at a time (twice
 * the slots: enough to keep the slots busy, few enough that one request of
 * 2048 inputs does not fill the queue other clients wait in). A client that
 * hangs up cancels what is in flight; on any failure the rest is not
 * submitted. Returns with every submitted request ended. */
static bool run_all(embed_job *j, bool normalize) {
    const char *key = inputs_key(j);
    embed_wait *w = &j->wait;
    size_t next = 0, window = 8;
    bool ok = true;
    sp_model_entry *e = j->model;
    pthread_rwlock_rdlock(&e->sched_lock);
    if (e->sched) window = 2 * (size_t)sprout_scheduler_n_slots(e->sched);
    pthread_rwlock_unlock(&e->sched_lock);
    pthread_mutex_lock(&w->mu);
    while (ok && w->ended < j->n_items) {
        while (ok && next < j->n_items && next - w->ended < window) {
            sprout_request_params rp = {.struct_size = sizeof rp, .prompt = j->items[next].ids, .n_prompt = j->items[next].n_ids,
                                        .on_done = on_embed_done, .user = w, .embed = true, .normalize = normalize};
            pthread_mutex_unlock(&w->mu);
            pthread_rwlock_rdlock(&e->sched_lock);
            const bool stopping = atomic_load(&j->srv->stopping);
            const sprout_status st = e->sched && !stopping ? sprout_scheduler_submit(e->sched, &rp, &j->items[next].req) : SPROUT_ERR_BUSY;
            pthread_rwlock_unlock(&e->sched_lock);
            pthread_mutex_lock(&w->mu);
            if (st == SPROUT_OK) next++;
            else if (st == SPROUT_ERR_BUSY && !stopping && next > w->ended) break; /* room comes as ours end */
            else if (st == SPROUT_ERR_BUSY) ok = job_fail(j, 503, NULL, "%s", stopping ? "the server is shutting down" : sprout_last_error());
            else ok = job_fail(j, 400, key, "%s[%zu]: %s", key, next, sprout_last_error());
        }
        if (!ok || w->ended == j->n_items) break;
        sp_wait_a_while(&w->cond, &w->mu);
        if (w->ended < next && sp_client_gone(j->fd)) ok = job_fail(j, 499, NULL, "the client closed the connection");
    }
    if (!ok)
        for (size_t i = 0; i < next; i++) sprout_request_cancel(j->items[i].req);
    while (w->ended < next) sp_wait_a_while(&w->cond, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return ok;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* RFC 4648 base64 of n bytes (malloc'd, NUL-terminated). */
static char *base64(const uint8_t *bytes, size_t n) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; out && i < n; i += 3) {
        const uint32_t w = (uint32_t)bytes[i] << 16 | (i + 1 < n ? (uint32_t)bytes[i + 1] << 8 : 0) | (i + 2 < n ? bytes[i + 2] : 0);
        *o++ = digits[w >> 18];
        *o++ = digits[(w >> 12) & 63];
        *o++ = i + 1 < n ? digits[(w >> 6) & 63] : '=';
        *o++ = i + 2 < n ? digits[w & 63] : '=';
    }
    if (out) *o = 0;
    return out;
}

/* The vector as the request wants it: its first `dimensions` numbers made
 * unit length again (OpenAI's and Ollama's shortening), then floats or
 * base64 of their little-endian bytes. */
static json_t *vector_json(const embed_job *j, const float *v, size_t dim) {
    size_t n = j->req.dimensions > 0 && (size_t)j->req.dimensions < dim ? (size_t)j->req.dimensions : dim;
    float *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) return NULL;
    double norm2 = 0;
    for (size_t i = 0; i < n; i++) norm2 += (double)v[i] * v[i];
    const double scale = n < dim && norm2 > 0 ? 1.0 / sqrt(norm2) : 1.0;
    for (size_t i = 0; i < n; i++) out[i] = (float)(v[i] * scale);
    json_t *value;
    if (j->req.base64) {
        uint8_t *bytes = malloc(n * 4 + 1);
        for (size_t i = 0; bytes && i < n; i++) {
            uint32_t u;
            memcpy(&u, &out[i], 4);
            for (int b = 0; b < 4; b++) bytes[4 * i + (size_t)b] = (uint8_t)(u >> (8 * b));
        }
        char *text = bytes ? base64(bytes, n * 4) : NULL;
        value = text ? json_string(text) : NULL;
        free(text);
        free(bytes);
    } else {
        value = json_array();
        for (size_t i = 0; value && i < n; i++) json_array_append_new(value, json_float32(out[i]));
    }
    free(out);
    return value;
}

static json_t *response(const embed_job *j, double t_start) {
    int64_t prompt_tokens = 0;
    double load_ms = 0;
    json_t *list = json_array();
    for (size_t i = 0; list && i < j->n_items; i++) {
        size_t dim = 0;
        const float *v = sprout_result_embedding(j->items[i].result, &dim);
        json_t *vec = vector_json(j, v, dim);
        if (!vec) {
            json_decref(list);
            return NULL;
        }
        sprout_perf_metrics m = {.struct_size = sizeof m};
        sprout_result_metrics(j->items[i].result, &m);
        prompt_tokens += m.n_prompt_tokens;
        load_ms = m.load_ms;
        if (j->req.kind == SP_EMBED_OPENAI)
            json_array_append_new(list, json_pack("{s:s, s:I, s:o}", "object", "embedding", "index", (json_int_t)i, "embedding", vec));
        else json_array_append_new(list, vec);
    }
    if (!list) return NULL;
    switch (j->req.kind) {
    case SP_EMBED_OPENAI:
        return json_pack("{s:s, s:o, s:s, s:{s:I, s:I}}", "object", "list", "data", list, "model", j->model->name, "usage", "prompt_tokens",
                         (json_int_t)prompt_tokens, "total_tokens", (json_int_t)prompt_tokens);
    case SP_EMBED_OLLAMA: {
        const double total_ms = now_ms() - t_start;
        return json_pack("{s:s, s:o, s:I, s:I, s:I}", "model", j->model->name, "embeddings", list, "total_duration",
                         (json_int_t)(total_ms * 1e6), "load_duration", (json_int_t)(load_ms * 1e6), "prompt_eval_count", (json_int_t)prompt_tokens);
    }
    case SP_EMBED_OLLAMA_LEGACY: {
        json_t *only = json_array_size(list) ? json_incref(json_array_get(list, 0)) : json_array();
        json_decref(list);
        return json_pack("{s:o}", "embedding", only);
    }
    }
    json_decref(list);
    return NULL;
}


static enum MHD_Result handle(sp_server *srv, struct MHD_Connection *c, sp_embed_kind kind, const char *url, const char *body, size_t len) {
    const sp_api_style style = sp_style_of(url);
    const double t_start = now_ms();
    embed_job j = {.srv = srv, .fd = sp_connection_fd(c)};
    pthread_mutex_init(&j.wait.mu, NULL);
    pthread_cond_init(&j.wait.cond, NULL);
    atomic_fetch_add(&srv->active_jobs, 1);
    char error[512];
    json_t *reply = NULL;
    int64_t keep_alive = SP_KEEP_DEFAULT;
    enum MHD_Result res;
    if (!sp_embed_request_parse(kind, body, len, &j.req, error, sizeof error)) {
        sp_error_param(error, j.param_buf, sizeof j.param_buf);
        job_fail(&j, 400, *j.param_buf ? j.param_buf : NULL, "%s", error);
        goto done;
    }
    if (kind != SP_EMBED_OPENAI && !sp_keep_alive_parse(body, len, &keep_alive, error, sizeof error)) {
        job_fail(&j, 400, "keep_alive", "%s", error);
        goto done;
    }
    if (!(j.model = sp_models_acquire(srv, c, style, j.req.model, &res))) {
        sp_embed_request_free(&j.req);
        pthread_cond_destroy(&j.wait.cond);
        pthread_mutex_destroy(&j.wait.mu);
        atomic_fetch_sub(&srv->active_jobs, 1);
        return res;
    }
    const int32_t dim = sprout_model_n_embd(j.model->model);
    if (j.req.dimensions > dim) {
        job_fail(&j, 400, "dimensions", "dimensions: %d is more than the model's %d", j.req.dimensions, dim);
        goto done;
    }
    /* what the scheduler takes (learned positions and one-pass encoders included), or less if asked (num_ctx) */
    int32_t n_ctx = j.model->n_ctx;
    pthread_rwlock_rdlock(&j.model->sched_lock);
    if (j.model->sched) n_ctx = sprout_scheduler_max_embed_tokens(j.model->sched);
    pthread_rwlock_unlock(&j.model->sched_lock);
    if (j.req.num_ctx > 0 && j.req.num_ctx < n_ctx) n_ctx = j.req.num_ctx;
    j.n_items = j.req.n_inputs;
    if (!(j.items = calloc(j.n_items ? j.n_items : 1, sizeof *j.items))) {
        job_fail(&j, 500, NULL, "out of memory");
        goto done;
    }
    if (!tokenize_inputs(&j, n_ctx)) goto done;
    if (!run_all(&j, kind != SP_EMBED_OLLAMA_LEGACY)) goto done;
    for (size_t i = 0; i < j.n_items; i++) {
        const sprout_status st = sprout_request_wait(j.items[i].req, &j.items[i].result);
        if (st == SPROUT_ERR_CANCELLED) {
            job_fail(&j, 503, NULL, "%s", atomic_load(&srv->stopping) ? "the server is shutting down" : "the request was cancelled");
            goto done;
        }
        if (st != SPROUT_OK) {
            job_fail(&j, 500, NULL, "embedding failed: %s", sprout_last_error());
            goto done;
        }
    }
    if (!(reply = response(&j, t_start))) job_fail(&j, 500, NULL, "out of memory");
done:;
    res = reply ? sp_reply_json(srv, c, 200, reply) : sp_reply_error(srv, c, style, j.status ? j.status : 500, j.param, "%s", j.error);
    for (size_t i = 0; j.items && i < j.n_items; i++) {
        sprout_request_free(j.items[i].req);
        sprout_result_free(j.items[i].result);
        sprout_free(j.items[i].ids);
    }
    free(j.items);
    sp_models_release(srv, j.model, keep_alive);
    sp_embed_request_free(&j.req);
    pthread_cond_destroy(&j.wait.cond);
    pthread_mutex_destroy(&j.wait.mu);
    atomic_fetch_sub(&srv->active_jobs, 1);
    return res;
}

enum MHD_Result sp_handle_openai_embeddings(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    return handle(srv, c, SP_EMBED_OPENAI, url, body, len);
}

enum MHD_Result sp_handle_ollama_embed(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    return handle(srv, c, SP_EMBED_OLLAMA, url, body, len);
}

enum MHD_Result sp_handle_ollama_embeddings(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    return handle(srv, c, SP_EMBED_OLLAMA_LEGACY, url, body, len);
}
