/* Attention with AVX2/FMA, fused and tiled, for the query heads that share
 * a KV head (each cell read once for all of them): the cells go by in
 * tiles of up to 64; a tile's scores (q.k, scaled, soft-capped) are kept in
 * a buffer on the stack, the running maximum and sum are rescaled once per
 * tile instead of once per cell, the exponentials are computed 8 at a time,
 * and the values are summed with their weights. Scratch is the tile
 * (its scores, and for groups of heads its keys), whatever the context
 * length: the score row is never stored whole. */
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/x86_exp.h"
#include "kernels/x86_sum.h"
#include "quant/fp16.h"

enum { TILE = 64 };

static inline __m256 load8(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? _mm256_loadu_ps((const float *)base + idx)
                             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx)));
}

static inline float load1(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? ((const float *)base)[idx] : _cvtsh_ss(((const uint16_t *)base)[idx]);
}

/* Lane j of the result: hsum256(p[j]), by the same tree, for eight at once. */
static inline __attribute__((always_inline)) __m256 sum_lanes8_ps(const __m256 p[8]) {
    __m256 b[4], u[2];
    for (int j = 0; j < 4; j++) /* [lo(p[j]) + hi(p[j]) | lo(p[j+4]) + hi(p[j+4])]: lanes 0+4, 1+5, 2+6, 3+7 */
        b[j] = _mm256_add_ps(_mm256_permute2f128_ps(p[j], p[j + 4], 0x20), _mm256_permute2f128_ps(p[j], p[j + 4], 0x31));
    for (int i = 0; i < 2; i++) /* per vector pair: (0+4)+(2+6) and (1+5)+(3+7), interleaved */
        u[i] = _mm256_add_ps(_mm256_unpacklo_ps(b[2 * i], b[2 * i + 1]), _mm256_unpackhi_ps(b[2 * i], b[2 * i + 1]));
    const __m256d u0 = _mm256_castps_pd(u[0]), u1 = _mm256_castps_pd(u[1]);
    return _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(u0, u1)), _mm256_castpd_ps(_mm256_unpackhi_pd(u0, u1)));
}

/* Floats of the per-call buffer holding a tile's keys as f32, 32 KiB:
 * tiles of 64 cells up to heads of 128, fewer cells for wider heads (the
 * tile size is fixed by the model's head size). */
enum { TILE_BUFFER = 8192 };

/* Heads' outputs and running softmax state. */
typedef struct head_state {
    float max[8], sum[8];
    const float *q[8];
    float *out[8];
} head_state;

static inline __attribute__((always_inline)) void heads_begin(const sp_attention_args *a, int64_t h0, const int G, head_state *hs) {
    for (int h = 0; h < G; h++) {
        hs->max[h] = -INFINITY;
        hs->sum[h] = 0.f;
        hs->q[h] = a->q + (h0 + h) * a->head_dim_k;
        hs->out[h] = a->out + (h0 + h) * a->head_dim_v;
        for (int64_t d = 0; d < a->head_dim_v; d++) hs->out[h][d] = 0.f;
    }
}

/* A tile's raw score s of head h: scaled, soft-capped, into scores. */
static inline float finish_score(const sp_attention_args *a, float s) {
    s *= a->scale;
    return a->softcap > 0.f ? a->softcap * tanhf(s / a->softcap) : s;
}

/* Head h's scores of a tile (maximum tile_max) to weights: what was
 * accumulated under an older, smaller maximum is rescaled once. */
static inline __attribute__((always_inline)) void softmax_tile(const sp_attention_args *a, head_state *hs, int h, float *scores, int nt, float tile_max) {
    const int64_t dv = a->head_dim_v, dv8 = dv & ~(int64_t)7;
    if (tile_max > hs->max[h]) {
        const float correction = hs->max[h] == -INFINITY ? 0.f : expf(hs->max[h] - tile_max);
        hs->sum[h] *= correction;
        const __m256 cv = _mm256_set1_ps(correction);
        float *out = hs->out[h];
        for (int64_t d = 0; d < dv8; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(out + d), cv));
        for (int64_t d = dv8; d < dv; d++) out[d] *= correction;
        hs->max[h] = tile_max;
    }
    int c = 0;
    const __m256 mv = _mm256_set1_ps(hs->max[h]);
    /* the weights summed in lanes, then across them: a chain of one add per 8 cells, not per cell */
    __m256 sum8 = _mm256_setzero_ps();
    for (; c + 8 <= nt; c += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + c), mv));
        _mm256_storeu_ps(scores + c, e);
        sum8 = _mm256_add_ps(sum8, e);
    }
    float sum = hsum256(sum8);
    for (; c < nt; c++) sum += scores[c] = expf(scores[c] - hs->max[h]);
    hs->sum[h] += sum;
}

