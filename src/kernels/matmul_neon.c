/* Matmul for 64-bit Arm with NEON and the dot-product extension (compiled
 * with +dotprod here only; dispatch.c calls it only when the CPU says so).
 *
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K weights are dotted in
 * int8 (sdot) against the activations quantized to 8-bit blocks of 32
 * (by the caller, or once per call); each block's (or sub-block's) sum is exact in int32 and
 * scaled in float. Other types decode a row once and use float dots with
 * four fixed accumulators. Every token's arithmetic is the same however
 * many tokens the call has: outputs do not depend on the batch. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

typedef struct act_block {
    float d;
    int32_t sum; /* of qs: for the K-quants' mins */
    int8_t qs[32];
} act_block;
_Static_assert(sizeof(act_block) == SP_ACT_BLOCK_BYTES, "the size kernels.h promises");

/* 32 floats to int8 with one scale: the largest magnitude maps to 127. */
static void quantize_activations(const float *x, int64_t n, act_block *q) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float32x4_t v[8], m = vdupq_n_f32(0.f);
        for (int k = 0; k < 8; k++) {
            v[k] = vld1q_f32(x + 4 * k);
            m = vmaxq_f32(m, vabsq_f32(v[k]));
        }
        const float max_abs = vmaxvq_f32(m);
        /* blocks too small to scale (127 / max_abs would overflow) count as zero */
        const float id = max_abs >= 1e-30f ? 127.f / max_abs : 0.f;
        q[b].d = max_abs / 127.f;
        for (int k = 0; k < 8; k += 2) {
            const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[k], id)), c = vcvtnq_s32_f32(vmulq_n_f32(v[k + 1], id));
            const int16x8_t h = vcombine_s16(vqmovn_s32(a), vqmovn_s32(c));
            vst1_s8(q[b].qs + 4 * k, vqmovn_s16(h));
        }
        q[b].sum = vaddlvq_s16(vaddq_s16(vmovl_s8(vld1_s8(q[b].qs)), vmovl_s8(vld1_s8(q[b].qs + 8)))) +
                   vaddlvq_s16(vaddq_s16(vmovl_s8(vld1_s8(q[b].qs + 16)), vmovl_s8(vld1_s8(q[b].qs + 24))));
    }
}

/* A weight block's 32 levels as two signed 16-byte halves. */
static inline void levels_q8_0(const sp_block_q8_0 *blk, int8x16_t *lo, int8x16_t *hi) {
    *lo = vld1q_s8(blk->qs);
    *hi = vld1q_s8(blk->qs + 16);
}

static inline void levels_q4_0(const sp_block_q4_0 *blk, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t packed = vld1q_u8(blk->qs), eight = vdupq_n_u8(8);
    *lo = vreinterpretq_s8_u8(vsubq_u8(vandq_u8(packed, vdupq_n_u8(0x0F)), eight));
    *hi = vreinterpretq_s8_u8(vsubq_u8(vshrq_n_u8(packed, 4), eight));
}

/* 16 of a block's fifth bits (two bytes of qh) as 16 in the bytes whose
 * bit is set: element i takes bit i. */
