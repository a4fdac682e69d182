/* Quantizers of IQ1_S and IQ1_M: groups of 8 from three levels -1, 0, 1,
 * shifted by +-1/8 (a shift per 32 for IQ1_S, per 8 for IQ1_M), snapped to
 * the 2048-point grid, times a 3-bit odd scale.
 *
 * The search is the format author's, as llama.cpp runs it, so that the
 * blocks are llama-quantize's: with three levels the best weighted split
 * of a sub-block is found exactly by sorting it and trying every pair of
 * boundaries with prefix sums (IQ1_M also tries the four combinations of
 * its two groups' shifts); groups whose levels miss the grid take the
 * nearest neighbour under the weights, and the scale is fitted again.
 * Scales are then 3-bit multiples of the largest / 15; d carries the
 * format's correction (IQ1_M fits d once more over the whole super-block).
 *
 * Weights: importance * sqrt(sigma2 + x^2), sigma2 twice the super-block's
 * mean square; IQ1_M without an importance matrix uses x^2 (IQ1_S needs
 * the matrix). */
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/iq_lattice.h"
#include "quant/quant.h"

#define IQ1S_SUB 32
#define IQ1M_SUB 16

/* The three levels with the shift up (+) and down (-). */
static const float shifted_up[3] = {-1 + SP_IQ1_DELTA, SP_IQ1_DELTA, 1 + SP_IQ1_DELTA};
static const float shifted_down[3] = {-1 - SP_IQ1_DELTA, -SP_IQ1_DELTA, 1 - SP_IQ1_DELTA};

static float super_block_sigma2(const float *x) {
    float sum_x2 = 0;
    for (int i = 0; i < SP_QK_K; i++) sum_x2 += x[i] * x[i];
    return 2 * sum_x2 / SP_QK_K;
}

static void sub_block_weights(const float *xb, const float *qw, float sigma2, int n, float *weight) {
    for (int i = 0; i < n; i++) weight[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
}

/* The order of xb ascending, ties in index order (a stable sort, as the
 * merge sort of glibc's qsort gives llama.cpp). */
static void sort_order(const float *xb, int n, int *order) {
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && xb[order[j - 1]] > xb[i]) order[j] = order[j - 1], j--;
        order[j] = i;
    }
}

/* Levels 0, 1, 2 of the sorted elements before i1, from i1, from i2. */
static void split_levels(const int *order, int n, int i1, int i2, int8_t *levels) {
    for (int j = 0; j < n; j++) levels[order[j]] = (int8_t)(j < i1 ? 0 : j < i2 ? 1 : 2);
}

/* A group's point: its levels' if on the grid, else the neighbour nearest
 * to x at this scale under the weights; levels become the point's. */
static int snap_group(const sp_iq_lattice *lat, const float *x, const float *w, float scale, const float *shifted,
                      int8_t *levels, bool *on_grid) {
    unsigned key = 0;
    for (int j = 0; j < 8; j++) key |= (unsigned)levels[j] << (2 * j);
    int p = lat->point_of[key];
    *on_grid = p >= 0;
    if (p >= 0) return p;
    p = sp_iq_lattice_nearest(lat, key, x, w, scale, shifted);
    for (int j = 0; j < 8; j++) levels[j] = (int8_t)sp_iq_lattice_level(lat, p, j);
    return p;
}

/* The fit of x by the points' shifted levels: sum qx and sum q2 (times m
 * per level, IQ1_M's sub-block multiplier). */
static void point_sums(const sp_iq_lattice *lat, int p, const float *shifted, float m, const float *x, const float *w,
                       float *sum_qx, float *sum_q2) {
    for (int j = 0; j < 8; j++) {
        const float q = shifted[sp_iq_lattice_level(lat, p, j)] * m;
        *sum_qx += w[j] * q * x[j];
        *sum_q2 += w[j] * q * q;
    }
}

