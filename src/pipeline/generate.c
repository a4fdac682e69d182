/* The generation loop: reuse the cached prefix, prefill the rest in batches,
 * then sample, stream and feed one token at a time until a stop condition.
 * Text reaches the streamer in whole UTF-8 characters and never includes
 * text that may still become part of a stop string. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pipeline/pipeline_internal.h"

const char *sprout_finish_reason_str(sprout_finish_reason r) {
    switch (r) {
    case SPROUT_FINISH_EOS: return "eos";
    case SPROUT_FINISH_STOP_STRING:
    case SPROUT_FINISH_STOP_TOKEN: return "stop";
    case SPROUT_FINISH_LENGTH: return "length";
    case SPROUT_FINISH_STOPPED: return "stopped";
    case SPROUT_FINISH_CANCELLED: return "cancelled";
    case SPROUT_FINISH_NONE: break;
    }
    return "none";
}

/* --- growing buffers ----------------------------------------------------------------------- */

typedef struct text_buf {
    char *data;
    size_t len, cap;
} text_buf;

static bool text_put(text_buf *b, const char *s, size_t n) {
    if (n > SIZE_MAX / 4 || b->len > SIZE_MAX / 4) return false;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return false;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}

/* --- stop strings ----------------------------------------------------------------------------- */

/* Where the earliest stop string starts in text[from..len), or -1. */
static int64_t find_stop(const sprout_generation_config *cfg, const char *text, size_t len, size_t from, size_t *stop_len) {
    int64_t best = -1;
    for (size_t i = 0; i < cfg->n_stop_strings; i++) {
        const char *s = cfg->stop_strings[i];
        size_t n = s ? strlen(s) : 0;
        if (!n || len < n) continue;
        size_t start = from > n ? from - n : 0; /* a match may begin in text already checked */
        const char *hit = memmem(text + start, len - start, s, n);
        if (hit && (best < 0 || hit - text < best)) {
            best = hit - text;
            *stop_len = n;
        }
    }
    return best;
}

