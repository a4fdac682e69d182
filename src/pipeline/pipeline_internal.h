/* The pipeline: one conversation's state over a shared model. */
#ifndef SPROUT_PIPELINE_INTERNAL_H
#define SPROUT_PIPELINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "pipeline/lookup.h"
#include "pipeline/result.h"
#include "runtime/forward.h"
#include "sampler/sampler.h"
#include "sprout.h"

/* The public KV types carry the kernels' numbers (the ggml type ids), so a
 * value passes to the forward pass as it is. */
_Static_assert((int)SPROUT_KV_F32 == (int)SP_KV_F32 && (int)SPROUT_KV_F16 == (int)SP_KV_F16 && (int)SPROUT_KV_BF16 == (int)SP_KV_BF16 &&
                   (int)SPROUT_KV_Q8_0 == (int)SP_KV_Q8_0 && (int)SPROUT_KV_Q4_0 == (int)SP_KV_Q4_0,
               "sprout_kv_type and sp_kv_type share the ggml type ids");

/* The KV types a params struct asks for: both sides, and each alone. */
typedef struct sp_kv_ask {
    sprout_kv_type both, k, v;
    bool both_set, k_set, v_set;
} sp_kv_ask;

/* The KV types a pipeline or scheduler uses: each side the type asked for
 * it alone, else the one asked for both, else the model's params' by the
 * same rule, else F16. SPROUT_ERR_INVALID_ARGUMENT for a value that is no
 * KV type. */
sprout_status sp_kv_types_resolve(const sprout_model *m, sp_kv_ask ask, sp_kv_types *out);
/* "q8_0", or "q8_0/q4_0" where keys and values differ, for messages. */
const char *sp_kv_types_label(sp_kv_types kv, char *buf, size_t size);

typedef struct chat_message {
    char *role, *content;
} chat_message;

struct sprout_pipeline {
    const sprout_model *model;
    sp_context ctx;
    sp_sampler sampler;
    sprout_generation_config config;
    int32_t n_ctx;
    int32_t *cached;        /* the tokens in the KV cache (sequence 0), in order */
    int32_t n_cached;
    int32_t last_prefill;
    /* after a context shift: the tokens dropped after the first shift_keep
     * (one run: each shift drops the next ones), 0 when none */
    int32_t n_dropped, shift_keep;
    float *logits;          /* one row */
    int32_t *batch_tokens;  /* scratch for building batches */
    sp_batch_token *batch;
    /* the adapters of the default config (config.lora points into it),
     * and those the cached tokens were computed with */
    sp_lora_set default_lora, cached_lora;
    /* assisted generation: the draft pipeline (borrowed), the n-gram
     * index, and room for a verifying pass: its logits rows and proposals */
    sprout_pipeline *draft;
    sp_lookup lookup;
    float *verify_logits;
    int32_t *proposal;
    int32_t verify_cap; /* proposals a pass may verify (rows - 1) */
    int32_t assist_budget; /* proposals the next pass asks for (assist.c) */
    /* chat */
    bool chat_active;
    chat_message *messages;
    size_t n_messages, cap_messages;
    sprout_template *chat_template;
    char *bos_text, *eos_text;
};

/* Copies a caller's config, which may be an older, shorter struct (NULL:
 * the defaults). */
void sp_config_copy(sprout_generation_config *dst, const sprout_generation_config *src);

/* Tokens [from, to) of `tokens` into the cache at those positions, in
 * batches, the last one's logits into p->logits; prompt tokens if there
 * are enough of them (forward.h). */
sprout_status sp_pipeline_feed(sprout_pipeline *p, const int32_t *tokens, int32_t from, int32_t to);

/* The generation loop over prompt tokens (text prompts and chat turns are
 * tokenized by the callers). prompt_text (may be NULL) is echoed. On
 * CANCEL the cache is rolled back to what it held before this call's
 * prompt. */
sprout_status sp_generate(sprout_pipeline *p, const int32_t *prompt, size_t n_prompt, const char *prompt_text, size_t prompt_len,
                          double tokenize_ms, const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                          sprout_result **out);

/* Context shift on the pipeline's cache: keeps the first n_keep tokens and
 * drops half of the rest (llama.cpp's n_discard); SPROUT_ERR_OUT_OF_RANGE
 * when nothing would go. */
sprout_status sp_pipeline_shift(sprout_pipeline *p, int32_t n_keep);
/* After a shift the cached tokens past shift_keep were computed with text
 * that is gone: anything but the same chat reuses at most shift_keep. */
void sp_pipeline_forget_shift(sprout_pipeline *p);

#endif
