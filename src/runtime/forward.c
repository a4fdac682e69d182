/* The transformer forward pass, read top to bottom as the papers write it:
 * embeddings; per layer a norm, q/k/v, RoPE, attention over the cache, the
 * output projection, the residual, a norm and the FFN; then the final norm
 * and the output head. Shapes in comments: n = tokens in the batch, e =
 * n_embd, f = n_ff, nq/nk/nv = query/key/value heads times head size.
 * Every projection is one sp_matmul (runtime/matmul.c); the per-token
 * stages run on every thread through sp_for_each_token. */
#include "runtime/forward.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "quant/quant.h"
#include "runtime/attention.h"
#include "runtime/matmul.h"
#include "runtime/mla.h"
#include "runtime/moe.h"
#include "runtime/parallel.h"
#include "runtime/vector_ops.h"

/* For the attention time the perf metrics report: two reads a layer cost
 * well under a microsecond against a pass of milliseconds. */
static double monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct layer_step {
    const sp_layer *ly;
    const sp_batch_token *batch;
    int il;
} layer_step;

/* --- the embeddings ------------------------------------------------------------------------- */

/* x += row `row` of an embedding table (decoded through `scratch`, which
 * holds a row). */
static void add_embedding_row(const sp_weight *w, int32_t row, float *x, float *scratch) {
    sp_type_traits_of(w->type)->dequantize(w->data + (size_t)row * w->row_bytes, scratch, w->n_in);
    for (int64_t i = 0; i < w->n_in; i++) x[i] += scratch[i];
}

/* x[n][e] = the tokens' embedding rows (times the model's scale; BERT: plus
 * its position's row and token type 0's, then a norm). */
static void embed(sp_context *ctx, const sp_batch_token *batch, int32_t n) {
    const sprout_model *m = ctx->model;
    const sp_hparams *hp = &m->hp;
    const int64_t e = hp->n_embd;
    const sp_type_traits *et = sp_type_traits_of(m->tok_embd.type);
    for (int32_t t = 0; t < n; t++) {
        float *x = ctx->x + t * e;
        et->dequantize(m->tok_embd.data + (size_t)batch[t].token * m->tok_embd.row_bytes, x, e);
        if (hp->embd_scale != 1.f)
            for (int64_t i = 0; i < e; i++) x[i] *= hp->embd_scale;
        if (m->pos_embd.data) add_embedding_row(&m->pos_embd, batch[t].pos, x, ctx->scratch);
        if (m->type_embd.data) add_embedding_row(&m->type_embd, 0, x, ctx->scratch);
        if (m->embd_norm) sp_norm(hp, x, x, m->embd_norm, m->embd_norm_b);
    }
}

/* --- attention ------------------------------------------------------------------------------ */

/* Row t of h = a norm of x, and its blocks for the matmuls that read it. */
static void norm_into_h(sp_context *ctx, int32_t t, const float *x, const float *w, const float *b) {
    const int64_t e = ctx->model->hp.n_embd;
    sp_norm(&ctx->model->hp, ctx->h.f32 + t * e, x, w, b);
    sp_rows_quantize(ctx, &ctx->h, e, t);
}

/* Row t of h = x as it is (post-norm blocks read it unnormed), and its blocks. */
static void copy_into_h(sp_context *ctx, int32_t t, const float *x) {
    const int64_t e = ctx->model->hp.n_embd;
    memcpy(ctx->h.f32 + t * e, x, (size_t)e * sizeof(float));
    sp_rows_quantize(ctx, &ctx->h, e, t);
}

/* h = the attention norm of x (post-norm, or no norm before the block:
 * x itself), for tokens [t0, t1). */
static void attn_norm_stage(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = ((const layer_step *)arg)->ly;
    const int64_t e = ctx->model->hp.n_embd;
    for (int32_t t = t0; t < t1; t++) {
        if (ctx->model->hp.post_norm || !ly->attn_norm) copy_into_h(ctx, t, ctx->x + t * e);
        else norm_into_h(ctx, t, ctx->x + t * e, ly->attn_norm, ly->attn_norm_b);
    }
}