/* Bytes at the end of text that begin some stop string (held back). */
static size_t stop_prefix_tail(const sprout_generation_config *cfg, const char *text, size_t len) {
    size_t hold = 0;
    for (size_t i = 0; i < cfg->n_stop_strings; i++) {
        const char *s = cfg->stop_strings[i];
        size_t n = s ? strlen(s) : 0;
        for (size_t k = n > 0 ? n - 1 : 0; k > hold; k--)
            if (k <= len && !memcmp(text + len - k, s, k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

/* --- the loop --------------------------------------------------------------------------------- */

typedef struct gen_state {
    sprout_pipeline *p;
    const sprout_generation_config *cfg;
    sprout_streamer streamer;
    void *user;
    text_buf text;     /* the output text */
    size_t emitted;    /* bytes of text already given to the streamer */
    size_t final_len;  /* text kept after a stop string (or text.len) */
    bool stopped_by_string;
    sprout_stream_status stream;
} gen_state;

/* Sends text[emitted..upto) to the streamer. */
static void emit(gen_state *g, size_t upto) {
    if (upto <= g->emitted) return;
    if (g->streamer && g->stream == SPROUT_STREAM_RUNNING) {
        sprout_stream_status s = g->streamer(g->text.data + g->emitted, upto - g->emitted, g->user);
        if (s == SPROUT_STREAM_STOP || s == SPROUT_STREAM_CANCEL) g->stream = s;
    }
    g->emitted = upto;
}

/* New text from the detokenizer: check for stop strings, stream what is
 * safe. Returns false when a stop string ended generation. */
static bool add_text(gen_state *g, const char *piece, size_t n, bool final, bool *oom) {
    const size_t before = g->text.len;
    if (n && !text_put(&g->text, piece, n)) {
        *oom = true;
        return false;
    }
    size_t stop_len = 0;
    int64_t at = g->cfg->n_stop_strings ? find_stop(g->cfg, g->text.data, g->text.len, before, &stop_len) : -1;
    if (at >= 0) {
        g->final_len = (size_t)at + (g->cfg->include_stop_string ? stop_len : 0);
        g->stopped_by_string = true;
        emit(g, g->final_len);
        return false;
    }
    size_t hold = final ? 0 : stop_prefix_tail(g->cfg, g->text.data, g->text.len);
    emit(g, g->text.len - hold);
    return true;
}

static sprout_status prefill(sprout_pipeline *p, const int32_t *tokens, int32_t from, int32_t to) {
    sp_context *ctx = &p->ctx;
    for (int32_t start = from; start < to; start += ctx->n_batch) {
        int32_t n = to - start < ctx->n_batch ? to - start : ctx->n_batch;
        for (int32_t i = 0; i < n; i++) p->batch[i] = (sp_batch_token){tokens[start + i], start + i, 0, start + i == to - 1};
        sprout_status st = sp_forward(ctx, p->batch, n, p->logits);
        if (st != SPROUT_OK) return st;
        memcpy(p->cached + start, tokens + start, (size_t)n * sizeof *tokens);
        p->n_cached = start + n;
    }
    return SPROUT_OK;
}

static bool in_list(const int32_t *list, size_t n, int32_t id) {
    for (size_t i = 0; i < n; i++)
        if (list[i] == id) return true;
    return false;
}

static sprout_result *new_result(const int32_t *prompt, size_t n_prompt, int32_t max_tokens, int32_t top_k) {
    sprout_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->prompt_tokens = malloc((n_prompt ? n_prompt : 1) * sizeof(int32_t));
    r->tokens = malloc((size_t)(max_tokens > 0 ? max_tokens : 1) * sizeof(int32_t));
    r->logprob = top_k >= 0 ? malloc((size_t)(max_tokens > 0 ? max_tokens : 1) * sizeof(float)) : NULL;
    r->top_k = top_k;
    if (top_k > 0) {
        r->top_ids = malloc((size_t)(max_tokens > 0 ? max_tokens : 1) * (size_t)top_k * sizeof(int32_t));
        r->top_logprobs = malloc((size_t)(max_tokens > 0 ? max_tokens : 1) * (size_t)top_k * sizeof(float));
    }
    if (!r->prompt_tokens || !r->tokens || (top_k >= 0 && !r->logprob) || (top_k > 0 && (!r->top_ids || !r->top_logprobs))) {
        sprout_result_free(r);
        return NULL;
    }
    if (n_prompt) memcpy(r->prompt_tokens, prompt, n_prompt * sizeof(int32_t));
    r->n_prompt_tokens = n_prompt;
    return r;
}

sprout_status sp_generate(sprout_pipeline *p, const int32_t *prompt, size_t n_prompt, const char *prompt_text, size_t prompt_len,
                          double tokenize_ms, const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                          sprout_result **out) {
    const double t_start = sp_now_ms() - tokenize_ms;
    const sprout_tokenizer *tok = p->model->tokenizer;
    if (n_prompt == 0) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the prompt is empty (no tokens, and the model adds no BOS)");
    if (n_prompt >= (size_t)p->n_ctx)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the prompt has %zu tokens but the context holds %d (at least one must stay free)",
                       n_prompt, p->n_ctx);
    for (size_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= p->model->hp.n_vocab)
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "prompt token %zu: id %d is outside the vocabulary (0..%d)", i, prompt[i],
                           p->model->hp.n_vocab - 1);
    if (cfg->max_new_tokens < 0) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "max_new_tokens is negative (%d)", cfg->max_new_tokens);
    const int32_t max_new = cfg->max_new_tokens;
    /* logprobs: -1 records none; 0..64 the chosen token's and that many best */
    const int32_t top_k = cfg->logprobs > 0 ? (cfg->logprobs < 64 ? cfg->logprobs : 64) : -1;
    sprout_result *r = new_result(prompt, n_prompt, max_new, top_k);
    sprout_detokenizer *detok = NULL;
    if (!r || (tok && sprout_detokenizer_create(tok, SPROUT_DETOKENIZE_CONTINUATION, &detok) != SPROUT_OK)) {
        sprout_result_free(r);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    gen_state g = {.p = p, .cfg = cfg, .streamer = streamer, .user = user};
    sprout_status st = SPROUT_OK;
    bool oom = false;

    /* reuse the longest cached prefix; the last prompt token is always run
     * again, because its logits were not kept */
    int32_t keep = 0;
    while (keep < p->n_cached && (size_t)keep < n_prompt - 1 && p->cached[keep] == prompt[keep]) keep++;
    sp_kv_truncate(&p->ctx.kv, 0, keep);
    p->n_cached = keep;
    const int32_t cached_before = keep;
    p->last_prefill = (int32_t)n_prompt - keep;
    sp_sampler_seed(&p->sampler, cfg->seed);

    if (cfg->echo && prompt_text) {
        oom = !text_put(&g.text, prompt_text, prompt_len);
        emit(&g, g.text.len);
    }
    const double t_prefill = sp_now_ms();
    st = prefill(p, prompt, keep, (int32_t)n_prompt);
    const double t_prefilled = sp_now_ms();

    /* end-of-generation tokens, masked under ignore_eos and before min_new_tokens */
    int32_t eog[16];
    size_t n_eog = 0;
    for (int32_t id = 0; tok && id < sprout_tokenizer_vocab_size(tok) && n_eog < 16; id++)
        if (sprout_tokenizer_is_eog(tok, id)) eog[n_eog++] = id;

    const sp_sampling sampling = {cfg->temperature, cfg->top_k, cfg->top_p, cfg->min_p, cfg->repetition_penalty, cfg->repeat_last_n,
                                  cfg->presence_penalty, cfg->frequency_penalty};
    double t_last = t_prefilled, t_first = 0, tpot_sum = 0, tpot_sq = 0;
    sprout_finish_reason finish = SPROUT_FINISH_NONE;
    for (int32_t i = 0; st == SPROUT_OK && !oom && finish == SPROUT_FINISH_NONE && i < max_new; i++) {
        const bool mask_eog = cfg->ignore_eos || i < cfg->min_new_tokens;
        /* the penalties look at the prompt and the output so far: the cache */
        int32_t next = sp_sample(&p->sampler, p->logits, &sampling, p->cached, (size_t)p->n_cached, eog, mask_eog ? n_eog : 0);
        const double t_now = sp_now_ms();
        if (i == 0) t_first = t_now;
        else {
            tpot_sum += t_now - t_last;
            tpot_sq += (t_now - t_last) * (t_now - t_last);
        }
        t_last = t_now;
        if (r->logprob)
            r->logprob[i] = sp_logprob_top(p->logits, p->model->hp.n_vocab, next, r->top_k > 0 ? r->top_k : 0,
                                           r->top_ids ? r->top_ids + (size_t)i * (size_t)r->top_k : NULL,
                                           r->top_logprobs ? r->top_logprobs + (size_t)i * (size_t)r->top_k : NULL);
        if (!cfg->ignore_eos && tok && sprout_tokenizer_is_eog(tok, next)) {
            finish = SPROUT_FINISH_EOS;
            break;
        }
        if (in_list(cfg->stop_token_ids, cfg->n_stop_token_ids, next)) {
            finish = SPROUT_FINISH_STOP_TOKEN;
            break;
        }
        r->tokens[r->n_tokens++] = next;
        if (detok) {
            const char *piece;
            size_t n;
            if (sprout_detokenizer_push(detok, next, &piece, &n) != SPROUT_OK) n = 0;
            if (!add_text(&g, piece, n, false, &oom) && !oom) finish = SPROUT_FINISH_STOP_STRING;
        }
        if (g.stream == SPROUT_STREAM_CANCEL) {
            finish = SPROUT_FINISH_CANCELLED;
            break;
        }
        if (g.stream == SPROUT_STREAM_STOP) finish = SPROUT_FINISH_STOPPED;
        if (p->n_cached >= p->n_ctx) { /* no room to feed it: the context is full */
            if (finish == SPROUT_FINISH_NONE) finish = SPROUT_FINISH_LENGTH;
            break;
        }
        /* fed even when stopping, so the cache holds the whole reply for the next turn */
        sp_batch_token bt = {next, p->n_cached, 0, true};
        st = sp_forward(&p->ctx, &bt, 1, p->logits);
        if (st == SPROUT_OK) p->cached[p->n_cached++] = next;
    }
    if (finish == SPROUT_FINISH_NONE) finish = SPROUT_FINISH_LENGTH;
    if (st == SPROUT_OK && !oom && detok && finish != SPROUT_FINISH_CANCELLED && !g.stopped_by_string) {
        /* the held-back tail, and any unfinished character */
        const char *piece;
        size_t n;
        sprout_detokenizer_flush(detok, &piece, &n);
        add_text(&g, piece, n, true, &oom);
        if (g.stopped_by_string) finish = SPROUT_FINISH_STOP_STRING;
    }
    sprout_detokenizer_free(detok);
    if (st == SPROUT_OK && oom) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != SPROUT_OK) {
        sprout_result_free(r);
        return st;
    }
    if (finish == SPROUT_FINISH_CANCELLED) { /* forget this call's prompt and output */
        sp_kv_truncate(&p->ctx.kv, 0, cached_before);
        p->n_cached = cached_before;
    }
    const size_t final_len = g.stopped_by_string ? g.final_len : g.text.len;
    r->text = g.text.data ? g.text.data : calloc(1, 1);
    r->text_len = final_len;
    if (r->text) r->text[final_len] = 0;
    r->finish = finish;

    const double t_end = sp_now_ms();
    sprout_perf_metrics *m = &r->metrics;
    m->struct_size = sizeof *m;
    m->load_ms = p->model->load_ms;
    m->tokenize_ms = tokenize_ms;
    m->n_prompt_tokens = (int32_t)n_prompt;
    m->n_prefill_tokens = p->last_prefill;
    m->n_generated_tokens = (int32_t)r->n_tokens;
    m->ttft_ms = t_first > 0 ? t_first - t_start : 0;
    const double n_tpot = r->n_tokens > 1 ? (double)r->n_tokens - 1 : 0;
    m->tpot_mean_ms = n_tpot > 0 ? tpot_sum / n_tpot : 0;
    m->tpot_std_ms = n_tpot > 0 ? sqrt(fmax(0, tpot_sq / n_tpot - m->tpot_mean_ms * m->tpot_mean_ms)) : 0;
    m->prefill_tokens_per_s = t_prefilled > t_prefill && p->last_prefill ? p->last_prefill / ((t_prefilled - t_prefill) / 1e3) : 0;
    m->decode_tokens_per_s = tpot_sum > 0 ? n_tpot / (tpot_sum / 1e3) : 0;
    m->total_ms = t_end - t_start;
    *out = r;
    return SPROUT_OK;
}

/* --- results ------------------------------------------------------------------------------------ */

const char *sprout_result_text(const sprout_result *r, size_t *len) {
    if (len) *len = r ? r->text_len : 0;
    return r && r->text ? r->text : "";
}

const sprout_token *sprout_result_tokens(const sprout_result *r, size_t *n) {
    if (n) *n = r ? r->n_tokens : 0;
    return r ? r->tokens : NULL;
}

const sprout_token *sprout_result_prompt_tokens(const sprout_result *r, size_t *n) {
    if (n) *n = r ? r->n_prompt_tokens : 0;
    return r ? r->prompt_tokens : NULL;
}

sprout_finish_reason sprout_result_finish_reason(const sprout_result *r) { return r ? r->finish : SPROUT_FINISH_NONE; }

sprout_status sprout_result_logprob(const sprout_result *r, size_t i, float *logprob, const sprout_token **top_ids,
                                    const float **top_logprobs, size_t *k) {
    if (!r || !r->logprob) return sp_fail(SPROUT_ERR_NOT_FOUND, "no log-probabilities were asked for");
    if (i >= r->n_tokens) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "token %zu of %zu", i, r->n_tokens);
    if (logprob) *logprob = r->logprob[i];
    if (top_ids) *top_ids = r->top_ids ? r->top_ids + i * (size_t)r->top_k : NULL;
    if (top_logprobs) *top_logprobs = r->top_logprobs ? r->top_logprobs + i * (size_t)r->top_k : NULL;
    if (k) *k = r->top_k > 0 ? (size_t)r->top_k : 0;
    return SPROUT_OK;
}

sprout_status sprout_result_metrics(const sprout_result *r, sprout_perf_metrics *out) {
    if (!r || !out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL result or output");
    size_t n = out->struct_size && out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
    memcpy(out, &r->metrics, n);
    out->struct_size = n;
    return SPROUT_OK;
}

void sprout_result_free(sprout_result *r) {
    if (!r) return;
    free(r->text);
    free(r->tokens);
    free(r->prompt_tokens);
    free(r->logprob);
    free(r->top_ids);
    free(r->top_logprobs);
    free(r);
}
