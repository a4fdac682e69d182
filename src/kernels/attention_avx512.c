/* Attention with AVX-512 (x86_attention.h describes the kernel): the
 * scores come 16 cells at a time from transposed keys (each score one
 * chain of FMAs, so its bits differ from the AVX2 kernel's lane sums, but
 * not between a token alone and in a batch), the values are summed 16
 * lanes at a time. */
#include "kernels/x86_attention.h"
#include "kernels/x86_transpose.h"

/* Scores are made CELL_BLOCK cells at a time: a vector of 16 cells' scores. */
enum { CELL_BLOCK = 16 };

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
    switch (type) {
    case SP_KV_F32: return _mm512_loadu_ps((const float *)base + idx);
    case SP_KV_BF16: {
        const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)base + idx)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    }
    case SP_KV_Q8_0: { /* half a block */
        const sp_block_q8_0 *b = (const sp_block_q8_0 *)base + (idx >> 5);
        const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + (idx & 31)))));
        return _mm512_mul_ps(q, _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    case SP_KV_Q4_0: { /* the low nibbles of a block (its elements 0-15) or the high ones (16-31) */
        const sp_block_q4_0 *b = (const sp_block_q4_0 *)base + (idx >> 5);
        __m128i bytes = _mm_loadu_si128((const __m128i *)b->qs);
        if (idx & 16) bytes = _mm_srli_epi16(bytes, 4);
        const __m512i q = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(bytes, _mm_set1_epi8(15))), _mm512_set1_epi32(8));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    default: return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)base + idx)));
    }
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
            for (int j = 0; j < 16; j++) r[j] = at[j] < 0 ? _mm512_setzero_ps() : load16(a->keys, a->k_type, at[j] + d0);
            transpose16x16_ps(r);
            for (int i = 0; i < 16; i++) _mm512_storeu_ps(kbuf + (d0 + i) * tile + cb, r[i]);
        }
        for (int64_t d = dk16; d < dk; d++)
            for (int j = 0; j < 16; j++) kbuf[d * tile + cb + j] = at[j] < 0 ? 0.f : load1(a->keys, a->k_type, at[j] + d);
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

/* The widened keys (transposed) and values of the tile's cells [ta, tb)
 * from c0; keys of cells around them in their 16-cell blocks zero. */
static void widen_tile(const sp_attention_args *a, int64_t c0, int64_t ta, int64_t tb, int64_t tile, float *kbuf, float *vbuf) {
    widen_keys(a, c0, ta, tb, tile, kbuf);
    widen_values(a, c0, ta, tb, vbuf);
}

/* Weights of rows [r0, r0 + MR) for the tile's cells [c_a, c_b) (the
 * union of their ranges; a row's weights outside its own are zero). */
static inline __attribute__((always_inline)) void rows_weights(const sp_attention_args *a, float *kbuf, int64_t tile, query_row *rows,
                                                              int r0, const int MR, int64_t c_a, int64_t c_b, float scores[][TILE]) {
    const int64_t s_a = c_a & ~(int64_t)15, s_b = (c_b + 15) & ~(int64_t)15;
    rows_block_scores(kbuf, tile, a->head_dim_k, rows, r0, MR, s_a, s_b, scores);
    for (int r = r0; r < r0 + MR; r++) {
        if (rows[r].a < rows[r].b) row_weights(a, &rows[r], scores[r], s_a, s_b);
        else
            for (int64_t c = s_a; c < s_b; c++) scores[r][c] = 0.f;
    }
}

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

/* Rows [r0, r0 + MR) times the values of cells [c_a, c_b), every whole
 * vector of 8 of the output: 16 at a time while they last. */
static inline __attribute__((always_inline)) void weigh_all_values(const float *vbuf, int64_t dv, float scores[][TILE], query_row *rows,
                                                                  int r0, const int MR, int64_t c_a, int64_t c_b) {
    const int64_t dv8 = dv & ~(int64_t)7;
    int64_t d = 0;
    for (; d + 64 <= dv8; d += 64) weigh_values16(vbuf, dv, scores, rows, r0, MR, 4, d, c_a, c_b);
    if (d + 32 <= dv8) weigh_values16(vbuf, dv, scores, rows, r0, MR, 2, d, c_a, c_b), d += 32;
    if (d + 16 <= dv8) weigh_values16(vbuf, dv, scores, rows, r0, MR, 1, d, c_a, c_b), d += 16;
    weigh_values_from(vbuf, dv, scores, rows, r0, MR, d, c_a, c_b);
}

#include "kernels/x86_attention_loops.h"

void sp_attention_avx512(const sp_attention_args *a) { attention_x86(a); }
