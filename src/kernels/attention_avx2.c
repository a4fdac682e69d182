/* Attention with AVX2/FMA, fused and tiled, for the query heads that share
 * a KV head (each cell read once for all of them): the cells go by in
 * tiles of 64; a tile's scores (q.k, scaled, soft-capped) are kept in
 * a 64-float buffer on the stack, the running maximum and sum are rescaled
 * once per tile instead of once per cell, the exponentials are computed 8
 * at a time, and the values are summed with their weights. Scratch is the
 * tile, whatever the context length: the score row is never stored whole. */
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"
#include "quant/fp16.h"

enum { TILE = 64 };

static inline __m256 load8(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? _mm256_loadu_ps((const float *)base + idx)
                             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx)));
}

static inline float load1(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? ((const float *)base)[idx] : _cvtsh_ss(((const uint16_t *)base)[idx]);
}

/* e^x for x <= 0 (scores minus their maximum), 8 at a time: x = n ln2 + r
 * with |r| <= ln2/2, a degree-6 polynomial for e^r (relative error about
 * 2e-7), 2^n built in the exponent bits; below -87 the result is 0. */
static inline __m256 exp8_nonpositive(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3f);
    const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_max_ps(lo, x); /* a NaN score stays NaN, as expf keeps it */
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

static inline float hsum8(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* Heads [h0, h0 + G) of the group (G <= 8): each K and V cell is read once
 * for all of them while it is in L1; every head does exactly the arithmetic
 * it would do alone. */
static inline __attribute__((always_inline)) void attend_heads(const sp_attention_args *a, int64_t h0, const int G) {
    const int64_t dk = a->head_dim_k, dv = a->head_dim_v, dk8 = dk & ~(int64_t)7, dv8 = dv & ~(int64_t)7;
    float max[8], sum[8], scores[8][TILE];
    const float *q[8];
    float *out[8];
    for (int h = 0; h < G; h++) {
        max[h] = -INFINITY;
        sum[h] = 0.f;
        q[h] = a->q + (h0 + h) * dk;
        out[h] = a->out + (h0 + h) * dv;
        for (int64_t d = 0; d < dv; d++) out[h][d] = 0.f;
    }
    for (int64_t c0 = 0; c0 < a->n_cells; c0 += TILE) {
        const int nt = a->n_cells - c0 < TILE ? (int)(a->n_cells - c0) : TILE;
        float tile_max[8];
        for (int h = 0; h < G; h++) tile_max[h] = -INFINITY;
        for (int c = 0; c < nt; c++) {
            const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
            __m256 acc[8];
            for (int h = 0; h < G; h++) acc[h] = _mm256_setzero_ps();
            for (int64_t d = 0; d < dk8; d += 8) {
                const __m256 kv = load8(a->keys, a->kv_type, cell + d);
                for (int h = 0; h < G; h++) acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + d), kv, acc[h]);
            }
            for (int h = 0; h < G; h++) {
                float s = hsum8(acc[h]);
                for (int64_t d = dk8; d < dk; d++) s += q[h][d] * load1(a->keys, a->kv_type, cell + d);
                s *= a->scale;
                if (a->softcap > 0.f) s = a->softcap * tanhf(s / a->softcap);
                scores[h][c] = s;
                tile_max[h] = s > tile_max[h] ? s : tile_max[h];
            }
        }
        for (int h = 0; h < G; h++) {
            if (tile_max[h] > max[h]) { /* rescale what was accumulated under the old maximum, once per tile */
                const float correction = max[h] == -INFINITY ? 0.f : expf(max[h] - tile_max[h]);
                sum[h] *= correction;
                const __m256 cv = _mm256_set1_ps(correction);
                for (int64_t d = 0; d < dv8; d += 8) _mm256_storeu_ps(out[h] + d, _mm256_mul_ps(_mm256_loadu_ps(out[h] + d), cv));
                for (int64_t d = dv8; d < dv; d++) out[h][d] *= correction;
                max[h] = tile_max[h];
            }
            int c = 0;
            const __m256 mv = _mm256_set1_ps(max[h]);
            for (; c + 8 <= nt; c += 8) _mm256_storeu_ps(scores[h] + c, exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(scores[h] + c), mv)));
            for (; c < nt; c++) scores[h][c] = expf(scores[h][c] - max[h]);
        }
        for (int c = 0; c < nt; c++) {
            const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
            for (int h = 0; h < G; h++) sum[h] += scores[h][c];
            for (int64_t d = 0; d < dv8; d += 8) {
                const __m256 vv = load8(a->values, a->kv_type, cell + d);
                for (int h = 0; h < G; h++)
                    _mm256_storeu_ps(out[h] + d, _mm256_fmadd_ps(_mm256_set1_ps(scores[h][c]), vv, _mm256_loadu_ps(out[h] + d)));
            }
            for (int64_t d = dv8; d < dv; d++) {
                const float vd = load1(a->values, a->kv_type, cell + d);
                for (int h = 0; h < G; h++) out[h][d] += scores[h][c] * vd;
            }
        }
    }
    for (int h = 0; h < G; h++) {
        const float inv = sum[h] > 0.f ? 1.f / sum[h] : 0.f;
        for (int64_t d = 0; d < dv; d++) out[h][d] *= inv;
    }
}

void sp_attention_avx2(const sp_attention_args *a) {
    const int64_t n = a->n_q_heads > 0 ? a->n_q_heads : 1;
    for (int64_t h0 = 0; h0 < n; h0 += 8) {
        /* a constant head count in each copy: the per-head arrays live in registers */
        switch (n - h0 < 8 ? n - h0 : 8) {
        case 1: attend_heads(a, h0, 1); break;
        case 2: attend_heads(a, h0, 2); break;
        case 3: attend_heads(a, h0, 3); break;
        case 4: attend_heads(a, h0, 4); break;
        case 5: attend_heads(a, h0, 5); break;
        case 6: attend_heads(a, h0, 6); break;
        case 7: attend_heads(a, h0, 7); break;
        default: attend_heads(a, h0, 8); break;
        }
    }
}
