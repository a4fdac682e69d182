/* Attention with AVX2 and FMA (x86_attention.h describes the kernel):
 * scores 8 cells at a time, each block's eight dot products summed across
 * lanes. */
#include "kernels/x86_attention.h"

/* Scores are made CELL_BLOCK cells at a time. */
enum { CELL_BLOCK = 8 };

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

/* The widened keys and values of the tile's cells [ta, tb) from c0; keys
 * of cells around them in their 8-cell blocks zero. */
static void widen_tile(const sp_attention_args *a, int64_t c0, int64_t ta, int64_t tb, int64_t tile, float *kbuf, float *vbuf) {
    (void)tile;
    const int64_t dk = a->head_dim_k, dk8 = dk & ~(int64_t)7;
    for (int64_t c = ta & ~(int64_t)7; c < ((tb + 7) & ~(int64_t)7); c++) {
        const bool seen = c >= ta && c < tb;
        const int64_t cell = seen ? (int64_t)a->cells[c0 + c] * a->stride : 0;
        for (int64_t d = 0; d < dk8; d += 8) _mm256_storeu_ps(key_at(kbuf, dk, c, d), seen ? load8(a->keys, a->k_type, cell + d) : _mm256_setzero_ps());
        for (int64_t d = dk8; d < dk; d++) *key_at(kbuf, dk, c, d) = seen ? load1(a->keys, a->k_type, cell + d) : 0.f;
    }
    widen_values(a, c0, ta, tb, vbuf);
}

/* Weights of rows [r0, r0 + MR) for the tile's cells [c_a, c_b) (the
 * union of their ranges; a row's weights outside its own are zero). */
static inline __attribute__((always_inline)) void rows_weights(const sp_attention_args *a, float *kbuf, int64_t tile, query_row *rows,
                                                              int r0, const int MR, int64_t c_a, int64_t c_b, float scores[][TILE]) {
    (void)tile;
    for (int r = r0; r < r0 + MR; r++) {
        for (int64_t c = c_a; c < c_b; c++) scores[r][c] = 0.f; /* the weights where the row does not look */
        if (rows[r].a < rows[r].b) row_softmax(a, &rows[r], scores[r], row_scores(a, &rows[r], kbuf, scores[r]));
    }
}

/* Rows [r0, r0 + MR) times the values of cells [c_a, c_b), every whole
 * vector of 8 of the output. */
static inline __attribute__((always_inline)) void weigh_all_values(const float *vbuf, int64_t dv, float scores[][TILE], query_row *rows,
                                                                  int r0, const int MR, int64_t c_a, int64_t c_b) {
    weigh_values_from(vbuf, dv, scores, rows, r0, MR, 0, c_a, c_b);
}

#include "kernels/x86_attention_loops.h"

void sp_attention_avx2(const sp_attention_args *a) { attention_x86(a); }
