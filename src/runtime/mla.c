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
 * Each head's k_b and v_b are slices of a 3-D tensor, applied where the
 * head's rows lie (strided among the other heads'), all heads in one run
 * of the pool (sp_matmul_rows): a token's rows go through the kernel entry
 * of its own batch entry, so its numbers are the same alone or in any
 * batch. */
#include "runtime/mla.h"

#include <stdatomic.h>
#include <string.h>

#include "quant/quant.h"
#include "runtime/attention.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"
#include "runtime/threadpool.h"
#include "runtime/vector_ops.h"

typedef struct mla_step {
    const sp_layer *ly;
    const sp_batch_token *batch;
    int il;
} mla_step;

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

/* Where a buffer holds its heads: token t's head h at t * token + h * head. */
typedef struct head_layout {
    float *data;
    int64_t token, head;
} head_layout;

/* Every head's slice of a 3-D weight over n tokens, read from and written
 * to the heads' places in strided buffers, in one run of the pool. Whole
 * heads, or pieces of their rows where the heads are too few to go round
 * the threads, go to whichever thread is free (a shared host's threads run
 * at uneven speeds); whoever computes a row, its numbers are the same. */
typedef struct heads_job {
    sp_context *ctx;
    const sp_experts *w;
    head_layout from, to;
    int32_t n;
    int64_t n_pieces, pieces_per_head, piece_rows;
    atomic_int_fast64_t next_piece;
} heads_job;

static void heads_worker(void *arg, int ith, int nth) {
    (void)nth;
    heads_job *j = arg;
    for (int64_t k; (k = atomic_fetch_add_explicit(&j->next_piece, 1, memory_order_relaxed)) < j->n_pieces;) {
        const int64_t h = k / j->pieces_per_head, o0 = k % j->pieces_per_head * j->piece_rows;
        const sp_weight slice = sp_expert(j->w, (int32_t)h);
        const int64_t o1 = o0 + j->piece_rows < slice.n_out ? o0 + j->piece_rows : slice.n_out;
        sp_matmul_rows(j->ctx, &slice, j->from.data + h * j->from.head, j->from.token, j->to.data + h * j->to.head, j->to.token, j->n, o0,
                       o1, ith);
    }
}

/* Where the heads are fewer than this many a thread, each is cut into
 * pieces (of whole 32-row tiles) until there are: a thread that runs slow
 * then leaves the others pieces to take, not one whole head to wait on. */
enum { HEAD_PIECES_PER_THREAD = 4 };

/* For each head: its slice of w (n_in -> n_out) from its first n_in
 * elements of `from` into its first n_out of `to`. */
static void per_head_matmul(sp_context *ctx, const sp_experts *w, head_layout from, head_layout to, int32_t n) {
    const int64_t n_head = ctx->model->hp.n_head, n_out = w->first.n_out;
    const int nth = sp_threadpool_size(ctx->pool);
    int64_t pieces = (HEAD_PIECES_PER_THREAD * nth + n_head - 1) / n_head;
    if (pieces > (n_out + 31) / 32) pieces = (n_out + 31) / 32;
    const int64_t piece_rows = ((n_out + pieces - 1) / pieces + 31) / 32 * 32;
    heads_job j = {.ctx = ctx, .w = w, .from = from, .to = to, .n = n, .piece_rows = piece_rows};
    j.pieces_per_head = (n_out + piece_rows - 1) / piece_rows;
    j.n_pieces = n_head * j.pieces_per_head;
    atomic_init(&j.next_piece, 0);
    if (n_head * n_out * w->first.n_in * n < SP_PARALLEL_MIN_WORK) heads_worker(&j, 0, 1);
    else sp_threadpool_run(ctx->pool, heads_worker, &j);
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
    const int64_t hk = hp->head_dim_k_mla, nq = (int64_t)hp->n_head * hp->head_dim_k;
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
    if (ly->k_b.first.data) per_head_matmul(ctx, &ly->k_b, q_full, q, n);
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
    per_head_matmul(ctx, &ly->v_b, latent, attn, n);
    if (ctx->attn.blocks) sp_for_each_token(ctx, n, hp->n_head * hv, quantize_attn, NULL);
}