void sp_quantize_iq1_s_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    const sp_iq_lattice *lat = sp_iq_lattice_of(SP_LATTICE_IQ1S);
    sp_block_iq1_s *y = dst;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        memset(&y[b], 0, sizeof y[b]);
        const float sigma2 = super_block_sigma2(x);
        float scales[SP_QK_K / IQ1S_SUB], max_scale = 0;
        bool down[SP_QK_K / IQ1S_SUB];
        for (int ib = 0; ib < SP_QK_K / IQ1S_SUB; ib++) {
            const float *xb = x + IQ1S_SUB * ib;
            float weight[IQ1S_SUB], sum_x[IQ1S_SUB + 1], sum_w[IQ1S_SUB + 1];
            sub_block_weights(xb, importance ? importance + SP_QK_K * b + IQ1S_SUB * ib : NULL, sigma2, IQ1S_SUB, weight);
            scales[ib] = 0;
            down[ib] = false;
            float max = fabsf(xb[0]);
            for (int i = 1; i < IQ1S_SUB; i++) max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
            if (max < 1e-12f) continue;
            int order[IQ1S_SUB];
            sort_order(xb, IQ1S_SUB, order);
            sum_x[0] = sum_w[0] = 0;
            for (int j = 0; j < IQ1S_SUB; j++) {
                sum_x[j + 1] = sum_x[j] + weight[order[j]] * xb[order[j]];
                sum_w[j + 1] = sum_w[j] + weight[order[j]];
            }
            float best = -INFINITY, scale = max;
            int best1 = -1, best2 = -1, shift = 0;
            for (int i1 = 0; i1 <= IQ1S_SUB; i1++)
                for (int i2 = i1; i2 <= IQ1S_SUB; i2++)
                    for (int s = 0; s < 2; s++) {
                        const float *v = s ? shifted_down : shifted_up;
                        const float sqx = (sum_x[i1] - sum_x[0]) * v[0] + (sum_x[i2] - sum_x[i1]) * v[1] +
                                          (sum_x[IQ1S_SUB] - sum_x[i2]) * v[2];
                        const float sq2 = (sum_w[i1] - sum_w[0]) * v[0] * v[0] + (sum_w[i2] - sum_w[i1]) * v[1] * v[1] +
                                          (sum_w[IQ1S_SUB] - sum_w[i2]) * v[2] * v[2];
                        if (sq2 > 0 && sqx * sqx > best * sq2)
                            scale = sqx / sq2, best = scale * sqx, best1 = i1, best2 = i2, shift = s ? -1 : 1;
                    }
            if (best1 < 0) continue;
            int8_t levels[IQ1S_SUB];
            split_levels(order, IQ1S_SUB, best1, best2, levels);
            if (scale < 0) {
                for (int j = 0; j < IQ1S_SUB; j++) levels[j] = (int8_t)(2 - levels[j]);
                scale = -scale;
                shift = -shift;
            }
            const float *shifted = shift == 1 ? shifted_up : shifted_down;
            int points[IQ1S_SUB / 8];
            bool all_on_grid = true, on_grid;
            for (int k = 0; k < IQ1S_SUB / 8; k++) {
                points[k] = snap_group(lat, xb + 8 * k, weight + 8 * k, scale, shifted, levels + 8 * k, &on_grid);
                all_on_grid &= on_grid;
            }
            if (!all_on_grid) {
                float sqx = 0, sq2 = 0;
                for (int k = 0; k < IQ1S_SUB / 8; k++) point_sums(lat, points[k], shifted, 1.f, xb + 8 * k, weight + 8 * k, &sqx, &sq2);
                if (sqx > 0 && sq2 > 0) scale = sqx / sq2;
            }
            uint16_t h = 0;
            for (int k = 0; k < IQ1S_SUB / 8; k++) {
                y[b].qs[IQ1S_SUB / 8 * ib + k] = (uint8_t)points[k];
                h |= (uint16_t)((points[k] >> 8) << (3 * k));
            }
            y[b].qh[ib] = h;
            scales[ib] = scale;
            down[ib] = shift == -1;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (!(max_scale > 0)) continue;
        const float d = max_scale / 15, id = 1 / d;
        y[b].d = sp_fp32_to_fp16(d * 1.125f);
        for (int ib = 0; ib < SP_QK_K / IQ1S_SUB; ib++) {
            int l = sp_nearest_int(0.5f * (id * scales[ib] - 1));
            l = l < 0 ? 0 : (l > 7 ? 7 : l);
            y[b].qh[ib] |= (uint16_t)((l | (down[ib] ? 8 : 0)) << 12);
        }
    }
}

/* IQ1_M's shift choices per sub-block of two groups: bit 1 the first
 * group's, bit 0 the second's (set: shifted down). */
static const float *iq1m_shifted(int choice, int group) {
    return (group == 0 ? choice >> 1 : choice & 1) ? shifted_down : shifted_up;
}

/* The best split and shift choice of a sorted IQ1_M sub-block; false if none fits. */
static bool iq1m_split(const float *xb, const float *weight, const int *order, int *i1_out, int *i2_out, int *choice_out,
                       float *scale) {
    float best = -INFINITY;
    bool found = false;
    for (int i1 = 0; i1 <= IQ1M_SUB; i1++)
        for (int i2 = i1; i2 <= IQ1M_SUB; i2++) {
            float sqx[4] = {0}, sq2[4] = {0};
            for (int j = 0; j < IQ1M_SUB; j++) {
                const int i = order[j], level = j < i1 ? 0 : j < i2 ? 1 : 2;
                for (int c = 0; c < 4; c++) {
                    const float q = iq1m_shifted(c, i >= IQ1M_SUB / 2)[level];
                    sqx[c] += weight[i] * q * xb[i];
                    sq2[c] += weight[i] * q * q;
                }
            }
            for (int c = 0; c < 4; c++)
                if (sq2[c] > 0 && sqx[c] * sqx[c] > best * sq2[c]) {
                    *scale = sqx[c] / sq2[c];
                    best = *scale * sqx[c];
                    *i1_out = i1, *i2_out = i2, *choice_out = c;
                    found = true;
                }
        }
    return found;
}

