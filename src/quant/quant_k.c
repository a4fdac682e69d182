/* The K-quant formats: 256-element super-blocks split into sub-blocks of 16
 * or 32, each sub-block with its own scale (and min), the scales themselves
 * quantized against one or two half-precision super-block factors.
 *
 * The quantizers follow the published reference algorithms so that sprout's
 * files decode like llama.cpp's (same levels for the same input): for each
 * sub-block a small search picks the scale (and min) that minimises a
 * weighted squared error, then the sub-block scales are quantized and the
 * levels recomputed against the scales as they will be decoded. */
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

static inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* --- sub-block searches ---------------------------------------------------- */

/* The candidate scales of a search are independent, so each search runs
 * them side by side: one lane per candidate, the elements in order. Every
 * lane adds its terms in the same order as a one-candidate-at-a-time loop,
 * so the results are bit for bit those of the reference algorithm, and the
 * inner loops (fixed trip count, no branches) vectorize. */
#define SEARCH_LANES 24
/* The lanes fit 6 SSE, 3 AVX2 or 1.5 AVX-512 registers: on x86-64 the
 * loader picks the widest the CPU has. No clone contracts multiply-adds
 * (ISO C mode), so all give the same numbers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SEARCH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SEARCH_CLONES
#endif
#define SEARCH_MAX_N 32

/* Round to nearest even, as sp_nearest_int, kept in float so it vectorizes:
 * exact for |v| < 2^22, which bounds every level the searches compute. */
static inline float round_to_level(float v, float lo, float hi) {
    float r = (v + 12582912.f) - 12582912.f;
    r = r < lo ? lo : r;
    return r > hi ? hi : r;
}

/* Symmetric levels in [-nmax, nmax-1] for n values, stored as L = level+nmax.
 * Starts from the scale that maps the signed absmax to -nmax, then tries 18
 * nearby scales and keeps the one with the least error weighted by x^2 (the
 * least-squares scale for the chosen levels is returned). */
SEARCH_CLONES static float search_symmetric(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = sp_signed_absmax(x, n, &amax);
    if (amax < SP_ZERO_AMAX) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    /* lane 0: the absmax scale; lanes 1..18: steps -9..9 without 0 */
    float iscale[SEARCH_LANES], sumlx[SEARCH_LANES] = {0}, suml2[SEARCH_LANES] = {0};
    for (int s = 0; s < SEARCH_LANES; s++) {
        const int step = s == 0 ? 0 : (s <= 9 ? s - 10 : s - 9);
        iscale[s] = s == 0 ? -(float)nmax / max : -((float)nmax + 0.1f * (float)(s < 19 ? step : 9)) / max;
    }
    const float lo = (float)-nmax, hi = (float)(nmax - 1);
    for (int i = 0; i < n; i++) {
        const float xi = x[i], w = xi * xi;
        for (int s = 0; s < SEARCH_LANES; s++) {
            const float l = round_to_level(iscale[s] * xi, lo, hi);
            sumlx[s] += w * xi * l;
            suml2[s] += w * (l * l);
        }
    }
    int chosen = 0;
    float scale = suml2[0] ? sumlx[0] / suml2[0] : 0.f;
    float best = scale * sumlx[0];
    for (int s = 1; s < 19; s++) {
        if (suml2[s] > 0.f && sumlx[s] * sumlx[s] > best * suml2[s]) {
            chosen = s;
            scale = sumlx[s] / suml2[s];
            best = scale * sumlx[s];
        }
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + clamp_int(sp_nearest_int(iscale[chosen] * x[i]), -nmax, nmax - 1));
    return scale;
}

/* Symmetric 3-bit style search: start from the absmax scale, then move single
 * levels while that raises the weighted correlation (sumlx^2 / suml2), up to
 * five sweeps. L gets level+nmax. */
