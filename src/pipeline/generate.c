/* The pipeline's generation loop: reuse the cached prefix, prefill the
 * rest in batches, then let the sequence state machine sample while each
 * chosen token is fed back one at a time. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/versioned.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/sequence.h"

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

/* Tokens [from, to) into the cache, as prompt tokens if there are enough of
 * them (forward.h): a call's numbers depend on what the cache held. */
static sprout_status prefill(sprout_pipeline *p, const int32_t *tokens, int32_t from, int32_t to) {
    sp_context *ctx = &p->ctx;
    const bool prompt_path = to - from >= SP_PROMPT_PATH_MIN_TOKENS;
    for (int32_t start = from; start < to; start += ctx->n_batch) {
        int32_t n = to - start < ctx->n_batch ? to - start : ctx->n_batch;
        for (int32_t i = 0; i < n; i++) p->batch[i] = (sp_batch_token){tokens[start + i], start + i, 0, start + i == to - 1, false, prompt_path};
        sprout_status st = sp_forward(ctx, p->batch, n, p->logits);
        if (st != SPROUT_OK) return st;
        memcpy(p->cached + start, tokens + start, (size_t)n * sizeof *tokens);
        p->n_cached = start + n;
    }
    return SPROUT_OK;
}

sprout_status sp_generate(sprout_pipeline *p, const int32_t *prompt, size_t n_prompt, const char *prompt_text, size_t prompt_len,
                          double tokenize_ms, const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                          sprout_result **out) {
    sp_seq s;
    sprout_status st = sp_seq_begin(&s, p->model, &p->sampler, p->n_ctx, prompt, n_prompt, prompt_text, prompt_len,
                                    sp_now_ms() - tokenize_ms, tokenize_ms, cfg, streamer, user);
    if (st != SPROUT_OK) return st;
    /* reuse the longest cached prefix; the last prompt token is always run
     * again, because its logits were not kept */
    int32_t keep = 0;
    while (keep < p->n_cached && (size_t)keep < n_prompt - 1 && p->cached[keep] == prompt[keep]) keep++;
    sp_kv_truncate(&p->ctx.kv, 0, keep);
    p->n_cached = keep;
    const int32_t cached_before = keep;
    p->last_prefill = (int32_t)n_prompt - keep;
    sp_seq_prefill_started(&s, p->last_prefill);
    st = prefill(p, prompt, keep, (int32_t)n_prompt);
    sp_seq_prefill_done(&s);
    int32_t next;
    while (st == SPROUT_OK && sp_seq_next(&s, p->logits, p->cached, (size_t)p->n_cached, p->n_cached < p->n_ctx, &next)) {
        sp_batch_token bt = {next, p->n_cached, 0, true, false, false};
        st = sp_forward(&p->ctx, &bt, 1, p->logits);
        if (st == SPROUT_OK) p->cached[p->n_cached++] = next;
        if (sp_seq_finished(&s)) break;
    }
    st = sp_seq_end(&s, st, out);
    if (st == SPROUT_OK && (*out)->finish == SPROUT_FINISH_CANCELLED) { /* forget this call's prompt and output */
        sp_kv_truncate(&p->ctx.kv, 0, cached_before);
        p->n_cached = cached_before;
    }
    return st;
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

const float *sprout_result_embedding(const sprout_result *r, size_t *n) {
    if (n) *n = r ? r->n_embedding : 0;
    return r ? r->embedding : NULL;
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
    size_t n = sp_versioned_bytes(out->struct_size, sizeof *out);
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
    free(r->embedding);
    free(r);
}
