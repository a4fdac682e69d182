/* The transformer forward pass, read top to bottom as the papers write it.
 * Shapes in comments: n = tokens in the batch, e = n_embd, f = n_ff,
 * hq/hkv = query/KV heads, dk/dv = head sizes. */
#include "runtime/forward.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "quant/fp16.h"
#include "quant/quant.h"

/* --- element-wise pieces ------------------------------------------------------------------ */

static void rms_norm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = 1.f / sqrtf((float)(ss / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * (w ? w[i] : 1.f);
}

static void layer_norm(float *out, const float *x, const float *w, const float *b, int64_t n, float eps) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) var += ((double)x[i] - mean) * ((double)x[i] - mean);
    const float scale = 1.f / sqrtf((float)(var / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) out[i] = ((float)(x[i] - mean)) * scale * (w ? w[i] : 1.f) + (b ? b[i] : 0.f);
}

static void norm(const sp_hparams *hp, float *out, const float *x, const float *w, const float *b) {
    if (hp->norm_kind == SP_NORM_RMS) rms_norm(out, x, w, hp->n_embd, hp->norm_eps);
    else layer_norm(out, x, w, b, hp->n_embd, hp->norm_eps);
}

static void add_bias(float *y, const float *b, int64_t n_rows, int64_t width, int64_t stride) {
    if (!b) return;
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t i = 0; i < width; i++) y[r * stride + i] += b[i];
}

/* --- RoPE --------------------------------------------------------------------------------- */

static float yarn_corr_dim(int n_rot, int ctx_orig, float beta, float base) {
    return (float)n_rot * logf((float)ctx_orig / (beta * 2.f * (float)M_PI)) / (2.f * logf(base));
}

/* Rotates the first n_rot dims of each of n_heads heads of size head_dim. */
static void rope(const sp_hparams *hp, const float *factors, float *v, int n_heads, int head_dim, int32_t pos, float base,
                 float freq_scale) {
    if (hp->rope_kind == SP_ROPE_NONE) return; /* positions came with the embeddings */
    const int n_rot = hp->n_rot, half = n_rot / 2;
    float corr[2] = {0, 0};
    const float ext = hp->rope_scaling == SP_ROPE_SCALING_YARN ? hp->yarn_ext_factor : 0.f;
    if (ext != 0.f) {
        corr[0] = fmaxf(0.f, floorf(yarn_corr_dim(n_rot, hp->rope_ctx_orig, hp->yarn_beta_fast, base)));
        corr[1] = fminf((float)(n_rot - 1), ceilf(yarn_corr_dim(n_rot, hp->rope_ctx_orig, hp->yarn_beta_slow, base)));
    }
    for (int i = 0; i < half; i++) {
        float theta_extrap = (float)pos * powf(base, -2.f * (float)i / (float)n_rot);
        if (factors) theta_extrap /= factors[i];
        const float theta_interp = freq_scale * theta_extrap;
        float theta = theta_interp, mscale = hp->rope_attn_factor;
        if (ext != 0.f) { /* YaRN: blend interpolation and extrapolation per dimension */
            float y = ((float)i - corr[0]) / fmaxf(0.001f, corr[1] - corr[0]);
            float ramp = (1.f - fminf(1.f, fmaxf(0.f, y))) * ext;
            theta = theta_interp * (1.f - ramp) + theta_extrap * ramp;
            mscale *= 1.f + 0.1f * logf(1.f / freq_scale);
        }
        const float c = cosf(theta) * mscale, s = sinf(theta) * mscale;
        for (int hh = 0; hh < n_heads; hh++) {
            float *x = v + (int64_t)hh * head_dim;
            const int a = hp->rope_kind == SP_ROPE_NORM ? 2 * i : i, b = hp->rope_kind == SP_ROPE_NORM ? 2 * i + 1 : i + half;
            const float x0 = x[a], x1 = x[b];
            x[a] = x0 * c - x1 * s;
            x[b] = x0 * s + x1 * c;
        }
    }
}

/* --- parallel matmul and attention ----------------------------------------------------------- */

typedef struct matmul_job {
    const sp_context *ctx;
    const sp_weight *w;
    const float *x;
    int64_t x_stride;
    const void *xq;
    int64_t n_tokens;
    float *y;
    int64_t y_stride;
    /* 0: an even share of the rows each; else each thread's first
     * first_rows rows, then the rest in pieces of piece_rows as they go */
    int64_t first_rows, piece_rows;
    atomic_int_fast64_t next_piece;
    const void *staged; /* the prompt runs' tokens staged one after another, or NULL */
} matmul_job;

/* The end of the run of tokens of one kind (prompt or not) from t0. */
static int64_t run_end(const bool *prompt, int64_t n, int64_t t0) {
    int64_t t1 = t0 + 1;
    while (t1 < n && prompt[t1] == prompt[t0]) t1++;
    return t1;
}

