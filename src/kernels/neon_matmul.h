/* What the NEON matmuls (matmul_neon.c with the dot-product extension,
 * matmul_neon_i8mm.c with the int8 matrix multiply too) share: everything
 * but the i8mm level's two rows by two tokens at once, which its file
 * defines as rows_by_pairs (matmul_neon.c: never taken).
 *
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS
 * weights are dotted in int8 against the activations quantized to 8-bit blocks of 32
 * (by the caller, or once per call); each block's (or sub-block's) sum is
 * exact in int32 and scaled in float, four blocks at a time. Other types
 * decode a row once and use float dots with four fixed accumulators. Every
 * token's arithmetic is the same however many tokens the call has:
 * outputs do not depend on the batch. */
#ifndef SPROUT_KERNELS_NEON_MATMUL_H
#define SPROUT_KERNELS_NEON_MATMUL_H

#include <arm_neon.h>
#include <math.h>
#include <stdbool.h>
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

/* --- int8 rows ---------------------------------------------------------------------------------
 * Every int8 type is a row of 32-element blocks (a K-quant's sub-blocks),
 * taken four at a time. Each block's dot with a token's activations is an
 * exact int32 (times the block's integer scale, for the K-quants, still
 * exact), so sdot (one row, one token) and, with i8mm, smmla (two rows by
 * two tokens at once) give the same integers; four of them then meet the
 * scales as one vector, in the same order for every (row, token) pair:
 *   acc[b % 4] += float(S_b) * (W_b * A_b),  macc[b % 4] += M_b * D_b,
 *   y = ((acc0 + acc1) + (acc2 + acc3)) + ((macc0 + macc1) + (macc2 + macc3))
 * with W the weight scale, A the activations', M the weight's min term and
 * D the activations' scale times their sum (Q2_K, a min per 16 elements:
 * the mins times the activations' half sums, exact, for M and -dmin * A
 * for D). A token's output is therefore the same whatever the batch and
 * whichever kernel took it. */

static inline bool has_mins(sprout_type type) {
    return type == SPROUT_TYPE_Q4_1 || type == SPROUT_TYPE_Q5_1 || type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q5_K ||
           type == SPROUT_TYPE_Q2_K;
}

static inline bool is_k_quant(sprout_type type) { /* integer scales per sub-block */
    return type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q5_K || type == SPROUT_TYPE_IQ4_XS || sp_scale_per_16(type);
}

/* 16 of a block's fifth bits (two bytes of qh) as 16 in the bytes whose
 * bit is set: element i takes bit i. */
