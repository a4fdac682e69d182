/* Matmul for 64-bit Arm with NEON and the dot-product extension (compiled
 * with +dotprod here only; dispatch.c calls it only when the CPU says so):
 * neon_matmul.h's, one row and one token at a time. */
#include "kernels/neon_matmul.h"

static inline __attribute__((always_inline)) bool rows_by_pairs(sprout_type type, const sp_weight *w, int64_t o, int64_t o1, int64_t tn,
                                                                int64_t nb, void *decoded, size_t decoded_bytes, const act_view *views,
                                                                float *y, int64_t y_stride, int64_t t0) {
    (void)type, (void)w, (void)o, (void)o1, (void)tn, (void)nb, (void)decoded, (void)decoded_bytes, (void)views, (void)y, (void)y_stride, (void)t0;
    return false;
}

/* one quantize for both NEON levels: the blocks are the same */
void sp_quantize_neon(const float *x, int64_t n, void *out) { quantize_activations(x, n, out); }

void sp_matmul_neon(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y, int64_t y_stride,
                    int64_t o0, int64_t o1, float *scratch) {
    matmul_neon(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch, false);
}
