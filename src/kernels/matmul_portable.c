/* Matrix times activations, any weight type: each weight row is decoded
 * once into scratch (never the whole matrix) and dotted with every token's
 * activations, so prefill batches reuse the decode. */
#include "kernels/kernels.h"
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

void sp_matmul_portable(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                        int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    (void)xq; /* floats only: this table has no quantize */
    const sp_type_traits *t = sp_type_traits_of(w->type);
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = w->data + (size_t)o * w->row_bytes;
        const float *r;
        if (w->type == SPROUT_TYPE_F32 && ((uintptr_t)row & 3) == 0) {
            r = (const float *)row; /* aligned F32 rows are used in place */
        } else {
            t->dequantize(row, scratch, w->n_in);
            r = scratch;
        }
        for (int64_t tk = 0; tk < n_tokens; tk++) y[tk * y_stride + o] = dot(r, x + tk * x_stride, w->n_in);
    }
}
