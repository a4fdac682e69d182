#include "runtime/lora_apply.h"

#include "runtime/parallel.h"

/* Rows of B computed at a time into a buffer on the stack, then scaled
 * into y; a multiple of the kernels' 32-row tiles. */
enum { B_ROWS_AT_ONCE = 256 };

typedef struct lora_job {
    const sp_context *ctx;
    int64_t index; /* w's index among the model's weights */
    const float *x;
    float *y;
    int64_t n_in, n_out;
    int32_t n;
} lora_job;

/* Rows [o0, o1) of y += s B (A x) for one token, through the level's
 * matmul, as every projection is computed: one token at a time, so its
 * bits do not depend on the batch, and a row's sums do not depend on which
 * rows a call computes, so neither on the thread. scratch is the thread's
 * kernel scratch, which holds any of the model's rows (and r <= n_in:
 * model/lora.c). */
static void apply_pair(const sp_kernels *k, const sp_lora_pair *p, float s, const float *x, float *y, int64_t o0, int64_t o1,
                       float *scratch) {
    float ax[SP_LORA_MAX_RANK], part[B_ROWS_AT_ONCE];
    const int64_t r = p->a.n_out;
    k->matmul(&p->a, x, p->a.n_in, NULL, 1, ax, r, 0, r, scratch);
    for (int64_t c0 = o0; c0 < o1; c0 += B_ROWS_AT_ONCE) {
        const int64_t rows = o1 - c0 < B_ROWS_AT_ONCE ? o1 - c0 : B_ROWS_AT_ONCE;
        sp_weight b = p->b; /* its rows [c0, c0 + rows) */
        b.data += (size_t)c0 * b.row_bytes;
        b.n_out = rows;
        k->matmul(&b, ax, r, NULL, 1, part, rows, 0, rows, scratch);
        for (int64_t o = 0; o < rows; o++) y[c0 + o] += s * part[o];
    }
}

/* Row t's adapters for this weight, its rows [o0, o1), on thread ith. */
static void apply_row(const lora_job *j, int64_t t, int64_t o0, int64_t o1, int ith) {
    const sp_lora_set *set = j->ctx->rows[t].lora;
    if (!set) return;
    float *scratch = j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride;
    for (size_t u = 0; u < set->n; u++) {
        const sp_lora_pair *p = &set->uses[u].adapter->pairs[j->index];
        if (p->a.data)
            apply_pair(j->ctx->kernels, p, set->uses[u].scale * p->alpha_over_rank, j->x + t * j->n_in, j->y + t * j->n_out, o0, o1,
                       scratch);
    }
}

/* Several tokens: each thread takes whole tokens. */
static void tokens_worker(void *user, int ith, int nth) {
    const lora_job *j = user;
    int64_t t0, t1;
    sp_split_range(j->n, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) apply_row(j, t, 0, j->n_out, ith);
}

/* One token (decode): each thread takes a share of B's rows, in whole
 * tiles of 32; each computes A x itself (r dot products: little). */
static void rows_worker(void *user, int ith, int nth) {
    const lora_job *j = user;
    int64_t c0, c1;
    sp_split_range((j->n_out + 31) / 32, ith, nth, &c0, &c1);
    const int64_t o0 = 32 * c0, o1 = 32 * c1 < j->n_out ? 32 * c1 : j->n_out;
    if (o0 < o1) apply_row(j, 0, o0, o1, ith);
}

void sp_lora_apply(const sp_context *ctx, const sp_weight *w, const float *x, float *y, int32_t n) {
    bool any = false;
    for (int32_t t = 0; t < n && !any; t++) any = ctx->rows[t].lora && ctx->rows[t].lora->n > 0;
    if (!any) return;
    const int64_t index = sp_model_weight_index(ctx->model, w);
    if (index < 0) return;
    lora_job j = {.ctx = ctx, .index = index, .x = x, .y = y, .n_in = w->n_in, .n_out = w->n_out, .n = n};
    sp_threadpool_run(ctx->pool, n == 1 ? rows_worker : tokens_worker, &j);
}