static inline uint8x16_t fifth_bits16(const uint8_t two[2]) {
    static const uint8_t bit_of[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bytes = vcombine_u8(vdup_n_u8(two[0]), vdup_n_u8(two[1]));
    return vandq_u8(vtstq_u8(bytes, vld1q_u8(bit_of)), vdupq_n_u8(16));
}

/* Unsigned 4-bit levels (elements 0..15 the low nibbles, 16..31 the high
 * ones), with the fifth bits from qh where there are some. */
static inline void levels_packed(const uint8_t *qs, const uint8_t *qh, uint8x16_t *lo, uint8x16_t *hi) {
    const uint8x16_t packed = vld1q_u8(qs);
    *lo = vandq_u8(packed, vdupq_n_u8(0x0F));
    *hi = vshrq_n_u8(packed, 4);
    if (qh) {
        *lo = vorrq_u8(*lo, fifth_bits16(qh));
        *hi = vorrq_u8(*hi, fifth_bits16(qh + 2));
    }
}

/* One row against one token: per block an exact int32 sum, scaled in
 * float, two accumulators (even and odd blocks) joined at the end; the
 * types with a min (x = d*q + m) add m times the activations' sum. */
static float dot_row(sprout_type type, const uint8_t *row, const act_block *a, int64_t nb) {
    float32x4_t acc[2] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
    float mins = 0.f;
    for (int64_t b = 0; b < nb; b++) {
        int8x16_t lo, hi;
        uint8x16_t ulo, uhi;
        uint16_t d16, m16 = 0;
        switch (type) {
        case SPROUT_TYPE_Q8_0: {
            const sp_block_q8_0 *blk = (const sp_block_q8_0 *)row + b;
            levels_q8_0(blk, &lo, &hi);
            d16 = blk->d;
            break;
        }
        case SPROUT_TYPE_Q4_0: {
            const sp_block_q4_0 *blk = (const sp_block_q4_0 *)row + b;
            levels_q4_0(blk, &lo, &hi);
            d16 = blk->d;
            break;
        }
        case SPROUT_TYPE_Q5_0: { /* levels 0..31 less 16 fit int8 */
            const sp_block_q5_0 *blk = (const sp_block_q5_0 *)row + b;
            levels_packed(blk->qs, blk->qh, &ulo, &uhi);
            lo = vsubq_s8(vreinterpretq_s8_u8(ulo), vdupq_n_s8(16));
            hi = vsubq_s8(vreinterpretq_s8_u8(uhi), vdupq_n_s8(16));
            d16 = blk->d;
            break;
        }
        case SPROUT_TYPE_Q4_1: {
            const sp_block_q4_1 *blk = (const sp_block_q4_1 *)row + b;
            levels_packed(blk->qs, NULL, &ulo, &uhi);
            lo = vreinterpretq_s8_u8(ulo), hi = vreinterpretq_s8_u8(uhi);
            d16 = blk->d, m16 = blk->m;
            break;
        }
        default: { /* Q5_1 */
            const sp_block_q5_1 *blk = (const sp_block_q5_1 *)row + b;
            levels_packed(blk->qs, blk->qh, &ulo, &uhi);
            lo = vreinterpretq_s8_u8(ulo), hi = vreinterpretq_s8_u8(uhi);
            d16 = blk->d, m16 = blk->m;
            break;
        }
        }
        int32x4_t s = vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8(a[b].qs));
        s = vdotq_s32(s, hi, vld1q_s8(a[b].qs + 16));
        acc[b & 1] = vfmaq_n_f32(acc[b & 1], vcvtq_f32_s32(s), sp_fp16_to_fp32(d16) * a[b].d);
        if (type == SPROUT_TYPE_Q4_1 || type == SPROUT_TYPE_Q5_1) mins += sp_fp16_to_fp32(m16) * a[b].d * (float)a[b].sum;
    }
    return vaddvq_f32(vaddq_f32(acc[0], acc[1])) + mins;
}

/* Q4_K and Q5_K: per sub-block of 32, sum(x*a) = d*sc*ad*sum(q*qa) -
 * dmin*m*ad*sum(qa); the levels (0..15, or 0..31 with Q5_K's fifth bits)
 * go into sdot as they are. The super-blocks share their scales' layout
 * and differ only in qh, so the one loop takes both. */
static float dot_affine_K(sprout_type type, const uint8_t *row, const act_block *a, int64_t n_super) {
    float acc = 0.f, mins = 0.f;
    const uint8x16_t low4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1);
    for (int64_t b = 0; b < n_super; b++, a += 8) {
        const sp_affine_k_block blk = sp_affine_k_block_at(type == SPROUT_TYPE_Q5_K, row, b);
        const uint8_t *qs = blk.qs, *scales = blk.scales, *qh = blk.qh;
        const float d = sp_fp16_to_fp32(blk.d), dmin = sp_fp16_to_fp32(blk.dmin);
        for (int j = 0; j < 4; j++) {
            const uint8x16_t q0 = vld1q_u8(qs + 32 * j), q1 = vld1q_u8(qs + 32 * j + 16);
            uint8x16_t l0 = vandq_u8(q0, low4), l1 = vandq_u8(q1, low4), h0 = vshrq_n_u8(q0, 4), h1 = vshrq_n_u8(q1, 4);
            if (qh) { /* sub-block 2j takes bit 2j of qh[l], 2j + 1 bit 2j + 1; as 16 */
                const uint8x16_t b0 = vld1q_u8(qh), b1 = vld1q_u8(qh + 16);
                const int8x16_t shift_lo = vdupq_n_s8((int8_t)-(2 * j)), shift_hi = vdupq_n_s8((int8_t)-(2 * j + 1));
                l0 = vorrq_u8(l0, vshlq_n_u8(vandq_u8(vshlq_u8(b0, shift_lo), one), 4));
                l1 = vorrq_u8(l1, vshlq_n_u8(vandq_u8(vshlq_u8(b1, shift_lo), one), 4));
                h0 = vorrq_u8(h0, vshlq_n_u8(vandq_u8(vshlq_u8(b0, shift_hi), one), 4));
                h1 = vorrq_u8(h1, vshlq_n_u8(vandq_u8(vshlq_u8(b1, shift_hi), one), 4));
            }
            const act_block *lo = &a[2 * j], *hi = &a[2 * j + 1];
            int32x4_t s_lo = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(l0), vld1q_s8(lo->qs));
            s_lo = vdotq_s32(s_lo, vreinterpretq_s8_u8(l1), vld1q_s8(lo->qs + 16));
            int32x4_t s_hi = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(h0), vld1q_s8(hi->qs));
            s_hi = vdotq_s32(s_hi, vreinterpretq_s8_u8(h1), vld1q_s8(hi->qs + 16));
            uint8_t sc, m;
            sp_q4k_scale_min(2 * j, scales, &sc, &m);
            acc += d * (float)sc * lo->d * (float)vaddvq_s32(s_lo);
            mins += dmin * (float)m * lo->d * (float)lo->sum;
            sp_q4k_scale_min(2 * j + 1, scales, &sc, &m);
            acc += d * (float)sc * hi->d * (float)vaddvq_s32(s_hi);
            mins += dmin * (float)m * hi->d * (float)hi->sum;
        }
    }
    return acc - mins;
}

