/* The 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1).
 *
 * The quantizers follow the reference algorithms of the format's authors, so
 * that a file sprout writes decodes to the same values as llama.cpp's: the
 * symmetric formats scale by the signed element of largest magnitude (mapped
 * to the most negative level), the affine ones spread [min, max] over all
 * levels. Every intermediate is clamped before the float-to-int conversion,
 * so inf/nan weights give garbage but never undefined behaviour. */
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

/* truncation of a level computed as x + 0.5 (the formats' own rounding) */
static inline int level_trunc(float x, int max_level) {
    if (!(x >= 0.f)) return 0; /* also catches nan */
    if (x >= (float)max_level) return max_level;
    return (int)x;
}

static void min_max(const float *x, int n, float *min_out, float *max_out) {
    float min = x[0], max = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    *min_out = min;
    *max_out = max;
}

void sp_quantize_q4_0(const float *x, void *dst, int64_t n) {
    sp_block_q4_0 *y = dst;
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        const float d = sp_signed_absmax(x, SP_QK32, NULL) / -8.f;
        const float id = d ? 1.f / d : 0.f;
        y[b].d = sp_fp32_to_fp16(d);
        for (int j = 0; j < SP_QK32 / 2; j++) {
            int lo = level_trunc(x[j] * id + 8.5f, 15);
            int hi = level_trunc(x[j + SP_QK32 / 2] * id + 8.5f, 15);
            y[b].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void sp_dequantize_q4_0(const void *src, float *y, int64_t n) {
    const sp_block_q4_0 *x = src;
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int j = 0; j < SP_QK32 / 2; j++) {
            y[j] = (float)((x[b].qs[j] & 0x0F) - 8) * d;
            y[j + SP_QK32 / 2] = (float)((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

void sp_quantize_q4_1(const float *x, void *dst, int64_t n) {
    sp_block_q4_1 *y = dst;
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        float min, max;
        min_max(x, SP_QK32, &min, &max);
        const float d = (max - min) / 15.f;
        const float id = d ? 1.f / d : 0.f;
        y[b].d = sp_fp32_to_fp16(d);
        y[b].m = sp_fp32_to_fp16(min);
        for (int j = 0; j < SP_QK32 / 2; j++) {
            int lo = level_trunc((x[j] - min) * id + 0.5f, 15);
            int hi = level_trunc((x[j + SP_QK32 / 2] - min) * id + 0.5f, 15);
            y[b].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void sp_dequantize_q4_1(const void *src, float *y, int64_t n) {
    const sp_block_q4_1 *x = src;
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float d = sp_fp16_to_fp32(x[b].d), m = sp_fp16_to_fp32(x[b].m);
        for (int j = 0; j < SP_QK32 / 2; j++) {
            y[j] = (float)(x[b].qs[j] & 0x0F) * d + m;
            y[j + SP_QK32 / 2] = (float)(x[b].qs[j] >> 4) * d + m;
        }
    }
}

/* Stores 32 five-bit levels: low nibbles in qs (as Q4), bit 4 of level j in
 * bit j of qh (little-endian). */
static void pack_5bit(const int *levels, uint8_t qs[16], uint8_t qh_out[4]) {
    uint32_t qh = 0;
    for (int j = 0; j < SP_QK32 / 2; j++) {
        int lo = levels[j], hi = levels[j + SP_QK32 / 2];
        qs[j] = (uint8_t)((lo & 0x0F) | ((hi & 0x0F) << 4));
        qh |= (uint32_t)((lo >> 4) & 1) << j;
        qh |= (uint32_t)((hi >> 4) & 1) << (j + SP_QK32 / 2);
    }
    for (int k = 0; k < 4; k++) qh_out[k] = (uint8_t)(qh >> (8 * k));
}

static void unpack_5bit(const uint8_t qs[16], const uint8_t qh_in[4], int *levels) {
    uint32_t qh = (uint32_t)qh_in[0] | (uint32_t)qh_in[1] << 8 | (uint32_t)qh_in[2] << 16 | (uint32_t)qh_in[3] << 24;
    for (int j = 0; j < SP_QK32 / 2; j++) {
        levels[j] = (qs[j] & 0x0F) | (int)(((qh >> j) & 1) << 4);
        levels[j + SP_QK32 / 2] = (qs[j] >> 4) | (int)(((qh >> (j + SP_QK32 / 2)) & 1) << 4);
    }
}

void sp_quantize_q5_0(const float *x, void *dst, int64_t n) {
    sp_block_q5_0 *y = dst;
    int levels[SP_QK32];
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        const float d = sp_signed_absmax(x, SP_QK32, NULL) / -16.f;
        const float id = d ? 1.f / d : 0.f;
        y[b].d = sp_fp32_to_fp16(d);
        for (int j = 0; j < SP_QK32; j++) levels[j] = level_trunc(x[j] * id + 16.5f, 31);
        pack_5bit(levels, y[b].qs, y[b].qh);
    }
}

void sp_dequantize_q5_0(const void *src, float *y, int64_t n) {
    const sp_block_q5_0 *x = src;
    int levels[SP_QK32];
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float d = sp_fp16_to_fp32(x[b].d);
        unpack_5bit(x[b].qs, x[b].qh, levels);
        for (int j = 0; j < SP_QK32; j++) y[j] = (float)(levels[j] - 16) * d;
    }
}

void sp_quantize_q5_1(const float *x, void *dst, int64_t n) {
    sp_block_q5_1 *y = dst;
    int levels[SP_QK32];
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        float min, max;
        min_max(x, SP_QK32, &min, &max);
        const float d = (max - min) / 31.f;
        const float id = d ? 1.f / d : 0.f;
        y[b].d = sp_fp32_to_fp16(d);
        y[b].m = sp_fp32_to_fp16(min);
        for (int j = 0; j < SP_QK32; j++) levels[j] = level_trunc((x[j] - min) * id + 0.5f, 31);
        pack_5bit(levels, y[b].qs, y[b].qh);
    }
}

void sp_dequantize_q5_1(const void *src, float *y, int64_t n) {
    const sp_block_q5_1 *x = src;
    int levels[SP_QK32];
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float d = sp_fp16_to_fp32(x[b].d), m = sp_fp16_to_fp32(x[b].m);
        unpack_5bit(x[b].qs, x[b].qh, levels);
        for (int j = 0; j < SP_QK32; j++) y[j] = (float)levels[j] * d + m;
    }
}

/* round half away from zero, clamped to int8 */
static inline int8_t round_i8(float v) {
    if (!(v == v)) return 0;
    v = roundf(v);
    return (int8_t)(v > 127.f ? 127.f : (v < -128.f ? -128.f : v));
}

static float absmax(const float *x, int n) {
    float amax = 0.f;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
    return amax;
}

void sp_quantize_q8_0(const float *x, void *dst, int64_t n) {
    sp_block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        const float d = absmax(x, SP_QK32) / 127.f;
        const float id = d ? 1.f / d : 0.f;
        y[b].d = sp_fp32_to_fp16(d);
        for (int j = 0; j < SP_QK32; j++) y[b].qs[j] = round_i8(x[j] * id);
    }
}

void sp_dequantize_q8_0(const void *src, float *y, int64_t n) {
    const sp_block_q8_0 *x = src;
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int j = 0; j < SP_QK32; j++) y[j] = (float)x[b].qs[j] * d;
    }
}

void sp_quantize_q8_1(const float *x, void *dst, int64_t n) {
    sp_block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / SP_QK32; b++, x += SP_QK32) {
        const float d = absmax(x, SP_QK32) / 127.f;
        const float id = d ? 1.f / d : 0.f;
        int sum = 0;
        y[b].d = sp_fp32_to_fp16(d);
        for (int j = 0; j < SP_QK32; j++) {
            y[b].qs[j] = round_i8(x[j] * id);
            sum += y[b].qs[j];
        }
        y[b].s = sp_fp32_to_fp16((float)sum * d);
    }
}

void sp_dequantize_q8_1(const void *src, float *y, int64_t n) {
    const sp_block_q8_1 *x = src;
    for (int64_t b = 0; b < n / SP_QK32; b++, y += SP_QK32) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int j = 0; j < SP_QK32; j++) y[j] = (float)x[b].qs[j] * d;
    }
}