static float search_symmetric_refine(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = sp_signed_absmax(x, n, &amax);
    if (amax < SP_ZERO_AMAX) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    const float iscale = -(float)nmax / max;
    float sumlx = 0.f, suml2 = 0.f;
    for (int i = 0; i < n; i++) {
        int l = clamp_int(sp_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)(l * l);
    }
    for (int sweep = 0; sweep < 5; sweep++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx <= 0.f) continue;
            float sl2 = suml2 - w * (float)(L[i] * L[i]);
            int l = clamp_int(sp_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (l == L[i]) continue;
            slx += w * x[i] * (float)l;
            sl2 += w * (float)(l * l);
            if (sl2 > 0.f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)l;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return sumlx / suml2;
}

/* Affine levels in [0, nmax]: x ~ scale * L - min, min >= 0. Tries nstep+1
 * candidate scales around (nmax + rmin .. nmax + rmin + nstep*rdelta) /
 * range, solving the weighted least-squares scale and min for each set of
 * levels; keeps the least weighted error (absolute if use_mad, else
 * squared). Returns the scale and stores min in *min_out. */
SEARCH_CLONES static float search_affine(int n, int nmax, const float *x, const float *w, uint8_t *L, float *min_out,
                           float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.f) min = 0.f;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *min_out = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.f / iscale;
    float best_err = 0.f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clamp_int(sp_nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        best_err += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    /* Step s's levels depend on min, which the reference moves whenever a
     * step improves: evaluate every remaining step with the current min,
     * take the first improvement, and re-evaluate the steps after it only
     * if min changed. A sub-block takes one or a few passes. */
    float levels[SEARCH_MAX_N][SEARCH_LANES];
    int first = 0;
    while (first <= nstep) {
        float step_iscale[SEARCH_LANES], sum_l[SEARCH_LANES] = {0}, sum_l2[SEARCH_LANES] = {0},
            sum_xl[SEARCH_LANES] = {0};
        for (int s = 0; s < SEARCH_LANES; s++)
            step_iscale[s] = (rmin + rdelta * (float)(s <= nstep ? s : nstep) + (float)nmax) / (max - min);
        const float top = (float)nmax;
        for (int i = 0; i < n; i++) {
            const float xi = x[i], wi = w[i], xm = xi - min;
            for (int s = 0; s < SEARCH_LANES; s++) {
                const float l = round_to_level(step_iscale[s] * xm, 0.f, top);
                levels[i][s] = l;
                sum_l[s] += wi * l;
                sum_l2[s] += wi * (l * l);
                sum_xl[s] += wi * l * xi;
            }
        }
        float step_scale[SEARCH_LANES], step_min[SEARCH_LANES], err[SEARCH_LANES] = {0};
        bool solvable[SEARCH_LANES];
        for (int s = 0; s < SEARCH_LANES; s++) {
            const float D = sum_w * sum_l2[s] - sum_l[s] * sum_l[s];
            solvable[s] = D > 0.f;
            step_scale[s] = solvable[s] ? (sum_w * sum_xl[s] - sum_x * sum_l[s]) / D : 0.f;
            step_min[s] = solvable[s] ? (sum_l2[s] * sum_x - sum_l[s] * sum_xl[s]) / D : 0.f;
            if (step_min[s] > 0.f) {
                step_min[s] = 0.f;
                step_scale[s] = sum_xl[s] / sum_l2[s];
            }
        }
        for (int i = 0; i < n; i++) {
            const float xi = x[i], wi = w[i];
            if (use_mad) {
                for (int s = 0; s < SEARCH_LANES; s++) err[s] += wi * fabsf(step_scale[s] * levels[i][s] + step_min[s] - xi);
            } else {
                for (int s = 0; s < SEARCH_LANES; s++) {
                    const float diff = step_scale[s] * levels[i][s] + step_min[s] - xi;
                    err[s] += wi * (diff * diff);
                }
            }
        }
        int next = nstep + 1;
        for (int s = first; s <= nstep; s++) {
            if (!solvable[s] || !(err[s] < best_err)) continue;
            for (int i = 0; i < n; i++) L[i] = (uint8_t)clamp_int(sp_nearest_int(levels[i][s]), 0, nmax);
            best_err = err[s];
            scale = step_scale[s];
            if (step_min[s] != min) {
                min = step_min[s];
                next = s + 1;
                break;
            }
        }
        first = next;
    }
    *min_out = -min;
    return scale;
}

/* --- 6-bit scale/min packing shared by Q4_K and Q5_K --------------------------
 * 8 scales and 8 mins of 6 bits in 12 bytes: bytes 0-3 hold scales 0-3 (low 6
 * bits) and the top 2 bits of scales 4-7; bytes 4-7 the same for mins; bytes
 * 8-11 the low 4 bits of scale j (low nibble) and min j (high nibble), j=4..7. */

static void k4_pack_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t q[12]) {
    memset(q, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            q[j] = sc[j];
            q[j + 4] = m[j];
        } else {
            q[j + 4] = (uint8_t)((sc[j] & 0x0F) | ((m[j] & 0x0F) << 4));
            q[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            q[j] |= (uint8_t)((m[j] >> 4) << 6);
        }
    }
}