static inline uint8x16_t fifth_bits16(const uint8_t two[2]) {
    static const uint8_t bit_of[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bytes = vcombine_u8(vdup_n_u8(two[0]), vdup_n_u8(two[1]));
    return vandq_u8(vtstq_u8(bytes, vld1q_u8(bit_of)), vdupq_n_u8(16));
}

/* Block b's 32 levels as signed bytes, elements 0..15 in *lo and 16..31 in
 * *hi (zero past nb); for the K-quants b counts sub-blocks. */
static inline void block_levels(sprout_type type, const uint8_t *row, int64_t b, int64_t nb, int8x16_t *lo, int8x16_t *hi) {
    if (b >= nb) {
        *lo = *hi = vdupq_n_s8(0);
        return;
    }
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    uint8x16_t ulo, uhi;
    switch (type) {
    case SPROUT_TYPE_Q8_0: {
        const sp_block_q8_0 *blk = (const sp_block_q8_0 *)row + b;
        *lo = vld1q_s8(blk->qs), *hi = vld1q_s8(blk->qs + 16);
        return;
    }
    case SPROUT_TYPE_IQ4_NL:
    case SPROUT_TYPE_IQ4_XS: { /* packed nibbles indexing the format's levels (IQ4_XS: sub-block b % 8 at qs[16 (b % 8)..]) */
        const uint8x16_t packed = vld1q_u8(type == SPROUT_TYPE_IQ4_NL ? ((const sp_block_iq4_nl *)row + b)->qs
                                                                      : ((const sp_block_iq4_xs *)row + b / 8)->qs + 16 * (b % 8));
        const int8x16_t levels = vld1q_s8(sp_iq4_levels);
        *lo = vqtbl1q_s8(levels, vandq_u8(packed, low4)), *hi = vqtbl1q_s8(levels, vshrq_n_u8(packed, 4));
        return;
    }
    case SPROUT_TYPE_Q4_0:
    case SPROUT_TYPE_Q5_0:
    case SPROUT_TYPE_Q4_1:
    case SPROUT_TYPE_Q5_1: { /* packed nibbles, fifth bits for Q5; without a min, less 8 (16) to fit int8 */
        const uint8_t *qs, *qh = NULL;
        int offset = 0;
        switch (type) {
        case SPROUT_TYPE_Q4_0: qs = ((const sp_block_q4_0 *)row + b)->qs, offset = 8; break;
        case SPROUT_TYPE_Q5_0: qs = ((const sp_block_q5_0 *)row + b)->qs, qh = ((const sp_block_q5_0 *)row + b)->qh, offset = 16; break;
        case SPROUT_TYPE_Q4_1: qs = ((const sp_block_q4_1 *)row + b)->qs; break;
        default: qs = ((const sp_block_q5_1 *)row + b)->qs, qh = ((const sp_block_q5_1 *)row + b)->qh; break;
        }
        const uint8x16_t packed = vld1q_u8(qs);
        ulo = vandq_u8(packed, low4), uhi = vshrq_n_u8(packed, 4);
        if (qh) ulo = vorrq_u8(ulo, fifth_bits16(qh)), uhi = vorrq_u8(uhi, fifth_bits16(qh + 2));
        const int8x16_t off = vdupq_n_s8((int8_t)offset);
        *lo = vsubq_s8(vreinterpretq_s8_u8(ulo), off), *hi = vsubq_s8(vreinterpretq_s8_u8(uhi), off);
        return;
    }
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K: { /* sub-block j: the low (j even) or high nibbles of qs[32 (j / 2)..], bit j of qh */
        const sp_affine_k_block blk = sp_affine_k_block_at(type == SPROUT_TYPE_Q5_K, row, b / 8);
        const int j = (int)(b % 8);
        const uint8x16_t q0 = vld1q_u8(blk.qs + 32 * (j / 2)), q1 = vld1q_u8(blk.qs + 32 * (j / 2) + 16);
        ulo = j & 1 ? vshrq_n_u8(q0, 4) : vandq_u8(q0, low4);
        uhi = j & 1 ? vshrq_n_u8(q1, 4) : vandq_u8(q1, low4);
        if (blk.qh) {
            const int8x16_t shift = vdupq_n_s8((int8_t)-j);
            const uint8x16_t one = vdupq_n_u8(1);
            ulo = vorrq_u8(ulo, vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(blk.qh), shift), one), 4));
            uhi = vorrq_u8(uhi, vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(blk.qh + 16), shift), one), 4));
        }
        break;
    }
    case SPROUT_TYPE_Q3_K:
    case SPROUT_TYPE_Q2_K: { /* sub-block j = 4h + k: bits 2k of qs[32h..]; Q3_K: bit j of hmask as 4, less 4 */
        const bool q3 = type == SPROUT_TYPE_Q3_K;
        const int j = (int)(b % 8), h = j / 4, k = j % 4;
        const uint8_t *qs = q3 ? ((const sp_block_q3_K *)row + b / 8)->qs : ((const sp_block_q2_K *)row + b / 8)->qs;
        const int8x16_t shift = vdupq_n_s8((int8_t)-(2 * k));
        const uint8x16_t three = vdupq_n_u8(3);
        ulo = vandq_u8(vshlq_u8(vld1q_u8(qs + 32 * h), shift), three);
        uhi = vandq_u8(vshlq_u8(vld1q_u8(qs + 32 * h + 16), shift), three);
        if (!q3) break;
        const uint8_t *hm = ((const sp_block_q3_K *)row + b / 8)->hmask;
        const int8x16_t hshift = vdupq_n_s8((int8_t)-j);
        const uint8x16_t one = vdupq_n_u8(1);
        ulo = vorrq_u8(ulo, vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(hm), hshift), one), 2));
        uhi = vorrq_u8(uhi, vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(hm + 16), hshift), one), 2));
        const int8x16_t four = vdupq_n_s8(4);
        *lo = vsubq_s8(vreinterpretq_s8_u8(ulo), four), *hi = vsubq_s8(vreinterpretq_s8_u8(uhi), four);
        return;
    }
    default: { /* Q6_K sub-block j = 4h + k: ql[64h + 32 (k & 1)..] (high nibbles for k >= 2), bits 2k of qh[32h..]; less 32 */
        const sp_block_q6_K *blk = (const sp_block_q6_K *)row + b / 8;
        const int j = (int)(b % 8), h = j / 4, k = j % 4;
        const uint8_t *ql = blk->ql + 64 * h + 32 * (k & 1), *qh = blk->qh + 32 * h;
        const int8x16_t shift = vdupq_n_s8((int8_t)-(2 * k));
        const uint8x16_t three = vdupq_n_u8(3);
        const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16);
        ulo = vorrq_u8(k >= 2 ? vshrq_n_u8(l0, 4) : vandq_u8(l0, low4), vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(qh), shift), three), 4));
        uhi = vorrq_u8(k >= 2 ? vshrq_n_u8(l1, 4) : vandq_u8(l1, low4), vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(qh + 16), shift), three), 4));
        const int8x16_t m32 = vdupq_n_s8(32);
        *lo = vsubq_s8(vreinterpretq_s8_u8(ulo), m32), *hi = vsubq_s8(vreinterpretq_s8_u8(uhi), m32);
        return;
    }
    }
    *lo = vreinterpretq_s8_u8(ulo), *hi = vreinterpretq_s8_u8(uhi);
}

