/* Quantizers of the grid formats whose groups are points with signs:
 * IQ2_XXS, IQ2_XS, IQ2_S (8 elements a point) and IQ3_XXS, IQ3_S (4).
 *
 * The search is the one the formats' author wrote for llama.cpp, so that
 * sprout writes the blocks llama-quantize does: per sub-block (32 or 16
 * elements), the magnitudes are fitted; a run of trial scales around
 * max / (2 kMaxQ - 1) rounds each group to level indices, and a group that
 * misses the grid takes the neighbour (iq_lattice.h) nearest to it under
 * the weights; the trial with the best weighted least-squares fit wins,
 * and the groups that missed are placed again at its scale. The signs go
 * in the format's sign bits; the formats with 7 stored bits per 8 (the
 * eighth makes the count of minus signs even) flip the element that costs
 * least when the count is odd. Sub-block scales are then 4-bit multiples
 * of the largest / 31, and d carries each format's small correction.
 *
 * Weights: with an importance matrix, importance * sqrt(sigma2 + x^2)
 * (sigma2 the super-block's mean square, doubled for some formats); without
 * one, x^2 (IQ2_S: sigma2 / 4 + x^2). IQ2_XXS and IQ2_XS need the matrix. */
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/iq_lattice.h"
#include "quant/quant.h"

#define MAX_SUB 32 /* elements in the largest sub-block */

typedef enum refit_rule {
    REFIT_ALWAYS,         /* place every group again at the winning scale */
    REFIT_MISSED,         /* only the groups that missed the grid */
    REFIT_ALL_IF_MISSED,  /* every group, when any missed */
} refit_rule;

typedef struct grid_format {
    sp_iq_lattice_id lattice;
    int sub;             /* elements per sub-block */
    int max_q;           /* levels an element's index spans */
    int tries;           /* trial scales on each side of the first */
    float step;          /* between trial scales, in units of the top level 2 max_q - 1 */
    float zero_max;      /* a sub-block below this magnitude is all zero */
    float sigma_scale;   /* sigma2 = sigma_scale * mean square */
    float plain_sigma;   /* without importance: weight = plain_sigma * sigma2 + x^2 */
    bool even_signs;     /* 7 stored sign bits per 8 */
    bool fit_first;      /* the first scale from a least-squares fit of the levels (IQ2_XXS) */
    bool start_missed;   /* groups count as missed until a trial places them */
    refit_rule refit;
    float d_factor;      /* stored d = largest scale / 31 * d_factor */
} grid_format;

/* Rounds a group to level indices at inverse scale id and snaps it to the
 * grid; false if the rounding missed and a neighbour was taken. */
static bool place_group(const sp_iq_lattice *lat, int max_q, const float *x, const float *waux, float id, float scale,
                        int8_t *levels, uint16_t *point) {
    unsigned key = 0;
    for (int i = 0; i < lat->dims; i++) {
        int l = sp_nearest_int(0.5f * (id * x[i] - 1));
        l = l < 0 ? 0 : (l > max_q - 1 ? max_q - 1 : l);
        levels[i] = (int8_t)l;
        key |= (unsigned)l << (lat->bits * i);
    }
    int p = lat->point_of[key];
    const bool on_grid = p >= 0;
    if (!on_grid) {
        static const float odd_levels[] = {1, 3, 5, 7, 9, 11, 13, 15}; /* level l is 2 l + 1 */
        p = sp_iq_lattice_nearest(lat, key, x, waux, scale, odd_levels);
        for (int i = 0; i < lat->dims; i++) levels[i] = (int8_t)sp_iq_lattice_level(lat, p, i);
    }
    *point = (uint16_t)p;
    return on_grid;
}

/* The weighted least-squares scale of x by the odd levels 2 l + 1: sum qx and sum q2. */
static void level_sums(const float *x, const float *weight, const int8_t *levels, int n, float *sum_qx, float *sum_q2) {
    float qx = 0, q2 = 0;
    for (int i = 0; i < n; i++) {
        const float w = weight[i], q = (float)(2 * levels[i] + 1);
        qx += w * x[i] * q;
        q2 += w * q * q;
    }
    *sum_qx = qx;
    *sum_q2 = q2;
}

/* llama.cpp's make_qp_quants for nmax 4, as IQ2_XXS starts from it: a scale
 * for x >= 0 by levels 0..4, refined by moving single levels. Its levels
 * are kept as unsigned bytes there, which the refinement reads. */