/* Rows [o0, o1) of the job, on thread ith's scratch. */
static void matmul_rows(const matmul_job *j, int ith, int64_t o0, int64_t o1) {
    const sp_kernels *k = j->ctx->kernels;
    float *scratch = j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride;
    if (!sp_prompt_path_differs(k, j->w->type)) {
        k->matmul(j->w, j->x, j->x_stride, j->xq, j->n_tokens, j->y, j->y_stride, o0, o1, scratch);
        return;
    }
    /* runs of prompt tokens and of generated ones, each through its own
     * entry; the prompt entry reads its runs staged (or stages them itself) */
    const bool *prompt = j->ctx->row_prompt;
    const size_t xq_row = (size_t)(j->w->n_in / 32) * SP_ACT_BLOCK_BYTES;
    size_t staged_at = 0;
    for (int64_t t0 = 0, t1; t0 < j->n_tokens; t0 = t1) {
        t1 = run_end(prompt, j->n_tokens, t0);
        const float *x = j->x + t0 * j->x_stride;
        float *y = j->y + t0 * j->y_stride;
        if (prompt[t0]) {
            k->matmul_prompt(j->w, x, j->x_stride, j->staged ? (const char *)j->staged + staged_at : NULL, t1 - t0, y, j->y_stride, o0, o1,
                             scratch);
            staged_at += k->prompt_staged_bytes(j->w->type, j->w->n_in, t1 - t0);
        } else {
            k->matmul(j->w, x, j->x_stride, j->xq ? (const char *)j->xq + (size_t)t0 * xq_row : NULL, t1 - t0, y, j->y_stride, o0, o1,
                      scratch);
        }
    }
}

/* The prompt runs of a matmul's tokens, staged into ctx->staged one after
 * another, each run's token tiles split among the threads. */
static void stage_worker(void *p, int ith, int nth) {
    const matmul_job *j = p;
    const sp_kernels *k = j->ctx->kernels;
    const bool *prompt = j->ctx->row_prompt;
    size_t staged_at = 0;
    for (int64_t t0 = 0, t1; t0 < j->n_tokens; t0 = t1) {
        t1 = run_end(prompt, j->n_tokens, t0);
        if (!prompt[t0]) continue;
        const int64_t n = t1 - t0, columns = sp_prompt_tile_tokens(n);
        int64_t k0, k1;
        sp_split_range((n + columns - 1) / columns, ith, nth, &k0, &k1);
        k->stage_prompt(j->w, j->x + t0 * j->x_stride, j->x_stride, n, k0, k1, (char *)j->ctx->staged + staged_at);
        staged_at += k->prompt_staged_bytes(j->w->type, j->w->n_in, n);
    }
}

/* The bytes the prompt runs among n tokens take staged for w. */
static size_t staged_bytes(const sp_context *ctx, const sp_weight *w, int64_t n) {
    size_t bytes = 0;
    for (int64_t t0 = 0, t1; t0 < n; t0 = t1) {
        t1 = run_end(ctx->row_prompt, n, t0);
        if (ctx->row_prompt[t0]) bytes += ctx->kernels->prompt_staged_bytes(w->type, w->n_in, t1 - t0);
    }
    return bytes;
}

static void matmul_worker(void *p, int ith, int nth) {
    matmul_job *j = p;
    const int64_t n_out = j->w->n_out;
    if (!j->first_rows) {
        int64_t o0, o1;
        sp_split_range(n_out, ith, nth, &o0, &o1);
        if (o0 < o1) matmul_rows(j, ith, o0, o1);
        return;
    }
    /* (nth: the pool's size, which first_rows was sized for) */
    matmul_rows(j, ith, ith * j->first_rows, (ith + 1) * j->first_rows);
    const int64_t rest = nth * j->first_rows;
    for (int64_t k; (k = atomic_fetch_add_explicit(&j->next_piece, 1, memory_order_relaxed)) * j->piece_rows + rest < n_out;) {
        const int64_t o0 = rest + k * j->piece_rows;
        matmul_rows(j, ith, o0, o0 + j->piece_rows < n_out ? o0 + j->piece_rows : n_out);
    }
}

/* Below this many multiply-adds a job is done on the calling thread:
 * handing it out would cost more than it saves. */
enum { PARALLEL_MIN_WORK = 1 << 15 };

/* Matmuls of up to this many tokens (the decode kernels' batches) hand
 * their last rows out in pieces (matmul); so do prompt runs through the
 * prompt entry, in pieces of its group of panels (kernels.h). */
enum { MATMUL_PIECES_MAX_TOKENS = 8, PROMPT_PIECE_ROWS = SP_PROMPT_ROW_GROUP };