/* The scales of blocks [4u, 4u + 4) of a row: W (float), M (the min
 * term, zero without; Q2_K: -dmin), and the integer scales of the
 * K-quants' sums (of the first and last 16 elements: they differ for
 * Q6_K, Q3_K and Q2_K) and of Q2_K's mins. */
typedef struct unit_scales {
    float32x4_t w, m;
    int32x4_t sc_lo, sc_hi, min_lo, min_hi;
} unit_scales;

static inline unit_scales scales_of_unit(sprout_type type, const uint8_t *row, int64_t u, int64_t nb) {
    unit_scales s = {vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_s32(1), vdupq_n_s32(1), vdupq_n_s32(0), vdupq_n_s32(0)};
    float w[4] = {0}, m[4] = {0};
    int32_t lo[4], hi[4];
    switch (type) {
    case SPROUT_TYPE_Q3_K: {
        const sp_block_q3_K *blk = (const sp_block_q3_K *)row + u / 2;
        for (int i = 0; i < 4; i++) { /* the unit's 8 of the 16 */
            const int j = 4 * (int)(u % 2) + i;
            lo[i] = sp_q3k_scale(blk->scales, 2 * j), hi[i] = sp_q3k_scale(blk->scales, 2 * j + 1);
        }
        s.w = vdupq_n_f32(sp_fp16_to_fp32(blk->d)), s.sc_lo = vld1q_s32(lo), s.sc_hi = vld1q_s32(hi);
        return s;
    }
    case SPROUT_TYPE_Q2_K: {
        const sp_block_q2_K *blk = (const sp_block_q2_K *)row + u / 2;
        int32_t mlo[4], mhi[4];
        for (int i = 0; i < 4; i++) {
            const int j = 4 * (int)(u % 2) + i;
            lo[i] = blk->scales[2 * j] & 0x0F, hi[i] = blk->scales[2 * j + 1] & 0x0F;
            mlo[i] = blk->scales[2 * j] >> 4, mhi[i] = blk->scales[2 * j + 1] >> 4;
        }
        s.w = vdupq_n_f32(sp_fp16_to_fp32(blk->d)), s.m = vdupq_n_f32(-sp_fp16_to_fp32(blk->dmin));
        s.sc_lo = vld1q_s32(lo), s.sc_hi = vld1q_s32(hi), s.min_lo = vld1q_s32(mlo), s.min_hi = vld1q_s32(mhi);
        return s;
    }
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K: {
        const sp_affine_k_block blk = sp_affine_k_block_at(type == SPROUT_TYPE_Q5_K, row, u / 2);
        const float dmin = sp_fp16_to_fp32(blk.dmin);
        for (int i = 0; i < 4; i++) {
            uint8_t sc, mn;
            sp_q4k_scale_min(4 * (int)(u % 2) + i, blk.scales, &sc, &mn);
            lo[i] = hi[i] = sc, m[i] = -(dmin * (float)mn);
        }
        s.w = vdupq_n_f32(sp_fp16_to_fp32(blk.d)), s.m = vld1q_f32(m), s.sc_lo = vld1q_s32(lo), s.sc_hi = vld1q_s32(hi);
        return s;
    }
    case SPROUT_TYPE_IQ4_XS: {
        const sp_block_iq4_xs *blk = (const sp_block_iq4_xs *)row + u / 2;
        for (int i = 0; i < 4; i++) lo[i] = hi[i] = sp_iq4_xs_scale(blk, 4 * (int)(u % 2) + i) - 32;
        s.w = vdupq_n_f32(sp_fp16_to_fp32(blk->d)), s.sc_lo = vld1q_s32(lo), s.sc_hi = vld1q_s32(hi);
        return s;
    }
    case SPROUT_TYPE_Q6_K: {
        const sp_block_q6_K *blk = (const sp_block_q6_K *)row + u / 2;
        for (int i = 0; i < 4; i++) {
            const int j = 4 * (int)(u % 2) + i;
            lo[i] = blk->scales[2 * j], hi[i] = blk->scales[2 * j + 1];
        }
        s.w = vdupq_n_f32(sp_fp16_to_fp32(blk->d)), s.sc_lo = vld1q_s32(lo), s.sc_hi = vld1q_s32(hi);
        return s;
    }
    default: break;
    }
    for (int i = 0; i < 4; i++) {
        const int64_t b = 4 * u + i;
        if (b >= nb) break;
        switch (type) {
        case SPROUT_TYPE_Q8_0: w[i] = sp_fp16_to_fp32(((const sp_block_q8_0 *)row + b)->d); break;
        case SPROUT_TYPE_Q4_0: w[i] = sp_fp16_to_fp32(((const sp_block_q4_0 *)row + b)->d); break;
        case SPROUT_TYPE_IQ4_NL: w[i] = sp_fp16_to_fp32(((const sp_block_iq4_nl *)row + b)->d); break;
        case SPROUT_TYPE_Q5_0: w[i] = sp_fp16_to_fp32(((const sp_block_q5_0 *)row + b)->d); break;
        case SPROUT_TYPE_Q4_1:
            w[i] = sp_fp16_to_fp32(((const sp_block_q4_1 *)row + b)->d), m[i] = sp_fp16_to_fp32(((const sp_block_q4_1 *)row + b)->m);
            break;
        default:
            w[i] = sp_fp16_to_fp32(((const sp_block_q5_1 *)row + b)->d), m[i] = sp_fp16_to_fp32(((const sp_block_q5_1 *)row + b)->m);
            break;
        }
    }
    s.w = vld1q_f32(w), s.m = vld1q_f32(m);
    return s;
}