/* One token's q or k norms (w NULL: none): an RMS norm over all its heads
 * at once (olmoe, olmo2), a LayerNorm of each head with that head's
 * weights (command-r), or an RMS norm of each head with weights they share
 * (qwen3, gemma3). */
static void norm_heads(const sp_hparams *hp, float *v, const float *w, int n_heads) {
    const int64_t d = hp->head_dim_k;
    if (!w) return;
    if (hp->qk_norm_whole) {
        sp_rms_norm(v, v, w, n_heads * d, hp->norm_eps);
        return;
    }
    if (hp->qk_norm_each_head) {
        sp_hparams one_head = *hp; /* sp_norm's LayerNorm spans n_embd */
        one_head.n_embd = (int32_t)d;
        for (int hh = 0; hh < n_heads; hh++) sp_norm(&one_head, v + hh * d, v + hh * d, w + hh * d, NULL);
        return;
    }
    for (int hh = 0; hh < n_heads; hh++) sp_rms_norm(v + hh * d, v + hh * d, w, d, hp->norm_eps);
}

/* After the projections, tokens [t0, t1): biases, per-head norms, RoPE,
 * and k and v written to the cache while still in cache themselves. */
static void finish_qkv(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const layer_step *st = arg;
    const sp_layer *ly = st->ly;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, nk = (int64_t)hp->n_head_kv * hp->head_dim_k,
                  nv = (int64_t)hp->n_head_kv * hp->head_dim_v;
    for (int32_t t = t0; t < t1; t++) {
        float *q = ctx->q + t * nq, *k = ctx->k + t * nk, *v = ctx->v + t * nv;
        if (ly->wqkv.data) { /* fused: rows [q | k | v] */
            const float *row = ctx->qkv + t * (nq + nk + nv);
            memcpy(q, row, (size_t)nq * sizeof(float));
            memcpy(k, row + nq, (size_t)nk * sizeof(float));
            memcpy(v, row + nq + nk, (size_t)nv * sizeof(float));
            if (ly->bqkv) {
                sp_add_bias(q, ly->bqkv, 1, nq, nq);
                sp_add_bias(k, ly->bqkv + nq, 1, nk, nk);
                sp_add_bias(v, ly->bqkv + nq + nk, 1, nv, nv);
            }
        } else {
            sp_add_bias(q, ly->bq, 1, nq, nq);
            sp_add_bias(k, ly->bk, 1, nk, nk);
            sp_add_bias(v, ly->bv, 1, nv, nv);
        }
        norm_heads(hp, q, ly->q_norm, hp->n_head);
        norm_heads(hp, k, ly->k_norm, hp->n_head_kv);
        sp_rope(hp, ctx->model->rope_factors, q, hp->n_head, hp->head_dim_k, st->batch[t].pos, ly->rope_base, ly->rope_freq_scale);
        sp_rope(hp, ctx->model->rope_factors, k, hp->n_head_kv, hp->head_dim_k, st->batch[t].pos, ly->rope_base, ly->rope_freq_scale);
        sp_attention_store_kv(ctx, st->il, t);
    }
}

/* q[n][nq], k[n][nk], v[n][nv] = the projections of h, then finish_qkv
 * (latent attention: runtime/mla.c). */
static void attention_inputs(sp_context *ctx, const layer_step *st, int32_t n) {
    const sp_layer *ly = st->ly;
    const sp_hparams *hp = &ctx->model->hp;
    if (hp->n_lora_kv > 0) {
        sp_mla_inputs(ctx, ly, st->batch, st->il, n);
        return;
    }
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, nk = (int64_t)hp->n_head_kv * hp->head_dim_k;
    if (ly->wqkv.data) sp_matmul(ctx, &ly->wqkv, &ctx->h, ctx->qkv, n);
    else {
        const sp_matmul_part qkv[] = {{&ly->wq, &ctx->h, ctx->q, n, NULL}, {&ly->wk, &ctx->h, ctx->k, n, NULL}, {&ly->wv, &ctx->h, ctx->v, n, NULL}};
        sp_matmul_parts(ctx, qkv, 3);
    }
    sp_for_each_token(ctx, n, 8 * (nq + nk), finish_qkv, st);
}