static float fit_first_scale(const float *x, const float *w, int n) {
    const int nmax = 4;
    float max = 0;
    for (int i = 0; i < n; i++) max = max > x[i] ? max : x[i];
    if (max < SP_ZERO_AMAX) return 0.f;
    uint8_t L[MAX_SUB];
    float iscale = (float)nmax / max, scale = 1 / iscale, best_mse = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)sp_nearest_int(iscale * x[i]);
        const float diff = x[i] - scale * L[i];
        best_mse += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (!is) continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max, scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            int l = sp_nearest_int(iscale_is * x[i]);
            l = l < nmax ? l : nmax;
            const float diff = x[i] - scale_is * (float)l;
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) best_mse = mse, iscale = iscale_is;
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = sp_nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * L[i], sl2 = suml2 - w[i] * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int l = sp_nearest_int(x[i] * sl2 / slx);
                l = l < nmax ? l : nmax;
                if (l != L[i]) {
                    slx += w[i] * x[i] * (float)l;
                    sl2 += w[i] * (float)l * (float)l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) L[i] = (uint8_t)l, sumlx = slx, suml2 = sl2, changed++;
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* One sub-block's search: its scale and each group's point; false when the
 * first fit finds nothing to scale (the sub-block is stored as zero). */
static bool search_sub_block(const grid_format *f, const sp_iq_lattice *lat, const float *x, const float *weight,
                             const float *waux, float max, uint16_t *points, float *scale_out) {
    const int n = f->sub, dims = lat->dims, groups = n / dims;
    int8_t levels[MAX_SUB], trial[MAX_SUB];
    uint16_t trial_points[MAX_SUB / 4];
    bool on_grid[MAX_SUB / 4], trial_on_grid[MAX_SUB / 4];
    float scale = max / (float)(2 * f->max_q - 1), span = max;
    if (f->fit_first) {
        scale = fit_first_scale(x, weight, n);
        span = scale * (float)f->max_q;
        if (!(span > 0)) return false;
    }
    memset(levels, 0, sizeof levels);
    for (int g = 0; g < groups; g++) on_grid[g] = !f->start_missed, points[g] = 0;
    float best = 0;
    for (int is = -f->tries; is <= f->tries; is++) {
        const float id = ((float)(2 * f->max_q - 1) + (float)is * f->step) / span, this_scale = 1 / id;
        for (int g = 0; g < groups; g++)
            trial_on_grid[g] = place_group(lat, f->max_q, x + dims * g, waux + dims * g, id, this_scale, trial + dims * g,
                                           &trial_points[g]);
        float sum_qx, sum_q2;
        level_sums(x, weight, trial, n, &sum_qx, &sum_q2);
        if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
            scale = sum_qx / sum_q2;
            best = scale * sum_qx;
            memcpy(levels, trial, (size_t)n);
            memcpy(points, trial_points, (size_t)groups * sizeof *points);
            memcpy(on_grid, trial_on_grid, sizeof on_grid);
        }
    }
    bool missed = false;
    for (int g = 0; g < groups; g++) missed |= !on_grid[g];
    if (scale > 0 && (missed || f->refit == REFIT_ALWAYS)) {
        const float id = 1 / scale;
        for (int g = 0; g < groups; g++)
            if (f->refit != REFIT_MISSED || !on_grid[g])
                place_group(lat, f->max_q, x + dims * g, waux + dims * g, id, scale, levels + dims * g, &points[g]);
        float sum_qx, sum_q2;
        level_sums(x, weight, levels, n, &sum_qx, &sum_q2);
        if (sum_q2 > 0) scale = sum_qx / sum_q2;
    }
    /* a search that never placed the groups (every trial fit zero) leaves
     * levels the grid may lack: place them at the scale it has */
    if (best == 0) {
        for (int g = 0; g < groups; g++) {
            unsigned key = 0;
            for (int i = 0; i < dims; i++) key |= (unsigned)levels[dims * g + i] << (lat->bits * i);
            if (lat->point_of[key] >= 0) points[g] = (uint16_t)lat->point_of[key];
            else place_group(lat, f->max_q, x + dims * g, waux + dims * g, 0.f, 1.f, levels + dims * g, &points[g]);
        }
    }
    *scale_out = scale;
    return true;
}

/* Signs of the 8-element runs of a sub-block into bit masks; x becomes the
 * magnitudes. With even_signs, an odd run flips its cheapest element (the
 * least weight * x^2), whose magnitude is then taken as negative. */
static void split_signs(const grid_format *f, const float *xb, const float *weight, float *x, uint8_t *signs) {
    for (int k = 0; k < f->sub / 8; k++) {
        uint8_t s = 0;
        int negatives = 0;
        for (int i = 0; i < 8; i++) {
            const float v = xb[8 * k + i];
            x[8 * k + i] = v >= 0 ? v : -v;
            if (!(v >= 0)) s |= (uint8_t)(1 << i), negatives++;
        }
        if (f->even_signs && negatives % 2) {
            int cheapest = 0;
            float least = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; i++) {
                const float cost = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (cost < least) least = cost, cheapest = i;
            }
            x[8 * k + cheapest] = -x[8 * k + cheapest];
            s ^= (uint8_t)(1 << cheapest);
        }
        signs[k] = f->even_signs ? s & 127 : s;
    }
}

