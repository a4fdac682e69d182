#include "runtime/context.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

enum { MOE_LAYER_WEIGHTS = 8 }; /* and multi-head latent attention's */

/* Every matrix a forward pass multiplies by, one at a time: the indexed
 * ones (sp_model_weight), then each layer's experts (expert 0 stands for
 * all: they share type and shape) and latent attention's (head 0 standing
 * for all of k_b and v_b). NULL past the last; absent ones have no data. */
static const sp_weight *matmul_weight(const sprout_model *m, int64_t i) {
    const int64_t indexed = sp_model_weight_count(m);
    if (i < indexed) return sp_model_weight(m, i);
    const int64_t il = (i - indexed) / MOE_LAYER_WEIGHTS;
    if (il >= m->hp.n_layer) return NULL;
    const sp_layer *ly = &m->layers[il];
    const sp_weight *const ws[MOE_LAYER_WEIGHTS] = {&ly->gate_exps.first, &ly->up_exps.first, &ly->down_exps.first, &ly->wq_a,
                                                    &ly->wq_b,            &ly->wkv_a,         &ly->k_b.first,       &ly->v_b.first};
    return ws[(i - indexed) % MOE_LAYER_WEIGHTS];
}

bool sp_context_kinds_differ(const sp_context *ctx) {
    const sp_weight *w;
    for (int64_t i = 0; (w = matmul_weight(ctx->model, i)); i++)
        if (w->data && sp_prompt_path_differs(ctx->kernels, w->type)) return true;
    return false;
}

/* The most bytes `tokens` prompt tokens in up to `runs` runs (each may
 * leave a tile part-filled) take staged for any weight the prompt entry
 * computes its own way. */
static size_t most_staged_bytes(const sp_context *ctx, int64_t tokens, int64_t runs) {
    size_t most = 0;
    const sp_weight *w;
    for (int64_t i = 0; (w = matmul_weight(ctx->model, i)); i++) {
        if (!w->data || !sp_prompt_path_differs(ctx->kernels, w->type)) continue;
        const size_t bytes = ctx->kernels->prompt_staged_bytes(w->type, w->n_in, tokens + SP_PROMPT_TILE_TOKENS * runs);
        most = bytes > most ? bytes : most;
    }
    return most;
}

/* Activation buffers start on a cache line: a vector load that straddles
 * two lines costs two. */
