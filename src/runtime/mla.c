/* Multi-head latent attention, as llama.cpp's deepseek2 graph computes it
 * with MLA (src/models/deepseek2.cpp). Shapes: n tokens, H query heads,
 * r = n_lora_kv, p = n_rot, hk = head_dim_k_mla = nope + p, hv =
 * head_dim_v_mla.
 *
 *   q      = wq h, or wq_b norm(wq_a h)            [n][H][nope | p]
 *   kv     = wkv_a h                               [n][r | p]
 *   cache  = [norm(kv latent) | rope(kv k_pe)]     one row of r + p
 *   q'     = [q_nope k_b[head] | rope(q_pe)]       [n][H][r + p]
 *   lat    = softmax(q' . cache * scale) . latent  [n][H][r]
 *   attn   = lat v_b[head]                         [n][H][hv]
 *
 * Each head's k_b and v_b are slices of a 3-D tensor, each applied through
 * sp_matmul to that head's rows of all n tokens gathered into one matrix:
 * a token's rows carry its own batch entry, so its numbers are the same
 * alone or in any batch. */
#include "runtime/mla.h"

#include <string.h>

#include "quant/quant.h"
#include "runtime/attention.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"
#include "runtime/vector_ops.h"

typedef struct mla_step {
    const sp_layer *ly;
    const sp_batch_token *batch;
    int il;
} mla_step;

/* One head's rows between a strided buffer and a dense one (n rows of width). */
typedef struct head_rows {
    float *strided;
    int64_t stride, width;
} head_rows;

/* Tokens [t0, t1): q's low-rank projection RMS-normed, and its blocks. */
static void norm_q_a(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = ((const mla_step *)arg)->ly;
    const sp_hparams *hp = &ctx->model->hp;
    sp_rows *q_a = &ctx->mla.q_a;
    for (int32_t t = t0; t < t1; t++) {
        float *row = q_a->f32 + (int64_t)t * hp->n_lora_q;
        sp_rms_norm(row, row, ly->q_a_norm, hp->n_lora_q, hp->norm_eps);
        sp_rows_quantize(ctx, q_a, hp->n_lora_q, t);
    }
}

/* Tokens [t0, t1): the latent normed in place, k_pe and every head's q_pe
 * rotated, the q_pe parts to the end of the absorbed heads. */
static void latent_and_rope(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const mla_step *st = arg;
    const sp_hparams *hp = &ctx->model->hp;
    const float *factors = ctx->model->rope_factors;
    const int64_t r = hp->n_lora_kv, hk = hp->head_dim_k_mla, nope = hk - hp->n_rot, nq = (int64_t)hp->n_head * hp->head_dim_k;
    for (int32_t t = t0; t < t1; t++) {
        const int32_t pos = st->batch[t].pos;
        float *kv = ctx->k + t * ctx->kv.k_row, *q = ctx->mla.q_full + t * hp->n_head * hk;
        sp_rms_norm(kv, kv, st->ly->kv_a_norm, r, hp->norm_eps);
        sp_rope(hp, factors, kv + r, 1, hp->n_rot, pos, st->ly->rope_base, st->ly->rope_freq_scale);
        sp_rope(hp, factors, q + nope, hp->n_head, (int)hk, pos, st->ly->rope_base, st->ly->rope_freq_scale);
        for (int64_t h = 0; h < hp->n_head; h++)
            memcpy(ctx->q + t * nq + h * hp->head_dim_k + r, q + h * hk + nope, (size_t)hp->n_rot * sizeof(float));
    }
}

/* Rows [t0, t1) of one head into mla.head_in, and their blocks. */
static void gather_head(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const head_rows *hr = arg;
    for (int32_t t = t0; t < t1; t++) {
        memcpy(ctx->mla.head_in.f32 + t * hr->width, hr->strided + t * hr->stride, (size_t)hr->width * sizeof(float));
        sp_rows_quantize(ctx, &ctx->mla.head_in, hr->width, t);
    }
}

/* Rows [t0, t1) of mla.head_out back into one head's place. */
static void scatter_head(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const head_rows *hr = arg;
    for (int32_t t = t0; t < t1; t++)
        memcpy(hr->strided + t * hr->stride, ctx->mla.head_out + t * hr->width, (size_t)hr->width * sizeof(float));
}

/* Where a buffer holds its heads: token t's head h at t * token + h * head. */
typedef struct head_layout {
    float *data;
    int64_t token, head;
} head_layout;

/* For each head: its `in` elements of `from` through its slice of w
 * (in -> out) into its first `out` elements of `to`. */
static void per_head_matmul(sp_context *ctx, const sp_experts *w, head_layout from, int64_t in, head_layout to, int64_t out, int32_t n) {
    sp_mla_buffers *b = &ctx->mla;
    for (int32_t h = 0; h < ctx->model->hp.n_head; h++) {
        const head_rows src = {from.data + h * from.head, from.token, in}, dst = {to.data + h * to.head, to.token, out};
        sp_for_each_token(ctx, n, 2 * in, gather_head, &src);
        const sp_weight slice = sp_expert(w, h);
        sp_matmul(ctx, &slice, &b->head_in, b->head_out, n);
        sp_for_each_token(ctx, n, 2 * out, scatter_head, &dst);
    }
}

