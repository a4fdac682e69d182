/* forward(batch) -> logits. A batch is up to n_batch tokens, each with its
 * id, position, sequence and whether its logits are wanted; tokens of
 * different sequences at different positions mix freely. All buffers are
 * sized when the context is created: a forward pass allocates nothing. */
#ifndef SPROUT_RUNTIME_FORWARD_H
#define SPROUT_RUNTIME_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "runtime/kv_cache.h"
#include "runtime/threadpool.h"

typedef struct sp_batch_token {
    int32_t token, pos, seq;
    bool logits;
    bool embd; /* its hidden state after the final norm is wanted (embeddings) */
    /* computed as a prompt's token (kernels.h, matmul_prompt; a level may
     * compute them apart from the rest, each kind the same in any batch):
     * the tokens of a prompt of SP_PROMPT_PATH_MIN_TOKENS or more, never a
     * generated one */
    bool prompt;
} sp_batch_token;

/* Fewer prompt tokens than this are computed as generated ones: the
 * prompt path converts every weight for its batch (the amx level's F16 and
 * BF16 tiles), which a few tokens do not repay. TinyLlama F16 on Sapphire
 * Rapids, 2 threads: a 5-token prompt's first token 0.61-0.70 s from the
 * start through the tiles, 0.13-0.18 s the FMA way; prefill of 31 tokens
 * the FMA way 0.58-0.91 s, of 32 through the tiles 0.76-0.87 s (about
 * even; 64 tokens through the tiles 1.08-1.29 s). */
#define SP_PROMPT_PATH_MIN_TOKENS 32

typedef struct sp_context {
    const sprout_model *model;
    const sp_kernels *kernels;
    sp_threadpool *pool;
    sp_kv_cache kv;
    int32_t n_batch;
    /* activations, n_batch rows each */
    float *x, *h, *q, *k, *v, *qkv, *attn, *o, *ff_a, *ff_b, *ff_out;
    /* h, attn and ff_a quantized for the int8 matmuls as they are made
     * (kernels->quantize), once per token instead of in every matmul and
     * thread; NULL where the level has no quantize or the width does not
     * divide into its blocks */
    void *hq, *attnq, *ff_aq;
    float *scratch;          /* per thread: one decoded weight row */
    int64_t scratch_stride;
    int32_t *cells;          /* the cell of each batch token */
    bool *row_prompt;        /* per row of the matmul at hand: a prompt token's (sp_batch_token.prompt) */
    /* A matmul's prompt runs staged for the prompt entry once, by all
     * threads (kernels->stage_prompt); NULL where no weight takes it or
     * one thread runs */
    void *staged;
    size_t staged_capacity;
    sp_batch_token *kept;    /* the last layer's tokens: those whose logits or hidden states are wanted */
} sp_context;

sprout_status sp_context_init(sp_context *ctx, const sprout_model *model, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                              int n_threads, sp_kv_type kv_type);
void sp_context_free(sp_context *ctx);

/* Whether a token's numbers here depend on its kind (sp_batch_token.prompt):
 * some matmul weight of the model takes the level's prompt entry. Caches
 * that must give every request the same numbers then reuse only what was
 * computed as prompt. */
bool sp_context_kinds_differ(const sp_context *ctx);

/* Runs the batch; logits of the tokens that want them go to `logits`, one
 * row of n_vocab per such token, in batch order. On error the KV cache is
 * left without this batch's cells. */
sprout_status sp_forward(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits);
/* The same, and the final-norm hidden states of the tokens marked embd go
 * to `embd`, one row of n_embd per such token, in batch order (either
 * output may be NULL). */
sprout_status sp_forward_out(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits, float *embd);

#endif