/* A token's activations as the int8 kernels read them: the blocks, and
 * (padded with zeros to a multiple of 4 blocks) their scales A and their
 * scales times their sums D; with i8mm also the token's pair (this token
 * and the next), interleaved as smmla takes them. */
typedef struct act_view {
    const act_block *blocks;
    const float *a, *d;
    const int32_t *half_sums; /* of block b's first and last 16 levels at 2 b, 2 b + 1: for Q2_K's mins */
    const int8_t *pair; /* block b at 64 b: bytes 8k..8k+7 of both tokens, k = 0..3 */
} act_view;

/* The unit's four block sums, scaled by the integer scales: exact. */
static inline int32x4_t scaled_sums(int32x4_t lo, int32x4_t hi, const unit_scales *s, bool split) {
    return split ? vmlaq_s32(vmulq_s32(lo, s->sc_lo), hi, s->sc_hi) : vmulq_s32(lo, s->sc_lo);
}

/* macc plus the unit's min terms: M times D, or (Q2_K, a min per 16
 * elements) the mins times the half sums, exact, times -dmin * A. */
static inline float32x4_t add_mins(sprout_type type, float32x4_t macc, const unit_scales *s, const act_view *x, int64_t u) {
    if (type != SPROUT_TYPE_Q2_K) return vfmaq_f32(macc, s->m, vld1q_f32(x->d + 4 * u));
    const int32x4x2_t h = vld2q_s32(x->half_sums + 8 * u); /* val[0]: first halves, val[1]: last */
    const int32x4_t m = vmlaq_s32(vmulq_s32(h.val[0], s->min_lo), h.val[1], s->min_hi);
    return vfmaq_f32(macc, vcvtq_f32_s32(m), vmulq_f32(s->m, vld1q_f32(x->a + 4 * u)));
}