/* Where a format puts a sub-block's points and signs, and its scales. */
typedef void (*pack_sub_fn)(void *block, int ib, const uint16_t *points, const uint8_t *signs);
typedef void (*pack_scale_fn)(void *block, int ib, int scale);

static void put_le32_or(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] |= (uint8_t)(v >> (8 * i));
}

static void pack_iq2_xxs(void *block, int ib, const uint16_t *points, const uint8_t *signs) {
    uint8_t *qs = (uint8_t *)((sp_block_iq2_xxs *)block)->qs + 8 * ib;
    for (int k = 0; k < 4; k++) qs[k] = (uint8_t)points[k];
    put_le32_or(qs + 4, (uint32_t)signs[0] | (uint32_t)signs[1] << 7 | (uint32_t)signs[2] << 14 | (uint32_t)signs[3] << 21);
}
static void scale_iq2_xxs(void *block, int ib, int scale) {
    put_le32_or((uint8_t *)((sp_block_iq2_xxs *)block)->qs + 8 * ib + 4, (uint32_t)scale << 28);
}

static void pack_iq2_xs(void *block, int ib, const uint16_t *points, const uint8_t *signs) {
    for (int k = 0; k < 2; k++) ((sp_block_iq2_xs *)block)->qs[2 * ib + k] = (uint16_t)(points[k] | signs[k] << 9);
}
static void scale_iq2_xs(void *block, int ib, int scale) { ((sp_block_iq2_xs *)block)->scales[ib / 2] |= (uint8_t)(scale << (4 * (ib % 2))); }

static void pack_iq2_s(void *block, int ib, const uint16_t *points, const uint8_t *signs) {
    sp_block_iq2_s *y = block;
    for (int k = 0; k < 2; k++) {
        const int i8 = 2 * ib + k;
        y->qs[i8] = (uint8_t)points[k];
        y->qh[i8 / 4] |= (uint8_t)((points[k] >> 8) << (2 * (i8 % 4)));
        y->qs[SP_QK_K / 8 + i8] = signs[k];
    }
}
static void scale_iq2_s(void *block, int ib, int scale) { ((sp_block_iq2_s *)block)->scales[ib / 2] |= (uint8_t)(scale << (4 * (ib % 2))); }

static void pack_iq3_xxs(void *block, int ib, const uint16_t *points, const uint8_t *signs) {
    sp_block_iq3_xxs *y = block;
    for (int k = 0; k < 8; k++) y->qs[8 * ib + k] = (uint8_t)points[k];
    put_le32_or(y->qs + SP_QK_K / 4 + 4 * ib,
                (uint32_t)signs[0] | (uint32_t)signs[1] << 7 | (uint32_t)signs[2] << 14 | (uint32_t)signs[3] << 21);
}
static void scale_iq3_xxs(void *block, int ib, int scale) {
    put_le32_or(((sp_block_iq3_xxs *)block)->qs + SP_QK_K / 4 + 4 * ib, (uint32_t)scale << 28);
}

static void pack_iq3_s(void *block, int ib, const uint16_t *points, const uint8_t *signs) {
    sp_block_iq3_s *y = block;
    for (int k = 0; k < 8; k++) {
        y->qs[8 * ib + k] = (uint8_t)points[k];
        y->qh[ib] |= (uint8_t)((points[k] >> 8) << k);
    }
    for (int k = 0; k < 4; k++) y->signs[4 * ib + k] = signs[k];
}
static void scale_iq3_s(void *block, int ib, int scale) { ((sp_block_iq3_s *)block)->scales[ib / 2] |= (uint8_t)(scale << (4 * (ib % 2))); }

typedef struct grid_codec {
    grid_format f;
    size_t block_bytes;
    pack_sub_fn pack;
    pack_scale_fn pack_scale;
} grid_codec;