/* A block's output times the model's residual scale (granite), before x adds it. */
static void scale_residual(const sp_hparams *hp, float *y) {
    if (hp->residual_scale == 1.f) return;
    for (int64_t i = 0; i < hp->n_embd; i++) y[i] *= hp->residual_scale;
}

/* After the output projection: its bias, norm and scale; then (sequential
 * blocks) x += o and h = the FFN norm of x (and its blocks; x itself
 * without one), in one pass per token. */
static void attn_out_stage(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = ((const layer_step *)arg)->ly;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd;
    for (int32_t t = t0; t < t1; t++) {
        float *o = ctx->o + t * e, *x = ctx->x + t * e;
        sp_add_bias(o, ly->bo, 1, e, e);
        if (ly->post_attn_norm) sp_rms_norm(o, o, ly->post_attn_norm, e, hp->norm_eps);
        scale_residual(hp, o);
        if (hp->parallel_block) continue; /* the FFN reads the same h */
        for (int64_t i = 0; i < e; i++) x[i] += o[i];
        if (hp->post_norm) { /* x = norm(x + attention), which the FFN reads */
            sp_norm(hp, x, x, ly->attn_out_norm, ly->attn_out_norm_b);
            copy_into_h(ctx, t, x);
        } else if (ly->ffn_norm) {
            norm_into_h(ctx, t, x, ly->ffn_norm, ly->ffn_norm_b);
        } else {
            copy_into_h(ctx, t, x);
        }
    }
}

/* --- the feed-forward network ---------------------------------------------------------------- */

/* The down projection's input for tokens [t0, t1): act(up x + b), or
 * act(gate x) * (up x + b), from where the projections left them, and
 * quantized for it while in cache. */
static void ffn_activation(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = arg;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t f = hp->n_ff;
    const sp_activation act = hp->ffn_kind == SP_FFN_SWIGLU ? SP_ACT_SILU : SP_ACT_GELU;
    for (int32_t t = t0; t < t1; t++) {
        float *a = ctx->ff_a.f32 + t * f;
        if (hp->ffn_kind == SP_FFN_GELU) {
            sp_add_bias(a, ly->b_up, 1, f, f);
            ctx->kernels->activation(act, a, NULL, a, f);
        } else if (hp->fused_gate_up) { /* up has rows [gate | up] */
            const float *gu = ctx->ff_b + t * 2 * f;
            ctx->kernels->activation(act, gu, gu + f, a, f);
        } else {
            float *u = ctx->ff_b + t * f;
            sp_add_bias(u, ly->b_up, 1, f, f);
            ctx->kernels->activation(act, a, u, a, f);
        }
        sp_rows_quantize(ctx, &ctx->ff_a, f, t);
    }
}

/* ff_out[n][e] = FFN(h): down(gelu(up h + b)), or down(act(gate h) * up h),
 * or a mixture of such experts (runtime/moe.c). */
static void feed_forward(sp_context *ctx, const sp_layer *ly, int32_t n) {
    const sp_hparams *hp = &ctx->model->hp;
    if (ly->router.data) {
        sp_moe_ffn(ctx, ly, n);
        return;
    }
    if (hp->ffn_kind == SP_FFN_GELU) sp_matmul(ctx, &ly->w_up, &ctx->h, ctx->ff_a.f32, n);
    else if (hp->fused_gate_up) sp_matmul(ctx, &ly->w_up, &ctx->h, ctx->ff_b, n);
    else {
        const sp_matmul_part gate_up[] = {{&ly->w_gate, &ctx->h, ctx->ff_a.f32, n, NULL}, {&ly->w_up, &ctx->h, ctx->ff_b, n, NULL}};
        sp_matmul_parts(ctx, gate_up, 2);
    }
    sp_for_each_token(ctx, n, 16 * hp->n_ff, ffn_activation, ly);
    sp_matmul(ctx, &ly->w_down, &ctx->ff_a, ctx->ff_out, n);
    sp_add_bias(ctx->ff_out, ly->b_down, n, hp->n_embd, hp->n_embd);
}