static inline float sum4(float32x4_t v) { return vpadds_f32(vpadd_f32(vget_low_f32(v), vget_high_f32(v))); }

/* A row as the dot kernels read it: decoded from the weights block by
 * block, or (a row that meets several tokens) decoded once beforehand into
 * scratch by decode_row: every block's levels and every unit's scales, the
 * values block_levels and scales_of_unit give, so a token's sums are the
 * same either way. */
typedef struct row_source {
    const uint8_t *row;
    const int8_t *levels;      /* block b's 32 at 32 b (nb rounded up to 4), or NULL */
    const unit_scales *scales; /* unit u's at u */
} row_source;

static inline void source_levels(sprout_type type, const row_source *r, int64_t b, int64_t nb, int8x16_t *lo, int8x16_t *hi) {
    if (r->levels) *lo = vld1q_s8(r->levels + 32 * b), *hi = vld1q_s8(r->levels + 32 * b + 16);
    else block_levels(type, r->row, b, nb, lo, hi);
}

static inline unit_scales source_scales(sprout_type type, const row_source *r, int64_t u, int64_t nb) {
    return r->scales ? r->scales[u] : scales_of_unit(type, r->row, u, nb);
}

/* Bytes of scratch decode_row fills for a row of nb blocks. */
static inline size_t decoded_row_bytes(int64_t nb) {
    const int64_t nb4 = (nb + 3) & ~(int64_t)3;
    return (size_t)nb4 * 32 + (size_t)(nb4 / 4) * sizeof(unit_scales);
}

/* The row's levels and scales into out (16-byte aligned, decoded_row_bytes). */
static row_source decode_row(sprout_type type, const uint8_t *row, int64_t nb, void *out) {
    const int64_t nb4 = (nb + 3) & ~(int64_t)3;
    unit_scales *scales = out;
    int8_t *levels = (int8_t *)(scales + nb4 / 4);
    for (int64_t u = 0; u < nb4 / 4; u++) scales[u] = scales_of_unit(type, row, u, nb);
    for (int64_t b = 0; b < nb4; b++) {
        int8x16_t lo, hi;
        block_levels(type, row, b, nb, &lo, &hi);
        vst1q_s8(levels + 32 * b, lo), vst1q_s8(levels + 32 * b + 16, hi);
    }
    return (row_source){row, levels, scales};
}

