/* Attention with AVX2/FMA, fused and tiled, for a block of query rows (the
 * heads that share a KV head, of one token or of several tokens of one
 * sequence) that read each cell of the cache once together: the cells go by
 * in tiles of up to 64; a tile's keys and values are widened to f32 once
 * for every row; each row's scores (q.k, scaled, soft-capped) are kept in a
 * buffer on the stack, its running maximum and sum rescaled once per tile
 * instead of once per cell, its exponentials computed 8 (16) at a time; the
 * values are summed with their weights in register blocks of rows (with
 * AVX-512 the scores too: below). Scratch is the tile (its keys and
 * values, and its scores per row), whatever the context length: the score
 * row is never stored whole.
 *
 * Tiles are aligned to multiples of the tile size in the cell list, not to
 * where a row's cells begin, and a row's cells outside its range weigh
 * exactly zero: a row's arithmetic is the same in any block, so a token's
 * output does not depend on the batch around it. */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

/* attention_avx512.c compiles this file again with AVX-512 on */
#ifndef SP_ATTENTION_NAME
#define SP_ATTENTION_NAME sp_attention_avx2
#endif

#include "kernels/kernels.h"
#include "kernels/x86_exp.h"
#include "kernels/x86_sum.h"
#include "kernels/x86_transpose.h"
#include "quant/fp16.h"

/* TILE cells per tile, fewer for heads wider than TILE_BUFFER / TILE (the
 * widened keys of a tile fill at most TILE_BUFFER floats, 32 KiB, and its
 * values as many); a block
 * is at most MAX_HEADS heads of each of up to MAX_ROWS / heads tokens. */
enum { TILE = 64, TILE_BUFFER = 8192, MAX_HEADS = 8, MAX_ROWS = 32 };

static inline __m256 load8(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? _mm256_loadu_ps((const float *)base + idx)
                             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx)));
}

static inline float load1(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? ((const float *)base)[idx] : _cvtsh_ss(((const uint16_t *)base)[idx]);
}

/* Scores are made CELL_BLOCK cells at a time: with AVX-512 a vector of
 * 16 cells' scores. */
#ifdef SP_ATTENTION_AVX512
enum { CELL_BLOCK = 16 };
#else
enum { CELL_BLOCK = 8 };
#endif

/* Cells per tile for heads of dk-element keys and dv-element values: a
 * multiple of CELL_BLOCK (0: too wide). */
static int tile_cells(int64_t dk, int64_t dv) {
    const int64_t fit = TILE_BUFFER / (dk > dv ? dk : dv) & ~(int64_t)(CELL_BLOCK - 1);
    return fit >= TILE ? TILE : (int)fit;
}

/* One query row (a token's head): where it reads and writes, the cells it
 * sees, its running softmax state, and the part of the current tile it
 * sees ([a, b), relative to the tile; empty when a >= b). */
typedef struct query_row {
    const float *q;
    float *out;
    int32_t lo, hi;
    float max, sum;
    int64_t a, b;
} query_row;

/* A row's raw score s: scaled, soft-capped. */
static inline float finish_score(const sp_attention_args *a, float s) {
    s *= a->scale;
    return a->softcap > 0.f ? a->softcap * tanhf(s / a->softcap) : s;
}

/* A tile whose scores reach tile_max above the row's running maximum:
 * what was accumulated under the older, smaller one is rescaled once. */
static void raise_row_max(const sp_attention_args *a, query_row *r, float tile_max) {
    const int64_t dv = a->head_dim_v, dv8 = dv & ~(int64_t)7;
    if (tile_max > r->max) {
        const float correction = r->max == -INFINITY ? 0.f : expf(r->max - tile_max);
        r->sum *= correction;
        const __m256 cv = _mm256_set1_ps(correction);
        for (int64_t d = 0; d < dv8; d += 8) _mm256_storeu_ps(r->out + d, _mm256_mul_ps(_mm256_loadu_ps(r->out + d), cv));
        for (int64_t d = dv8; d < dv; d++) r->out[d] *= correction;
        r->max = tile_max;
    }
}

#ifndef SP_ATTENTION_AVX512
/* The AVX2 kernel's own pieces: scores 8 cells at a time, each block's
 * eight dot products summed across lanes. */
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