/* 16 signed 6-bit Q3_K scales (stored +32) in 12 bytes: low nibbles of 0-7
 * in bytes 0-7, of 8-15 in the high nibbles of bytes 0-7; the top 2 bits of
 * scale j in bits 2*(j/4) of byte 8 + j%4. */
static void q3k_pack_scales(const int levels[16], uint8_t q[12]) {
    memset(q, 0, 12);
    for (int j = 0; j < 16; j++) {
        int l = levels[j]; /* 0..63 */
        if (j < 8) q[j] = (uint8_t)(l & 0x0F);
        else q[j - 8] |= (uint8_t)((l & 0x0F) << 4);
        q[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
    }
}

/* --- Q2_K ------------------------------------------------------------------ */

/* 2-bit levels for 4 groups of 32 within 128 elements: byte l of a 32-byte
 * run holds element l (bits 0-1), l+32 (2-3), l+64 (4-5), l+96 (6-7). */
static void pack_2bit_128(const uint8_t *L, uint8_t *q) {
    for (int l = 0; l < 32; l++)
        q[l] = (uint8_t)(L[l] | (L[l + 32] << 2) | (L[l + 64] << 4) | (L[l + 96] << 6));
}

void sp_quantize_q2_K(const float *x, void *dst, int64_t n) {
    sp_block_q2_K *y = dst;
    uint8_t L[SP_QK_K];
    float weights[16], mins[16], scales[16];
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        float max_scale = 0.f, max_min = 0.f;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = search_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0.f) {
            float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) y[b].scales[j] = (uint8_t)clamp_int(sp_nearest_int(iscale * scales[j]), 0, 15);
            y[b].d = sp_fp32_to_fp16(max_scale / 15.f);
        } else {
            memset(y[b].scales, 0, 16);
            y[b].d = sp_fp32_to_fp16(0.f);
        }
        if (max_min > 0.f) {
            float iscale = 15.f / max_min;
            for (int j = 0; j < 16; j++)
                y[b].scales[j] |= (uint8_t)(clamp_int(sp_nearest_int(iscale * mins[j]), 0, 15) << 4);
            y[b].dmin = sp_fp32_to_fp16(max_min / 15.f);
        } else {
            y[b].dmin = sp_fp32_to_fp16(0.f);
        }
        /* recompute the levels against the scales as they decode */
        for (int j = 0; j < 16; j++) {
            const float d = sp_fp16_to_fp32(y[b].d) * (float)(y[b].scales[j] & 0x0F);
            if (!d) continue;
            const float dm = sp_fp16_to_fp32(y[b].dmin) * (float)(y[b].scales[j] >> 4);
            for (int l = 0; l < 16; l++) L[16 * j + l] = (uint8_t)clamp_int(sp_nearest_int((x[16 * j + l] + dm) / d), 0, 3);
        }
        pack_2bit_128(L, y[b].qs);
        pack_2bit_128(L + 128, y[b].qs + 32);
    }
}

void sp_dequantize_q2_K(const void *src, float *y, int64_t n) {
    const sp_block_q2_K *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d), dmin = sp_fp16_to_fp32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; part++) {
                    const uint8_t sc = x[b].scales[is++];
                    const float dl = d * (float)(sc & 0x0F), ml = dmin * (float)(sc >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[16 * part + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

/* --- Q3_K ------------------------------------------------------------------ */

void sp_quantize_q3_K(const float *x, void *dst, int64_t n) {
    sp_block_q3_K *y = dst;
    int8_t L[SP_QK_K];
    uint8_t U[SP_QK_K];
    float scales[16];
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        for (int j = 0; j < 16; j++) scales[j] = search_symmetric_refine(16, 4, x + 16 * j, L + 16 * j);
        const float max_scale = sp_signed_absmax(scales, 16, NULL);
        if (max_scale != 0.f) {
            const float iscale = -32.f / max_scale;
            int levels[16];
            for (int j = 0; j < 16; j++) levels[j] = clamp_int(sp_nearest_int(iscale * scales[j]), -32, 31) + 32;
            q3k_pack_scales(levels, y[b].scales);
            y[b].d = sp_fp32_to_fp16(1.f / iscale);
        } else {
            memset(y[b].scales, 0, 12);
            y[b].d = sp_fp32_to_fp16(0.f);
        }
        int8_t sc[16];
        sp_q3k_unpack_scales(y[b].scales, sc);
        for (int j = 0; j < 16; j++) {
            const float d = sp_fp16_to_fp32(y[b].d) * (float)sc[j];
            if (!d) continue;
            for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t)(clamp_int(sp_nearest_int(x[16 * j + l] / d), -4, 3) + 4);
        }
        /* bit 2 of the level of element j goes to bit j/32 of hmask[j%32] */
        memset(y[b].hmask, 0, sizeof y[b].hmask);
        for (int j = 0; j < SP_QK_K; j++) {
            int l = L[j];
            if (l > 3) {
                y[b].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                l -= 4;
            }
            U[j] = (uint8_t)l;
        }
        pack_2bit_128(U, y[b].qs);
        pack_2bit_128(U + 128, y[b].qs + 32);
    }
}

void sp_dequantize_q3_K(const void *src, float *y, int64_t n) {
    const sp_block_q3_K *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d_all = sp_fp16_to_fp32(x[b].d);
        int8_t sc[16];
        sp_q3k_unpack_scales(x[b].scales, sc);
        const uint8_t *q = x[b].qs, *hm = x[b].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; part++) {
                    const float dl = d_all * (float)sc[is++];
                    for (int l = 0; l < 16; l++) {
                        int k = 16 * part + l;
                        int level = ((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4);
                        *y++ = dl * (float)level;
                    }
                }
            }
        }
    }
}