static void *alloc_lines(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static int64_t gcd(int64_t a, int64_t b) { return b == 0 ? a : gcd(b, a % b); }

static bool has_shared_expert(const sprout_model *m) {
    for (int32_t il = 0; il < m->hp.n_layer; il++)
        if (m->layers[il].up_shexp.data) return true;
    return false;
}

/* ctx->moe: the buffers of a mixture of experts (runtime/moe.c); none for
 * a dense model. False when memory ran out. */
static bool moe_buffers_init(sp_context *ctx) {
    const sp_hparams *hp = &ctx->model->hp;
    sp_moe_buffers *b = &ctx->moe;
    memset(b, 0, sizeof *b);
    if (hp->n_expert == 0) return true;
    const size_t nb = (size_t)ctx->n_batch, e = (size_t)hp->n_embd, k = (size_t)hp->n_expert_used, x = (size_t)hp->n_expert;
    const bool shared = has_shared_expert(ctx->model);
    const size_t f = (size_t)(shared && hp->n_ff_shexp > hp->n_ff_exp ? hp->n_ff_shexp : hp->n_ff_exp);
    b->logits = alloc_lines(nb * x * sizeof(float));
    b->ids = alloc_lines(nb * k * sizeof(int32_t));
    b->weights = alloc_lines(nb * k * sizeof(float));
    b->order = alloc_lines(nb * k * sizeof(int32_t));
    b->first = alloc_lines(2 * (x + 1) * sizeof(int32_t)); /* and each expert's next free place while sorting */
    b->rows = alloc_lines(nb * sizeof *b->rows);
    b->x.f32 = alloc_lines(nb * e * sizeof(float));
    b->act.f32 = alloc_lines(nb * f * sizeof(float));
    b->up = alloc_lines(nb * f * sizeof(float));
    b->y = alloc_lines(nb * e * sizeof(float));
    b->shared_gate = alloc_lines(nb * sizeof(float));
    bool ok = b->logits && b->ids && b->weights && b->order && b->first && b->rows && b->x.f32 && b->act.f32 && b->up && b->y &&
              b->shared_gate;
    /* the int8 kernels' blocks where the rows divide into them: x as h has them, act for whichever width does */
    if (ctx->h.blocks) ok &= (b->x.blocks = alloc_lines(nb * (e / 32) * SP_ACT_BLOCK_BYTES)) != NULL;
    if (ctx->kernels->quantize && (hp->n_ff_exp % 32 == 0 || (shared && hp->n_ff_shexp % 32 == 0)))
        ok &= (b->act.blocks = alloc_lines(nb * (f / 32) * SP_ACT_BLOCK_BYTES)) != NULL;
    return ok;
}

/* ctx->mla: multi-head latent attention's buffers (runtime/mla.c); none
 * for other attention. False when memory ran out. */
static bool mla_buffers_init(sp_context *ctx) {
    const sp_hparams *hp = &ctx->model->hp;
    sp_mla_buffers *b = &ctx->mla;
    memset(b, 0, sizeof *b);
    if (hp->n_lora_kv == 0) return true;
    const size_t nb = (size_t)ctx->n_batch, r = (size_t)hp->n_lora_kv, heads = (size_t)hp->n_head;
    const size_t q_a = hp->n_lora_q > 0 ? (size_t)hp->n_lora_q : 1;
    b->q_a.f32 = alloc_lines(nb * q_a * sizeof(float));
    b->q_full = alloc_lines(nb * heads * (size_t)hp->head_dim_k_mla * sizeof(float));
    b->latent = alloc_lines(nb * heads * r * sizeof(float));
    bool ok = b->q_a.f32 && b->q_full && b->latent;
    if (ctx->kernels->quantize && q_a % 32 == 0) ok &= (b->q_a.blocks = alloc_lines(nb * (q_a / 32) * SP_ACT_BLOCK_BYTES)) != NULL;
    return ok;
}

static void mla_buffers_free(sp_mla_buffers *b) {
    void *bufs[] = {b->q_a.f32, b->q_a.blocks, b->q_full, b->latent};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    memset(b, 0, sizeof *b);
}

static void moe_buffers_free(sp_moe_buffers *b) {
    void *bufs[] = {b->logits, b->ids, b->weights, b->order, b->first, b->rows, b->x.f32, b->x.blocks,
                    b->act.f32, b->act.blocks, b->up, b->y, b->shared_gate};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    memset(b, 0, sizeof *b);
}

sprout_status sp_context_init(sp_context *ctx, const sprout_model *model, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                              int n_threads, sp_kv_type kv_type) {
    return sp_context_init_kv(ctx, model, n_ctx, n_batch, n_seq, n_threads, (sp_kv_types){kv_type, kv_type});
}

sprout_status sp_context_init_kv(sp_context *ctx, const sprout_model *model, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                                 int n_threads, sp_kv_types kv_type) {
    memset(ctx, 0, sizeof *ctx);
    const sp_hparams *hp = &model->hp;
    ctx->model = model;
    ctx->kernels = sp_kernels_get();
    ctx->n_batch = n_batch;
    ctx->lora_parallel_min_work = SP_LORA_PARALLEL_MIN_WORK;
    sprout_status st = sp_threadpool_create(n_threads, &ctx->pool);
    if (st != SPROUT_OK) return st;
    /* latent attention (MLA): its values are the first elements of the keys' rows, no cache of their own */
    const bool mla = hp->n_lora_kv > 0;
    const int64_t kv_k = (int64_t)hp->n_head_kv * hp->head_dim_k, kv_v = mla ? 0 : (int64_t)hp->n_head_kv * hp->head_dim_v;
    if (mla && kv_type.k != kv_type.v) {
        sp_context_free(ctx);
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: latent attention reads its values from the key cache: key and value cache types "
                                               "(%s, %s) must be the same", hp->arch_name, sp_kv_type_name(kv_type.k), sp_kv_type_name(kv_type.v));
    }
    if (!mla && kv_k != kv_v) {
        sp_context_free(ctx);
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: key and value head sizes differ (%d, %d)", hp->arch_name, hp->head_dim_k, hp->head_dim_v);
    }
    /* MLA: the latent and k_pe each whole blocks and rotated runs, so the values (the latent) decode alone */
    const int64_t rows_of = mla ? gcd(hp->n_lora_kv, hp->n_rot) : hp->head_dim_k;
    if ((st = sp_kv_init(&ctx->kv, kv_type, rows_of, n_ctx, hp->n_layer, n_seq, kv_k, kv_v)) != SPROUT_OK) {
        sp_context_free(ctx); /* the caller may free the context again: it must be left empty */
        return st;
    }
    const int64_t nb = n_batch, e = hp->n_embd, f = hp->n_ff;
    /* attn: attention's output, or (MLA) the output projection's input, heads of head_v */
    const int64_t head_v = mla ? hp->head_dim_v_mla : hp->head_dim_v;
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, na = (int64_t)hp->n_head * (head_v > hp->head_dim_v ? head_v : hp->head_dim_v);
    ctx->x = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->h.f32 = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->o = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->ff_out = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->q = alloc_lines((size_t)(nb * nq) * sizeof(float));
    ctx->k = alloc_lines((size_t)(nb * kv_k) * sizeof(float));
    ctx->v = alloc_lines((size_t)(nb * (kv_v > 0 ? kv_v : 1)) * sizeof(float));
    ctx->qkv = alloc_lines((size_t)(nb * (nq + kv_k + kv_v)) * sizeof(float));
    ctx->attn.f32 = alloc_lines((size_t)(nb * na) * sizeof(float));
    ctx->ff_a.f32 = alloc_lines((size_t)(nb * f) * sizeof(float));
    ctx->ff_b = alloc_lines((size_t)(nb * 2 * f) * sizeof(float));
    ctx->cells = alloc_lines((size_t)nb * sizeof(int32_t));
    ctx->kept = alloc_lines((size_t)nb * sizeof *ctx->kept);
    bool quantized_ok = true;
    if (ctx->kernels->quantize) {
        /* a row of width w is w / 32 blocks; attention quantizes each run of heads, so a head must be whole blocks */
#define BLOCKS_BYTES(width) ((size_t)nb * (size_t)((width) / 32) * SP_ACT_BLOCK_BYTES)
        if (e % 32 == 0) quantized_ok &= (ctx->h.blocks = alloc_lines(BLOCKS_BYTES(e))) != NULL;
        if (head_v % 32 == 0) quantized_ok &= (ctx->attn.blocks = alloc_lines(BLOCKS_BYTES(na))) != NULL;
        if (f % 32 == 0) quantized_ok &= (ctx->ff_a.blocks = alloc_lines(BLOCKS_BYTES(f))) != NULL;
#undef BLOCKS_BYTES
    }
    int64_t widest = e > f ? e : f;
    if (na > widest) widest = na;
    if (hp->n_expert > 0 && hp->n_ff_exp > widest) widest = hp->n_ff_exp;
    if (hp->n_expert > 0 && hp->n_ff_shexp > widest) widest = hp->n_ff_shexp;
    if (hp->n_lora_q > widest) widest = hp->n_lora_q;
    ctx->scratch_stride = (sp_matmul_scratch_floats(widest) + 15) / 16 * 16; /* each thread's on a line */
    ctx->scratch = alloc_lines((size_t)(ctx->scratch_stride * sp_threadpool_size(ctx->pool)) * sizeof(float));
    /* a batch's prompt tokens staged for the widest rows the prompt entry takes, in a run per sequence */
    if (ctx->kernels->stage_prompt && sp_threadpool_size(ctx->pool) > 1 && sp_context_kinds_differ(ctx)) {
        ctx->staged_capacity = most_staged_bytes(ctx, nb, n_seq);
        quantized_ok &= (ctx->staged = alloc_lines(ctx->staged_capacity)) != NULL;
    }
    if (!ctx->x || !ctx->h.f32 || !ctx->o || !ctx->ff_out || !ctx->q || !ctx->k || !ctx->v || !ctx->qkv || !ctx->attn.f32 || !ctx->ff_a.f32 ||
        !ctx->ff_b || !ctx->cells || !ctx->kept || !ctx->scratch || !quantized_ok || !moe_buffers_init(ctx) ||
        !mla_buffers_init(ctx)) {
        sp_context_free(ctx);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for activations (batch of %d)", n_batch);
    }
    return SPROUT_OK;
}

void sp_context_free(sp_context *ctx) {
    if (!ctx) return;
    sp_threadpool_free(ctx->pool);
    sp_kv_free(&ctx->kv);
    float *bufs[] = {ctx->x, ctx->h.f32, ctx->o, ctx->ff_out, ctx->q, ctx->k, ctx->v, ctx->qkv, ctx->attn.f32, ctx->ff_a.f32, ctx->ff_b, ctx->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(ctx->cells);
    free(ctx->kept);
    free(ctx->staged);
    free(ctx->h.blocks);
    free(ctx->attn.blocks);
    free(ctx->ff_a.blocks);
    moe_buffers_free(&ctx->moe);
    mla_buffers_free(&ctx->mla);
    memset(ctx, 0, sizeof *ctx);
}
