/* F16 and BF16 weights on x86-64 CPUs with AVX-512 BF16 (compiled with it
 * here only; dispatch.c calls it only when cpuid says so). Other weight
 * types go to the AVX-512 VNNI matmul.
 *
 * vdpbf16ps issues at a quarter of the float FMAs' rate on this level's
 * CPUs (Emerald Rapids, bench/float_pipes.c: 1.3 against 5.3 a
 * nanosecond, so 42 against 85 GMAC/s a core), so the rows meet the
 * activations in float FMAs: a 64-byte line of 32 BF16 weights widens to
 * two float vectors in two instructions (the even elements shifted up, the
 * odd ones masked), and the activations, rounded to BF16 (kernels.h), are
 * stored as floats in that even-then-odd order per 32; F16 rows widen by
 * vcvtph2ps, in order. Products of two values of either format are exact
 * in float; each (row, token) pair is one chain of FMAs along the row, in
 * every tile and for one token alone, then the fixed lane sum and the tail
 * in order, so a token's output does not depend on the batch. The tiles'
 * blocking keeps their operands in L1 and L2: 38 -> 53 GMAC/s a thread for
 * BF16 (2048 x 5632, 256 tokens), 43 -> 52 for F16 (float tiles before).
 *
 * Where vdpbf16ps issues at the FMAs' rate (a Zen 4: 117 against 59
 * GMAC/s a core), the dot entry takes BF16 rows through it instead: the
 * activations rounded to BF16 stay in element order, and each 64-byte
 * line of a row is one instruction per token, one token alone included,
 * so a (row, token) pair's chain is the same in every tile. Its products
 * are exact and added one at a time with a rounding each, the odd
 * element's first (on the Zen 4, 3.2 million random sums all equal two
 * such float additions); it counts BF16 subnormals as zero. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernels.h"
#include "kernels/x86_prefetch.h"
#include "kernels/x86_round.h"
#include "kernels/x86_sum.h"
#include "quant/fp16.h"

/* 24 accumulators (16-lane registers) of 4 rows by 6 tokens; one token
 * takes 4-row tiles too (four chains and four row streams, as in the float
 * path). */
#define TILE_ROWS 4
#define TILE_TOKENS 6
/* Elements in a 64-byte line of a row: the unit the rows widen by. */
#define PAIR_GROUP 32
/* A token tile's activations over a chunk of this many elements (24 KiB
 * of floats) stay in L1 while every row tile of a block passes it; the
 * block's rows (BLOCK_ROWS of them) stay in L2 across its token tiles.
 * Each pair's accumulators are kept in memory between chunks (exactly).
 * Without chunks (the activations from L2 for each row tile) the kernel
 * ran at 43 GMAC/s a thread, with them 53; 16 to 128 rows a block, or
 * chunks of 512, measured the same within the noise, 256 a little less.
 * Rows widened to floats once per block (no widening in the tile) doubled
 * their bytes from L2 and fell to 30-38. */
#define CHUNK_ELEMENTS 1024
#define BLOCK_ROWS 32

/* The two 16-bit float formats of the rows, and BF16 rows met by
 * vdpbf16ps (the dot entry): the activations then stay BF16 values in
 * element order, and a 64-byte line of a row is one instruction's 32
 * products per token. */
typedef enum half_format { HALF_BF16, HALF_F16, HALF_BF16_DOT } half_format;

/* Bytes of one token's rounded activations, n elements: floats, or the
 * dot entry's BF16 values. */
static inline size_t token_bytes(half_format f, int64_t n) { return (size_t)n * (f == HALF_BF16_DOT ? sizeof(uint16_t) : sizeof(float)); }

/* Half of 32 16-bit values at p as floats (exactly). BF16: the even
 * elements (half 0: the low 16 bits of each pair, shifted up) or the odd
 * ones (half 1: masked), two cheap instructions for a whole line; F16:
 * elements 16 * half on, in order (vcvtph2ps). */