/* --- Q4_K and Q5_K ----------------------------------------------------------- */

/* Shared by Q4_K (nmax 15) and Q5_K (nmax 31): per 32-element sub-block an
 * affine search weighted by rms + |x|, then 6-bit scales and mins against two
 * half factors, then levels recomputed against the decoded scales. */
static void quantize_k_affine_superblock(const float *x, int nmax, float rmin, int nstep, uint16_t *d_out,
                                         uint16_t *dmin_out, uint8_t packed_scales[12], uint8_t L[SP_QK_K]) {
    float weights[32], mins[8], scales[8];
    float max_scale = 0.f, max_min = 0.f;
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0.f;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32.f);
        for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(xs[l]);
        scales[j] = search_affine(32, nmax, xs, weights, L + 32 * j, &mins[j], rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0.f ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0.f ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        ls[j] = (uint8_t)clamp_int(sp_nearest_int(inv_scale * scales[j]), 0, 63);
        lm[j] = (uint8_t)clamp_int(sp_nearest_int(inv_min * mins[j]), 0, 63);
    }
    k4_pack_scales(ls, lm, packed_scales);
    *d_out = sp_fp32_to_fp16(max_scale / 63.f);
    *dmin_out = sp_fp32_to_fp16(max_min / 63.f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        sp_q4k_scale_min(j, packed_scales, &sc, &m);
        const float d = sp_fp16_to_fp32(*d_out) * (float)sc;
        if (!d) continue;
        const float dm = sp_fp16_to_fp32(*dmin_out) * (float)m;
        for (int l = 0; l < 32; l++) L[32 * j + l] = (uint8_t)clamp_int(sp_nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
    }
}

void sp_quantize_q4_K(const float *x, void *dst, int64_t n) {
    sp_block_q4_K *y = dst;
    uint8_t L[SP_QK_K];
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        quantize_k_affine_superblock(x, 15, -1.f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
        /* 64 elements per 32 bytes: j in the low nibble, j+32 in the high one */
        for (int j = 0; j < SP_QK_K / 64; j++)
            for (int l = 0; l < 32; l++) y[b].qs[32 * j + l] = (uint8_t)(L[64 * j + l] | (L[64 * j + l + 32] << 4));
    }
}