typedef struct absorb_job {
    sp_context *ctx;
    const sp_layer *ly;
    int32_t n;
} absorb_job;

/* An older conversion's absorption, heads split among the threads: head
 * h's absorbed query is its q_nope times the head's k rows of wkv_b (nope
 * rows of r), a sum of those rows scaled by q_nope's elements, each row
 * decoded once for all n tokens. A token's sum runs over the rows in
 * order, whatever the batch. */
static void absorb_transposed(void *arg, int ith, int nth) {
    const absorb_job *j = arg;
    sp_context *ctx = j->ctx;
    const sp_hparams *hp = &ctx->model->hp;
    const sp_weight *w = &j->ly->wkv_b;
    const int64_t r = hp->n_lora_kv, hk = hp->head_dim_k_mla, nope = hk - hp->n_rot, nq = (int64_t)hp->n_head * hp->head_dim_k;
    const int64_t rows_per_head = nope + hp->head_dim_v_mla;
    float *row = ctx->scratch + (int64_t)ith * ctx->scratch_stride;
    const sp_type_traits *tt = sp_type_traits_of(w->type);
    for (int64_t h = ith; h < hp->n_head; h += nth) {
        for (int32_t t = 0; t < j->n; t++) memset(ctx->q + t * nq + h * hp->head_dim_k, 0, (size_t)r * sizeof(float));
        for (int64_t i = 0; i < nope; i++) {
            tt->dequantize(w->data + (size_t)(h * rows_per_head + i) * w->row_bytes, row, r);
            for (int32_t t = 0; t < j->n; t++) {
                const float x = ctx->mla.q_full[t * hp->n_head * hk + h * hk + i];
                float *out = ctx->q + t * nq + h * hp->head_dim_k;
                for (int64_t c = 0; c < r; c++) out[c] += x * row[c];
            }
        }
    }
}

/* Tokens [t0, t1): the cache rows written (and the queries rotated with the keys where the cache rotates). */
static void store_rows(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const mla_step *st = arg;
    for (int32_t t = t0; t < t1; t++) sp_attention_store_kv(ctx, st->il, t);
}

void sp_mla_inputs(sp_context *ctx, const sp_layer *ly, const sp_batch_token *batch, int il, int32_t n) {
    const sp_hparams *hp = &ctx->model->hp;
    sp_mla_buffers *b = &ctx->mla;
    const mla_step st = {ly, batch, il};
    const int64_t hk = hp->head_dim_k_mla, r = hp->n_lora_kv, nq = (int64_t)hp->n_head * hp->head_dim_k;
    if (ly->wq_a.data) {
        sp_matmul(ctx, &ly->wq_a, &ctx->h, b->q_a.f32, n);
        sp_for_each_token(ctx, n, 2 * hp->n_lora_q, norm_q_a, &st);
        sp_matmul(ctx, &ly->wq_b, &b->q_a, b->q_full, n);
    } else {
        sp_matmul(ctx, &ly->wq, &ctx->h, b->q_full, n);
    }
    sp_matmul(ctx, &ly->wkv_a, &ctx->h, ctx->k, n); /* rows [latent | k_pe]: the cache row's layout */
    sp_for_each_token(ctx, n, 4 * hp->n_head * hk, latent_and_rope, &st);
    const head_layout q_full = {b->q_full, hp->n_head * hk, hk}, q = {ctx->q, nq, hp->head_dim_k};
    if (ly->k_b.first.data) per_head_matmul(ctx, &ly->k_b, q_full, hk - hp->n_rot, q, r, n);
    else sp_threadpool_run(ctx->pool, absorb_transposed, &(absorb_job){ctx, ly, n});
    sp_for_each_token(ctx, n, 2 * nq, store_rows, &st);
}

/* Tokens [t0, t1): the output projection's input quantized. */
static void quantize_attn(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    (void)arg;
    const int64_t width = (int64_t)ctx->model->hp.n_head * ctx->model->hp.head_dim_v_mla;
    for (int32_t t = t0; t < t1; t++) sp_rows_quantize(ctx, &ctx->attn, width, t);
}

void sp_mla_values(sp_context *ctx, const sp_layer *ly, int32_t n) {
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t r = hp->n_lora_kv, hv = hp->head_dim_v_mla;
    const head_layout latent = {ctx->mla.latent, hp->n_head * r, r}, attn = {ctx->attn.f32, hp->n_head * hv, hv};
    per_head_matmul(ctx, &ly->v_b, latent, r, attn, hv, n);
    if (ctx->attn.blocks) sp_for_each_token(ctx, n, hp->n_head * hv, quantize_attn, NULL);
}
