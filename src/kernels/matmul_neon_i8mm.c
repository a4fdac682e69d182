/* Matmul for 64-bit Arm with NEON, the dot-product extension and the int8
 * matrix multiply (compiled with +dotprod+i8mm here only): neon_matmul.h's,
 * with two rows by two tokens per smmla, the same sums as sdot's. */
#include "kernels/neon_matmul.h"

/* Rows r0, r1 against tokens t, t + 1 (x: token t, whose pair holds
 * both), by smmla: each block's four sums (r0 t, r0 t+1, r1 t, r1 t+1) in
 * one vector, transposed per unit into each pair's four block sums, which
 * then go exactly as in dot_row. out[2 r + k]: row r, token t + k. */
static void dot_rows2x2(sprout_type type, const row_source *r0, const row_source *r1, const act_view *x0, const act_view *x1, int64_t nb,
                        float out[4]) {
    const bool split = sp_scale_per_16(type), k_quant = is_k_quant(type);
    const bool mins = has_mins(type);
    float32x4_t acc[4], macc[4];
    for (int p = 0; p < 4; p++) acc[p] = macc[p] = vdupq_n_f32(0.f);
    for (int64_t u = 0; 4 * u < nb; u++) {
        int32x4_t lo[4], hi[4];
        for (int i = 0; i < 4; i++) {
            const int64_t b = 4 * u + i;
            int8x16_t lo0, hi0, lo1, hi1;
            source_levels(type, r0, b, nb, &lo0, &hi0);
            source_levels(type, r1, b, nb, &lo1, &hi1);
            const int8_t *y = x0->pair + 64 * b;
            const int64x2_t l0 = vreinterpretq_s64_s8(lo0), l1 = vreinterpretq_s64_s8(lo1);
            const int64x2_t h0 = vreinterpretq_s64_s8(hi0), h1 = vreinterpretq_s64_s8(hi1);
            lo[i] = vmmlaq_s32(vdupq_n_s32(0), vreinterpretq_s8_s64(vzip1q_s64(l0, l1)), vld1q_s8(y));
            lo[i] = vmmlaq_s32(lo[i], vreinterpretq_s8_s64(vzip2q_s64(l0, l1)), vld1q_s8(y + 16));
            hi[i] = vmmlaq_s32(split ? vdupq_n_s32(0) : lo[i], vreinterpretq_s8_s64(vzip1q_s64(h0, h1)), vld1q_s8(y + 32));
            hi[i] = vmmlaq_s32(hi[i], vreinterpretq_s8_s64(vzip2q_s64(h0, h1)), vld1q_s8(y + 48));
            if (!split) lo[i] = hi[i];
        }
        /* lo[i] lane p: block 4u + i of pair p; sums[p] lane i: the same */
        int32x4_t sums[4], sums_hi[4];
        for (int half = 0; half < (split ? 2 : 1); half++) {
            const int32x4_t *c = half ? hi : lo;
            int32x4_t *t = half ? sums_hi : sums;
            const int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(c[0], c[1])), t1 = vreinterpretq_s64_s32(vtrn2q_s32(c[0], c[1]));
            const int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(c[2], c[3])), t3 = vreinterpretq_s64_s32(vtrn2q_s32(c[2], c[3]));
            t[0] = vreinterpretq_s32_s64(vzip1q_s64(t0, t2)), t[1] = vreinterpretq_s32_s64(vzip1q_s64(t1, t3));
            t[2] = vreinterpretq_s32_s64(vzip2q_s64(t0, t2)), t[3] = vreinterpretq_s32_s64(vzip2q_s64(t1, t3));
        }
        const unit_scales s[2] = {source_scales(type, r0, u, nb), source_scales(type, r1, u, nb)};
        const float32x4_t a[2] = {vld1q_f32(x0->a + 4 * u), vld1q_f32(x1->a + 4 * u)};
        for (int p = 0; p < 4; p++) {
            const unit_scales *sr = &s[p / 2];
            const int32x4_t v = k_quant ? scaled_sums(sums[p], split ? sums_hi[p] : sums[p], sr, split) : sums[p];
            acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(v), vmulq_f32(sr->w, a[p % 2]));
            if (mins) macc[p] = add_mins(type, macc[p], sr, p % 2 ? x1 : x0, u);
        }
    }
    for (int p = 0; p < 4; p++) out[p] = mins ? sum4(acc[p]) + sum4(macc[p]) : sum4(acc[p]);
}

/* Two rows at once, by token pairs (an odd token alone), where there are
 * two rows and two tokens. */
static inline __attribute__((always_inline)) bool rows_by_pairs(sprout_type type, const sp_weight *w, int64_t o, int64_t o1, int64_t tn,
                                                                int64_t nb, void *decoded, size_t decoded_bytes, const act_view *views,
                                                                float *y, int64_t y_stride, int64_t t0) {
    if (o + 1 >= o1 || tn < 2) return false;
    const uint8_t *row = w->data + (size_t)o * w->row_bytes;
    const row_source direct = {row, NULL, NULL};
    const uint8_t *next = row + w->row_bytes;
    /* rows that meet more than one pair are decoded once */
    const bool decode = tn > 2 && decoded;
    const row_source r0 = decode ? decode_row(type, row, nb, decoded) : direct;
    const row_source r1 = decode ? decode_row(type, next, nb, (char *)decoded + decoded_bytes) : (row_source){next, NULL, NULL};
    for (int64_t t = 0; t < tn; t += 2) {
        if (t + 1 < tn) {
            float out[4];
            dot_rows2x2(type, &r0, &r1, &views[t], &views[t + 1], nb, out);
            y[(t0 + t) * y_stride + o] = out[0], y[(t0 + t + 1) * y_stride + o] = out[1];
            y[(t0 + t) * y_stride + o + 1] = out[2], y[(t0 + t + 1) * y_stride + o + 1] = out[3];
        } else {
            y[(t0 + t) * y_stride + o] = dot_row(type, &r0, &views[t], nb);
            y[(t0 + t) * y_stride + o + 1] = dot_row(type, &r1, &views[t], nb);
        }
    }
    return true;
}

void sp_matmul_neon_i8mm(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y, int64_t y_stride,
                         int64_t o0, int64_t o1, float *scratch) {
    matmul_neon(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch, true);
}