/* Lanes of the 8-cell block from cell c (relative to the tile) that lie in [a, b). */
static inline __m256 lanes_in(int64_t c, int64_t a, int64_t b) {
    const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i below = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)a), idx), inside = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)b), idx);
    return _mm256_castsi256_ps(_mm256_andnot_si256(below, inside));
}

/* The widened keys of a tile: cell c's element d at kbuf[c * dk + d]. */
static inline float *key_at(float *kbuf, int64_t dk, int64_t c, int64_t d) { return kbuf + c * dk + d; }

/* The row's scores of the tile's 8-cell blocks that meet [r->a, r->b),
 * into scores (-inf outside the range); returns their maximum. Each block
 * is eight dot products side by side, summed across lanes by hsum256's
 * tree. */
static float row_scores(const sp_attention_args *a, const query_row *r, float *kbuf, float *scores) {
    const int64_t dk = a->head_dim_k, dk8 = dk & ~(int64_t)7;
    const bool plain = dk8 == dk && a->softcap <= 0.f;
    __m256 max8 = _mm256_set1_ps(-INFINITY);
    for (int64_t cb = r->a & ~(int64_t)7; cb < r->b; cb += 8) {
        __m256 acc[8];
        const float *k = kbuf + cb * dk;
        for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
        for (int64_t d = 0; d < dk8; d += 8) {
            const __m256 qv = _mm256_loadu_ps(r->q + d);
            for (int j = 0; j < 8; j++) acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + j * dk + d), acc[j]);
        }
        __m256 sv = sum_lanes8_ps(acc);
        if (plain) sv = _mm256_mul_ps(sv, _mm256_set1_ps(a->scale));
        else {
            float dot[8];
            _mm256_storeu_ps(dot, sv);
            for (int j = 0; j < 8; j++) {
                for (int64_t d = dk8; d < dk; d++) dot[j] += r->q[d] * *key_at(kbuf, dk, cb + j, d);
                dot[j] = finish_score(a, dot[j]);
            }
            sv = _mm256_loadu_ps(dot);
        }
        sv = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), sv, lanes_in(cb, r->a, r->b));
        _mm256_storeu_ps(scores + cb, sv);
        max8 = _mm256_max_ps(sv, max8); /* a NaN score is passed over */
    }
    float lanes[8], max = -INFINITY;
    _mm256_storeu_ps(lanes, max8);
    for (int j = 0; j < 8; j++) max = lanes[j] > max ? lanes[j] : max;
    return max;
}

/* The row's scores (maximum tile_max) to weights, zero outside its range,
 * summed in lanes, then across them. */
static void row_softmax(const sp_attention_args *a, query_row *r, float *scores, float tile_max) {
    raise_row_max(a, r, tile_max);
    const __m256 mv = _mm256_set1_ps(r->max);
    __m256 sum8 = _mm256_setzero_ps();
    for (int64_t cb = r->a & ~(int64_t)7; cb < r->b; cb += 8) {
        const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + cb), mv)), lanes_in(cb, r->a, r->b));
        _mm256_storeu_ps(scores + cb, e);
        sum8 = _mm256_add_ps(sum8, e);
    }
    r->sum += hsum256(sum8);
}
#endif

/* out[r] += the tile's weights of rows [r0, r0 + MR) (MR <= 4) times the
 * values of cells [c_a, c_b), for NR (<= 2) vectors of 8 from element d: a
 * register block of outputs, so that each value vector loaded and each
 * weight broadcast serves several multiply-adds. Each output element sums
 * over the cells in order; a row's weights outside its range are zeros,
 * which leave its sums exactly as they are. */
