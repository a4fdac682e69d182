/* The ternary formats of BitNet b1.58 and the TriLMs: every weight is -1, 0
 * or +1 times one half-float scale per 256. TQ2_0 gives each trit two bits;
 * TQ1_0 packs five trits a byte (3^5 = 243 fits) as a base-3 fraction, so
 * that a trit comes out with a multiply and a shift (blocks.h).
 *
 * The quantizers are llama.cpp's reference ones (llama-quantize has no
 * other): the scale is the largest magnitude, each element rounded (half
 * away from zero) to the nearest of -1, 0, 1 in its units. */
#include <math.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

/* The block's scale, stored, and its inverse. */
static float ternary_scale(const float *x, uint16_t *d) {
    float amax = 0.f;
    for (int j = 0; j < SP_QK_K; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    *d = sp_fp32_to_fp16(amax);
    return amax ? 1.f / amax : 0.f;
}

/* x's trit (0, 1, 2 for -1, 0, 1). Only the scale's own element reaches
 * +-1 exactly; lroundf of any |x * inv| <= 1 stays in range. */
static int trit(float x, float inv) { return (int)lroundf(x * inv) + 1; }

/* `count` trits of x, `stride` apart, as a byte: the base-3 number they make
 * (first trit most significant, `pad` zero trits after) scaled to 256 / 243
 * and rounded up. */
static uint8_t pack_trits(const float *x, int stride, int count, int pad, float inv) {
    unsigned q = 0;
    for (int k = 0; k < count; k++) q = 3 * q + (unsigned)trit(x[k * stride], inv);
    for (int k = 0; k < pad; k++) q *= 3;
    return (uint8_t)((q * 256 + 242) / 243);
}

/* Trit n (0 first) of a packed byte, as -1, 0, 1. */
static int unpack_trit(uint8_t q, int n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t shifted = (uint8_t)(q * pow3[n]);
    return ((shifted * 3) >> 8) - 1;
}

void sp_quantize_tq1_0(const float *x, void *dst, int64_t n) {
    sp_block_tq1_0 *y = dst;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        const float inv = ternary_scale(x, &y[b].d);
        for (int m = 0; m < 32; m++) y[b].qs[m] = pack_trits(x + m, 32, 5, 0, inv);
        for (int m = 0; m < 16; m++) y[b].qs[32 + m] = pack_trits(x + 160 + m, 16, 5, 0, inv);
        for (int j = 0; j < 4; j++) y[b].qh[j] = pack_trits(x + 240 + j, 4, 4, 1, inv);
    }
}

void sp_dequantize_tq1_0(const void *src, float *y, int64_t n) {
    const sp_block_tq1_0 *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++, y += SP_QK_K) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 32; m++) y[32 * t + m] = (float)unpack_trit(x[b].qs[m], t) * d;
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 16; m++) y[160 + 16 * t + m] = (float)unpack_trit(x[b].qs[32 + m], t) * d;
        for (int t = 0; t < 4; t++)
            for (int j = 0; j < 4; j++) y[240 + 4 * t + j] = (float)unpack_trit(x[b].qh[j], t) * d;
    }
}

void sp_quantize_tq2_0(const float *x, void *dst, int64_t n) {
    sp_block_tq2_0 *y = dst;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        const float inv = ternary_scale(x, &y[b].d);
        for (int c = 0; c < 2; c++)
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int l = 0; l < 4; l++) q |= (unsigned)(trit(x[128 * c + 32 * l + m], inv) & 3) << (2 * l);
                y[b].qs[32 * c + m] = (uint8_t)q;
            }
    }
}

void sp_dequantize_tq2_0(const void *src, float *y, int64_t n) {
    const sp_block_tq2_0 *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++, y += SP_QK_K) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int c = 0; c < 2; c++)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) y[128 * c + 32 * l + m] = (float)(((x[b].qs[32 * c + m] >> (2 * l)) & 3) - 1) * d;
    }
}