/* The model's matrices the forward pass multiplies by, one at a time (i
 * from 0; NULL past the last; absent ones have no data). */
static const sp_weight *model_weight(const sprout_model *m, int64_t i) {
    if (i == 0) return &m->output;
    const int64_t il = (i - 1) / 8;
    if (il >= m->hp.n_layer) return NULL;
    const sp_layer *ly = &m->layers[il];
    const sp_weight *const ws[8] = {&ly->wq, &ly->wk, &ly->wv, &ly->wqkv, &ly->wo, &ly->w_gate, &ly->w_up, &ly->w_down};
    return ws[(i - 1) % 8];
}

bool sp_context_kinds_differ(const sp_context *ctx) {
    const sp_weight *w;
    for (int64_t i = 0; (w = model_weight(ctx->model, i)); i++)
        if (w->data && sp_prompt_path_differs(ctx->kernels, w->type)) return true;
    return false;
}

/* The most bytes `tokens` prompt tokens in up to `runs` runs (each may
 * leave a tile part-filled) take staged for any weight the prompt entry
 * computes its own way. */
static size_t most_staged_bytes(const sp_context *ctx, int64_t tokens, int64_t runs) {
    size_t most = 0;
    const sp_weight *w;
    for (int64_t i = 0; (w = model_weight(ctx->model, i)); i++) {
        if (!w->data || !sp_prompt_path_differs(ctx->kernels, w->type)) continue;
        const size_t bytes = ctx->kernels->prompt_staged_bytes(w->type, w->n_in, tokens + SP_PROMPT_TILE_TOKENS * runs);
        most = bytes > most ? bytes : most;
    }
    return most;
}


/* y[t][0..n_out) = W x[t] for n tokens; xq: x quantized (or NULL); row t
 * a prompt token's where ctx->row_prompt[t]. */
static void matmul(const sp_context *ctx, const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n,
                   float *y, int64_t y_stride) {
    matmul_job j = {.ctx = ctx, .w = w, .x = x, .x_stride = x_stride, .xq = xq, .n_tokens = n, .y = y, .y_stride = y_stride};
    if (w->n_out * w->n_in * n < PARALLEL_MIN_WORK) {
        matmul_worker(&j, 0, 1);
        return;
    }
    /* A thread can run slower than another for a whole matmul, so part of
     * the rows goes in pieces to whoever is free. A few tokens' rows stream
     * from memory (TinyLlama Q8_0 tg128, even shares: the calling thread
     * 46.8% of the samples in the kernel, the other 42.6%, then waiting
     * 6.0-6.5%): the last quarter (or a little more: shares are whole 32-row
     * tiles) in few pieces, for each call starts its streams cold and
     * prepares its activations again (one-token calls of 64 rows cost 8-18%
     * more than one call, of 256 rows 1.5-7%). The prompt tiles (F16, BF16
     * on AMX) ran 78 GMAC/s on one vCPU here while 175 on the other: with
     * the prompt runs staged once for all threads (where they fit the
     * buffer), half their rows go in pieces of a panel group (where the
     * matrix has rows enough). Other batches keep even shares. Whoever
     * computes a row, its arithmetic is the same. */
    const int nth = sp_threadpool_size(ctx->pool);
    bool prompt_runs = false;
    if (sp_prompt_path_differs(ctx->kernels, w->type))
        for (int64_t t = 0; t < n; t++) prompt_runs |= ctx->row_prompt[t];
    if (nth > 1 && prompt_runs && ctx->staged && staged_bytes(ctx, w, n) <= ctx->staged_capacity) {
        j.staged = ctx->staged;
        sp_threadpool_run(ctx->pool, stage_worker, &j);
        j.first_rows = w->n_out / 2 / nth / PROMPT_PIECE_ROWS * PROMPT_PIECE_ROWS;
        j.piece_rows = PROMPT_PIECE_ROWS;
    } else if (nth > 1 && !prompt_runs && n <= MATMUL_PIECES_MAX_TOKENS) {
        j.first_rows = w->n_out * 3 / 4 / nth / 32 * 32;
        j.piece_rows = ((w->n_out - nth * j.first_rows) / (2 * nth) + 31) / 32 * 32;
        if (j.piece_rows < 32) j.piece_rows = 32;
    }
    if (j.first_rows > 0) atomic_init(&j.next_piece, 0);
    sp_threadpool_run(ctx->pool, matmul_worker, &j);
}

/* Where element `at` of row t starts in a buffer of quantized blocks whose
 * rows are `width` elements (at a multiple of 32). */
static inline char *quantized_at(void *q, int64_t width, int64_t t, int64_t at) {
    return (char *)q + (size_t)((t * width + at) / 32) * SP_ACT_BLOCK_BYTES;
}