static inline __attribute__((always_inline)) void weigh_values(const float *vbuf, int64_t dv, float scores[][TILE], query_row *rows,
                                                              int r0, const int MR, const int NR, int64_t d, int64_t c_a, int64_t c_b) {
    __m256 acc[4][2];
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NR; n++) acc[r][n] = _mm256_loadu_ps(rows[r0 + r].out + d + 8 * n);
    for (int64_t c = c_a; c < c_b; c++) {
        __m256 vv[2];
        for (int n = 0; n < NR; n++) vv[n] = _mm256_loadu_ps(vbuf + c * dv + d + 8 * n);
        for (int r = 0; r < MR; r++) {
            const __m256 p = _mm256_broadcast_ss(&scores[r0 + r][c]);
            for (int n = 0; n < NR; n++) acc[r][n] = _mm256_fmadd_ps(p, vv[n], acc[r][n]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NR; n++) _mm256_storeu_ps(rows[r0 + r].out + d + 8 * n, acc[r][n]);
}

#ifdef SP_ATTENTION_AVX512
/* weigh_values with NR (<= 4) vectors of 16 from element d: each output
 * element the same chain of FMAs over the cells in order, so the same
 * sums, in half the instructions. */
static inline __attribute__((always_inline)) void weigh_values16(const float *vbuf, int64_t dv, float scores[][TILE], query_row *rows,
                                                                int r0, const int MR, const int NR, int64_t d, int64_t c_a, int64_t c_b) {
    __m512 acc[4][4];
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NR; n++) acc[r][n] = _mm512_loadu_ps(rows[r0 + r].out + d + 16 * n);
    for (int64_t c = c_a; c < c_b; c++) {
        __m512 vv[4];
        for (int n = 0; n < NR; n++) vv[n] = _mm512_loadu_ps(vbuf + c * dv + d + 16 * n);
        for (int r = 0; r < MR; r++) {
            const __m512 p = _mm512_set1_ps(scores[r0 + r][c]);
            for (int n = 0; n < NR; n++) acc[r][n] = _mm512_fmadd_ps(p, vv[n], acc[r][n]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NR; n++) _mm512_storeu_ps(rows[r0 + r].out + d + 16 * n, acc[r][n]);
}
#endif

/* Rows [r0, r0 + MR) times the values of cells [c_a, c_b), every whole
 * vector of 8 of the output. */
static inline __attribute__((always_inline)) void weigh_all_values(const float *vbuf, int64_t dv, float scores[][TILE], query_row *rows,
                                                                  int r0, const int MR, int64_t c_a, int64_t c_b) {
    const int64_t dv8 = dv & ~(int64_t)7;
    int64_t d = 0;
#ifdef SP_ATTENTION_AVX512
    for (; d + 64 <= dv8; d += 64) weigh_values16(vbuf, dv, scores, rows, r0, MR, 4, d, c_a, c_b);
    if (d + 32 <= dv8) weigh_values16(vbuf, dv, scores, rows, r0, MR, 2, d, c_a, c_b), d += 32;
    if (d + 16 <= dv8) weigh_values16(vbuf, dv, scores, rows, r0, MR, 1, d, c_a, c_b), d += 16;
#endif
    for (; d + 16 <= dv8; d += 16) weigh_values(vbuf, dv, scores, rows, r0, MR, 2, d, c_a, c_b);
    if (d < dv8) weigh_values(vbuf, dv, scores, rows, r0, MR, 1, d, c_a, c_b);
}

#ifdef SP_ATTENTION_AVX512
/* With AVX-512 the scores come 16 cells at a time from keys laid out
 * transposed: element d of the tile's cell c at kbuf[d * tile + c], so
 * that a row's query element d, broadcast, multiplies 16 cells' keys in
 * one FMA. Each score is one chain of FMAs over d in order (no sum across
 * lanes), computed for up to 4 rows and 64 cells in registers, so each
 * key vector loaded serves 4 rows. The chain is the row's alone whatever
 * rows and cells share the registers, so the AVX-512 outputs, though not
 * the AVX2 ones bit for bit, are the same for a token alone or in any
 * batch. */
static inline __m512 load16(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? _mm512_loadu_ps((const float *)base + idx)
                             : _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)base + idx)));
}

/* The keys of the tile's 16-cell blocks that meet [ta, tb), transposed
 * (zeros for cells outside it). */