static inline __attribute__((always_inline)) __m512 widen_half(half_format f, const uint16_t *p, int half) {
    if (f == HALF_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + half * (PAIR_GROUP / 2))));
    const __m512i v = _mm512_loadu_si512(p);
    return _mm512_castsi512_ps(half ? _mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)) : _mm512_slli_epi32(v, 16));
}

/* Rows' elements [i0, i1) (whole groups of 32) against T tokens' split
 * activations, continuing the chains kept in state (row r, token t at
 * state[r * stride + t]). `ahead`: bytes from each row to the next tile's,
 * fetched a cache line per line read here (0: none): into L1 for one token
 * (into_l1) or a lone row, else into L2, as the float rows' tiles do. */
static inline __attribute__((always_inline)) void half_tile(half_format f, const uint16_t *const rows[], const int R, const void *const xs[],
                                                            const int T, int64_t i0, int64_t i1, ptrdiff_t ahead, bool into_l1,
                                                            __m512 *state, int stride) {
    __m512 acc[TILE_ROWS][TILE_TOKENS];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) acc[r][t] = state[r * stride + t];
    for (int64_t i = i0; i < i1; i += PAIR_GROUP) {
        if (ahead) sp_prefetch_rows((const void *const *)rows, R, (ptrdiff_t)(i * 2) + ahead, into_l1);
        if (f == HALF_BF16_DOT) {
            __m512i wv[TILE_ROWS];
            for (int r = 0; r < R; r++) wv[r] = _mm512_loadu_si512(rows[r] + i);
            for (int t = 0; t < T; t++) {
                const __m512bh xv = (__m512bh)_mm512_loadu_si512((const uint16_t *)xs[t] + i);
                for (int r = 0; r < R; r++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)wv[r], xv);
            }
            continue;
        }
        /* the even elements' FMAs, then the odd ones': 24 accumulators,
         * 4 widened rows and an activation fit the 32 registers */
        for (int half = 0; half < 2; half++) {
            __m512 wv[TILE_ROWS];
            for (int r = 0; r < R; r++) wv[r] = widen_half(f, rows[r] + i, half);
            for (int t = 0; t < T; t++) {
                const __m512 xv = _mm512_loadu_ps((const float *)xs[t] + i + half * (PAIR_GROUP / 2));
                for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) state[r * stride + t] = acc[r][t];
}

/* A copy per tile shape, so that each one's loops unroll and its
 * accumulators stay in registers. */
static void half_tile_any(half_format f, const uint16_t *const rows[], int R, const void *const xs[], int T, int64_t i0, int64_t i1,
                          ptrdiff_t ahead, bool into_l1, __m512 *state, int stride) {
#define SHAPE(RR, TT)                                                                                                          \
    case (RR) * 8 + (TT):                                                                                                      \
        if (f == HALF_F16) half_tile(HALF_F16, rows, RR, xs, TT, i0, i1, ahead, into_l1, state, stride);                       \
        else if (f == HALF_BF16_DOT) half_tile(HALF_BF16_DOT, rows, RR, xs, TT, i0, i1, ahead, into_l1, state, stride);        \
        else half_tile(HALF_BF16, rows, RR, xs, TT, i0, i1, ahead, into_l1, state, stride);                                    \
        return;
    switch (R * 8 + T) {
        SHAPE(4, 1) SHAPE(4, 2) SHAPE(4, 3) SHAPE(4, 4) SHAPE(4, 5) SHAPE(4, 6)
        SHAPE(1, 1) SHAPE(1, 2) SHAPE(1, 3) SHAPE(1, 4) SHAPE(1, 5) SHAPE(1, 6)
    default: break;
    }
#undef SHAPE
}

/* A pair's output: its chain's lanes summed, then the elements past the
 * last whole group (x in natural order there) added in order. */