/* Q6_K: x = d*sc*(q - 32) with one scale per 16; q - 32 fits int8, so
 * sdot takes it directly, 16 elements per scale. */
static float dot_q6_K(const sp_block_q6_K *w, const act_block *a, int64_t n_super) {
    float acc = 0.f;
    const uint8x16_t low4 = vdupq_n_u8(0x0F), three = vdupq_n_u8(3);
    const int8x16_t m32 = vdupq_n_s8(32);
    for (int64_t b = 0; b < n_super; b++, a += 8) {
        const float d = sp_fp16_to_fp32(w[b].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            for (int half = 0; half < 2; half++) { /* elements l = 16 * half .. +15 of each run of 32 */
                const uint8x16_t l0 = vld1q_u8(ql + 16 * half), l1 = vld1q_u8(ql + 32 + 16 * half), hb = vld1q_u8(qh + 16 * half);
                const uint8x16_t q[4] = {
                    vorrq_u8(vandq_u8(l0, low4), vshlq_n_u8(vandq_u8(hb, three), 4)),
                    vorrq_u8(vandq_u8(l1, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), three), 4)),
                    vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), three), 4)),
                    vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)),
                };
                for (int k = 0; k < 4; k++) { /* run k: elements 128h + 32k + 16*half + (0..15), act block 4h + k */
                    const act_block *ab = &a[4 * h + k];
                    const int32x4_t s = vdotq_s32(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(q[k]), m32), vld1q_s8(ab->qs + 16 * half));
                    acc += d * ab->d * (float)(w[b].scales[8 * h + 2 * k + half] * vaddvq_s32(s));
                }
            }
        }
    }
    return acc;
}

/* Four accumulators over 16 elements at a time, then the tail in order. */
static float dot_f32(const float *w, const float *x, int64_t n) {
    float32x4_t acc[4] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], vld1q_f32(w + i + 4 * k), vld1q_f32(x + i + 4 * k));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; i++) s += w[i] * x[i];
    return s;
}

void sp_quantize_neon(const float *x, int64_t n, void *out) { quantize_activations(x, n, out); }

void sp_matmul_neon(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                    int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    const bool block32 = w->type == SPROUT_TYPE_Q8_0 || w->type == SPROUT_TYPE_Q4_0 || w->type == SPROUT_TYPE_Q4_1 ||
                         w->type == SPROUT_TYPE_Q5_0 || w->type == SPROUT_TYPE_Q5_1;
    const bool k_quant = w->type == SPROUT_TYPE_Q4_K || w->type == SPROUT_TYPE_Q5_K || w->type == SPROUT_TYPE_Q6_K;
    const bool int8 = (block32 && w->n_in % 32 == 0) || k_quant;
    if (int8) {
        /* activations of up to 32 tokens at a time, in the caller's scratch */
        enum { TILE = 32 };
        _Static_assert(sizeof(act_block) * TILE / 32 <= 21 * sizeof(float), "a tile fits sp_matmul_scratch_floats");
        const int64_t nb = w->n_in / 32;
        act_block *own = (act_block *)scratch;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += TILE) {
            const int64_t tn = n_tokens - t0 < TILE ? n_tokens - t0 : TILE;
            const act_block *acts = xq ? (const act_block *)xq + t0 * nb : own;
            if (!xq)
                for (int64_t t = 0; t < tn; t++) quantize_activations(x + (t0 + t) * x_stride, w->n_in, own + t * nb);
            for (int64_t o = o0; o < o1; o++) {
                const uint8_t *row = w->data + (size_t)o * w->row_bytes;
                for (int64_t t = 0; t < tn; t++) {
                    const act_block *a = acts + t * nb;
                    y[(t0 + t) * y_stride + o] = w->type == SPROUT_TYPE_Q6_K ? dot_q6_K((const sp_block_q6_K *)row, a, nb / 8)
                                                 : k_quant                     ? dot_affine_K(w->type, row, a, nb / 8)
                                                                               : dot_row(w->type, row, a, nb);
                }
            }
        }
        return;
    }
    sp_matmul_float_rows(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch, dot_f32);
}
