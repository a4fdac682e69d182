/* sprout/result.h: what a generation gives back: text, tokens, metrics.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_RESULT_H
#define SPROUT_API_RESULT_H

#include "tokenizer.h"

SPROUT_BEGIN_DECLS

typedef struct sprout_result sprout_result;

typedef enum sprout_finish_reason {
    SPROUT_FINISH_NONE = 0,
    SPROUT_FINISH_EOS,         /* an end-of-generation token */
    SPROUT_FINISH_STOP_STRING,
    SPROUT_FINISH_STOP_TOKEN,
    SPROUT_FINISH_LENGTH,      /* max_new_tokens or the end of the context */
    SPROUT_FINISH_STOPPED,     /* the streamer said STOP */
    SPROUT_FINISH_CANCELLED    /* the streamer said CANCEL */
} sprout_finish_reason;

/* "eos", "stop", "length", "cancelled" ... (OpenAI's words where they exist). */
const char *sprout_finish_reason_str(sprout_finish_reason reason);

/* Results. Pointers stay valid until sprout_result_free. */
const char *sprout_result_text(const sprout_result *r, size_t *len);
const sprout_token *sprout_result_tokens(const sprout_result *r, size_t *n);
const sprout_token *sprout_result_prompt_tokens(const sprout_result *r, size_t *n);
/* An embedding request's vector (*n floats: sprout_model_n_embd); NULL for
 * generations. */
const float *sprout_result_embedding(const sprout_result *r, size_t *n);
sprout_finish_reason sprout_result_finish_reason(const sprout_result *r);
/* Log-probabilities (when cfg.logprobs > 0): for generated token i, its own
 * and the top-k (ids best first). Log-softmax of the raw logits. */
sprout_status sprout_result_logprob(const sprout_result *r, size_t i, float *logprob, const sprout_token **top_ids,
                                    const float **top_logprobs, size_t *k);
void sprout_result_free(sprout_result *r);

typedef struct sprout_perf_metrics {
    size_t struct_size;
    double load_ms;             /* model load */
    double tokenize_ms;
    double ttft_ms;             /* call start to the first generated token */
    double tpot_mean_ms, tpot_std_ms; /* time per output token after the first */
    double prefill_tokens_per_s, decode_tokens_per_s;
    int32_t n_prompt_tokens;    /* the whole prompt */
    int32_t n_prefill_tokens;   /* those computed (the rest came from the cache) */
    int32_t n_generated_tokens;
    double total_ms;
    /* assisted generation: tokens proposed, those kept, and the model's
     * forward passes after the prompt (n_generated_tokens per pass is the
     * gain; plain decoding makes one per token) */
    int32_t n_draft_tokens, n_accepted_tokens, n_decode_passes;
    /* wall time of the forward passes' attention over the cache (every
     * layer, all threads together) during the prompt and during decoding;
     * decode_attention_ms / (tpot_mean_ms * (n_generated_tokens - 1)) is
     * attention's share of a decode step. A pipeline's generations fill
     * them; a scheduler's requests, whose passes are shared, leave 0 */
    double prefill_attention_ms, decode_attention_ms;
} sprout_perf_metrics;

sprout_status sprout_result_metrics(const sprout_result *r, sprout_perf_metrics *out);

SPROUT_END_DECLS

#endif /* SPROUT_API_RESULT_H */