static float pair_output(half_format f, __m512 acc, const uint16_t *row, const void *x, int64_t from, int64_t n) {
    float sum = hsum512(acc);
    for (int64_t j = from; j < n; j++) {
        const float xj = f == HALF_BF16_DOT ? sp_bf16_to_fp32(((const uint16_t *)x)[j]) : ((const float *)x)[j];
        sum += (f == HALF_F16 ? sp_fp16_to_fp32(row[j]) : sp_bf16_to_fp32(row[j])) * xj;
    }
    return sum;
}

/* A token's activations rounded to the rows' format (to nearest even) and
 * widened back to floats, each whole group of 32 in widen_half's order,
 * the rest in order; for the dot entry, the BF16 values in order. */
static void round_activations(half_format f, const float *x, int64_t n, void *dst) {
    if (f == HALF_BF16_DOT) {
        narrow_to_bf16(x, n, dst);
        return;
    }
    float *out = dst;
    int64_t i = 0;
    for (; i + PAIR_GROUP <= n; i += PAIR_GROUP) {
        uint16_t bits[PAIR_GROUP];
        if (f == HALF_F16)
            for (int half = 0; half < 2; half++)
                _mm256_storeu_si256((__m256i *)(bits + half * (PAIR_GROUP / 2)),
                                    _mm512_cvtps_ph(_mm512_loadu_ps(x + i + half * (PAIR_GROUP / 2)), _MM_FROUND_TO_NEAREST_INT));
        else narrow_to_bf16(x + i, PAIR_GROUP, bits);
        for (int half = 0; half < 2; half++) _mm512_storeu_ps(out + i + half * (PAIR_GROUP / 2), widen_half(f, bits, half));
    }
    for (; i < n; i++) out[i] = f == HALF_F16 ? sp_fp16_round(x[i]) : sp_bf16_round(x[i]);
}

/* One token: SP_DECODE_STREAMS stretches of rows, a row of each side by
 * side in a 4-row tile (kernels.h), as the float rows take them
 * (x86_matmul_loops.h's float_rows_one_token): a row's chain is the
 * tile's for it whatever else the tile holds. */
typedef struct half_token {
    half_format f;
    const void *x;
    int64_t n_in;
} half_token;

static void half_token_tile(const uint8_t *const rows[], int n, const void *ctx, float *dots) {
    _Static_assert(SP_DECODE_STREAMS == TILE_ROWS, "a set of rows side by side is a tile");
    const half_token *t = ctx;
    const uint16_t *tile[SP_DECODE_STREAMS] = {NULL};
    __m512 acc[SP_DECODE_STREAMS];
    for (int k = 0; k < SP_DECODE_STREAMS; k++) acc[k] = _mm512_setzero_ps();
    for (int k = 0; k < n; k++) tile[k] = (const uint16_t *)rows[k];
    const int64_t whole = t->n_in / PAIR_GROUP * PAIR_GROUP;
    half_tile_any(t->f, tile, n, &t->x, 1, 0, whole, SP_FLOAT_DECODE_AHEAD, true, acc, 1);
    for (int k = 0; k < n; k++) dots[k] = pair_output(t->f, acc[k], tile[k], t->x, whole, t->n_in);
}

/* Rows [o0, o1) against a block of n_tokens split tokens (xb, n apart): a
 * block of rows at a time, each token tile of it a chunk at a time, every
 * row tile of the block passing the chunk (rows from L2, activations from
 * L1), the accumulators in `state` between chunks. */