/* x += the FFN's output (and the attention's, for parallel blocks). */
static void ffn_out_stage(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = ((const layer_step *)arg)->ly;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd;
    for (int32_t t = t0; t < t1; t++) {
        float *x = ctx->x + t * e, *f = ctx->ff_out + t * e;
        if (hp->parallel_block) {
            const float *o = ctx->o + t * e;
            for (int64_t i = 0; i < e; i++) x[i] += o[i] + f[i];
        } else {
            if (ly->post_ffn_norm) sp_rms_norm(f, f, ly->post_ffn_norm, e, hp->norm_eps);
            scale_residual(hp, f);
            for (int64_t i = 0; i < e; i++) x[i] += f[i];
            if (hp->post_norm) sp_norm(hp, x, x, ly->out_norm, ly->out_norm_b);
        }
    }
}

/* --- the outputs ---------------------------------------------------------------------------- */

/* The rest of the last layer matters only where an output is wanted (in a
 * prompt, one token of hundreds): those tokens' rows (q, x, and for
 * parallel blocks the FFN's input h) move to the front, their batch entries
 * into ctx->kept, and the layer goes on with them alone. Returns how many. */
static int32_t keep_output_rows(sp_context *ctx, const sp_batch_token *batch, int32_t n, bool want_logits, bool want_embd) {
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd, nq = (int64_t)hp->n_head * hp->head_dim_k;
    int32_t kept = 0;
    for (int32_t t = 0; t < n; t++) {
        if (!(want_logits && batch[t].logits) && !(want_embd && batch[t].embd)) continue;
        if (kept != t) {
            memcpy(ctx->q + kept * nq, ctx->q + t * nq, (size_t)nq * sizeof(float));
            memcpy(ctx->x + kept * e, ctx->x + t * e, (size_t)e * sizeof(float));
            if (hp->parallel_block) {
                memcpy(ctx->h.f32 + kept * e, ctx->h.f32 + t * e, (size_t)e * sizeof(float));
                if (ctx->h.blocks)
                    memcpy(sp_rows_block_at(ctx->h.blocks, e, kept, 0), sp_rows_block_at(ctx->h.blocks, e, t, 0),
                           (size_t)(e / 32) * SP_ACT_BLOCK_BYTES);
            }
        }
        ctx->kept[kept++] = batch[t];
    }
    return kept;
}

/* The final-norm hidden states of the tokens that want them, in order. */
static void write_embeddings(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *embd) {
    const sprout_model *m = ctx->model;
    const int64_t e = m->hp.n_embd;
    int32_t rows = 0;
    for (int32_t t = 0; t < n; t++)
        if (batch[t].embd) {
            float *row = embd + (size_t)rows++ * (size_t)e;
            if (m->output_norm) sp_norm(&m->hp, row, ctx->x + t * e, m->output_norm, m->output_norm_b);
            else memcpy(row, ctx->x + t * e, (size_t)e * sizeof(float)); /* post-norm blocks end normed */
        }
}

/* logits[k][n_vocab] for the tokens that want them: gather, norm, project. */
static void output_head(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits) {
    const sprout_model *m = ctx->model;
    const sp_hparams *hp = &m->hp;
    int32_t n_out = 0;
    for (int32_t t = 0; t < n; t++)
        if (batch[t].logits) {
            ctx->kept[n_out] = batch[t]; /* batch may be kept itself: n_out <= t */
            norm_into_h(ctx, n_out++, ctx->x + t * hp->n_embd, m->output_norm, m->output_norm_b);
        }
    if (n_out == 0) return;
    ctx->rows = ctx->kept;
    sp_matmul(ctx, &m->output, &ctx->h, logits, n_out);
    sp_add_bias(logits, m->output_b, n_out, hp->n_vocab, hp->n_vocab);
    if (hp->logit_scale != 1.f)
        for (int64_t i = 0; i < (int64_t)n_out * hp->n_vocab; i++) logits[i] *= hp->logit_scale;
    if (hp->final_softcap > 0.f)
        for (int64_t i = 0; i < (int64_t)n_out * hp->n_vocab; i++) logits[i] = hp->final_softcap * tanhf(logits[i] / hp->final_softcap);
}

/* --- the pass ------------------------------------------------------------------------------- */

