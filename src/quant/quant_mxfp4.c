/* MXFP4 (the OCP microscaling format: a power-of-two scale per 32 E2M1
 * values), as gpt-oss's experts are stored.
 *
 * The quantizer is llama.cpp's reference one (llama-quantize has no other
 * for this type), so that a file sprout writes holds the same blocks: the
 * exponent puts the largest magnitude at the top two levels' binade
 * (floor(log2 amax) - 2), each element then takes the level nearest to it
 * (the first of equals). */
#include <math.h>

#include "quant/blocks.h"
#include "quant/quant.h"

static int nearest_mxfp4_level(float x, float scale) {
    int best = 0;
    float best_err = fabsf(x);
    for (int q = 1; q < 16; q++) {
        const float err = fabsf((float)sp_mxfp4_levels[q] * scale - x);
        if (err < best_err) best = q, best_err = err;
    }
    return best;
}

/* The block's E8M0 exponent: floor(log2 amax) + 125 (log2f as llama.cpp
 * takes it, which a float just under a power of two rounds up), held to a
 * byte where amax is outside the normal range (0, nan: exponent 0). */
static uint8_t block_exponent(float amax) {
    if (!(amax > 0.f)) return 0;
    const float e = floorf(log2f(amax)) - 2.f + 127.f;
    return e < 0.f ? 0 : e > 254.f ? 254 : (uint8_t)e;
}

void sp_quantize_mxfp4(const float *x, void *dst, int64_t n) {
    sp_block_mxfp4 *y = dst;
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        float amax = 0.f;
        for (int j = 0; j < SP_QK32; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        y[b].e = block_exponent(amax);
        const float scale = sp_e8m0_half(y[b].e);
        for (int j = 0; j < SP_QK32 / 2; j++)
            y[b].qs[j] = (uint8_t)(nearest_mxfp4_level(x[j], scale) | nearest_mxfp4_level(x[j + SP_QK32 / 2], scale) << 4);
    }
}

void sp_dequantize_mxfp4(const void *src, float *y, int64_t n) {
    const sp_block_mxfp4 *x = src;
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float scale = sp_e8m0_half(x[b].e);
        for (int j = 0; j < SP_QK32 / 2; j++) {
            y[j] = (float)sp_mxfp4_levels[x[b].qs[j] & 0x0F] * scale;
            y[j + SP_QK32 / 2] = (float)sp_mxfp4_levels[x[b].qs[j] >> 4] * scale;
        }
    }
}
