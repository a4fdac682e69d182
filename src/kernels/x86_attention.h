/* What the AVX2 and AVX-512 attention kernels (attention_avx2.c,
 * attention_avx512.c) share, and how they work:
 *
 * Attention, fused and tiled, for a block of query rows (the
 * heads that share a KV head, of one token or of several tokens of one
 * sequence) that read each cell of the cache once together: the cells go by
 * in tiles of up to 64; a tile's keys and values are widened to f32 once
 * for every row (F16 and BF16 converted, Q8_0 and Q4_0 blocks dequantized
 * right there: the cache itself is never widened, only the tile in
 * flight); each row's scores (q.k, scaled, soft-capped) are kept in a
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
#ifndef SPROUT_KERNELS_X86_ATTENTION_H
#define SPROUT_KERNELS_X86_ATTENTION_H

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "kernels/kernels.h"
#include "kernels/x86_exp.h"
#include "kernels/x86_sum.h"
#include "kernels/kv_element.h"

/* TILE cells per tile, fewer for heads wider than TILE_BUFFER / TILE (the
 * widened keys of a tile fill at most TILE_BUFFER floats, 32 KiB, and its
 * values as many); a block
 * is at most MAX_HEADS heads of each of up to MAX_ROWS / heads tokens. */
enum { TILE = 64, TILE_BUFFER = 8192, MAX_HEADS = 8, MAX_ROWS = 32 };

/* 8 elements of a KV row from idx (a multiple of 8), widened to f32. A
 * block type's 8 lie in one block: its integers times its scale, the
 * products ggml's dequantization makes (exact in f32). */
static inline __m256 load8(const void *base, sp_kv_type type, int64_t idx) {
    switch (type) {
    case SP_KV_F32: return _mm256_loadu_ps((const float *)base + idx);
    case SP_KV_BF16: {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    }
    case SP_KV_Q8_0: {
        const sp_block_q8_0 *b = (const sp_block_q8_0 *)base + (idx >> 5);
        const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b->qs + (idx & 31)))));
        return _mm256_mul_ps(q, _mm256_set1_ps(_cvtsh_ss(b->d)));
    }
    case SP_KV_Q4_0: { /* elements 0-15 are the low nibbles of qs[0..15], 16-31 the high ones */
        const sp_block_q4_0 *b = (const sp_block_q4_0 *)base + (idx >> 5);
        const int j = (int)(idx & 31);
        __m128i bytes = _mm_loadl_epi64((const __m128i *)(b->qs + (j & 15)));
        if (j >= 16) bytes = _mm_srli_epi16(bytes, 4);
        const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_and_si128(bytes, _mm_set1_epi8(15))), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(_cvtsh_ss(b->d)));
    }
    default: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx)));
    }
}

static inline float load1(const void *base, sp_kv_type type, int64_t idx) { return sp_kv_element(base, type, idx); }

/* One query row (a token's head): where it reads and writes, the cells it
 * sees, its running softmax state, and the part of the current tile it
 * sees ([a, b), relative to the tile; empty when a >= b). */
typedef struct query_row {
    const float *q;
    float *out;
    int32_t lo, hi;
    float max, sum;
    int64_t a, b;
    int64_t head; /* its head among the call's (for its sink) */
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

/* Rows [r0, r0 + MR) times the values of cells [c_a, c_b), the whole
 * vectors of 8 of the output from element d on (d a multiple of 16). */
static inline __attribute__((always_inline)) void weigh_values_from(const float *vbuf, int64_t dv, float scores[][TILE], query_row *rows,
                                                                   int r0, const int MR, int64_t d, int64_t c_a, int64_t c_b) {
    const int64_t dv8 = dv & ~(int64_t)7;
    for (; d + 16 <= dv8; d += 16) weigh_values(vbuf, dv, scores, rows, r0, MR, 2, d, c_a, c_b);
    if (d < dv8) weigh_values(vbuf, dv, scores, rows, r0, MR, 1, d, c_a, c_b);
}

/* The widened values of the tile's cells [ta, tb) from c0: cell c's
 * element d at vbuf[c * dv + d]. */
static inline __attribute__((always_inline)) void widen_values(const sp_attention_args *a, int64_t c0, int64_t ta, int64_t tb, float *vbuf) {
    const int64_t dv = a->head_dim_v, dv8 = dv & ~(int64_t)7;
    for (int64_t c = ta; c < tb; c++) {
        const int64_t cell = (int64_t)a->cells[c0 + c] * a->stride;
        float *v = vbuf + c * dv;
        for (int64_t d = 0; d < dv8; d += 8) _mm256_storeu_ps(v + d, load8(a->values, a->v_type, cell + d));
        for (int64_t d = dv8; d < dv; d++) v[d] = load1(a->values, a->v_type, cell + d);
    }
}

#endif