/* One row against one token, by sdot. */
static float dot_row(sprout_type type, const row_source *row, const act_view *x, int64_t nb) {
    const bool split = sp_scale_per_16(type), k_quant = is_k_quant(type);
    const bool mins = has_mins(type);
    float32x4_t acc = vdupq_n_f32(0.f), macc = vdupq_n_f32(0.f);
    for (int64_t u = 0; 4 * u < nb; u++) {
        int32x4_t lo[4], hi[4];
        for (int i = 0; i < 4; i++) {
            const int64_t b = 4 * u + i;
            int8x16_t q_lo, q_hi;
            source_levels(type, row, b, nb, &q_lo, &q_hi);
            const int8x16_t a_lo = b < nb ? vld1q_s8(x->blocks[b].qs) : vdupq_n_s8(0);
            const int8x16_t a_hi = b < nb ? vld1q_s8(x->blocks[b].qs + 16) : vdupq_n_s8(0);
            lo[i] = vdotq_s32(vdupq_n_s32(0), q_lo, a_lo);
            hi[i] = vdotq_s32(vdupq_n_s32(0), q_hi, a_hi);
            if (!split) lo[i] = vaddq_s32(lo[i], hi[i]);
        }
        const unit_scales s = source_scales(type, row, u, nb);
        int32x4_t sums = vpaddq_s32(vpaddq_s32(lo[0], lo[1]), vpaddq_s32(lo[2], lo[3]));
        if (k_quant) sums = scaled_sums(sums, split ? vpaddq_s32(vpaddq_s32(hi[0], hi[1]), vpaddq_s32(hi[2], hi[3])) : sums, &s, split);
        acc = vfmaq_f32(acc, vcvtq_f32_s32(sums), vmulq_f32(s.w, vld1q_f32(x->a + 4 * u)));
        if (mins) macc = add_mins(type, macc, &s, x, u);
    }
    return mins ? sum4(acc) + sum4(macc) : sum4(acc);
}

/* Token t's scales, sums, half sums (half_sums non-NULL: Q2_K's mins
 * want them) and (with i8mm, for t even with a successor) pair into the
 * tile's scratch. */