static sprout_status check_batch(const sp_context *ctx, const sp_batch_token *batch, int32_t n, bool want_logits) {
    if (n <= 0 || n > ctx->n_batch) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "batch of %d tokens (1 to %d allowed)", n, ctx->n_batch);
    const sprout_model *m = ctx->model;
    for (int32_t t = 0; t < n; t++) {
        if (want_logits && batch[t].logits && !m->output.data)
            return sp_fail(SPROUT_ERR_UNSUPPORTED, "this %s model has no output head: it gives embeddings, not text", m->hp.arch_name);
        if (m->pos_embd.data && batch[t].pos >= m->pos_embd.n_out)
            return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "position %d is past the model's %lld learned positions", batch[t].pos,
                           (long long)m->pos_embd.n_out);
        if (batch[t].token < 0 || batch[t].token >= ctx->model->hp.n_vocab)
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "token id %d is outside the vocabulary (0..%d)", batch[t].token,
                           ctx->model->hp.n_vocab - 1);
        if (batch[t].seq < 0 || batch[t].seq >= ctx->kv.n_seq)
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "sequence %d does not exist (0..%d)", batch[t].seq, ctx->kv.n_seq - 1);
        if (batch[t].pos < 0) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "negative position %d", batch[t].pos);
    }
    if (ctx->kv.n_free < n) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the context is full (%d cells, %d free, %d needed)", ctx->kv.n_cells, ctx->kv.n_free, n);
    return SPROUT_OK;
}

/* Each token's cell first: a token attends to the earlier tokens of its own
 * batch. On failure none of the batch's cells stay. */
static sprout_status take_cells(sp_context *ctx, const sp_batch_token *batch, int32_t n) {
    sprout_status st = SPROUT_OK;
    int32_t appended = 0;
    for (; appended < n; appended++)
        if ((st = sp_kv_append(&ctx->kv, batch[appended].seq, batch[appended].pos, &ctx->cells[appended])) != SPROUT_OK) break;
    if (st != SPROUT_OK)
        for (int32_t t = appended - 1; t >= 0; t--) sp_kv_truncate(&ctx->kv, batch[t].seq, ctx->kv.seqs[batch[t].seq].n - 1);
    return st;
}

sprout_status sp_forward(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits) {
    return sp_forward_out(ctx, batch, n, logits, NULL);
}

sprout_status sp_forward_out(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits, float *embd) {
    sprout_status st = check_batch(ctx, batch, n, logits != NULL);
    if (st != SPROUT_OK || (st = take_cells(ctx, batch, n)) != SPROUT_OK) return st;
    const sprout_model *m = ctx->model;
    const sp_hparams *hp = &m->hp;
    const int64_t e = hp->n_embd;

    embed(ctx, batch, n);
    const sp_batch_token *layer_batch = batch;
    ctx->rows = batch;
    for (int il = 0; il < hp->n_layer; il++) {
        layer_step step = {&m->layers[il], layer_batch, il};
        sp_for_each_token(ctx, n, 2 * e, attn_norm_stage, &step);
        attention_inputs(ctx, &step, n);
        if (il == hp->n_layer - 1) { /* every token's k and v are in the cache now */
            n = keep_output_rows(ctx, batch, n, logits != NULL, embd != NULL);
            if (n == 0) return SPROUT_OK;
            step.batch = layer_batch = ctx->kept;
            ctx->rows = layer_batch;
        }
        const double t_attention = monotonic_ms();
        sp_attention(ctx, il, layer_batch, n);
        ctx->attention_ms += monotonic_ms() - t_attention;
        if (hp->n_lora_kv > 0) sp_mla_values(ctx, step.ly, n); /* out of the latent space */
        sp_matmul(ctx, &step.ly->wo, &ctx->attn, ctx->o, n);
        sp_for_each_token(ctx, n, 4 * e, attn_out_stage, &step);
        /* parallel blocks: x += attn(h) + ffn(h); otherwise x += ffn(norm x) after x += attn */
        feed_forward(ctx, step.ly, n);
        sp_for_each_token(ctx, n, 2 * e, ffn_out_stage, &step);
    }

    if (embd) write_embeddings(ctx, layer_batch, n, embd);
    if (logits) output_head(ctx, layer_batch, n, logits);
    return SPROUT_OK;
}