/* Every format's block starts with its half-float d. */
static void quantize_grid(const grid_codec *c, const float *x, void *dst, int64_t n, const float *importance) {
    const grid_format *f = &c->f;
    const sp_iq_lattice *lat = sp_iq_lattice_of(f->lattice);
    const int subs = SP_QK_K / f->sub;
    for (int64_t b = 0; b < n / SP_QK_K; b++, x += SP_QK_K) {
        uint8_t *block = (uint8_t *)dst + (size_t)b * c->block_bytes;
        memset(block, 0, c->block_bytes);
        const float *qw_block = importance ? importance + SP_QK_K * b : NULL;
        float sum_x2 = 0;
        for (int i = 0; i < SP_QK_K; i++) sum_x2 += x[i] * x[i];
        const float sigma2 = f->sigma_scale * sum_x2 / SP_QK_K;
        float scales[SP_QK_K / 16], max_scale = 0;
        for (int ib = 0; ib < subs; ib++) {
            const float *xb = x + f->sub * ib;
            float weight[MAX_SUB], waux[MAX_SUB], mag[MAX_SUB] = {0};
            for (int i = 0; i < f->sub; i++)
                weight[i] = qw_block ? qw_block[f->sub * ib + i] * sqrtf(sigma2 + xb[i] * xb[i])
                            : f->plain_sigma > 0 ? f->plain_sigma * sigma2 + xb[i] * xb[i]
                                                 : xb[i] * xb[i];
            for (int i = 0; i < f->sub; i++) waux[i] = sqrtf(weight[i]);
            uint8_t signs[MAX_SUB / 8];
            split_signs(f, xb, weight, mag, signs);
            float max = mag[0];
            for (int i = 1; i < f->sub; i++) max = max > mag[i] ? max : mag[i];
            scales[ib] = 0;
            if (max < f->zero_max) continue;
            uint16_t points[MAX_SUB / 4];
            float scale;
            if (!search_sub_block(f, lat, mag, weight, waux, max, points, &scale)) continue;
            if (scale < 0) { /* the sign flip made the fit negative: store it positive */
                scale = -scale;
                for (int k = 0; k < f->sub / 8; k++) signs[k] = (uint8_t)(f->even_signs ? ~signs[k] & 127 : ~signs[k]);
            }
            c->pack(block, ib, points, signs);
            scales[ib] = scale;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (!(max_scale > 0)) {
            memset(block, 0, c->block_bytes);
            continue;
        }
        const float d = max_scale / 31, id = 1 / d;
        const uint16_t d_bits = sp_fp32_to_fp16(d * f->d_factor);
        memcpy(block, &d_bits, sizeof d_bits);
        for (int ib = 0; ib < subs; ib++) {
            int l = sp_nearest_int(0.5f * (id * scales[ib] - 1));
            c->pack_scale(block, ib, l < 0 ? 0 : (l > 15 ? 15 : l));
        }
    }
}

/* The smallest positive float: "below it" means exactly zero. */
#define EXACT_ZERO 1.4e-45f

static const grid_codec iq2_xxs = {
    {SP_LATTICE_IQ2XXS, 32, 3, 6, 0.1f, SP_ZERO_AMAX, 1.f, 0.f, true, true, false, REFIT_ALWAYS, 1.f},
    sizeof(sp_block_iq2_xxs), pack_iq2_xxs, scale_iq2_xxs};
static const grid_codec iq2_xs = {
    {SP_LATTICE_IQ2XS, 16, 3, 9, 0.1f, SP_ZERO_AMAX, 1.f, 0.f, true, false, false, REFIT_MISSED, 1.f},
    sizeof(sp_block_iq2_xs), pack_iq2_xs, scale_iq2_xs};
static const grid_codec iq2_s = {
    {SP_LATTICE_IQ2S, 16, 3, 9, 0.1f, 1e-8f, 2.f, 0.25f, false, false, false, REFIT_MISSED, 0.9875f},
    sizeof(sp_block_iq2_s), pack_iq2_s, scale_iq2_s};
static const grid_codec iq3_xxs = {
    {SP_LATTICE_IQ3XXS, 32, 8, 15, 0.2f, 1e-8f, 2.f, 0.f, true, false, false, REFIT_MISSED, 1.0125f},
    sizeof(sp_block_iq3_xxs), pack_iq3_xxs, scale_iq3_xxs};
static const grid_codec iq3_s = {
    {SP_LATTICE_IQ3S, 32, 8, 9, 0.2f, EXACT_ZERO, 2.f, 0.f, false, false, true, REFIT_ALL_IF_MISSED, 1.033f},
    sizeof(sp_block_iq3_s), pack_iq3_s, scale_iq3_s};

void sp_quantize_iq2_xxs_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    quantize_grid(&iq2_xxs, x, dst, n, importance);
}
void sp_quantize_iq2_xs_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    quantize_grid(&iq2_xs, x, dst, n, importance);
}
void sp_quantize_iq2_s_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    quantize_grid(&iq2_s, x, dst, n, importance);
}
void sp_quantize_iq3_xxs_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    quantize_grid(&iq3_xxs, x, dst, n, importance);
}
void sp_quantize_iq3_s_weighted(const float *x, void *dst, int64_t n, const float *importance) {
    quantize_grid(&iq3_s, x, dst, n, importance);
}
void sp_quantize_iq2_s(const float *x, void *dst, int64_t n) { quantize_grid(&iq2_s, x, dst, n, NULL); }
void sp_quantize_iq3_xxs(const float *x, void *dst, int64_t n) { quantize_grid(&iq3_xxs, x, dst, n, NULL); }
void sp_quantize_iq3_s(const float *x, void *dst, int64_t n) { quantize_grid(&iq3_s, x, dst, n, NULL); }