/* x (width elements, token t's row) into row t of q, a buffer of the
 * level's quantized blocks: where the activation is made, while it is in
 * cache. Nothing where q is NULL. */
static void quantize_row(const sp_context *ctx, void *q, const float *x, int64_t width, int32_t t) {
    if (q) ctx->kernels->quantize(x, width, quantized_at(q, width, t, 0));
}

/* Element-wise stages (norms, RoPE, activations, residuals) are per token:
 * in a prompt's batch the threads take a slice of tokens each, so that no
 * core idles while one walks the batch. A token's numbers do not depend on
 * the split. */
typedef void (*token_range_fn)(sp_context *ctx, const void *arg, int32_t t0, int32_t t1);

typedef struct token_job {
    sp_context *ctx;
    const void *arg;
    int32_t n;
    token_range_fn fn;
} token_job;

static void token_worker(void *p, int ith, int nth) {
    const token_job *j = p;
    int64_t t0, t1;
    sp_split_range(j->n, ith, nth, &t0, &t1);
    if (t0 < t1) j->fn(j->ctx, j->arg, (int32_t)t0, (int32_t)t1);
}

/* fn over tokens [0, n), on every thread when there is enough work
 * (floats touched per token). */
static void for_each_token(sp_context *ctx, int32_t n, int64_t work_per_token, token_range_fn fn, const void *arg) {
    token_job j = {ctx, arg, n, fn};
    if (n < 2 || (int64_t)n * work_per_token < PARALLEL_MIN_WORK) token_worker(&j, 0, 1);
    else sp_threadpool_run(ctx->pool, token_worker, &j);
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
    const size_t elem = kv->type == SP_KV_F32 ? 4 : 2;
    const int64_t q_row = (int64_t)hp->n_head * hp->head_dim_k, out_row = (int64_t)hp->n_head * hp->head_dim_v;
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
            sp_attention_args a = {
                .q = ctx->q + t0 * q_row + head * hp->head_dim_k,
                .keys = (const char *)kv->k[j->il] + (size_t)(kvh * hp->head_dim_k) * elem,
                .values = (const char *)kv->v[j->il] + (size_t)(kvh * hp->head_dim_v) * elem,
                .kv_type = kv->type,
                .stride = kv->k_row,
                .cells = kv->seqs[seq].cells,
                .head_dim_k = hp->head_dim_k,
                .head_dim_v = hp->head_dim_v,
                .scale = hp->attn_scale,
                .softcap = hp->attn_softcap,
                .out = ctx->attn + t0 * out_row + head * hp->head_dim_v,
                .n_q_heads = n_heads,
                .n_tokens = t1 - t0,
                .q_stride = q_row,
                .out_stride = out_row,
                .ranges = ranges,
            };
            ctx->kernels->attention(&a);
            if (ctx->attnq) /* heads of whole blocks (checked at setup): this run's are its own blocks */
                for (int32_t t = t0; t < t1; t++)
                    ctx->kernels->quantize(ctx->attn + t * out_row + head * hp->head_dim_v, n_heads * hp->head_dim_v,
                                           quantized_at(ctx->attnq, out_row, t, head * hp->head_dim_v));
        }
    }
}

/* --- the pass ------------------------------------------------------------------------------- */

/* Token t's k and v into its cache cell. */
static void store_kv(sp_context *ctx, int il, int32_t t) {
    const sp_kv_cache *kv = &ctx->kv;
    const float *k = ctx->k + (int64_t)t * kv->k_row, *v = ctx->v + (int64_t)t * kv->v_row;
    const int64_t cell = ctx->cells[t];
    if (kv->type == SP_KV_F32) {
        memcpy((float *)kv->k[il] + cell * kv->k_row, k, (size_t)kv->k_row * sizeof(float));
        memcpy((float *)kv->v[il] + cell * kv->v_row, v, (size_t)kv->v_row * sizeof(float));
    } else {
        uint16_t *kd = (uint16_t *)kv->k[il] + cell * kv->k_row, *vd = (uint16_t *)kv->v[il] + cell * kv->v_row;
        for (int64_t i = 0; i < kv->k_row; i++) kd[i] = sp_fp32_to_fp16(k[i]);
        for (int64_t i = 0; i < kv->v_row; i++) vd[i] = sp_fp32_to_fp16(v[i]);
    }
}

typedef struct layer_step {
    const sp_layer *ly;
    const sp_batch_token *batch;
    int il;
} layer_step;

/* After the projections, tokens [t0, t1): biases, per-head norms, RoPE,
 * and k and v written to the cache while still in cache themselves. */
