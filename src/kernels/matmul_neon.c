/* Matmul for 64-bit Arm with NEON and the dot-product extension (compiled
 * with +dotprod here only; dispatch.c calls it only when the CPU says so).
 *
 * Q8_0 and Q4_0 weights are dotted in int8 (sdot) against the activations
 * quantized once per call to 8-bit blocks of 32; each block's sum is exact
 * in int32 and scaled in float. Other types decode a row once and use
 * float dots with four fixed accumulators. Every token's arithmetic is the
 * same however many tokens the call has: outputs do not depend on the
 * batch. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

typedef struct act_block {
    float d;
    int8_t qs[32];
} act_block;

/* 32 floats to int8 with one scale: the largest magnitude maps to 127. */
static void quantize_activations(const float *x, int64_t n, act_block *q) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float32x4_t v[8], m = vdupq_n_f32(0.f);
        for (int k = 0; k < 8; k++) {
            v[k] = vld1q_f32(x + 4 * k);
            m = vmaxq_f32(m, vabsq_f32(v[k]));
        }
        const float max_abs = vmaxvq_f32(m);
        const float id = max_abs > 0.f ? 127.f / max_abs : 0.f;
        q[b].d = max_abs / 127.f;
        for (int k = 0; k < 8; k += 2) {
            const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[k], id)), c = vcvtnq_s32_f32(vmulq_n_f32(v[k + 1], id));
            const int16x8_t h = vcombine_s16(vqmovn_s32(a), vqmovn_s32(c));
            vst1_s8(q[b].qs + 4 * k, vqmovn_s16(h));
        }
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

/* One row against one token: per block an exact int32 sum, scaled in
 * float, two accumulators (even and odd blocks) joined at the end. */
static float dot_row(sprout_type type, const uint8_t *row, const act_block *a, int64_t nb) {
    float32x4_t acc[2] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
    for (int64_t b = 0; b < nb; b++) {
        int8x16_t lo, hi;
        uint16_t d16;
        if (type == SPROUT_TYPE_Q8_0) {
            const sp_block_q8_0 *blk = (const sp_block_q8_0 *)row + b;
            levels_q8_0(blk, &lo, &hi);
            d16 = blk->d;
        } else {
            const sp_block_q4_0 *blk = (const sp_block_q4_0 *)row + b;
            levels_q4_0(blk, &lo, &hi);
            d16 = blk->d;
        }
        int32x4_t s = vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8(a[b].qs));
        s = vdotq_s32(s, hi, vld1q_s8(a[b].qs + 16));
        acc[b & 1] = vfmaq_n_f32(acc[b & 1], vcvtq_f32_s32(s), sp_fp16_to_fp32(d16) * a[b].d);
    }
    return vaddvq_f32(vaddq_f32(acc[0], acc[1]));
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

void sp_matmul_neon(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride, int64_t o0,
                    int64_t o1, float *scratch) {
    const bool int8 = (w->type == SPROUT_TYPE_Q8_0 || w->type == SPROUT_TYPE_Q4_0) && w->n_in % 32 == 0;
    if (int8) {
        /* activations of up to 32 tokens at a time, in the caller's scratch */
        enum { TILE = 32 };
        _Static_assert(sizeof(act_block) * TILE / 32 <= 21 * sizeof(float), "a tile fits sp_matmul_scratch_floats");
        const int64_t nb = w->n_in / 32;
        act_block *acts = (act_block *)scratch;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += TILE) {
            const int64_t tn = n_tokens - t0 < TILE ? n_tokens - t0 : TILE;
            for (int64_t t = 0; t < tn; t++) quantize_activations(x + (t0 + t) * x_stride, w->n_in, acts + t * nb);
            for (int64_t o = o0; o < o1; o++) {
                const uint8_t *row = w->data + (size_t)o * w->row_bytes;
                for (int64_t t = 0; t < tn; t++) y[(t0 + t) * y_stride + o] = dot_row(w->type, row, acts + t * nb, nb);
            }
        }
        return;
    }
    const sp_type_traits *traits = sp_type_traits_of(w->type);
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = w->data + (size_t)o * w->row_bytes;
        const float *r = scratch;
        if (w->type == SPROUT_TYPE_F32 && ((uintptr_t)row & 3) == 0) r = (const float *)row;
        else traits->dequantize(row, scratch, w->n_in);
        for (int64_t t = 0; t < n_tokens; t++) y[t * y_stride + o] = dot_f32(r, x + t * x_stride, w->n_in);
    }
}
