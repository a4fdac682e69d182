/* Matmul for x86-64 CPUs with AVX2, FMA and F16C (compiled with those
 * flags only here; dispatch.c calls it only when cpuid says so): the int8
 * and float paths of x86_matmul_tiles.h and x86_matmul_loops.h, with the
 * unsigned-by-signed byte dots in two instructions and 256-bit float
 * tiles. */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

/* Without VNNI maddubs could saturate on Q8_0's levels plus 128, so the
 * signs move onto the activations instead. */
#define Q8_0_UNSIGNED 0

/* Unsigned bytes times signed bytes, summed in fours into 8 int32 lanes:
 * two instructions, with int16 pairs that cannot overflow for sprout's
 * operands (at most 2 * 63 * 127). */
static inline __m256i dot_u8_i8(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }

static inline __m256i dot_u8_i8_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_add_epi32(acc, dot_u8_i8(u, s)); }

/* maddubs's int16 pair sums (each at most 2 (2^bits - 1) 127 in size) add
 * up in int16 while they cannot overflow: runs of as many as fit in 32767
 * (8 for 4-bit levels, 4 for 5-bit, 2 for 6-bit) go to int32 by one madd
 * instead of one each, the same exact sums. Levels of 7 bits or more go
 * one at a time (8-bit ones never come here: maddubs alone could
 * saturate on them, so their signs move onto the activations). */
static inline __attribute__((always_inline)) __m256i dots_u8_i8_acc(__m256i acc, const __m256i u[], const __m256i *s, const int n,
                                                                    const int bits) {
    const int fit = 32767 / (2 * ((1 << bits) - 1) * 127), run = fit > 1 ? fit : 1;
    for (int m0 = 0; m0 < n; m0 += run) {
        const int m1 = m0 + run < n ? m0 + run : n;
        __m256i pairs = _mm256_maddubs_epi16(u[m0], _mm256_loadu_si256(s + m0));
        for (int m = m0 + 1; m < m1; m++) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(u[m], _mm256_loadu_si256(s + m)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    return acc;
}

#include "kernels/x86_matmul_tiles.h"

static inline __attribute__((always_inline)) __m256 block_scales8(sprout_type type, const uint8_t *row, int64_t b, int nv) {
    return gathered_block_scales8(type, row, b, nv);
}

/* A lone token takes the same paths as a group here (with horizontal sums
 * where they are cheaper than transposes): no path of its own. Always
 * inlined, as the AVX-512 level's are: a stub left to the later inliner
 * changed the loops' register allocation. */
static inline __attribute__((always_inline)) bool one_token_chunk8(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                   int64_t b, __m256 *acc) {
    (void)type, (void)row, (void)at, (void)t0, (void)b, (void)acc;
    return false;
}

static inline __attribute__((always_inline)) bool one_token_affine_k(const uint8_t *qs, const uint8_t *qh, const act_chunk *c, __m256 dsc,
                                                                     __m256 dm, __m256 *acc, __m256 *macc) {
    (void)qs, (void)qh, (void)c, (void)dsc, (void)dm, (void)acc, (void)macc;
    return false;
}

static inline __attribute__((always_inline)) bool one_token_q6_K(const sp_block_q6_K *w, const act_chunk *c, __m256 *acc) {
    (void)w, (void)c, (void)acc;
    return false;
}

static inline __attribute__((always_inline)) bool rows_in_pairs(sprout_type type, const uint8_t *const rows[], const int R, const act_tile *at,
                                                                float *out) {
    (void)type, (void)rows, (void)R, (void)at, (void)out;
    return false;
}

/* Eight 16-bit values of a format at p, widened (exactly). */
static inline __m256 widen8(float_format f, const void *p) {
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    return f == FLOAT_F16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* AVX2: one 8-lane accumulator per (row, token) pair. A prompt's tile is
 * 2 rows by 6 tokens: 12 accumulators, the 2 rows' widened vectors and a
 * token's vector take 15 of the 16 registers, so each token's vector is
 * loaded once for both rows (at 4 rows by 3 tokens gcc, one register
 * short, read each token's vector once per row: 13 loads for 12 FMAs).
 * One token's decode takes 4 rows side by side: four streams, four
 * independent chains. */
#define FLOAT_TILE_ROWS 2
#define FLOAT_TILE_TOKENS 6
#define FLOAT_TILE_MAX_ROWS SP_DECODE_STREAMS /* one token's set of rows is the tallest tile */
_Static_assert(FLOAT_TILE_ROWS <= SP_DECODE_STREAMS, "a prompt's tile is no taller than a decode set");
static inline __attribute__((always_inline)) void float_tile(float_format f, const void *const rows[], const int R,
                                                             const float *const xs[], const int T, int64_t n, ptrdiff_t ahead, bool into_l1,
                                                             float *out) {
    __m256 acc[FLOAT_TILE_MAX_ROWS][FLOAT_TILE_TOKENS];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        prefetch_ahead(f, rows, R, ahead, into_l1, i);
        for (int h = 0; h < 2; h++) {
            __m256 wv[FLOAT_TILE_MAX_ROWS];
            for (int r = 0; r < R; r++) {
                wv[r] = f == FLOAT_F32 ? _mm256_loadu_ps((const float *)rows[r] + i + 8 * h) : widen8(f, (const uint16_t *)rows[r] + i + 8 * h);
                __asm__("" : "+x"(wv[r])); /* an F32 row's vector likewise */
            }
            for (int t = 0; t < T; t++) {
                __m256 xv = _mm256_loadu_ps(xs[t] + i + 8 * h);
                __asm__("" : "+x"(xv)); /* one load for both rows: gcc folds it into each FMA */
                for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) out[r * T + t] = float_row_tail(f, rows[r], xs[t], i, n, hsum256(acc[r][t]));
}

/* The tile shapes used: two rows by up to six tokens, four rows for one
 * token's decode, single rows at the edges. */
#define FLOAT_TILE_SHAPES                                                                  \
    SHAPE(4, 1) SHAPE(2, 1) SHAPE(2, 2) SHAPE(2, 3) SHAPE(2, 4) SHAPE(2, 5) SHAPE(2, 6)    \
    SHAPE(1, 1) SHAPE(1, 2) SHAPE(1, 3) SHAPE(1, 4) SHAPE(1, 5) SHAPE(1, 6)

#include "kernels/x86_matmul_loops.h"

void sp_quantize_avx2(const float *x, int64_t n, void *out) { quantize_activations(x, n, out); }

void sp_matmul_avx2(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y, int64_t y_stride,
                    int64_t o0, int64_t o1, float *scratch) {
    matmul_x86(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch, false);
}