static void finish_qkv(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const layer_step *st = arg;
    const sp_layer *ly = st->ly;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, nk = (int64_t)hp->n_head_kv * hp->head_dim_k,
                  nv = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const float freq_scale = hp->arch == SP_ARCH_GEMMA3 && ly->sliding ? 1.f : hp->rope_freq_scale;
    for (int32_t t = t0; t < t1; t++) {
        float *q = ctx->q + t * nq, *k = ctx->k + t * nk, *v = ctx->v + t * nv;
        if (ly->wqkv.data) { /* fused: rows [q | k | v] */
            const float *row = ctx->qkv + t * (nq + nk + nv);
            memcpy(q, row, (size_t)nq * sizeof(float));
            memcpy(k, row + nq, (size_t)nk * sizeof(float));
            memcpy(v, row + nq + nk, (size_t)nv * sizeof(float));
            if (ly->bqkv) {
                add_bias(q, ly->bqkv, 1, nq, nq);
                add_bias(k, ly->bqkv + nq, 1, nk, nk);
                add_bias(v, ly->bqkv + nq + nk, 1, nv, nv);
            }
        } else {
            add_bias(q, ly->bq, 1, nq, nq);
            add_bias(k, ly->bk, 1, nk, nk);
            add_bias(v, ly->bv, 1, nv, nv);
        }
        if (ly->q_norm)
            for (int hh = 0; hh < hp->n_head; hh++) rms_norm(q + hh * hp->head_dim_k, q + hh * hp->head_dim_k, ly->q_norm, hp->head_dim_k, hp->norm_eps);
        if (ly->k_norm)
            for (int hh = 0; hh < hp->n_head_kv; hh++) rms_norm(k + hh * hp->head_dim_k, k + hh * hp->head_dim_k, ly->k_norm, hp->head_dim_k, hp->norm_eps);
        rope(hp, ctx->model->rope_factors, q, hp->n_head, hp->head_dim_k, st->batch[t].pos, ly->rope_base, freq_scale);
        rope(hp, ctx->model->rope_factors, k, hp->n_head_kv, hp->head_dim_k, st->batch[t].pos, ly->rope_base, freq_scale);
        store_kv(ctx, st->il, t);
    }
}

/* q, k, v for every token: projections, then finish_qkv. */
static void attention_inputs(sp_context *ctx, const layer_step *st, int32_t n) {
    const sp_layer *ly = st->ly;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd, nq = (int64_t)hp->n_head * hp->head_dim_k, nk = (int64_t)hp->n_head_kv * hp->head_dim_k,
                  nv = (int64_t)hp->n_head_kv * hp->head_dim_v;
    if (ly->wqkv.data) matmul(ctx, &ly->wqkv, ctx->h, e, ctx->hq, n, ctx->qkv, nq + nk + nv);
    else {
        matmul(ctx, &ly->wq, ctx->h, e, ctx->hq, n, ctx->q, nq);
        matmul(ctx, &ly->wk, ctx->h, e, ctx->hq, n, ctx->k, nk);
        matmul(ctx, &ly->wv, ctx->h, e, ctx->hq, n, ctx->v, nv);
    }
    for_each_token(ctx, n, 8 * (nq + nk), finish_qkv, st);
}

/* The down projection's input for tokens [t0, t1): act(up x + b), or
 * act(gate x) * (up x + b), from where the projections left them, and
 * quantized for it while in cache. */
static void ffn_activation(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = arg;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t f = hp->n_ff;
    const sp_activation act = hp->ffn_kind == SP_FFN_SWIGLU ? SP_ACT_SILU : SP_ACT_GELU;
    for (int32_t t = t0; t < t1; t++) {
        float *a = ctx->ff_a + t * f;
        if (hp->ffn_kind == SP_FFN_GELU) {
            add_bias(a, ly->b_up, 1, f, f);
            ctx->kernels->activation(act, a, NULL, a, f);
        } else if (hp->fused_gate_up) { /* up has rows [gate | up] */
            const float *gu = ctx->ff_b + t * 2 * f;
            ctx->kernels->activation(act, gu, gu + f, a, f);
        } else {
            float *u = ctx->ff_b + t * f;
            add_bias(u, ly->b_up, 1, f, f);
            ctx->kernels->activation(act, a, u, a, f);
        }
        quantize_row(ctx, ctx->ff_aq, a, f, t);
    }
}

/* out[t] = FFN(h[t]) */
static void feed_forward(sp_context *ctx, const sp_layer *ly, int32_t n, float *out) {
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd, f = hp->n_ff;
    if (hp->ffn_kind == SP_FFN_GELU) matmul(ctx, &ly->w_up, ctx->h, e, ctx->hq, n, ctx->ff_a, f); /* down(gelu(up x + b)) */
    else if (hp->fused_gate_up) matmul(ctx, &ly->w_up, ctx->h, e, ctx->hq, n, ctx->ff_b, 2 * f);
    else { /* down(act(gate x) * up x) */
        matmul(ctx, &ly->w_gate, ctx->h, e, ctx->hq, n, ctx->ff_a, f);
        matmul(ctx, &ly->w_up, ctx->h, e, ctx->hq, n, ctx->ff_b, f);
    }
    for_each_token(ctx, n, 16 * f, ffn_activation, ly);
    matmul(ctx, &ly->w_down, ctx->ff_a, f, ctx->ff_aq, n, out, e);
    add_bias(out, ly->b_down, n, e, e);
}

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