static void widen_keys(const sp_attention_args *a, int64_t c0, int64_t ta, int64_t tb, int64_t tile, float *kbuf) {
    const int64_t dk = a->head_dim_k, dk16 = dk & ~(int64_t)15;
    for (int64_t cb = ta & ~(int64_t)15; cb < tb; cb += 16) {
        int64_t at[16];
        for (int j = 0; j < 16; j++) at[j] = cb + j >= ta && cb + j < tb ? (int64_t)a->cells[c0 + cb + j] * a->stride : -1;
        for (int64_t d0 = 0; d0 < dk16; d0 += 16) {
            __m512 r[16];
            for (int j = 0; j < 16; j++) r[j] = at[j] < 0 ? _mm512_setzero_ps() : load16(a->keys, a->kv_type, at[j] + d0);
            transpose16x16_ps(r);
            for (int i = 0; i < 16; i++) _mm512_storeu_ps(kbuf + (d0 + i) * tile + cb, r[i]);
        }
        for (int64_t d = dk16; d < dk; d++)
            for (int j = 0; j < 16; j++) kbuf[d * tile + cb + j] = at[j] < 0 ? 0.f : load1(a->keys, a->kv_type, at[j] + d);
    }
}

/* Raw scores (q.k) of rows [r0, r0 + MR) (MR <= 4) for the NB (<= 4)
 * 16-cell blocks from cell cb. */
static inline __attribute__((always_inline)) void block_scores(const float *kbuf, int64_t tile, int64_t dk, const query_row *rows, int r0,
                                                              const int MR, int64_t cb, const int NB, float scores[][TILE]) {
    __m512 acc[4][4];
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NB; n++) acc[r][n] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dk; d++) {
        __m512 k[4];
        for (int n = 0; n < NB; n++) k[n] = _mm512_loadu_ps(kbuf + d * tile + cb + 16 * n);
        for (int r = 0; r < MR; r++) {
            const __m512 q = _mm512_set1_ps(rows[r0 + r].q[d]);
            for (int n = 0; n < NB; n++) acc[r][n] = _mm512_fmadd_ps(q, k[n], acc[r][n]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int n = 0; n < NB; n++) _mm512_storeu_ps(&scores[r0 + r][cb + 16 * n], acc[r][n]);
}

static inline __attribute__((always_inline)) void rows_block_scores(const float *kbuf, int64_t tile, int64_t dk, const query_row *rows,
                                                                   int r0, const int MR, int64_t s_a, int64_t s_b, float scores[][TILE]) {
    for (int64_t cb = s_a; cb < s_b; cb += 64) {
        const int64_t blocks = (s_b - cb) / 16;
        switch (blocks < 4 ? blocks : 4) { /* constant counts: the accumulators stay in registers */
        case 1: block_scores(kbuf, tile, dk, rows, r0, MR, cb, 1, scores); break;
        case 2: block_scores(kbuf, tile, dk, rows, r0, MR, cb, 2, scores); break;
        case 3: block_scores(kbuf, tile, dk, rows, r0, MR, cb, 3, scores); break;
        default: block_scores(kbuf, tile, dk, rows, r0, MR, cb, 4, scores); break;
        }
    }
}

/* Lanes of the 16-cell block from cell c that lie in [a, b). */
static inline __mmask16 lanes_in16(int64_t c, int64_t a, int64_t b) {
    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int)c), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    return _mm512_cmp_epi32_mask(idx, _mm512_set1_epi32((int)a), _MM_CMPINT_NLT) & _mm512_cmp_epi32_mask(idx, _mm512_set1_epi32((int)b), _MM_CMPINT_LT);
}

/* The row's raw scores over the blocks [s_a, s_b) to weights: scaled,
 * soft-capped, zero outside [r->a, r->b); the running maximum and sum
 * updated. */
static void row_weights(const sp_attention_args *a, query_row *r, float *scores, int64_t s_a, int64_t s_b) {
    __m512 max16 = _mm512_set1_ps(-INFINITY);
    for (int64_t cb = s_a; cb < s_b; cb += 16) {
        __m512 sv = _mm512_loadu_ps(scores + cb);
        if (a->softcap > 0.f) {
            float s16[16];
            _mm512_storeu_ps(s16, sv);
            for (int j = 0; j < 16; j++) s16[j] = finish_score(a, s16[j]);
            sv = _mm512_loadu_ps(s16);
        } else sv = _mm512_mul_ps(sv, _mm512_set1_ps(a->scale));
        sv = _mm512_mask_blend_ps(lanes_in16(cb, r->a, r->b), _mm512_set1_ps(-INFINITY), sv);
        _mm512_storeu_ps(scores + cb, sv);
        max16 = _mm512_max_ps(sv, max16); /* a NaN score is passed over */
    }
    raise_row_max(a, r, _mm512_reduce_max_ps(max16));
    const __m512 mv = _mm512_set1_ps(r->max);
    __m512 sum16 = _mm512_setzero_ps();
    for (int64_t cb = s_a; cb < s_b; cb += 16) {
        const __m512 e = _mm512_maskz_mov_ps(lanes_in16(cb, r->a, r->b), exp16(_mm512_sub_ps(_mm512_loadu_ps(scores + cb), mv)));
        _mm512_storeu_ps(scores + cb, e);
        sum16 = _mm512_add_ps(sum16, e);
    }
    r->sum += hsum512(sum16);
}
#endif

