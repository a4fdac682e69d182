/* The grid-based IQ formats (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M): reference decoders. Each group of 8 (or 4) weights is a point of
 * a fixed grid (iq_grids.c) with signs, times a sub-block scale; layouts in
 * blocks.h. The products are taken in the order llama.cpp takes them
 * (scale first, then the grid value, then the sign), so that the floats
 * are the same bits as its decoder's.
 *
 * The quantizers are in quant_iq_grid.c and quant_iq1.c. */
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/iq_grids.h"
#include "quant/quant.h"

static inline uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static inline float sign_of(uint8_t signs, int j) { return signs >> j & 1 ? -1.f : 1.f; }

/* 8 elements of an IQ2 point, times scale, with signs. */
static void iq2_group(float *y, float scale, uint16_t point, uint8_t signs) {
    for (int j = 0; j < 8; j++) y[j] = scale * (float)sp_iq2_point(point, j) * sign_of(signs, j);
}

/* 8 elements from two IQ3 points. */
static void iq3_group(float *y, float scale, const uint8_t levels[8], uint16_t lo, uint16_t hi, uint8_t signs) {
    for (int j = 0; j < 4; j++) {
        y[j] = scale * (float)sp_iq3_point(levels, lo, j) * sign_of(signs, j);
        y[j + 4] = scale * (float)sp_iq3_point(levels, hi, j) * sign_of(signs, j + 4);
    }
}

/* 8 elements of an IQ1 point shifted by +-SP_IQ1_DELTA. */
static void iq1_group(float *y, float scale, uint16_t point, bool minus) {
    const float delta = minus ? -SP_IQ1_DELTA : SP_IQ1_DELTA;
    for (int j = 0; j < 8; j++) y[j] = scale * ((float)sp_iq1_point(point, j) + delta);
}

/* An IQ2 sub-block scale from its 4 bits. */
static inline float iq2_scale(float d, unsigned s) { return d * (0.5f + (float)s) * 0.25f; }

void sp_dequantize_iq2_xxs(const void *src, float *y, int64_t n) {
    const sp_block_iq2_xxs *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        const uint8_t *qs = (const uint8_t *)x[b].qs;
        for (int s = 0; s < 8; s++, qs += 8) {
            const uint32_t word = le32(qs + 4);
            const float scale = iq2_scale(d, word >> 28);
            for (int l = 0; l < 4; l++, y += 8) iq2_group(y, scale, sp_iq2xxs_grid[qs[l]], sp_iq_signs(word >> (7 * l)));
        }
    }
}

void sp_dequantize_iq2_xs(const void *src, float *y, int64_t n) {
    const sp_block_iq2_xs *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int s = 0; s < 8; s++)
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t q = x[b].qs[4 * s + l];
                iq2_group(y, iq2_scale(d, (x[b].scales[s] >> (4 * (l / 2))) & 15), sp_iq2xs_grid[q & 511], sp_iq_signs(q >> 9));
            }
    }
}

void sp_dequantize_iq2_s(const void *src, float *y, int64_t n) {
    const sp_block_iq2_s *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int s = 0; s < 8; s++)
            for (int l = 0; l < 4; l++, y += 8) {
                const int k = 4 * s + l;
                const unsigned index = x[b].qs[k] | ((unsigned)x[b].qh[s] >> (2 * l) & 3) << 8;
                iq2_group(y, iq2_scale(d, (x[b].scales[s] >> (4 * (l / 2))) & 15), sp_iq2s_grid[index], x[b].qs[SP_QK_K / 8 + k]);
            }
    }
}

void sp_dequantize_iq3_xxs(const void *src, float *y, int64_t n) {
    const sp_block_iq3_xxs *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int s = 0; s < 8; s++) {
            const uint8_t *qs = x[b].qs + 8 * s;
            const uint32_t word = le32(x[b].qs + SP_QK_K / 4 + 4 * s);
            const float scale = d * (0.5f + (float)(word >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8)
                iq3_group(y, scale, sp_iq3xxs_levels, sp_iq3xxs_grid[qs[2 * l]], sp_iq3xxs_grid[qs[2 * l + 1]], sp_iq_signs(word >> (7 * l)));
        }
    }
}

void sp_dequantize_iq3_s(const void *src, float *y, int64_t n) {
    const sp_block_iq3_s *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int s = 0; s < 8; s++) {
            const float scale = d * (float)(1 + 2 * ((x[b].scales[s / 2] >> (4 * (s % 2))) & 15));
            const uint8_t *qs = x[b].qs + 8 * s;
            const unsigned qh = x[b].qh[s];
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned lo = qs[2 * l] | (qh >> (2 * l) & 1) << 8, hi = qs[2 * l + 1] | (qh >> (2 * l + 1) & 1) << 8;
                iq3_group(y, scale, sp_iq3s_levels, sp_iq3s_grid[lo], sp_iq3s_grid[hi], x[b].signs[4 * s + l]);
            }
        }
    }
}

void sp_dequantize_iq1_s(const void *src, float *y, int64_t n) {
    const sp_block_iq1_s *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        for (int s = 0; s < 8; s++) {
            const unsigned qh = x[b].qh[s];
            const float scale = d * (float)(2 * (qh >> 12 & 7) + 1);
            for (int l = 0; l < 4; l++, y += 8)
                iq1_group(y, scale, sp_iq1s_grid[x[b].qs[4 * s + l] | (qh >> (3 * l) & 7) << 8], qh & 0x8000);
        }
    }
}

void sp_dequantize_iq1_m(const void *src, float *y, int64_t n) {
    const sp_block_iq1_m *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        unsigned words[4];
        for (int i = 0; i < 4; i++) words[i] = x[b].scales[2 * i] | (unsigned)x[b].scales[2 * i + 1] << 8;
        const uint16_t d_bits = (uint16_t)(words[0] >> 12 | (words[1] >> 8 & 0x00F0) | (words[2] >> 4 & 0x0F00) | (words[3] & 0xF000));
        const float d = sp_fp16_to_fp32(d_bits);
        for (int s = 0; s < 8; s++) {
            for (int h = 0; h < 2; h++) { /* two halves of 16, each its own scale */
                const float scale = d * (float)(2 * (words[s / 2] >> (6 * (s % 2) + 3 * h) & 7) + 1);
                const unsigned qh = x[b].qh[2 * s + h];
                for (int l = 0; l < 2; l++, y += 8) {
                    const unsigned nibble = qh >> (4 * l) & 15;
                    iq1_group(y, scale, sp_iq1s_grid[x[b].qs[4 * s + 2 * h + l] | (nibble & 7) << 8], nibble & 8);
                }
            }
        }
    }
}