/* Row t of h = a norm of x, and its blocks for the matmuls that read it. */
static void norm_into_h(sp_context *ctx, int32_t t, const float *x, const float *w, const float *b) {
    const int64_t e = ctx->model->hp.n_embd;
    norm(&ctx->model->hp, ctx->h + t * e, x, w, b);
    quantize_row(ctx, ctx->hq, ctx->h + t * e, e, t);
}

/* Row t of h = x as it is (post-norm blocks read it unnormed), and its blocks. */
static void copy_into_h(sp_context *ctx, int32_t t, const float *x) {
    const int64_t e = ctx->model->hp.n_embd;
    memcpy(ctx->h + t * e, x, (size_t)e * sizeof(float));
    quantize_row(ctx, ctx->hq, ctx->h + t * e, e, t);
}

/* h = the attention norm of x (post-norm: x itself), for tokens [t0, t1). */
static void attn_norm_stage(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = ((const layer_step *)arg)->ly;
    const int64_t e = ctx->model->hp.n_embd;
    for (int32_t t = t0; t < t1; t++) {
        if (ctx->model->hp.post_norm) copy_into_h(ctx, t, ctx->x + t * e);
        else norm_into_h(ctx, t, ctx->x + t * e, ly->attn_norm, ly->attn_norm_b);
    }
}

/* After the output projection: its bias and norm; then (sequential
 * blocks) x += o and h = the FFN norm of x (and its blocks), in one pass
 * per token. */
static void attn_out_stage(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = ((const layer_step *)arg)->ly;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd;
    for (int32_t t = t0; t < t1; t++) {
        float *o = ctx->o + t * e, *x = ctx->x + t * e;
        add_bias(o, ly->bo, 1, e, e);
        if (ly->post_attn_norm) rms_norm(o, o, ly->post_attn_norm, e, hp->norm_eps);
        if (hp->parallel_block) continue; /* the FFN reads the same h */
        for (int64_t i = 0; i < e; i++) x[i] += o[i];
        if (hp->post_norm) { /* x = norm(x + attention), which the FFN reads */
            norm(hp, x, x, ly->attn_out_norm, ly->attn_out_norm_b);
            copy_into_h(ctx, t, x);
        } else {
            norm_into_h(ctx, t, x, ly->ffn_norm, ly->ffn_norm_b);
        }
    }
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
            if (ly->post_ffn_norm) rms_norm(f, f, ly->post_ffn_norm, e, hp->norm_eps);
            for (int64_t i = 0; i < e; i++) x[i] += f[i];
            if (hp->post_norm) norm(hp, x, x, ly->out_norm, ly->out_norm_b);
        }
    }
}

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
                memcpy(ctx->h + kept * e, ctx->h + t * e, (size_t)e * sizeof(float));
                if (ctx->hq) memcpy(quantized_at(ctx->hq, e, kept, 0), quantized_at(ctx->hq, e, t, 0), (size_t)(e / 32) * SP_ACT_BLOCK_BYTES);
            }
        }
        ctx->kept[kept++] = batch[t];
    }
    return kept;
}

sprout_status sp_forward(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits) {
    return sp_forward_out(ctx, batch, n, logits, NULL);
}

/* x += row `row` of an embedding table (decoded through `scratch`, which
 * holds a row). */
static void add_embedding_row(const sp_weight *w, int32_t row, float *x, float *scratch) {
    sp_type_traits_of(w->type)->dequantize(w->data + (size_t)row * w->row_bytes, scratch, w->n_in);
    for (int64_t i = 0; i < w->n_in; i++) x[i] += scratch[i];
}