void sp_dequantize_q4_K(const void *src, float *y, int64_t n) {
    const sp_block_q4_K *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d), dmin = sp_fp16_to_fp32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int j = 0; j < SP_QK_K / 64; j++, q += 32) {
            uint8_t sc, m;
            sp_q4k_scale_min(2 * j, x[b].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            sp_q4k_scale_min(2 * j + 1, x[b].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0x0F) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void sp_quantize_q5_K(const float *x, void *dst, int64_t n) {
    sp_block_q5_K *y = dst;
    uint8_t L[SP_QK_K];
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        quantize_k_affine_superblock(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
        /* as Q4_K for the low 4 bits; bit 4 of element 64j+l goes to bit 2j
         * of qh[l], of element 64j+32+l to bit 2j+1 */
        memset(y[b].qh, 0, sizeof y[b].qh);
        for (int j = 0; j < SP_QK_K / 64; j++) {
            for (int l = 0; l < 32; l++) {
                int lo = L[64 * j + l], hi = L[64 * j + l + 32];
                if (lo > 15) {
                    lo -= 16;
                    y[b].qh[l] |= (uint8_t)(1u << (2 * j));
                }
                if (hi > 15) {
                    hi -= 16;
                    y[b].qh[l] |= (uint8_t)(2u << (2 * j));
                }
                y[b].qs[32 * j + l] = (uint8_t)(lo | (hi << 4));
            }
        }
    }
}

void sp_dequantize_q5_K(const void *src, float *y, int64_t n) {
    const sp_block_q5_K *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d), dmin = sp_fp16_to_fp32(x[b].dmin);
        const uint8_t *ql = x[b].qs, *qh = x[b].qh;
        for (int j = 0; j < SP_QK_K / 64; j++, ql += 32) {
            uint8_t sc, m;
            sp_q4k_scale_min(2 * j, x[b].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            sp_q4k_scale_min(2 * j + 1, x[b].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            const uint8_t u1 = (uint8_t)(1u << (2 * j)), u2 = (uint8_t)(2u << (2 * j));
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        }
    }
}

/* --- Q6_K ------------------------------------------------------------------ */

void sp_quantize_q6_K(const float *x, void *dst, int64_t n) {
    sp_block_q6_K *y = dst;
    int8_t L[SP_QK_K];
    float scales[16];
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        for (int j = 0; j < 16; j++) scales[j] = search_symmetric(16, 32, x + 16 * j, L + 16 * j);
        float max_abs_scale;
        const float max_scale = sp_signed_absmax(scales, 16, &max_abs_scale);
        if (max_abs_scale < SP_ZERO_AMAX) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[b].d = sp_fp32_to_fp16(1.f / iscale);
        for (int j = 0; j < 16; j++) y[b].scales[j] = (int8_t)clamp_int(sp_nearest_int(iscale * scales[j]), -128, 127);
        for (int j = 0; j < 16; j++) {
            const float d = sp_fp16_to_fp32(y[b].d) * (float)y[b].scales[j];
            if (!d) continue;
            for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t)(clamp_int(sp_nearest_int(x[16 * j + l] / d), -32, 31) + 32);
        }
        /* per 128 elements: low nibbles of j and j+64 share ql[j] (j < 32),
         * of j+32 and j+96 share ql[j+32]; the 2 high bits of j, j+32, j+64,
         * j+96 fill qh[j] from the bottom up */
        uint8_t *ql = y[b].ql, *qh = y[b].qh;
        for (int h = 0; h < SP_QK_K; h += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const int q1 = L[h + l], q2 = L[h + l + 32], q3 = L[h + l + 64], q4 = L[h + l + 96];
                ql[l] = (uint8_t)((q1 & 0x0F) | ((q3 & 0x0F) << 4));
                ql[l + 32] = (uint8_t)((q2 & 0x0F) | ((q4 & 0x0F) << 4));
                qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

void sp_dequantize_q6_K(const void *src, float *y, int64_t n) {
    const sp_block_q6_K *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++) {
        const float d = sp_fp16_to_fp32(x[b].d);
        const uint8_t *ql = x[b].ql, *qh = x[b].qh;
        const int8_t *sc = x[b].scales;
        for (int h = 0; h < SP_QK_K; h += 128, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

/* --- Q8_K (activations) ------------------------------------------------------ */

void sp_quantize_q8_K(const float *x, void *dst, int64_t n) {
    sp_block_q8_K *y = dst;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        float amax;
        const float max = sp_signed_absmax(x, SP_QK_K, &amax);
        memset(&y[b], 0, sizeof y[b]);
        if (amax == 0.f) continue;
        /* -127 rather than -128 keeps every level symmetric, which the
         * integer dot products rely on */
        const float iscale = -127.f / max;
        for (int j = 0; j < SP_QK_K; j++) y[b].qs[j] = (int8_t)clamp_int(sp_nearest_int(iscale * x[j]), -128, 127);
        for (int j = 0; j < SP_QK_K / 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += y[b].qs[16 * j + l];
            y[b].bsums[j] = (int16_t)sum;
        }
        y[b].d = 1.f / iscale;
    }
}

void sp_dequantize_q8_K(const void *src, float *y, int64_t n) {
    const sp_block_q8_K *x = src;
    for (int64_t b = 0; b < n / SP_QK_K; b++, y += SP_QK_K) {
        float d;
        memcpy(&d, &x[b].d, sizeof d);
        for (int j = 0; j < SP_QK_K; j++) y[j] = d * (float)x[b].qs[j];
    }
}
