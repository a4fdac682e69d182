/* Matrix times activations, any weight type: each weight row is decoded
 * once into scratch (never the whole matrix) and dotted with every token's
 * activations, so prefill batches reuse the decode. F16 and BF16 rows meet
 * the activations rounded to their format (kernels.h), a block of tokens at
 * a time. */
#include "kernels/kernels.h"
#include "quant/fp16.h"
#include "quant/quant.h"

static float dot(const float *a, const float *b, int64_t n) {
    /* four partial sums: fewer dependencies, and the compiler vectorises it */
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

void sp_matmul_float_rows(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride,
                          int64_t o0, int64_t o1, float *scratch, float (*dot_fn)(const float *w, const float *x, int64_t n)) {
    const sp_type_traits *t = sp_type_traits_of(w->type);
    const bool round_x = w->type == SPROUT_TYPE_F16 || w->type == SPROUT_TYPE_BF16;
    float *const rounded = scratch + w->n_in; /* after the decoded row */
    const int64_t block = round_x ? (sp_matmul_level_scratch_floats(w->n_in) - w->n_in) / w->n_in : n_tokens;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += block) {
        const int64_t tn = n_tokens - t0 < block ? n_tokens - t0 : block;
        const float *xb = x + t0 * x_stride;
        int64_t xb_stride = x_stride;
        if (round_x) {
            for (int64_t tk = 0; tk < tn; tk++)
                for (int64_t i = 0; i < w->n_in; i++) rounded[tk * w->n_in + i] =
                        w->type == SPROUT_TYPE_F16 ? sp_fp16_round(xb[tk * x_stride + i]) : sp_bf16_round(xb[tk * x_stride + i]);
            xb = rounded;
            xb_stride = w->n_in;
        }
        for (int64_t o = o0; o < o1; o++) {
            const uint8_t *row = w->data + (size_t)o * w->row_bytes;
            const float *r;
            if (w->type == SPROUT_TYPE_F32 && ((uintptr_t)row & 3) == 0) {
                r = (const float *)row; /* aligned F32 rows are used in place */
            } else {
                t->dequantize(row, scratch, w->n_in);
                r = scratch;
            }
            for (int64_t tk = 0; tk < tn; tk++) y[(t0 + tk) * y_stride + o] = dot_fn(r, xb + tk * xb_stride, w->n_in);
        }
    }
}

void sp_matmul_portable(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                        int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    (void)xq; /* floats only: this table has no quantize */
    sp_matmul_float_rows(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch, dot);
}