/* The widened keys (as the level lays them out) and values of the tile's
 * cells [ta, tb) from c0; keys of cells around them in their score blocks
 * zero. */
static void widen_tile(const sp_attention_args *a, int64_t c0, int64_t ta, int64_t tb, int64_t tile, float *kbuf, float *vbuf) {
    const int64_t dv = a->head_dim_v, dv8 = dv & ~(int64_t)7;
#ifdef SP_ATTENTION_AVX512
    widen_keys(a, c0, ta, tb, tile, kbuf);
#else
    (void)tile;
    const int64_t dk = a->head_dim_k, dk8 = dk & ~(int64_t)7;
    for (int64_t c = ta & ~(int64_t)7; c < ((tb + 7) & ~(int64_t)7); c++) {
        const bool seen = c >= ta && c < tb;
        const int64_t cell = seen ? (int64_t)a->cells[c0 + c] * a->stride : 0;
        for (int64_t d = 0; d < dk8; d += 8) _mm256_storeu_ps(key_at(kbuf, dk, c, d), seen ? load8(a->keys, a->kv_type, cell + d) : _mm256_setzero_ps());
        for (int64_t d = dk8; d < dk; d++) *key_at(kbuf, dk, c, d) = seen ? load1(a->keys, a->kv_type, cell + d) : 0.f;
    }
#endif
    for (int64_t c = ta; c < tb; c++) {
        const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
        float *v = vbuf + c * dv;
        for (int64_t d = 0; d < dv8; d += 8) _mm256_storeu_ps(v + d, load8(a->values, a->kv_type, cell + d));
        for (int64_t d = dv8; d < dv; d++) v[d] = load1(a->values, a->kv_type, cell + d);
    }
}

/* Weights of rows [r0, r0 + MR) for the tile's cells [c_a, c_b) (the
 * union of their ranges; a row's weights outside its own are zero). */
static inline __attribute__((always_inline)) void rows_weights(const sp_attention_args *a, float *kbuf, int64_t tile, query_row *rows,
                                                              int r0, const int MR, int64_t c_a, int64_t c_b, float scores[][TILE]) {
#ifdef SP_ATTENTION_AVX512
    const int64_t s_a = c_a & ~(int64_t)15, s_b = (c_b + 15) & ~(int64_t)15;
    rows_block_scores(kbuf, tile, a->head_dim_k, rows, r0, MR, s_a, s_b, scores);
    for (int r = r0; r < r0 + MR; r++) {
        if (rows[r].a < rows[r].b) row_weights(a, &rows[r], scores[r], s_a, s_b);
        else
            for (int64_t c = s_a; c < s_b; c++) scores[r][c] = 0.f;
    }
#else
    (void)tile;
    for (int r = r0; r < r0 + MR; r++) {
        for (int64_t c = c_a; c < c_b; c++) scores[r][c] = 0.f; /* the weights where the row does not look */
        if (rows[r].a < rows[r].b) row_softmax(a, &rows[r], scores[r], row_scores(a, &rows[r], kbuf, scores[r]));
    }
#endif
}

