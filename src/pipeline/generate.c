/* The pipeline's generation loop: reuse the cached prefix, prefill the
 * rest in batches, then let the sequence state machine sample while each
 * chosen token is fed back one at a time; and its entry points, on raw
 * text or token ids. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#include "pipeline/assist.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/result.h"
#include "pipeline/sequence.h"

/* A call's numbers depend on what the cache held: prompt tokens by the
 * count of those computed. */
sprout_status sp_pipeline_feed(sprout_pipeline *p, const int32_t *tokens, int32_t from, int32_t to) {
    sp_context *ctx = &p->ctx;
    const bool prompt_path = to - from >= SP_PROMPT_PATH_MIN_TOKENS;
    for (int32_t start = from; start < to; start += ctx->n_batch) {
        int32_t n = to - start < ctx->n_batch ? to - start : ctx->n_batch;
        for (int32_t i = 0; i < n; i++)
            p->batch[i] = (sp_batch_token){tokens[start + i], start + i, 0, start + i == to - 1, false, prompt_path,
                                           sp_lora_set_or_null(&p->cached_lora)};
        sprout_status st = sp_forward(ctx, p->batch, n, p->logits);
        if (st != SPROUT_OK) return st;
        memcpy(p->cached + start, tokens + start, (size_t)n * sizeof *tokens);
        p->n_cached = start + n;
    }
    return SPROUT_OK;
}

sprout_status sp_pipeline_shift(sprout_pipeline *p, int32_t n_keep) {
    int32_t dropped = 0;
    sprout_status st = sp_seq_shift(&p->ctx.kv, p->model, 0, p->cached, &p->n_cached, n_keep, &dropped);
    if (st != SPROUT_OK) return st;
    sp_lookup_reset(&p->lookup); /* its index is of the text before the shift */
    if (p->n_dropped && p->shift_keep != n_keep) p->n_dropped = 0; /* no longer one run: the chat cannot map it */
    p->shift_keep = n_keep;
    p->n_dropped += dropped;
    return SPROUT_OK;
}

void sp_pipeline_forget_shift(sprout_pipeline *p) {
    if (!p->n_dropped) return;
    if (p->n_cached > p->shift_keep) {
        sp_kv_truncate(&p->ctx.kv, 0, p->shift_keep);
        p->n_cached = p->shift_keep;
    }
    p->n_dropped = 0;
}

/* Decoding after the prompt: each pass feeds the pending token and, when
 * assisted, the proposals after it; the sequence then samples row by row
 * as plain decoding would, and a proposal is kept only while it is what
 * was sampled. A row's logits are the same bits alone or batched (batch
 * invariance), so the output is plain decoding's, token for token. */
static sprout_status decode(sprout_pipeline *p, sp_seq *s, const sprout_generation_config *cfg, int32_t n_keep) {
    int32_t cap = 0;
    sprout_status st = sp_assist_begin(p, cfg, &cap);
    const sp_lora_set *lora = sp_lora_set_or_null(&p->cached_lora);
    const size_t n_vocab = (size_t)p->model->hp.n_vocab;
    int32_t next;
    /* a shift makes room before each pass, so there always is room */
    const bool shift = cfg->context_shift;
    bool more = st == SPROUT_OK && sp_seq_next(s, p->logits, p->cached, (size_t)p->n_cached, shift || p->n_cached < p->n_ctx, &next);
    while (st == SPROUT_OK && more) {
        /* llama.cpp's test (n_past + n_embd >= n_ctx) and so its timing:
         * the context's last cell is never filled */
        if (shift && p->n_cached + 1 >= p->n_ctx && (st = sp_pipeline_shift(p, n_keep)) != SPROUT_OK) break;
        /* proposals fit the context after the pending token, and no more
         * than the tokens still to choose after it */
        int32_t k = 0, max = p->n_ctx - p->n_cached - 1;
        const int32_t left = cfg->max_new_tokens - (int32_t)s->result->n_tokens;
        if (left - 1 < max) max = left - 1;
        if (cap && max > 0 && !sp_seq_finished(s)) {
            p->cached[p->n_cached] = next; /* the text so far: the cache, then the pending token */
            st = sp_assist_propose(p, cfg, p->cached, p->n_cached + 1, max, &k);
            if (st != SPROUT_OK) break;
        }
        p->batch[0] = (sp_batch_token){next, p->n_cached, 0, true, false, false, lora};
        for (int32_t i = 0; i < k; i++) p->batch[1 + i] = (sp_batch_token){p->proposal[i], p->n_cached + 1 + i, 0, true, false, false, lora};
        float *rows = k ? p->verify_logits : p->logits;
        if ((st = sp_forward(&p->ctx, p->batch, k + 1, rows)) != SPROUT_OK) break;
        const int32_t n_before = p->n_cached; /* the pending token is fed too */
        more = sp_seq_verify(s, rows, n_vocab, next, p->proposal, k, p->cached, &p->n_cached, shift ? INT32_MAX : p->n_ctx, &next);
        sp_assist_done(p, k, p->n_cached - n_before - 1);
        if (k) sp_kv_truncate(&p->ctx.kv, 0, p->n_cached); /* the proposals not kept */
    }
    return st;
}