static void half_rows_block(const sp_weight *w, half_format f, const void *xb, int64_t n_tokens, float *y, int64_t y_stride, int64_t o0, int64_t o1) {
    const int64_t n = w->n_in, whole = n / PAIR_GROUP * PAIR_GROUP;
    __m512 state[BLOCK_ROWS * TILE_TOKENS];
    for (int64_t ob = o0; ob < o1; ob += BLOCK_ROWS) {
        const int64_t oe = o1 - ob < BLOCK_ROWS ? o1 : ob + BLOCK_ROWS;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += TILE_TOKENS) {
            const int T = n_tokens - t0 < TILE_TOKENS ? (int)(n_tokens - t0) : TILE_TOKENS;
            const void *xs[TILE_TOKENS];
            for (int t = 0; t < T; t++) xs[t] = (const char *)xb + (size_t)(t0 + t) * token_bytes(f, n);
            for (int64_t k = 0; k < (oe - ob) * TILE_TOKENS; k++) state[k] = _mm512_setzero_ps();
            for (int64_t c0 = 0; c0 < whole; c0 += CHUNK_ELEMENTS) {
                const int64_t c1 = whole - c0 < CHUNK_ELEMENTS ? whole : c0 + CHUNK_ELEMENTS;
                for (int64_t o = ob, R; o < oe; o += R) {
                    R = oe - o < TILE_ROWS ? 1 : TILE_ROWS; /* a partial tile of rows goes one row at a time */
                    const uint16_t *rows[TILE_ROWS];
                    for (int r = 0; r < R; r++) rows[r] = (const uint16_t *)(w->data + (size_t)(o + r) * w->row_bytes);
                    /* the first token tile reads the rows from memory: it fetches the next tile's */
                    const ptrdiff_t ahead = t0 > 0 ? 0 : R > 1 ? (ptrdiff_t)R * (ptrdiff_t)w->row_bytes : SP_DECODE_AHEAD;
                    half_tile_any(f, rows, (int)R, xs, T, c0, c1, ahead, false, state + (o - ob) * TILE_TOKENS, TILE_TOKENS);
                }
            }
            for (int64_t o = ob; o < oe; o++) {
                const uint16_t *row = (const uint16_t *)(w->data + (size_t)o * w->row_bytes);
                for (int t = 0; t < T; t++) y[(t0 + t) * y_stride + o] = pair_output(f, state[(o - ob) * TILE_TOKENS + t], row, xs[t], whole, n);
            }
        }
    }
}

/* The F16 and BF16 rows of both entries; BF16 ones through vdpbf16ps
 * where dot_bf16. */
static void matmul_16bit(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride, int64_t o0,
                         int64_t o1, float *scratch, bool dot_bf16) {
    const half_format f = w->type == SPROUT_TYPE_F16 ? HALF_F16 : dot_bf16 ? HALF_BF16_DOT : HALF_BF16;
    const int64_t n = w->n_in;
    /* a block of tokens' split activations, kept in L2 while every row passes */
    int64_t block = SP_ROUNDED_BLOCK_FLOATS / n / TILE_TOKENS * TILE_TOKENS;
    if (block < TILE_TOKENS) block = TILE_TOKENS;
    if (n_tokens == 1) {
        round_activations(f, x, n, scratch);
        const half_token t = {f, scratch, n};
        sp_decode_sets(w, o0, o1, y, half_token_tile, &t);
        return;
    }
    for (int64_t tb = 0; tb < n_tokens; tb += block) {
        const int64_t tn = n_tokens - tb < block ? n_tokens - tb : block;
        for (int64_t t = 0; t < tn; t++) round_activations(f, x + (tb + t) * x_stride, n, (char *)scratch + (size_t)t * token_bytes(f, n));
        half_rows_block(w, f, scratch, tn, y + tb * y_stride, y_stride, o0, o1);
    }
}

void sp_matmul_avx512bf16(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    if (w->type != SPROUT_TYPE_BF16 && w->type != SPROUT_TYPE_F16) sp_matmul_avx512vnni(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
    else matmul_16bit(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch, false);
}

void sp_matmul_avx512bf16_dot(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                              int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    if (w->type != SPROUT_TYPE_BF16 && w->type != SPROUT_TYPE_F16) sp_matmul_avx512vnni_halves(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
    else matmul_16bit(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch, true);
}
