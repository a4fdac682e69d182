/* BF16 weights on x86-64 CPUs with AVX-512 BF16 (compiled with it here
 * only; dispatch.c calls it only when cpuid says so). The activations of a
 * BF16 row are BF16 values already (kernels.h), so vdpbf16ps takes both
 * sides as they are: 32 products per instruction, each exact in float,
 * twice the rate of float FMAs. Other weight types go to the AVX-512 VNNI
 * matmul. A (row, token) pair is one chain of these along the row in any
 * tile, then the same lane sum and tail, so a token's output does not
 * depend on the batch. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernels.h"
#include "kernels/x86_prefetch.h"
#include "kernels/x86_round.h"
#include "kernels/x86_sum.h"
#include "quant/fp16.h"

/* 32 accumulators (16-lane registers) of 4 rows by 6 tokens leave room for
 * the rows' vectors; one token takes 4-row tiles too (four chains and
 * four row streams, as in the float path). */
#define TILE_ROWS 4
#define TILE_TOKENS 6

/* `ahead`: bytes from each row to the next tile's, fetched a cache line
 * per line read here (0: none): into L1 for one token (into_l1) or a lone
 * row, else into L2, as the float rows' tiles do (x86_matmul_tiles.h's
 * prefetch_ahead): with the 4-row tiles for one token, what made one
 * token's BF16 rows keep up with memory. */
static inline __attribute__((always_inline)) void bf16_tile(const uint16_t *const rows[], const int R, const uint16_t *const xs[],
                                                            const int T, int64_t n, ptrdiff_t ahead, bool into_l1, float *out) {
    __m512 acc[TILE_ROWS][TILE_TOKENS];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        if (ahead) sp_prefetch_rows((const void *const *)rows, R, (ptrdiff_t)(i * 2) + ahead, into_l1);
        __m512bh wv[TILE_ROWS];
        for (int r = 0; r < R; r++) wv[r] = (__m512bh)_mm512_loadu_si512(rows[r] + i);
        for (int t = 0; t < T; t++) {
            const __m512bh xv = (__m512bh)_mm512_loadu_si512(xs[t] + i);
            for (int r = 0; r < R; r++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], xv);
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) {
            float sum = hsum512(acc[r][t]);
            for (int64_t j = i; j < n; j++) sum += sp_bf16_to_fp32(rows[r][j]) * sp_bf16_to_fp32(xs[t][j]);
            out[r * T + t] = sum;
        }
}

/* A copy per tile shape, so that each one's loops unroll and its
 * accumulators stay in registers. */
static void bf16_tile_any(const uint16_t *const rows[], int R, const uint16_t *const xs[], int T, int64_t n, ptrdiff_t ahead,
                          bool into_l1, float *out) {
#define SHAPE(RR, TT)                                                                                                          \
    case (RR) * 8 + (TT): bf16_tile(rows, RR, xs, TT, n, ahead, into_l1, out); return;
    switch (R * 8 + T) {
        SHAPE(4, 1) SHAPE(4, 2) SHAPE(4, 3) SHAPE(4, 4) SHAPE(4, 5) SHAPE(4, 6)
        SHAPE(1, 1) SHAPE(1, 2) SHAPE(1, 3) SHAPE(1, 4) SHAPE(1, 5) SHAPE(1, 6)
    default: break;
    }
#undef SHAPE
}

/* One token: SP_DECODE_STREAMS stretches of rows, a row of each side by
 * side in a 4-row tile (kernels.h), as the float rows take them
 * (x86_matmul_loops.h's float_rows_one_token): a row's chain is the
 * tile's for it whatever else the tile holds. */
typedef struct bf16_token {
    const uint16_t *x;
    int64_t n_in;
} bf16_token;

static void bf16_token_tile(const uint8_t *const rows[], int n, const void *ctx, float *dots) {
    _Static_assert(SP_DECODE_STREAMS == TILE_ROWS, "a set of rows side by side is a tile");
    const bf16_token *t = ctx;
    const uint16_t *tile[SP_DECODE_STREAMS];
    for (int k = 0; k < n; k++) tile[k] = (const uint16_t *)rows[k];
    bf16_tile_any(tile, n, &t->x, 1, t->n_in, SP_DECODE_AHEAD, true, dots);
}

static void bf16_rows_one_token(const sp_weight *w, const uint16_t *x, float *y, int64_t o0, int64_t o1) {
    const bf16_token t = {x, w->n_in};
    sp_decode_sets(w, o0, o1, y, bf16_token_tile, &t);
}

void sp_matmul_avx512bf16(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    if (w->type != SPROUT_TYPE_BF16) {
        sp_matmul_avx512vnni(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
        return;
    }
    const int64_t n = w->n_in;
    /* a block of tokens' BF16 activations (up to 512 KiB, kept in L2 while
     * every row passes) fits SP_ROUNDED_BLOCK_FLOATS */
    int64_t block = (512 << 10) / (n * (int64_t)sizeof(uint16_t)) / TILE_TOKENS * TILE_TOKENS;
    if (block < TILE_TOKENS) block = TILE_TOKENS;
    uint16_t *xb = (uint16_t *)scratch;
    if (n_tokens == 1) {
        narrow_to_bf16(x, n, xb);
        bf16_rows_one_token(w, xb, y, o0, o1);
        return;
    }
    for (int64_t tb = 0; tb < n_tokens; tb += block) {
        const int64_t tn = n_tokens - tb < block ? n_tokens - tb : block;
        for (int64_t t = 0; t < tn; t++) narrow_to_bf16(x + (tb + t) * x_stride, n, xb + t * n);
        for (int64_t o = o0, R; o < o1; o += R) {
            R = o1 - o < TILE_ROWS ? 1 : TILE_ROWS; /* a partial tile of rows goes one row at a time */
            const uint16_t *rows[TILE_ROWS];
            for (int r = 0; r < R; r++) rows[r] = (const uint16_t *)(w->data + (size_t)(o + r) * w->row_bytes);
            for (int64_t t0 = 0; t0 < tn; t0 += TILE_TOKENS) {
                const int T = tn - t0 < TILE_TOKENS ? (int)(tn - t0) : TILE_TOKENS;
                const uint16_t *xs[TILE_TOKENS];
                for (int t = 0; t < T; t++) xs[t] = xb + (t0 + t) * n;
                float out[TILE_ROWS * TILE_TOKENS];
                bf16_tile_any(rows, (int)R, xs, T, n, R > 1 ? (ptrdiff_t)R * (ptrdiff_t)w->row_bytes : SP_DECODE_AHEAD, n_tokens == 1,
                              out);
                for (int r = 0; r < R; r++)
                    for (int t = 0; t < T; t++) y[(tb + t0 + t) * y_stride + o + r] = out[r * T + t];
            }
        }
    }
}