sprout_status sp_generate(sprout_pipeline *p, const int32_t *prompt, size_t n_prompt, const char *prompt_text, size_t prompt_len,
                          double tokenize_ms, const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                          sprout_result **out) {
    if (!p->chat_active) sp_pipeline_forget_shift(p);
    /* the cache holds keys and values of one adapter set: another set
     * starts afresh. A config that names none takes the pipeline's. */
    const bool own = cfg->n_lora > 0;
    sp_lora_set lora;
    sprout_status st = sp_lora_set_copy(p->model, own ? cfg->lora : p->default_lora.uses, own ? cfg->n_lora : p->default_lora.n, &lora);
    if (st != SPROUT_OK) return st;
    if (!sp_lora_set_equal(&lora, &p->cached_lora)) {
        sp_lora_set_free(&p->cached_lora);
        p->cached_lora = lora;
        p->n_cached = 0;
        p->n_dropped = 0;
    } else {
        sp_lora_set_free(&lora);
    }
    sp_seq s;
    st = sp_seq_begin(&s, p->model, &p->sampler, p->n_ctx, prompt, n_prompt, prompt_text, prompt_len,
                                    sp_now_ms() - tokenize_ms, tokenize_ms, cfg, streamer, user);
    if (st != SPROUT_OK) return st;
    /* reuse the longest cached prefix; the last prompt token is always run
     * again, because its logits were not kept */
    int32_t keep = 0;
    while (keep < p->n_cached && (size_t)keep < n_prompt - 1 && p->cached[keep] == prompt[keep]) keep++;
    sp_kv_truncate(&p->ctx.kv, 0, keep);
    p->n_cached = keep;
    if (keep <= p->shift_keep) p->n_dropped = 0; /* nothing after the dropped run is left */
    const int32_t cached_before = keep, dropped_before = p->n_dropped;
    p->last_prefill = (int32_t)n_prompt - keep;
    const double attention_start = p->ctx.attention_ms;
    sp_seq_prefill_started(&s, p->last_prefill);
    st = sp_pipeline_feed(p, prompt, keep, (int32_t)n_prompt);
    sp_seq_prefill_done(&s);
    /* a chat that has shifted keeps dropping after the same first tokens */
    const int32_t n_keep = p->n_dropped ? p->shift_keep : sp_seq_n_keep(p->model, cfg, n_prompt);
    const double attention_prefilled = p->ctx.attention_ms;
    if (st == SPROUT_OK) st = decode(p, &s, cfg, n_keep);
    st = sp_seq_end(&s, st, out);
    if (st == SPROUT_OK) {
        (*out)->metrics.prefill_attention_ms = attention_prefilled - attention_start;
        (*out)->metrics.decode_attention_ms = p->ctx.attention_ms - attention_prefilled;
    }
    if (st == SPROUT_OK && (*out)->finish == SPROUT_FINISH_CANCELLED) { /* forget this call's prompt and output */
        const int32_t back = p->n_dropped != dropped_before && p->shift_keep < cached_before ? p->shift_keep : cached_before;
        sp_kv_truncate(&p->ctx.kv, 0, back);
        p->n_cached = back;
        if (p->n_dropped != dropped_before) p->n_dropped = 0; /* what it shifted away is gone */
    }
    return st;
}

sprout_status sprout_generate_tokens(sprout_pipeline *p, const sprout_token *prompt, size_t n_prompt,
                                     const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                                     sprout_result **out) {
    if (!p || !out || (!prompt && n_prompt)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline, prompt or output");
    *out = NULL;
    sprout_generation_config c;
    sp_config_copy(&c, cfg ? cfg : &p->config);
    return sp_generate(p, prompt, n_prompt, NULL, 0, 0, &c, streamer, user, out);
}

sprout_status sprout_generate(sprout_pipeline *p, const char *prompt, const sprout_generation_config *cfg, sprout_streamer streamer,
                              void *user, sprout_result **out) {
    if (!p || !out || !prompt) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline, prompt or output");
    *out = NULL;
    if (!p->model->tokenizer) return sp_fail(SPROUT_ERR_UNSUPPORTED, "the model has no vocabulary: give the prompt as token ids");
    const size_t len = strlen(prompt);
    sprout_generation_config c;
    sp_config_copy(&c, cfg ? cfg : &p->config);
    const double t0 = sp_now_ms();
    sprout_token *ids = NULL;
    size_t n = 0;
    sprout_status st = sprout_model_tokenize_prompt(p->model, prompt, len, false, &ids, &n);
    if (st == SPROUT_OK) st = sp_generate(p, ids, n, prompt, len, sp_now_ms() - t0, &c, streamer, user, out);
    free(ids);
    return st;
}
