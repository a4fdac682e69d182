/* The one call every projection of the forward pass makes: y = W x for a
 * batch's rows. Behind it: the split of the weight's rows among the
 * threads, the prompt runs staged for the level's prompt entry, and the
 * choice of kernel entry per run of tokens. What a projection adds to W x
 * (an adapter's low-rank term) belongs here, once. */
#ifndef SPROUT_RUNTIME_MATMUL_H
#define SPROUT_RUNTIME_MATMUL_H

#include "runtime/context.h"

/* y[t][0..w->n_out) = W x[t] for tokens t in [0, n): x's rows are w->n_in
 * wide, y's w->n_out; row t is ctx->rows[t]'s (a prompt's, its adapters). */
void sp_matmul(const sp_context *ctx, const sp_weight *w, const sp_rows *x, float *y, int32_t n);

/* One projection of several that sp_matmul_parts runs together. */
typedef struct sp_matmul_part {
    const sp_weight *w;
    const sp_rows *x;
    float *y;
    int32_t n;
    /* the batch entries of x's rows; NULL: ctx->rows (the batch's own,
     * whose adapters' terms are added as sp_matmul adds them). A part with
     * rows of its own (a gathered expert's) gets no adapter terms: its
     * caller adds them (sp_lora_apply_expert). */
    const sp_batch_token *rows;
} sp_matmul_part;

/* sp_matmul of each part, the same numbers: a decode batch's parts in one
 * run of the pool, their output rows handed out among the threads as one
 * matrix's (a layer's q, k and v; gate and up; the experts a token chose),
 * one hand-off instead of one per projection. Decode speed moved within
 * the host's noise (bench/RESULTS.md). Prompts go a part at a time. */
void sp_matmul_parts(const sp_context *ctx, const sp_matmul_part *parts, int n_parts);

/* Rows [o0, o1) of the same for n tokens whose x and y rows lie x_stride
 * and y_stride floats apart, on the calling thread (thread ith of the
 * pool, for its scratch): for a caller that hands out several weights'
 * rows in one run of the pool (runtime/mla.c's heads). Each token goes
 * through the kernel entry sp_matmul would give it, so a row's numbers
 * are sp_matmul's; no adapter terms (a slice of a 3-D weight has none),
 * and x's int8 blocks made in the call (the kernels' own quantize). */
void sp_matmul_rows(const sp_context *ctx, const sp_weight *w, const float *x, int64_t x_stride, float *y, int64_t y_stride, int32_t n,
                    int64_t o0, int64_t o1, int ith);

/* Row t of rows.f32 (width elements) into its quantized blocks, where the
 * activation is made, while it is in cache. Nothing where rows has none. */
void sp_rows_quantize(const sp_context *ctx, const sp_rows *rows, int64_t width, int32_t t);

#endif