sprout_status sp_forward_out(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits, float *embd) {
    sprout_status st = check_batch(ctx, batch, n, logits != NULL);
    if (st != SPROUT_OK) return st;
    const sprout_model *m = ctx->model;
    const sp_hparams *hp = &m->hp;
    const int64_t e = hp->n_embd;

    /* cells first: a token attends to the earlier tokens of its own batch */
    int32_t appended = 0;
    for (; appended < n; appended++)
        if ((st = sp_kv_append(&ctx->kv, batch[appended].seq, batch[appended].pos, &ctx->cells[appended])) != SPROUT_OK) break;
    if (st != SPROUT_OK) {
        for (int32_t t = appended - 1; t >= 0; t--) sp_kv_truncate(&ctx->kv, batch[t].seq, ctx->kv.seqs[batch[t].seq].n - 1);
        return st;
    }

    /* x[n][e] = embedding rows (times sqrt(e) for gemma) */
    const sp_type_traits *et = sp_type_traits_of(m->tok_embd.type);
    for (int32_t t = 0; t < n; t++) {
        float *x = ctx->x + t * e;
        et->dequantize(m->tok_embd.data + (size_t)batch[t].token * m->tok_embd.row_bytes, x, e);
        if (hp->embd_scale != 1.f)
            for (int64_t i = 0; i < e; i++) x[i] *= hp->embd_scale;
        /* BERT: plus its position's row and token type 0's, then a norm */
        if (m->pos_embd.data) add_embedding_row(&m->pos_embd, batch[t].pos, x, ctx->scratch);
        if (m->type_embd.data) add_embedding_row(&m->type_embd, 0, x, ctx->scratch);
        if (m->embd_norm) norm(hp, x, x, m->embd_norm, m->embd_norm_b);
    }

    const sp_batch_token *layer_batch = batch;
    for (int32_t t = 0; t < n; t++) ctx->row_prompt[t] = batch[t].prompt;
    for (int il = 0; il < hp->n_layer; il++) {
        layer_step step = {&m->layers[il], layer_batch, il};
        for_each_token(ctx, n, 2 * e, attn_norm_stage, &step);
        attention_inputs(ctx, &step, n);
        if (il == hp->n_layer - 1) { /* every token's k and v are in the cache now */
            n = keep_output_rows(ctx, batch, n, logits != NULL, embd != NULL);
            if (n == 0) return SPROUT_OK;
            step.batch = layer_batch = ctx->kept;
            for (int32_t t = 0; t < n; t++) ctx->row_prompt[t] = layer_batch[t].prompt;
        }
        attention_job aj = {ctx, layer_batch, n, il};
        const int64_t attn_work = (int64_t)n * hp->n_head * hp->head_dim_k * (ctx->kv.n_cells - ctx->kv.n_free);
        if (attn_work < PARALLEL_MIN_WORK) attention_worker(&aj, 0, 1);
        else sp_threadpool_run(ctx->pool, attention_worker, &aj);
        matmul(ctx, &step.ly->wo, ctx->attn, (int64_t)hp->n_head * hp->head_dim_v, ctx->attnq, n, ctx->o, e);
        for_each_token(ctx, n, 4 * e, attn_out_stage, &step);
        /* parallel blocks: x += attn(h) + ffn(h); otherwise x += ffn(norm x) after x += attn */
        feed_forward(ctx, step.ly, n, ctx->ff_out);
        for_each_token(ctx, n, 2 * e, ffn_out_stage, &step);
    }

    /* hidden states for the tokens that want them: the final norm, written out */
    int32_t n_embd_rows = 0;
    for (int32_t t = 0; t < n && embd; t++)
        if (layer_batch[t].embd) {
            float *row = embd + (size_t)n_embd_rows++ * (size_t)e;
            if (m->output_norm) norm(hp, row, ctx->x + t * e, m->output_norm, m->output_norm_b);
            else memcpy(row, ctx->x + t * e, (size_t)e * sizeof(float)); /* post-norm blocks end normed */
        }
    /* logits for the tokens that want them: gather, norm, project */
    int32_t n_out = 0;
    for (int32_t t = 0; t < n && logits; t++)
        if (layer_batch[t].logits) {
            ctx->row_prompt[n_out] = layer_batch[t].prompt;
            norm_into_h(ctx, n_out++, ctx->x + t * e, m->output_norm, m->output_norm_b);
        }
    if (n_out > 0 && logits) {
        matmul(ctx, &m->output, ctx->h, e, ctx->hq, n_out, logits, hp->n_vocab);
        add_bias(logits, m->output_b, n_out, hp->n_vocab, hp->n_vocab);
        if (hp->final_softcap > 0.f)
            for (int64_t i = 0; i < (int64_t)n_out * hp->n_vocab; i++)
                logits[i] = hp->final_softcap * tanhf(logits[i] / hp->final_softcap);
    }
    return SPROUT_OK;
}

/* --- setup --------------------------------------------------------------------------------- */

/* Activation buffers start on a cache line: a vector load that straddles
 * two lines costs two (F16 decode at 1 thread: 8.5 -> 9.8 tokens/s when its
 * 16-byte-aligned x moved to a line). */
