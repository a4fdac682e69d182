/* What one forward pass works in: the model, the kernels of this CPU, the
 * thread pool, the KV cache and every activation buffer, sized once for a
 * batch of n_batch tokens so that a pass allocates nothing. */
#ifndef SPROUT_RUNTIME_CONTEXT_H
#define SPROUT_RUNTIME_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "model/lora.h"
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
    /* the adapters that apply to this token (NULL: none): each row's own,
     * so that requests with different adapters share a forward pass */
    const sp_lora_set *lora;
} sp_batch_token;

/* Fewer prompt tokens than this are computed as generated ones: the prompt
 * path converts every weight for its batch (the amx level's F16 and BF16
 * tiles), which a few tokens do not repay (bench/RESULTS.md has the
 * measurements that set it). */
#define SP_PROMPT_PATH_MIN_TOKENS 32

/* A projection's input: n_batch rows of floats, and the same rows as the
 * level's quantized blocks for its int8 kernels, made once per token where
 * the activation is computed instead of in every matmul and thread (NULL
 * where the level has no quantize or the width does not divide into its
 * blocks). */
typedef struct sp_rows {
    float *f32;
    void *blocks;
} sp_rows;

/* Where element `at` of row t starts in a buffer of quantized blocks whose
 * rows are `width` elements (at a multiple of 32). */
static inline char *sp_rows_block_at(void *blocks, int64_t width, int64_t t, int64_t at) {
    return (char *)blocks + (size_t)((t * width + at) / 32) * SP_ACT_BLOCK_BYTES;
}

/* The work of a mixture-of-experts FFN (runtime/moe.c), n_batch tokens'
 * worth; all NULL for a dense model. F = the widest of an expert's and the
 * shared expert's FFN. */
typedef struct sp_moe_buffers {
    float *logits;        /* [n][n_expert] the router's */
    int32_t *ids;         /* [n][n_used] each token's experts, best first */
    float *weights;       /* [n][n_used] and their weights */
    int32_t *order;       /* [n * n_used] (token, slot) pairs sorted by expert, then token */
    int32_t *first;       /* [n_expert + 1] each expert's first pair in order */
    sp_batch_token *rows; /* [n] the batch tokens of a group of experts' rows */
    sp_rows x;            /* [n][e] a group of experts' input rows, gathered */
    sp_rows act;          /* [n][F] gate, then the down projection's input */
    float *up;            /* [n][F] */
    float *y;             /* [n][e] their outputs */
    float *shared_gate;   /* [n] the shared expert's gate logit */
} sp_moe_buffers;

/* Multi-head latent attention's work (runtime/mla.c), n_batch tokens'
 * worth; all NULL for other attention. r = n_lora_kv, hk = head_dim_k_mla. */
typedef struct sp_mla_buffers {
    sp_rows q_a;      /* [n][n_lora_q] q's low-rank projection, normed */
    float *q_full;    /* [n][n_head * hk] the query heads before absorption ([nope | rope] each) */
    float *latent;    /* [n][n_head * r] attention's output, in the latent space */
} sp_mla_buffers;

/* A LoRA step of fewer multiply-adds (A x and B for its tokens) runs on
 * the calling thread: two hand-offs to the pool cost more than it saves. A
 * lone token's step at rank 16 is 0.06M (a 100M model) to 0.24M (a 7B's
 * widest weight); on a loaded 2-core host the hand-offs halved decode with
 * an adapter. */
enum { SP_LORA_PARALLEL_MIN_WORK = 1 << 18 };

typedef struct sp_context {
    const sprout_model *model;
    const sp_kernels *kernels;
    sp_threadpool *pool;
    sp_kv_cache kv;
    int32_t n_batch;
    /* activations, n_batch rows each (shapes: e = n_embd, f = n_ff, nq/nk/nv
     * = query/key/value heads times head size) */
    float *x;       /* [n][e] the residual stream */
    sp_rows h;      /* [n][e] the normed input of a block, and of the output head */
    float *q, *k, *v, *qkv; /* [n][nq], [n][nk], [n][nv]; qkv [n][nq+nk+nv] from a fused projection */
    sp_rows attn;   /* [n][n_head * head_dim_v] attention's output */
    float *o;       /* [n][e] the output projection's */
    sp_rows ff_a;   /* [n][f] the down projection's input */
    float *ff_b;    /* [n][2f] up (and gate, fused) */
    float *ff_out;  /* [n][e] the FFN's output */
    float *scratch; /* per thread: one decoded weight row */
    int64_t scratch_stride;
    int32_t *cells;   /* the cell of each batch token */
    /* the batch token of each row of the matmul at hand (whether it is a
     * prompt's, its adapters): the batch, then the last layer's kept
     * tokens, then those whose logits are wanted */
    const sp_batch_token *rows;
    /* A matmul's prompt runs staged for the prompt entry once, by all
     * threads (kernels->stage_prompt); NULL where no weight takes it or
     * one thread runs */
    void *staged;
    size_t staged_capacity;
    sp_batch_token *kept; /* the last layer's tokens (those whose logits or hidden states are wanted), then the output head's */
    sp_moe_buffers moe;
    sp_mla_buffers mla;
    double attention_ms; /* wall time in sp_attention since the context was made (the perf metrics' attention times) */
    int64_t lora_parallel_min_work; /* SP_LORA_PARALLEL_MIN_WORK; tests lower it to split a tiny model's steps */
} sp_context;

/* A context whose cache holds keys and values of one type. */
sprout_status sp_context_init(sp_context *ctx, const sprout_model *model, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                              int n_threads, sp_kv_type kv_type);
/* The same with keys and values of their own types. */
sprout_status sp_context_init_kv(sp_context *ctx, const sprout_model *model, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                                 int n_threads, sp_kv_types kv_type);
void sp_context_free(sp_context *ctx);

/* Whether a token's numbers here depend on its kind (sp_batch_token.prompt):
 * some matmul weight of the model takes the level's prompt entry. Caches
 * that must give every request the same numbers then reuse only what was
 * computed as prompt. */
bool sp_context_kinds_differ(const sp_context *ctx);

#endif