/* The rows of one block (at most MAX_ROWS, all of one sequence), tile by tile. */
static void attend_rows(const sp_attention_args *a, query_row *rows, int n_rows) {
    const int64_t dv = a->head_dim_v, dv8 = dv & ~(int64_t)7;
    const int tile = tile_cells(a->head_dim_k, dv);
    int64_t lo = INT32_MAX, hi = 0;
    for (int r = 0; r < n_rows; r++) {
        for (int64_t d = 0; d < dv; d++) rows[r].out[d] = 0.f;
        rows[r].max = -INFINITY;
        rows[r].sum = 0.f;
        if (rows[r].lo < rows[r].hi) {
            lo = rows[r].lo < lo ? rows[r].lo : lo;
            hi = rows[r].hi > hi ? rows[r].hi : hi;
        }
    }
    float kbuf[TILE_BUFFER], vbuf[TILE_BUFFER], scores[MAX_ROWS][TILE];
    for (int64_t c0 = lo >= hi ? hi : lo / tile * tile; c0 < hi; c0 += tile) {
        /* the tile's cells that some row sees: [ta, tb) */
        const int64_t ta = lo > c0 ? lo - c0 : 0, tb = hi < c0 + tile ? hi - c0 : tile;
        widen_tile(a, c0, ta, tb, tile, kbuf, vbuf);
        for (int r = 0; r < n_rows; r++) {
            query_row *row = &rows[r];
            row->a = row->lo > c0 ? row->lo - c0 : 0;
            row->b = row->hi < c0 + tile ? row->hi - c0 : tile;
        }
        for (int r0 = 0; r0 < n_rows; r0 += 4) {
            const int MR = n_rows - r0 < 4 ? n_rows - r0 : 4;
            int64_t c_a = tb, c_b = ta;
            for (int r = r0; r < r0 + MR; r++)
                if (rows[r].a < rows[r].b) {
                    c_a = rows[r].a < c_a ? rows[r].a : c_a;
                    c_b = rows[r].b > c_b ? rows[r].b : c_b;
                }
            if (c_a >= c_b) continue;
            switch (MR) { /* a constant row count in each copy: the accumulators stay in registers */
            case 1: rows_weights(a, kbuf, tile, rows, r0, 1, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 1, c_a, c_b); break;
            case 2: rows_weights(a, kbuf, tile, rows, r0, 2, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 2, c_a, c_b); break;
            case 3: rows_weights(a, kbuf, tile, rows, r0, 3, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 3, c_a, c_b); break;
            default: rows_weights(a, kbuf, tile, rows, r0, 4, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 4, c_a, c_b); break;
            }
        }
        for (int r = 0; r < n_rows; r++)
            for (int64_t d = dv8; d < dv; d++)
                for (int64_t c = rows[r].a; c < rows[r].b; c++)
                    rows[r].out[d] += scores[r][c] * vbuf[c * dv + d];
    }
    for (int r = 0; r < n_rows; r++) {
        const float inv = rows[r].sum > 0.f ? 1.f / rows[r].sum : 0.f;
        for (int64_t d = 0; d < dv; d++) rows[r].out[d] *= inv;
    }
}

void SP_ATTENTION_NAME(const sp_attention_args *a) {
    const int64_t n_heads = a->n_q_heads > 0 ? a->n_q_heads : 1, n_tokens = a->n_tokens > 0 ? a->n_tokens : 1;
    if (tile_cells(a->head_dim_k, a->head_dim_v) == 0) { /* heads wider than any model's (over 512 elements with AVX-512, 1024 with AVX2): a tile would not fit */
        sp_attention_portable(a);
        return;
    }
    const int64_t heads = n_heads < MAX_HEADS ? n_heads : MAX_HEADS, tokens = MAX_ROWS / heads;
    for (int64_t h0 = 0; h0 < n_heads; h0 += heads) {
        const int64_t nh = n_heads - h0 < heads ? n_heads - h0 : heads;
        for (int64_t i0 = 0; i0 < n_tokens; i0 += tokens) {
            const int64_t ni = n_tokens - i0 < tokens ? n_tokens - i0 : tokens;
            query_row rows[MAX_ROWS];
            int n_rows = 0;
            for (int64_t i = i0; i < i0 + ni; i++) {
                const sp_cell_range range = sp_attention_range(a, i);
                for (int64_t h = h0; h < h0 + nh; h++)
                    rows[n_rows++] = (query_row){.q = a->q + i * a->q_stride + h * a->head_dim_k,
                                                .out = a->out + i * a->out_stride + h * a->head_dim_v,
                                                .lo = range.begin,
                                                .hi = range.end};
            }
            attend_rows(a, rows, n_rows);
        }
    }
}