static void *alloc_lines(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

sprout_status sp_context_init(sp_context *ctx, const sprout_model *model, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                              int n_threads, sp_kv_type kv_type) {
    memset(ctx, 0, sizeof *ctx);
    const sp_hparams *hp = &model->hp;
    ctx->model = model;
    ctx->kernels = sp_kernels_get();
    ctx->n_batch = n_batch;
    sprout_status st = sp_threadpool_create(n_threads, &ctx->pool);
    if (st != SPROUT_OK) return st;
    const int64_t kv_k = (int64_t)hp->n_head_kv * hp->head_dim_k, kv_v = (int64_t)hp->n_head_kv * hp->head_dim_v;
    if (kv_k != kv_v) {
        sp_threadpool_free(ctx->pool);
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: key and value head sizes differ (%d, %d)", hp->arch_name, hp->head_dim_k, hp->head_dim_v);
    }
    if ((st = sp_kv_init(&ctx->kv, kv_type, n_ctx, hp->n_layer, n_seq, kv_k, kv_v)) != SPROUT_OK) {
        sp_threadpool_free(ctx->pool);
        return st;
    }
    const int64_t nb = n_batch, e = hp->n_embd, f = hp->n_ff;
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, na = (int64_t)hp->n_head * hp->head_dim_v;
    ctx->x = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->h = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->o = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->ff_out = alloc_lines((size_t)(nb * e) * sizeof(float));
    ctx->q = alloc_lines((size_t)(nb * nq) * sizeof(float));
    ctx->k = alloc_lines((size_t)(nb * kv_k) * sizeof(float));
    ctx->v = alloc_lines((size_t)(nb * kv_v) * sizeof(float));
    ctx->qkv = alloc_lines((size_t)(nb * (nq + kv_k + kv_v)) * sizeof(float));
    ctx->attn = alloc_lines((size_t)(nb * na) * sizeof(float));
    ctx->ff_a = alloc_lines((size_t)(nb * f) * sizeof(float));
    ctx->ff_b = alloc_lines((size_t)(nb * 2 * f) * sizeof(float));
    ctx->cells = alloc_lines((size_t)nb * sizeof(int32_t));
    ctx->kept = alloc_lines((size_t)nb * sizeof *ctx->kept);
    ctx->row_prompt = alloc_lines((size_t)nb * sizeof *ctx->row_prompt);
    bool quantized_ok = true;
    if (ctx->kernels->quantize) {
        /* a row of width w is w / 32 blocks; attention quantizes each run of heads, so a head must be whole blocks */
#define BLOCKS_BYTES(width) ((size_t)nb * (size_t)((width) / 32) * SP_ACT_BLOCK_BYTES)
        if (e % 32 == 0) quantized_ok &= (ctx->hq = alloc_lines(BLOCKS_BYTES(e))) != NULL;
        if (hp->head_dim_v % 32 == 0) quantized_ok &= (ctx->attnq = alloc_lines(BLOCKS_BYTES(na))) != NULL;
        if (f % 32 == 0) quantized_ok &= (ctx->ff_aq = alloc_lines(BLOCKS_BYTES(f))) != NULL;
#undef BLOCKS_BYTES
    }
    int64_t widest = e > f ? e : f;
    if (na > widest) widest = na;
    ctx->scratch_stride = (sp_matmul_scratch_floats(widest) + 15) / 16 * 16; /* each thread's on a line */
    ctx->scratch = alloc_lines((size_t)(ctx->scratch_stride * sp_threadpool_size(ctx->pool)) * sizeof(float));
    /* a batch's prompt tokens staged for the widest rows the prompt entry takes, in a run per sequence */
    if (ctx->kernels->stage_prompt && sp_threadpool_size(ctx->pool) > 1 && sp_context_kinds_differ(ctx)) {
        ctx->staged_capacity = most_staged_bytes(ctx, nb, n_seq);
        quantized_ok &= (ctx->staged = alloc_lines(ctx->staged_capacity)) != NULL;
    }
    if (!ctx->x || !ctx->h || !ctx->o || !ctx->ff_out || !ctx->q || !ctx->k || !ctx->v || !ctx->qkv || !ctx->attn || !ctx->ff_a ||
        !ctx->ff_b || !ctx->cells || !ctx->kept || !ctx->row_prompt || !ctx->scratch || !quantized_ok) {
        sp_context_free(ctx);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for activations (batch of %d)", n_batch);
    }
    return SPROUT_OK;
}

void sp_context_free(sp_context *ctx) {
    if (!ctx) return;
    sp_threadpool_free(ctx->pool);
    sp_kv_free(&ctx->kv);
    float *bufs[] = {ctx->x, ctx->h, ctx->o, ctx->ff_out, ctx->q, ctx->k, ctx->v, ctx->qkv, ctx->attn, ctx->ff_a, ctx->ff_b, ctx->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(ctx->cells);
    free(ctx->kept);
    free(ctx->row_prompt);
    free(ctx->staged);
    free(ctx->hq);
    free(ctx->attnq);
    free(ctx->ff_aq);
    memset(ctx, 0, sizeof *ctx);
}