static inline __attribute__((always_inline)) void heads_end(const sp_attention_args *a, const int G, head_state *hs) {
    for (int h = 0; h < G; h++) {
        const float inv = hs->sum[h] > 0.f ? 1.f / hs->sum[h] : 0.f;
        for (int64_t d = 0; d < a->head_dim_v; d++) hs->out[h][d] *= inv;
    }
}

/* One or two heads [h0, h0 + G): each cell's key and value read from the
 * cache once for both, a score per cell, the outputs updated in L1. */
static inline __attribute__((always_inline)) void attend_direct(const sp_attention_args *a, int64_t h0, const int G) {
    const int64_t dk = a->head_dim_k, dv = a->head_dim_v, dk8 = dk & ~(int64_t)7, dv8 = dv & ~(int64_t)7;
    head_state hs;
    heads_begin(a, h0, G, &hs);
    float scores[2][TILE];
    for (int64_t c0 = 0; c0 < a->n_cells; c0 += TILE) {
        const int nt = a->n_cells - c0 < TILE ? (int)(a->n_cells - c0) : TILE;
        float tile_max[2] = {-INFINITY, -INFINITY};
        for (int c = 0; c < nt; c++) {
            const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
            __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
            for (int64_t d = 0; d < dk8; d += 8) {
                const __m256 kv = load8(a->keys, a->kv_type, cell + d);
                for (int h = 0; h < G; h++) acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(hs.q[h] + d), kv, acc[h]);
            }
            for (int h = 0; h < G; h++) {
                float s = hsum256(acc[h]);
                for (int64_t d = dk8; d < dk; d++) s += hs.q[h][d] * load1(a->keys, a->kv_type, cell + d);
                scores[h][c] = finish_score(a, s);
                tile_max[h] = scores[h][c] > tile_max[h] ? scores[h][c] : tile_max[h];
            }
        }
        for (int h = 0; h < G; h++) softmax_tile(a, &hs, h, scores[h], nt, tile_max[h]);
        for (int c = 0; c < nt; c++) {
            const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
            for (int64_t d = 0; d < dv8; d += 8) {
                const __m256 vv = load8(a->values, a->kv_type, cell + d);
                for (int h = 0; h < G; h++)
                    _mm256_storeu_ps(hs.out[h] + d, _mm256_fmadd_ps(_mm256_set1_ps(scores[h][c]), vv, _mm256_loadu_ps(hs.out[h] + d)));
            }
            for (int64_t d = dv8; d < dv; d++) {
                const float vd = load1(a->values, a->kv_type, cell + d);
                for (int h = 0; h < G; h++) hs.out[h][d] += scores[h][c] * vd;
            }
        }
    }
    heads_end(a, G, &hs);
}

/* out[h] += the tile's weights of head h times its values, for heads
 * [h0, h0 + MR) (MR <= 4) and NR (<= 2) vectors of 8 from element d: a
 * register block of outputs, so that each value vector loaded and each
 * weight broadcast serves several multiply-adds. Each output element sums
 * over the cells in order, as attend_direct does. */
