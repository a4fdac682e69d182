/* A generation's or an embedding's result, and its accessors. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/versioned.h"
#include "pipeline/result.h"

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
