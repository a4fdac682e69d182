#include "runtime/attention.h"

#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"
#include "runtime/parallel.h"

/* A run of query heads (whole blocks of 32 each) rounded as llama.cpp
 * rounds them for a cache of keys of type t: to Q8_0 blocks for Q8_0 and
 * Q4_0 keys (its dot product's other operand), to BF16 for BF16 keys. */
static void round_queries(float *q, int64_t n, sp_kv_type t) {
    if (t == SP_KV_BF16)
        for (int64_t i = 0; i < n; i++) q[i] = sp_bf16_round(q[i]);
    if (t != SP_KV_Q8_0 && t != SP_KV_Q4_0) return;
    for (int64_t i = 0; i < n; i += 32) {
        sp_block_q8_0 block;
        sp_quantize_q8_0(q + i, &block, 32);
        sp_dequantize_q8_0(&block, q + i, 32);
    }
}

/* Token t's k and v into its cache cell; where the cache rotates them
 * (kv_cache.h), its query, keys and values rotated first. */
void sp_attention_store_kv(sp_context *ctx, int il, int32_t t) {
    const sp_kv_cache *kv = &ctx->kv;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t cell = ctx->cells[t];
    float *q = ctx->q + (int64_t)t * hp->n_head * hp->head_dim_k, *k = ctx->k + (int64_t)t * kv->k_row, *v = ctx->v + (int64_t)t * kv->v_row;
    sp_kv_rotate(q, (int64_t)hp->n_head * hp->head_dim_k, kv->rotate_k);
    sp_kv_rotate(k, kv->k_row, kv->rotate_k);
    sp_kv_rotate(v, kv->v_row, kv->rotate_v);
    sp_kv_store_row(k, (char *)kv->k[il] + (size_t)cell * sp_kv_bytes(kv->type.k, kv->k_row), kv->type.k, kv->k_row);
    if (kv->v_row > 0) /* none: latent attention's values are in the keys' rows */
        sp_kv_store_row(v, (char *)kv->v[il] + (size_t)cell * sp_kv_bytes(kv->type.v, kv->v_row), kv->type.v, kv->v_row);
}

typedef struct attention_job {
    const sp_context *ctx;
    const sp_batch_token *batch;
    int32_t n;
    int il;
} attention_job;

/* Tokens per attention job at most: the kernel reads each cache cell once
 * for all of a job's tokens of one sequence (and all its query heads). */
enum { ATTENTION_WINDOW = 32 };