static inline __attribute__((always_inline)) void weigh_values(const sp_attention_args *a, int64_t c0, float scores[][TILE],
                                                              head_state *hs, int h0, const int MR, const int NR, int64_t d, int nt) {
    __m256 acc[4][2];
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NR; n++) acc[r][n] = _mm256_loadu_ps(hs->out[h0 + r] + d + 8 * n);
    for (int c = 0; c < nt; c++) {
        __m256 vv[2];
        const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
        for (int n = 0; n < NR; n++) vv[n] = load8(a->values, a->kv_type, cell + d + 8 * n);
        for (int r = 0; r < MR; r++) {
            const __m256 p = _mm256_broadcast_ss(&scores[h0 + r][c]);
            for (int n = 0; n < NR; n++) acc[r][n] = _mm256_fmadd_ps(p, vv[n], acc[r][n]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NR; n++) _mm256_storeu_ps(hs->out[h0 + r] + d + 8 * n, acc[r][n]);
}

/* Three to eight heads [h0, h0 + G). Per tile: the cells' keys widened to
 * f32 once for all heads; each head's scores 8 cells at a time (eight dot
 * products side by side, summed across lanes by hsum256's tree); the
 * values, read from the cache as they are (each widened once per four
 * heads: cheaper than a buffer's stores), summed into register blocks of
 * outputs. Each head does exactly the arithmetic of attend_direct. */
static inline __attribute__((always_inline)) void attend_buffered(const sp_attention_args *a, int64_t h0, const int G) {
    const int64_t dk = a->head_dim_k, dv = a->head_dim_v, dk8 = dk & ~(int64_t)7, dv8 = dv & ~(int64_t)7;
    const int tile = dk * TILE <= TILE_BUFFER ? TILE : (int)(TILE_BUFFER / dk);
    float kbuf[TILE_BUFFER], scores[8][TILE];
    head_state hs;
    heads_begin(a, h0, G, &hs);
    for (int64_t c0 = 0; c0 < a->n_cells; c0 += tile) {
        const int nt = a->n_cells - c0 < tile ? (int)(a->n_cells - c0) : tile;
        for (int c = 0; c < nt; c++) {
            const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
            for (int64_t d = 0; d < dk8; d += 8) _mm256_storeu_ps(kbuf + c * dk + d, load8(a->keys, a->kv_type, cell + d));
            for (int64_t d = dk8; d < dk; d++) kbuf[c * dk + d] = load1(a->keys, a->kv_type, cell + d);
        }
        for (int h = 0; h < G; h++) {
            float tile_max = -INFINITY;
            __m256 tile_max8 = _mm256_set1_ps(-INFINITY);
            for (int cb = 0; cb < nt; cb += 8) {
                /* cells past the tile's end repeat its first: computed, never used */
                const float *k[8];
                for (int j = 0; j < 8; j++) k[j] = kbuf + (cb + j < nt ? cb + j : cb) * dk;
                __m256 acc[8];
                for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
                for (int64_t d = 0; d < dk8; d += 8) {
                    const __m256 qv = _mm256_loadu_ps(hs.q[h] + d);
                    for (int j = 0; j < 8; j++) acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k[j] + d), acc[j]);
                }
                const __m256 dots = sum_lanes8_ps(acc);
                const int nc = nt - cb < 8 ? nt - cb : 8;
                if (nc == 8 && dk8 == dk && a->softcap <= 0.f) { /* the common case, 8 at a time: the same products */
                    const __m256 sv = _mm256_mul_ps(dots, _mm256_set1_ps(a->scale));
                    _mm256_storeu_ps(scores[h] + cb, sv);
                    tile_max8 = _mm256_max_ps(sv, tile_max8); /* a NaN score is passed over, as below */
                    continue;
                }
                float dot[8];
                _mm256_storeu_ps(dot, dots);
                for (int j = 0; j < nc; j++) {
                    float s = dot[j];
                    for (int64_t d = dk8; d < dk; d++) s += hs.q[h][d] * k[j][d];
                    scores[h][cb + j] = finish_score(a, s);
                    tile_max = scores[h][cb + j] > tile_max ? scores[h][cb + j] : tile_max;
                }
            }
            float lanes[8];
            _mm256_storeu_ps(lanes, tile_max8);
            for (int j = 0; j < 8; j++) tile_max = lanes[j] > tile_max ? lanes[j] : tile_max;
            softmax_tile(a, &hs, h, scores[h], nt, tile_max);
        }
        for (int hb = 0; hb < G; hb += 4) {
            const int MR = G - hb < 4 ? G - hb : 4;
            int64_t d = 0;
            for (; d + 16 <= dv8; d += 16) weigh_values(a, c0, scores, &hs, hb, MR, 2, d, nt);
            if (d < dv8) weigh_values(a, c0, scores, &hs, hb, MR, 1, d, nt);
        }
        for (int64_t d = dv8; d < dv; d++)
            for (int c = 0; c < nt; c++)
                for (int h = 0; h < G; h++) hs.out[h][d] += scores[h][c] * load1(a->values, a->kv_type, (int64_t)a->cells[c0 + c] * a->stride + d);
    }
    heads_end(a, G, &hs);
}

/* Groups of three heads or more, in a function of their own: its 32 KiB
 * tile buffer stays out of the one- and two-head path's stack frame. */
static __attribute__((noinline)) void attend_group(const sp_attention_args *a, int64_t h0, int G) {
    /* a constant head count in each copy: the per-head arrays live in registers */
    switch (G) {
    case 3: attend_buffered(a, h0, 3); break;
    case 4: attend_buffered(a, h0, 4); break;
    case 5: attend_buffered(a, h0, 5); break;
    case 6: attend_buffered(a, h0, 6); break;
    case 7: attend_buffered(a, h0, 7); break;
    default: attend_buffered(a, h0, 8); break;
    }
}

void sp_attention_avx2(const sp_attention_args *a) {
    const int64_t n = a->n_q_heads > 0 ? a->n_q_heads : 1;
    for (int64_t h0 = 0; h0 < n; h0 += 8) {
        const int G = n - h0 < 8 ? (int)(n - h0) : 8;
        if (G == 1) attend_direct(a, h0, 1);
        else if (G == 2) attend_direct(a, h0, 2);
        else attend_group(a, h0, G);
    }
}