void sp_quantize_iq1_m_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    const sp_iq_lattice *lat = sp_iq_lattice_of(SP_LATTICE_IQ1S);
    sp_block_iq1_m *y = dst;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        memset(&y[b], 0, sizeof y[b]);
        const float sigma2 = super_block_sigma2(x);
        const float *qw_block = importance ? importance + SP_QK_K * b : NULL;
        float scales[SP_QK_K / IQ1M_SUB], max_scale = 0;
        int choices[SP_QK_K / IQ1M_SUB];
        for (int ib = 0; ib < SP_QK_K / IQ1M_SUB; ib++) {
            const float *xb = x + IQ1M_SUB * ib;
            float weight[IQ1M_SUB];
            sub_block_weights(xb, qw_block ? qw_block + IQ1M_SUB * ib : NULL, sigma2, IQ1M_SUB, weight);
            scales[ib] = 0;
            choices[ib] = 0;
            float max = fabsf(xb[0]);
            for (int i = 1; i < IQ1M_SUB; i++) max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
            if (max < 1e-7f) continue;
            int order[IQ1M_SUB], i1 = 0, i2 = 0, choice = 0;
            sort_order(xb, IQ1M_SUB, order);
            float scale = max;
            if (!iq1m_split(xb, weight, order, &i1, &i2, &choice, &scale)) continue;
            int8_t levels[IQ1M_SUB];
            split_levels(order, IQ1M_SUB, i1, i2, levels);
            if (scale < 0) {
                for (int j = 0; j < IQ1M_SUB; j++) levels[j] = (int8_t)(2 - levels[j]);
                scale = -scale;
                choice = 3 - choice;
            }
            int points[2];
            bool all_on_grid = true, on_grid;
            for (int k = 0; k < 2; k++) {
                points[k] = snap_group(lat, xb + 8 * k, weight + 8 * k, scale, iq1m_shifted(choice, k), levels + 8 * k, &on_grid);
                all_on_grid &= on_grid;
            }
            if (!all_on_grid) {
                float sqx = 0, sq2 = 0;
                for (int k = 0; k < 2; k++)
                    point_sums(lat, points[k], iq1m_shifted(choice, k), 1.f, xb + 8 * k, weight + 8 * k, &sqx, &sq2);
                if (sqx > 0 && sq2 > 0) scale = sqx / sq2;
            }
            y[b].qs[2 * ib] = (uint8_t)points[0];
            y[b].qs[2 * ib + 1] = (uint8_t)points[1];
            y[b].qh[ib] = (uint8_t)((points[0] >> 8) | (points[1] >> 8) << 4);
            scales[ib] = scale;
            choices[ib] = choice;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (!(max_scale > 0)) continue;
        uint16_t words[4] = {0};
        float d = max_scale / 15;
        const float id = 1 / d;
        float sqx = 0, sq2 = 0;
        for (int ib = 0; ib < SP_QK_K / IQ1M_SUB; ib++) {
            int l = sp_nearest_int(0.5f * (id * scales[ib] - 1));
            l = l < 0 ? 0 : (l > 7 ? 7 : l);
            words[ib / 4] |= (uint16_t)(l << (3 * (ib % 4)));
            y[b].qh[ib] |= (uint8_t)((choices[ib] & 2 ? 0x08 : 0) | (choices[ib] & 1 ? 0x80 : 0));
            const float *xb = x + IQ1M_SUB * ib;
            float weight[IQ1M_SUB];
            sub_block_weights(xb, qw_block ? qw_block + IQ1M_SUB * ib : NULL, sigma2, IQ1M_SUB, weight);
            for (int k = 0; k < 2; k++) {
                const int p = y[b].qs[2 * ib + k] | (y[b].qh[ib] >> (4 * k) & 7) << 8;
                point_sums(lat, p, iq1m_shifted(choices[ib], k), (float)(2 * l + 1), xb + 8 * k, weight + 8 * k, &sqx, &sq2);
            }
        }
        if (sq2 > 0) d = sqx / sq2;
        const uint16_t d_bits = sp_fp32_to_fp16(d * 1.1125f);
        for (int i = 0; i < 4; i++) {
            words[i] |= (uint16_t)((d_bits >> (4 * i) & 0xF) << 12);
            y[b].scales[2 * i] = (uint8_t)words[i];
            y[b].scales[2 * i + 1] = (uint8_t)(words[i] >> 8);
        }
    }
}

void sp_quantize_iq1_m(const float *x, void *dst, int64_t n) { sp_quantize_iq1_m_weighted(x, dst, n, NULL); }