static void attention_worker(void *p, int ith, int nth) {
    const attention_job *j = p;
    const sp_context *ctx = j->ctx;
    const sp_hparams *hp = &ctx->model->hp;
    const sp_layer *ly = &ctx->model->layers[j->il];
    const sp_kv_cache *kv = &ctx->kv;
    /* a job is a window of tokens, a KV head and a run of its query heads
     * (which read each cell once together); windows hold as many tokens as
     * fill the kernel's blocks of rows, and runs are split only when there
     * are too few jobs to keep every thread busy (one token of a
     * multi-query model) */
    const int64_t group = hp->n_head / hp->n_head_kv;
    const int64_t window = ATTENTION_WINDOW / (group < 8 ? group : 8); /* the kernel takes up to 8 heads a block */
    const int64_t n_windows = (j->n + window - 1) / window, pairs = n_windows * hp->n_head_kv;
    int64_t runs = pairs >= 2 * nth ? 1 : (2 * nth + pairs - 1) / pairs;
    if (runs > group) runs = group;
    const int64_t per_run = (group + runs - 1) / runs, n_jobs = pairs * runs;
    const int64_t q_row = (int64_t)hp->n_head * hp->head_dim_k, out_row = (int64_t)hp->n_head * hp->head_dim_v;
    /* latent attention (MLA): the values are each key row's first head_dim_v
     * elements (the latent), in the keys' type and rotation; the output,
     * still in the latent space, goes to ctx->mla.latent for runtime/mla.c */
    const bool mla = hp->n_lora_kv > 0;
    const void *values = mla ? kv->k[j->il] : kv->v[j->il];
    const sp_kv_type v_type = mla ? kv->type.k : kv->type.v;
    const int32_t rotate_v = mla ? kv->rotate_k : kv->rotate_v;
    float *out = mla ? ctx->mla.latent : ctx->attn.f32;
    void *out_blocks = mla ? NULL : ctx->attn.blocks;
    /* dealt out in turn: a prompt's later tokens see more cells, so halves
     * of the job list would leave the first thread idle half the time */
    for (int64_t ji = ith; ji < n_jobs; ji += nth) {
        const int64_t pi = ji / runs, run = ji % runs;
        const int64_t w = pi / hp->n_head_kv, kvh = pi % hp->n_head_kv, head = kvh * group + run * per_run;
        const int64_t n_heads = group - run * per_run < per_run ? group - run * per_run : per_run;
        if (n_heads <= 0) continue;
        const int32_t w_end = (int32_t)((w + 1) * window < j->n ? (w + 1) * window : j->n);
        for (int32_t t0 = (int32_t)(w * window), t1; t0 < w_end; t0 = t1) {
            /* the window's next run of tokens of one sequence */
            const int32_t seq = j->batch[t0].seq;
            sp_cell_range ranges[ATTENTION_WINDOW];
            for (t1 = t0; t1 < w_end && j->batch[t1].seq == seq; t1++) {
                const sp_batch_token *tok = &j->batch[t1];
                /* bidirectional (BERT): every cell of the text, all of it in this batch */
                ranges[t1 - t0] = (sp_cell_range){ly->sliding ? sp_kv_window_start(kv, seq, tok->pos, hp->sliding_window) : 0,
                                                  hp->causal ? sp_kv_visible(kv, seq, tok->pos) : kv->seqs[seq].n};
            }
            for (int32_t t = t0; t < t1; t++) round_queries(ctx->q + t * q_row + head * hp->head_dim_k, n_heads * hp->head_dim_k, kv->type.k);
            sp_attention_args a = {
                .q = ctx->q + t0 * q_row + head * hp->head_dim_k,
                .keys = (const char *)kv->k[j->il] + sp_kv_bytes(kv->type.k, kvh * hp->head_dim_k),
                .values = (const char *)values + sp_kv_bytes(v_type, kvh * hp->head_dim_v),
                .k_type = kv->type.k,
                .v_type = v_type,
                .stride = kv->k_row,
                .cells = kv->seqs[seq].cells,
                .head_dim_k = hp->head_dim_k,
                .head_dim_v = hp->head_dim_v,
                .scale = hp->attn_scale,
                .softcap = hp->attn_softcap,
                .out = out + t0 * out_row + head * hp->head_dim_v,
                .n_q_heads = n_heads,
                .n_tokens = t1 - t0,
                .q_stride = q_row,
                .out_stride = out_row,
                .ranges = ranges,
                .sinks = ly->attn_sinks ? ly->attn_sinks + head : NULL,
            };
            ctx->kernels->attention(&a);
            for (int32_t t = t0; t < t1; t++) /* back from the rotated values' basis */
                sp_kv_rotate(out + t * out_row + head * hp->head_dim_v, n_heads * hp->head_dim_v, rotate_v);
            if (out_blocks) /* heads of whole blocks (checked at setup): this run's are its own blocks */
                for (int32_t t = t0; t < t1; t++)
                    ctx->kernels->quantize(out + t * out_row + head * hp->head_dim_v, n_heads * hp->head_dim_v,
                                           sp_rows_block_at(out_blocks, out_row, t, head * hp->head_dim_v));
        }
    }
}


void sp_attention(sp_context *ctx, int il, const sp_batch_token *batch, int32_t n) {
    const sp_hparams *hp = &ctx->model->hp;
    attention_job aj = {ctx, batch, n, il};
    const int64_t work = (int64_t)n * hp->n_head * hp->head_dim_k * (ctx->kv.n_cells - ctx->kv.n_free);
    if (work < SP_PARALLEL_MIN_WORK) attention_worker(&aj, 0, 1);
    else sp_threadpool_run(ctx->pool, attention_worker, &aj);
}
