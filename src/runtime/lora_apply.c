#include "runtime/lora_apply.h"

#include "quant/quant.h"
#include "runtime/parallel.h"

typedef struct lora_job {
    const sp_context *ctx;
    int64_t index; /* w's index among the model's weights */
    const float *x;
    float *y;
    int64_t n_in, n_out;
    int32_t n;
} lora_job;

static float dot(const float *a, const float *b, int64_t n) {
    float s = 0.f;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* v as the matmul of llama.cpp's CPU backend reads it against a matrix of
 * `type`: rounded to F16 or BF16 for those, through Q8_0 blocks for the
 * quantized types (ggml's vec_dot_type; Q8_1 and Q8_K round alike to within
 * their scales), unchanged for F32. The adapters' terms then round as
 * llama.cpp's do, which keeps greedy tokens equal near ties. tmp holds n
 * floats; returns v or out. */
static const float *as_ggml_reads(sprout_type type, const float *v, float *out, int64_t n, void *tmp) {
    if (type == SPROUT_TYPE_F32) return v;
    const sprout_type via = type == SPROUT_TYPE_F16 || type == SPROUT_TYPE_BF16 || n % 32 ? (type == SPROUT_TYPE_BF16 ? type : SPROUT_TYPE_F16)
                                                                                       : SPROUT_TYPE_Q8_0;
    const sp_type_traits *t = sp_type_traits_of(via);
    t->quantize_ref(v, tmp, n);
    t->dequantize(tmp, out, n);
    return out;
}

/* y += s B (A x) for one token. A's rows are decoded one at a time into the
 * thread's scratch (room for 17 weight rows: kernels.h), B's (r wide) on
 * the stack. The sums run in a fixed order over this token alone, so its
 * bits do not depend on the batch or on which thread computes it. */
static void apply_pair(const sp_lora_pair *p, float s, const float *x, float *y, float *scratch) {
    float ax[SP_LORA_MAX_RANK], ax_read[SP_LORA_MAX_RANK], brow[SP_LORA_MAX_RANK];
    const sp_type_traits *ta = sp_type_traits_of(p->a.type), *tb = sp_type_traits_of(p->b.type);
    const int64_t r = p->a.n_out, n_in = p->a.n_in;
    float *arow = scratch, *x_read = scratch + n_in, *tmp = scratch + 2 * n_in;
    x = as_ggml_reads(p->a.type, x, x_read, n_in, tmp);
    for (int64_t j = 0; j < r; j++) {
        ta->dequantize(p->a.data + (size_t)j * p->a.row_bytes, arow, n_in);
        ax[j] = dot(arow, x, n_in);
    }
    const float *axr = as_ggml_reads(p->b.type, ax, ax_read, r, brow);
    for (int64_t o = 0; o < p->b.n_out; o++) {
        tb->dequantize(p->b.data + (size_t)o * p->b.row_bytes, brow, r);
        y[o] += s * dot(brow, axr, r);
    }
}

/* Each thread takes whole tokens: a token's term is computed by one thread. */
static void lora_worker(void *user, int ith, int nth) {
    const lora_job *j = user;
    float *scratch = j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride;
    int64_t t0, t1;
    sp_split_range(j->n, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        const sp_lora_set *set = j->ctx->rows[t].lora;
        if (!set) continue;
        for (size_t u = 0; u < set->n; u++) {
            const sp_lora_pair *p = &set->uses[u].lora->pairs[j->index];
            if (p->a.data) apply_pair(p, set->uses[u].scale * p->alpha_over_rank, j->x + t * j->n_in, j->y + t * j->n_out, scratch);
        }
    }
}

void sp_lora_apply(const sp_context *ctx, const sp_weight *w, const float *x, float *y, int32_t n) {
    bool any = false;
    for (int32_t t = 0; t < n && !any; t++) any = ctx->rows[t].lora && ctx->rows[t].lora->n > 0;
    if (!any) return;
    const int64_t index = sp_model_weight_index(ctx->model, w);
    if (index < 0) return;
    lora_job j = {.ctx = ctx, .index = index, .x = x, .y = y, .n_in = w->n_in, .n_out = w->n_out, .n = n};
    if (n == 1) lora_worker(&j, 0, 1);
    else sp_threadpool_run(ctx->pool, lora_worker, &j);
}
