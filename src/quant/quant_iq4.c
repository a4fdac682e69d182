/* The non-linear 4-bit formats: IQ4_NL (a level from sp_iq4_levels per
 * element, a half-float scale per 32) and IQ4_XS (the same levels, a 6-bit
 * scale per 32 as a multiple of one half-float per 256).
 *
 * The quantizer is the format authors' search as llama-quantize runs it
 * without an importance matrix, so that a file sprout writes holds the
 * blocks llama.cpp's would: per 32 elements, weights x^2; a first scale
 * from the element of largest magnitude, refined by least squares, then 15
 * more starting scales around it, the best weighted fit kept. IQ4_XS then
 * writes each sub-block's scale as a multiple (-32..31) of the largest
 * over -32 and picks the levels again for the scale it stored. */
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

/* Starting scales tried on each side of the first one. */
#define IQ4_TRIES 7

/* The level nearest to x (ties to the upper one; nan to the last). */
static int nearest_level(float x) {
    if (x <= sp_iq4_levels[0]) return 0;
    if (x >= sp_iq4_levels[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < sp_iq4_levels[mid]) hi = mid;
        else lo = mid;
    }
    return x - sp_iq4_levels[hi - 1] < sp_iq4_levels[hi] - x ? hi - 1 : hi;
}

/* The weighted least-squares fit of x by the levels nearest to x *
 * inv_scale: the scale is *sum_qx / *sum_q2. */
static void fit_levels(const float *x, const float *weight, float inv_scale, float *sum_qx, float *sum_q2) {
    float qx = 0.f, q2 = 0.f;
    for (int j = 0; j < SP_QK32; j++) {
        const int l = nearest_level(inv_scale * x[j]);
        const float q = sp_iq4_levels[l], w = weight[j];
        qx += w * q * x[j];
        q2 += w * q * q;
    }
    *sum_qx = qx;
    *sum_q2 = q2;
}

/* The scale of 32 elements (0 when they are all but zero). */
static float block_scale(const float *x) {
    float weight[SP_QK32], amax;
    const float max = sp_signed_absmax(x, SP_QK32, &amax);
    if (amax < SP_ZERO_AMAX) return 0.f;
    for (int j = 0; j < SP_QK32; j++) weight[j] = x[j] * x[j];
    float sum_qx, sum_q2;
    fit_levels(x, weight, 1.f / (-max / sp_iq4_levels[0]), &sum_qx, &sum_q2);
    float d = sum_q2 > 0.f ? sum_qx / sum_q2 : 0.f, best = d * sum_qx;
    for (int t = -IQ4_TRIES; t <= IQ4_TRIES; t++) {
        fit_levels(x, weight, (float)(t + sp_iq4_levels[0]) / max, &sum_qx, &sum_q2);
        if (sum_q2 > 0.f && sum_qx * sum_qx > best * sum_q2) d = sum_qx / sum_q2, best = d * sum_qx;
    }
    return d;
}

/* Two runs of 16 levels (elements j and j + 16) into nibbles. */
static void pack_levels(const float *x, float inv_scale, uint8_t qs[SP_QK32 / 2]) {
    for (int j = 0; j < SP_QK32 / 2; j++)
        qs[j] = (uint8_t)(nearest_level(inv_scale * x[j]) | nearest_level(inv_scale * x[j + SP_QK32 / 2]) << 4);
}

static void unpack_levels(const uint8_t qs[SP_QK32 / 2], float scale, float *y) {
    for (int j = 0; j < SP_QK32 / 2; j++) {
        y[j] = scale * sp_iq4_levels[qs[j] & 0x0F];
        y[j + SP_QK32 / 2] = scale * sp_iq4_levels[qs[j] >> 4];
    }
}

void sp_quantize_iq4_nl(const float *x, void *dst, int64_t n) {
    sp_block_iq4_nl *y = dst;
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        const float d = block_scale(x);
        y[b].d = sp_fp32_to_fp16(d);
        pack_levels(x, d ? 1.f / d : 0.f, y[b].qs);
    }
}

void sp_dequantize_iq4_nl(const void *src, float *y, int64_t n) {
    const sp_block_iq4_nl *x = src;
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) unpack_levels(x[b].qs, sp_fp16_to_fp32(x[b].d), y);
}

void sp_quantize_iq4_xs(const float *x, void *dst, int64_t n) {
    sp_block_iq4_xs *y = dst;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        float scales[SP_QK_K / SP_QK32];
        for (int j = 0; j < SP_QK_K / SP_QK32; j++) scales[j] = block_scale(x + SP_QK32 * j);
        const float max_scale = sp_signed_absmax(scales, SP_QK_K / SP_QK32, NULL);
        const float d = -max_scale / 32.f, id = d ? 1.f / d : 0.f;
        y[b].d = sp_fp32_to_fp16(d);
        y[b].scales_h = 0;
        memset(y[b].scales_l, 0, sizeof y[b].scales_l);
        for (int j = 0; j < SP_QK_K / SP_QK32; j++) {
            int l = sp_nearest_int(id * scales[j]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * (float)l;
            pack_levels(x + SP_QK32 * j, dl ? 1.f / dl : 0.f, y[b].qs + SP_QK32 / 2 * j);
            l += 32;
            y[b].scales_l[j / 2] |= (uint8_t)((l & 0x0F) << (4 * (j % 2)));
            y[b].scales_h |= (uint16_t)((l >> 4) << (2 * j));
        }
    }
}

void sp_dequantize_iq4_xs(const void *src, float *y, int64_t n) {
    const sp_block_iq4_xs *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int j = 0; j < SP_QK_K / SP_QK32; j++, y += SP_QK32)
            unpack_levels(x[b].qs + SP_QK32 / 2 * j, d * (float)(sp_iq4_xs_scale(&x[b], j) - 32), y);
    }
}