static void prepare_token(const act_block *blocks, const act_block *next, int64_t nb, float *a, float *d, int32_t *half_sums,
                          int8_t *pair) {
    const int64_t nb4 = (nb + 3) & ~(int64_t)3;
    for (int64_t b = 0; b < nb4; b++) {
        a[b] = b < nb ? blocks[b].d : 0.f;
        d[b] = b < nb ? blocks[b].d * (float)blocks[b].sum : 0.f;
        if (!half_sums) continue;
        half_sums[2 * b] = b < nb ? vaddlvq_s8(vld1q_s8(blocks[b].qs)) : 0;
        half_sums[2 * b + 1] = b < nb ? vaddlvq_s8(vld1q_s8(blocks[b].qs + 16)) : 0;
    }
    if (!pair) return;
    for (int64_t b = 0; b < nb4; b++) {
        const int64x2_t z = vdupq_n_s64(0);
        const int64x2_t p0 = b < nb ? vreinterpretq_s64_s8(vld1q_s8(blocks[b].qs)) : z, p1 = b < nb ? vreinterpretq_s64_s8(vld1q_s8(next[b].qs)) : z;
        const int64x2_t q0 = b < nb ? vreinterpretq_s64_s8(vld1q_s8(blocks[b].qs + 16)) : z;
        const int64x2_t q1 = b < nb ? vreinterpretq_s64_s8(vld1q_s8(next[b].qs + 16)) : z;
        int8_t *out = pair + 64 * b;
        vst1q_s8(out, vreinterpretq_s8_s64(vzip1q_s64(p0, p1)));
        vst1q_s8(out + 16, vreinterpretq_s8_s64(vzip2q_s64(p0, p1)));
        vst1q_s8(out + 32, vreinterpretq_s8_s64(vzip1q_s64(q0, q1)));
        vst1q_s8(out + 48, vreinterpretq_s8_s64(vzip2q_s64(q0, q1)));
    }
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

/* Rows o and o + 1 against the tile's tokens, two by two (each level's
 * file defines it): true where it took them, and then wrote their outputs. */
static inline __attribute__((always_inline)) bool rows_by_pairs(sprout_type type, const sp_weight *w, int64_t o, int64_t o1, int64_t tn,
                                                                int64_t nb, void *decoded, size_t decoded_bytes, const act_view *views,
                                                                float *y, int64_t y_stride, int64_t t0);

/* The level's matmul: the int8 path where the type has one and the rows
 * are whole blocks of 32 (with_pairs: the tile's tokens paired for
 * rows_by_pairs), else decoded rows' float dots. */
static inline __attribute__((always_inline)) void matmul_neon(const sp_weight *w, const float *x, int64_t x_stride, const void *xq,
                                                              int64_t n_tokens, float *y, int64_t y_stride, int64_t o0, int64_t o1,
                                                              float *scratch, const bool with_pairs) {
    const sprout_type type = w->type;
    if (!sp_int8_type(type) || w->n_in % 32) {
        sp_matmul_float_rows(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch, dot_f32);
        return;
    }
    /* up to 32 tokens at a time in the caller's scratch: their blocks
     * (unless the caller quantized them), scales, sums and pairs */
    enum { TILE = 32 };
    _Static_assert(TILE * (sizeof(act_block) + 2 * sizeof(float) + 2 * sizeof(int32_t)) + TILE / 2 * 64 <= SP_TILE_FLOATS_PER_ELEMENT * 32 * sizeof(float),
                   "a tile fits sp_matmul_scratch_floats");
    const int64_t nb = w->n_in / 32, nb4 = (nb + 3) & ~(int64_t)3;
    act_block *own = (act_block *)scratch;
    float *scales = (float *)(own + TILE * nb), *sums = scales + TILE * nb4;
    int32_t *half_sums = (int32_t *)(sums + TILE * nb4);
    int8_t *pairs = (int8_t *)(half_sums + TILE * 2 * nb4);
    /* two decoded rows past the tile, in the scratch's spare floats (NULL: they do not fit) */
    const size_t decoded_bytes = (decoded_row_bytes(nb) + 15) & ~(size_t)15;
    const int64_t tile_floats = SP_TILE_FLOATS_PER_ELEMENT * 32 * nb4; /* what the assertion above bounds */
    void *decoded = 2 * decoded_bytes + 16 <= (size_t)(sp_matmul_scratch_floats(w->n_in) - tile_floats) * sizeof(float)
                        ? (void *)(((uintptr_t)(scratch + tile_floats) + 15) & ~(uintptr_t)15)
                        : NULL;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += TILE) {
        const int64_t tn = n_tokens - t0 < TILE ? n_tokens - t0 : TILE;
        const act_block *acts = xq ? (const act_block *)xq + t0 * nb : own;
        act_view views[TILE];
        for (int64_t t = 0; t < tn; t++) {
            if (!xq) quantize_activations(x + (t0 + t) * x_stride, w->n_in, own + t * nb);
            views[t] = (act_view){acts + t * nb, scales + t * nb4, sums + t * nb4, half_sums + t * 2 * nb4, pairs + t / 2 * nb4 * 64};
        }
        for (int64_t t = 0; t < tn; t++) {
            const bool pair = with_pairs && t % 2 == 0 && t + 1 < tn;
            prepare_token(views[t].blocks, pair ? views[t + 1].blocks : NULL, nb, (float *)views[t].a, (float *)views[t].d,
                          type == SPROUT_TYPE_Q2_K ? (int32_t *)views[t].half_sums : NULL, pair ? (int8_t *)views[t].pair : NULL);
        }
        for (int64_t o = o0; o < o1; o++) {
            if (with_pairs && rows_by_pairs(type, w, o, o1, tn, nb, decoded, decoded_bytes, views, y, y_stride, t0)) {
                o++;
                continue;
            }
            const uint8_t *row = w->data + (size_t)o * w->row_bytes;
            const row_source direct = {row, NULL, NULL};
            /* a row that meets several tokens is decoded once */
            const row_source r = tn > 1 && decoded ? decode_row(type, row, nb, decoded) : direct;
            for (int64_t t = 0; t < tn; t++) y[(t0 + t) * y_stride + o] = dot_row(type, &r, &views[t], nb);
        }
    }
}

#endif
