/* F16 and BF16 weights through AMX-BF16 tiles (tdpbf16ps), for prompt
 * tokens at the amx level, any number of them (compiled with AMX here
 * only; sp_matmul_amx_prompt sends them here).
 *
 * The tile multiply takes bfloat16 pairs and adds their exact products
 * to float sums. F16 weights and F16-rounded activations (kernels.h)
 * carry 11 significant bits, bfloat16 8, so each is split into two
 * bfloat16 values that add up to it exactly: w = w_hi + w_lo (w_hi: w's
 * float cut to its top 16 bits; w_lo the rest, 3 bits) and x = x_hi +
 * x_lo (x_hi: x rounded to nearest even; x_lo the rest). Each 32-element
 * chunk adds w_hi.x_lo, w_hi.x_hi and w_lo.x_hi (tile_pass: in that
 * order), each product exact. The fourth, w_lo.x_lo, is left out: |w_lo| < 2^-7 |w| and |x_lo| <= 2^-8
 * |x|, so it is under 2^-15 of its term, 16 times less than the F16
 * rounding of x itself (2^-11), and it was a quarter of the tile work:
 * three products are faster than four. BF16 weights
 * meet BF16-rounded activations in one product.
 *
 * Not bit for bit the FMA tiles' sums: the tile unit adds in an order no
 * AVX-512 sequence replays (in-order FMAs match only some of its
 * outputs). Generated tokens stay on the FMA tiles: one token through
 * these would convert every weight for itself, several times slower.
 * (Nor do short prompts: forward.h.) So at the amx level an F16 or BF16
 * model's prompt tokens and generated tokens differ by float rounding and
 * the dropped product (test_kernels bounds both), while within
 * the tiles an output depends only on its row and its token (a one-column
 * tile gives the bits of a 16-column one): a prompt token's output is the
 * same alone, in any batch or chunk.
 *
 * Layout: weights are A (16 rows a tile, a row's 32 elements of a chunk
 * in its 64 bytes, converted into scratch); tokens are B (16 pairs of
 * elements a tile, the 16 tokens' pairs side by side); C holds 16 rows by
 * 16 tokens of sums. */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernels.h"
#include "kernels/x86_amx.h"
#include "kernels/x86_transpose.h"

#define CHUNK 32
/* bytes of one tile: 16 rows of 64 */
#define TILE_BYTES 1024
/* Chunks a panel holds (2 row tiles, 2 parts: 32 KiB), converted once
 * and kept in cache while every token tile of the block passes over them. */
#define SUPER_CHUNK 8
/* Panels of 32 rows converted at once: each pair of token tiles, read from
 * L3 (a block of 512 2048-wide tokens is 4 MiB), then serves 256 rows from
 * L1 and L2 instead of 32: eight panels gained more over one than four or
 * sixteen did. */
#define PANELS 8
_Static_assert(32 * PANELS == SP_PROMPT_ROW_GROUP, "kernels.h names the panels' rows");
/* The tokens' tiles of a block (4 bytes per element a token, both parts):
 * up to 8 MiB, so that a 512-token prompt of 2048-wide rows is one block
 * (the rows are read and converted once per block: larger blocks beat
 * 1 MiB ones, and smaller blocks lose what the panels gain). */
#define TOKEN_BLOCK_BYTES ((int64_t)8 << 20)

/* Tiles 0-3: C for (row tile, token tile) (0, 0), (0, 1), (1, 0), (1, 1);
 * 4, 5: A for row tiles 0, 1; 6, 7: B for token tiles 0, 1. A token
 * tile is `columns` tokens wide (16, or fewer where a call has fewer). */
static void configure_tiles(int columns) {
    sp_amx_tile_shapes shapes = {.key = SP_AMX_FLOAT_KEY + columns};
    for (int t = 0; t < 8; t++) shapes.rows[t] = 16;
    for (int t = 0; t < 4; t++) shapes.colsb[t] = (uint16_t)(4 * columns);
    shapes.colsb[4] = shapes.colsb[5] = 64;
    shapes.colsb[6] = shapes.colsb[7] = (uint16_t)(4 * columns);
    sp_amx_configure(&shapes);
}

/* v - head, or 0 where v is infinite (inf - inf would be nan): the rest
 * of a value past its bfloat16 head. */
static inline __attribute__((always_inline)) __m512 finite_rest(__m512 v, __m512 head) {
    return _mm512_maskz_sub_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(INFINITY), _CMP_LT_OQ), v, head);
}

/* Tokens [0, n) of x as B tiles (token tile k, chunk c, part p at bt +
 * ((k * nch + c) * parts + p) * TILE_BYTES / 2, the pair of elements 2i,
 * 2i + 1 of column m at dword 16 i + m); columns past n in the last tile
 * are zero. SPLIT: x rounded to F16, then its two parts (above); else x
 * rounded to BF16. Each token's pairs of a chunk are one vector, so a
 * tile is the transpose of its 16 tokens' vectors. */
static void stage_tokens(const bool SPLIT, const float *x, int64_t x_stride, int64_t n_in, int64_t n, int columns, uint16_t *bt) {
    const int64_t nch = (n_in + CHUNK - 1) / CHUNK, parts = SPLIT ? 2 : 1;
    for (int64_t t0 = 0; t0 < n; t0 += columns) {
        const int cols = n - t0 < columns ? (int)(n - t0) : columns;
        uint16_t *tiles = bt + (t0 / columns) * nch * parts * TILE_BYTES / 2;
        for (int64_t c = 0; c < nch; c++) {
            __m512 pairs[2][16];
            for (int m = 0; m < 16; m++) {
                if (m >= cols) {
                    pairs[0][m] = pairs[1][m] = _mm512_setzero_ps();
                    continue;
                }
                const float *xt = x + (t0 + m) * x_stride;
                __m256bh hi[2], lo[2];
                for (int half = 0; half < 2; half++) {
                    const int64_t at = c * CHUNK + 16 * half;
                    const __mmask16 valid = at >= n_in ? 0 : n_in - at >= 16 ? 0xFFFF : (__mmask16)((1u << (n_in - at)) - 1);
                    const __m512 v = _mm512_maskz_loadu_ps(valid, xt + at);
                    if (SPLIT) {
                        const __m512 rounded = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
                        hi[half] = _mm512_cvtneps_pbh(rounded);
                        /* past F16's range x is infinite, with no rest */
                        lo[half] = _mm512_cvtneps_pbh(finite_rest(rounded, _mm512_cvtpbh_ps(hi[half])));
                    } else {
                        hi[half] = _mm512_cvtneps_pbh(v);
                    }
                }
                pairs[0][m] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512((__m256i)hi[0]), (__m256i)hi[1], 1));
                if (SPLIT) pairs[1][m] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512((__m256i)lo[0]), (__m256i)lo[1], 1));
            }
            for (int64_t p = 0; p < parts; p++) {
                transpose16x16_ps(pairs[p]);
                float *tile = (float *)(tiles + (c * parts + p) * TILE_BYTES / 2);
                for (int i = 0; i < 16; i++) _mm512_store_ps(tile + 16 * i, pairs[p][i]);
            }
        }
    }
}

/* An F16 weight's two parts by way of its float: w_hi is the float's top
 * 16 bits, which are a bfloat16 (the mantissa cut to 7 bits); w_lo =
 * w - w_hi (at most 3 significant bits), whose float's top 16 bits are
 * its bfloat16 too. Exact for every F16 value; split_f16 takes this way
 * only for vectors holding a zero, subnormal, infinity or nan. */
static inline __attribute__((always_inline)) void split_f16_float(__m512i h, uint16_t *hi, uint16_t *lo) {
    const __m512i top = _mm512_set1_epi32((int)0xFFFF0000u);
    const __m512i high_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17,
                                                15, 13, 11, 9, 7, 5, 3, 1);
    const __m512 a = _mm512_cvtph_ps(_mm512_castsi512_si256(h)), b = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
    /* an infinite weight has no rest (inf - inf would be nan) */
    const __m512 a_lo = finite_rest(a, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), top)));
    const __m512 b_lo = finite_rest(b, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(b), top)));
    _mm512_store_si512(hi, _mm512_permutex2var_epi16(_mm512_castps_si512(a), high_words, _mm512_castps_si512(b)));
    _mm512_store_si512(lo, _mm512_permutex2var_epi16(_mm512_castps_si512(a_lo), high_words, _mm512_castps_si512(b_lo)));
}
/* The same parts in 16-bit integer ops, for normal F16 values (exponent
 * field E of 1..30, mantissa m): w = (1024 + m) 2^(E - 25); w_hi keeps m's
 * top 7 bits, a bfloat16 of exponent field E + 112; w_lo = v 2^(E - 25)
 * with v = m & 7, its bfloat16 looked up for v (exponent field 102 +
 * floor(log2 v), then raised by E) and zero for v = 0. The same bits as
 * split_f16_float (all 65536 F16 values checked against it). */
/* bf16 bits of v 2^-25 by the index's low 3 bits v (vpermw reads 5) */
static const uint16_t lo_table[32] __attribute__((aligned(64))) = {
#define LO(v) (uint16_t)((v) == 0 ? 0 : (((v) >= 4 ? 2 : (v) >= 2 ? 1 : 0) + 102) << 7 | (((v) << (7 - ((v) >= 4 ? 2 : (v) >= 2 ? 1 : 0))) & 0x7F))
    LO(0), LO(1), LO(2), LO(3), LO(4), LO(5), LO(6), LO(7), LO(0), LO(1), LO(2), LO(3), LO(4), LO(5), LO(6), LO(7),
    LO(0), LO(1), LO(2), LO(3), LO(4), LO(5), LO(6), LO(7), LO(0), LO(1), LO(2), LO(3), LO(4), LO(5), LO(6), LO(7)};
static inline __attribute__((always_inline)) void split_f16(__m512i h, uint16_t *hi, uint16_t *lo) {
    const __m512i sign = _mm512_set1_epi16((short)0x8000);
    const __mmask32 special = _mm512_testn_epi16_mask(h, _mm512_set1_epi16(0x7C00)) | _mm512_cmpeq_epi16_mask(_mm512_and_si512(h, _mm512_set1_epi16(0x7C00)), _mm512_set1_epi16(0x7C00));
    if (__builtin_expect(special != 0, 0)) { split_f16_float(h, hi, lo); return; }
    const __m512i t = _mm512_srli_epi16(h, 3);
    const __m512i hv = _mm512_add_epi16(_mm512_and_si512(t, _mm512_set1_epi16(0x0FFF)), _mm512_set1_epi16(0x3800));
    _mm512_store_si512(hi, _mm512_ternarylogic_epi32(hv, h, sign, 0xF8)); /* hv | (h & sign) */
    const __m512i e7 = _mm512_and_si512(t, _mm512_set1_epi16(0x0F80));
    const __m512i lut = _mm512_permutexvar_epi16(h, _mm512_load_si512(lo_table));
    _mm512_store_si512(lo, _mm512_maskz_add_epi16(_mm512_test_epi16_mask(h, _mm512_set1_epi16(7)), _mm512_ternarylogic_epi32(lut, h, sign, 0xF8), e7));
}

/* Rows [o, o + 16 * RH) (those at or past o1 as zeros), chunks [c0, c0 +
 * nc), as A tiles: chunk c's part p of row tile r at panel + (((c - c0) *
 * parts + p) * RH + r) * TILE_BYTES / 2. SPLIT: F16 rows in their two
 * parts; else BF16 rows as they are. */
static void convert_rows(const bool SPLIT, const sp_weight *w, int64_t o, int64_t o1, int RH, int64_t c0, int64_t nc, uint16_t *panel) {
    const int64_t parts = SPLIT ? 2 : 1, n_in = w->n_in;
    const int64_t full = (n_in / CHUNK < c0 + nc ? n_in / CHUNK : c0 + nc); /* chunks below it are whole */
    for (int r = 0; r < RH; r++)
        for (int m = 0; m < 16; m++) {
            const int64_t row = o + 16 * r + m;
            uint16_t *dst = panel + r * TILE_BYTES / 2 + 32 * m;
            const ptrdiff_t chunk_step = parts * RH * TILE_BYTES / 2, part_step = RH * TILE_BYTES / 2;
            if (row >= o1) {
                for (int64_t c = c0; c < c0 + nc; c++)
                    for (int64_t p = 0; p < parts; p++) _mm512_store_si512(dst + (c - c0) * chunk_step + p * part_step, _mm512_setzero_si512());
                continue;
            }
            const uint16_t *src = (const uint16_t *)(w->data + (size_t)row * w->row_bytes);
            int64_t c = c0;
            for (; c < full; c++) {
                const __m512i h = _mm512_loadu_si512(src + c * CHUNK);
                if (SPLIT) split_f16(h, dst + (c - c0) * chunk_step, dst + (c - c0) * chunk_step + part_step);
                else _mm512_store_si512(dst + (c - c0) * chunk_step, h);
            }
            for (; c < c0 + nc; c++) { /* the last, partial chunk */
                const __m512i h = _mm512_maskz_loadu_epi16((__mmask32)((1u << (n_in - c * CHUNK)) - 1), src + c * CHUNK);
                if (SPLIT) split_f16(h, dst + (c - c0) * chunk_step, dst + (c - c0) * chunk_step + part_step);
                else _mm512_store_si512(dst + (c - c0) * chunk_step, h);
            }
        }
}

/* C(r, t) += A(r) . B(t) for the TT token tiles and RH row tiles loaded. */
static inline __attribute__((always_inline)) void tile_products(const int TT, const int RH) {
    _tile_dpbf16ps(0, 4, 6);
    if (TT == 2) _tile_dpbf16ps(1, 4, 7);
    if (RH == 2) _tile_dpbf16ps(2, 5, 6);
    if (TT == 2 && RH == 2) _tile_dpbf16ps(3, 5, 7);
}

/* Chunks [c0, c0 + nc) of TT token tiles (from bt) by RH row tiles (from
 * the panel), into their C tiles kept at cs (tile (r, t) at cs + (2 * t +
 * r) * 256; loaded first unless the first chunk is chunk 0). */
static inline __attribute__((always_inline)) void tile_pass(const int TT, const int RH, const bool SPLIT, const uint16_t *panel,
                                                           const uint16_t *bt, int64_t nch, int64_t c0, int64_t nc, float *cs) {
    const int64_t parts = SPLIT ? 2 : 1;
    const int64_t b_stride = nch * parts * TILE_BYTES / 2; /* between token tiles */
    if (c0 == 0) {
        _tile_zero(0);
        if (TT == 2) _tile_zero(1);
        if (RH == 2) _tile_zero(2);
        if (TT == 2 && RH == 2) _tile_zero(3);
    } else {
        _tile_loadd(0, cs, 64);
        if (TT == 2) _tile_loadd(1, cs + 512, 64);
        if (RH == 2) _tile_loadd(2, cs + 256, 64);
        if (TT == 2 && RH == 2) _tile_loadd(3, cs + 768, 64);
    }
    for (int64_t c = c0; c < c0 + nc; c++) {
        const uint16_t *a = panel + (c - c0) * parts * RH * TILE_BYTES / 2, *b = bt + c * parts * TILE_BYTES / 2;
        /* split: w_hi.x_lo, w_hi.x_hi, w_lo.x_hi, so that each step after
         * the first loads one operand (8 tile loads for 12 products, not 10) */
        _tile_loadd(4, a, 64);
        if (RH == 2) _tile_loadd(5, a + TILE_BYTES / 2, 64);
        if (SPLIT) {
            _tile_loadd(6, b + TILE_BYTES / 2, 64);
            if (TT == 2) _tile_loadd(7, b + b_stride + TILE_BYTES / 2, 64);
            tile_products(TT, RH);
        }
        _tile_loadd(6, b, 64);
        if (TT == 2) _tile_loadd(7, b + b_stride, 64);
        tile_products(TT, RH);
        if (!SPLIT) continue;
        _tile_loadd(4, a + RH * TILE_BYTES / 2, 64);
        if (RH == 2) _tile_loadd(5, a + (RH + 1) * TILE_BYTES / 2, 64);
        tile_products(TT, RH);
    }
    _tile_stored(0, cs, 64);
    if (TT == 2) _tile_stored(1, cs + 512, 64);
    if (RH == 2) _tile_stored(2, cs + 256, 64);
    if (TT == 2 && RH == 2) _tile_stored(3, cs + 768, 64);
}

static void tile_pass_any(int TT, int RH, bool split, const uint16_t *panel, const uint16_t *bt, int64_t nch, int64_t c0, int64_t nc,
                          float *cs) {
#define PASS(T, R, S)                                                                                                      \
    if (TT == (T) && RH == (R) && split == (S)) {                                                                          \
        tile_pass(T, R, S, panel, bt, nch, c0, nc, cs);                                                                    \
        return;                                                                                                            \
    }
    PASS(2, 2, true) PASS(2, 1, true) PASS(1, 2, true) PASS(1, 1, true)
    PASS(2, 2, false) PASS(2, 1, false) PASS(1, 2, false) PASS(1, 1, false)
#undef PASS
}

/* Rows [o, o1) of chunks [c0, c0 + nc): the next super-chunk, fetched
 * into L2 a few rows at a time between the tile passes of the one before.
 * Unfetched, convert_rows waited on memory for each row's few lines (each
 * row in a page of its own: no stream for the hardware prefetcher to
 * follow); the tile passes leave the memory bus idle meanwhile. */
typedef struct next_rows {
    const sp_weight *w;
    int64_t o, o1, c0, nc;
} next_rows;

static void prefetch_rows(next_rows *next, int64_t n_rows) {
    const int64_t end = next->o + n_rows < next->o1 ? next->o + n_rows : next->o1;
    const int64_t c_end = (next->c0 + next->nc) * CHUNK < next->w->n_in ? (next->c0 + next->nc) * CHUNK : next->w->n_in;
    for (; next->o < end; next->o++) {
        const uintptr_t row = (uintptr_t)next->w->data + (uintptr_t)next->o * next->w->row_bytes; /* two bytes an element */
        const uintptr_t first = (row + (uintptr_t)next->c0 * 2 * CHUNK) & ~(uintptr_t)63, last = row + (uintptr_t)c_end * 2 - 1;
        for (uintptr_t line = first; line <= last; line += 64) _mm_prefetch((const char *)line, _MM_HINT_T1);
    }
}

static inline void *align64(void *p) { return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* Bytes of one token tile's B tiles, all chunks and parts. */
static int64_t token_tile_bytes(sprout_type type, int64_t n_in) {
    return (n_in + CHUNK - 1) / CHUNK * (type == SPROUT_TYPE_F16 ? 2 : 1) * TILE_BYTES;
}

size_t sp_amx_float_staged_bytes(sprout_type type, int64_t n_in, int64_t n_tokens) {
    if (!sp_prompt_entry_type(type) || n_tokens < 1) return 0;
    const int64_t columns = sp_prompt_tile_tokens(n_tokens);
    return (size_t)((n_tokens + columns - 1) / columns * token_tile_bytes(type, n_in));
}

void sp_amx_float_stage(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, int64_t k0, int64_t k1, void *staged) {
    const int64_t columns = sp_prompt_tile_tokens(n_tokens), t0 = k0 * columns, t1 = k1 * columns < n_tokens ? k1 * columns : n_tokens;
    if (t0 >= t1) return;
    stage_tokens(w->type == SPROUT_TYPE_F16, x + t0 * x_stride, x_stride, w->n_in, t1 - t0, (int)columns,
                 (uint16_t *)((char *)staged + k0 * token_tile_bytes(w->type, w->n_in)));
}

/* staged: NULL, or the n_tokens tokens as sp_amx_float_stage left them. */
void sp_matmul_amx_float(const sp_weight *w, const float *x, int64_t x_stride, const void *staged, int64_t n_tokens, float *y,
                         int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    const bool split = w->type == SPROUT_TYPE_F16;
    const int64_t nch = (w->n_in + CHUNK - 1) / CHUNK, parts = split ? 2 : 1;
    const int columns = (int)sp_prompt_tile_tokens(n_tokens);
    configure_tiles(columns);
    /* the scratch (sp_matmul_scratch_floats): PANELS panels of converted
     * rows (32 KiB each), then per token 64 bytes a chunk and part of B
     * tiles and 128 bytes of C tiles a panel */
    char *const end = (char *)(scratch + sp_matmul_scratch_floats(w->n_in));
    const int64_t panel_elems = SUPER_CHUNK * 2 * 2 * TILE_BYTES / 2;
    uint16_t *panels = align64(scratch);
    float *cs = align64(panels + PANELS * panel_elems);
    const int64_t token_bytes = nch * parts * 64 + 128 * PANELS;
    int64_t token_block = (end - (char *)cs - 256) / token_bytes;
    if (token_block > TOKEN_BLOCK_BYTES / token_bytes) token_block = TOKEN_BLOCK_BYTES / token_bytes;
    token_block = token_block / 32 * 32;
    /* never below 32 tokens: the scratch has 8 MiB and 156 bytes an
     * element (kernels.h), 32 tokens take 128 an element and 292 KiB */
    if (token_block < 32) token_block = 32;
    const int64_t cs_stride = token_block * 32;
    uint16_t *own = align64(cs + PANELS * cs_stride);
    for (int64_t tb = 0; tb < n_tokens; tb += token_block) {
        const int64_t tbn = n_tokens - tb < token_block ? n_tokens - tb : token_block;
        const int64_t tiles = (tbn + columns - 1) / columns;
        const uint16_t *bt = own;
        if (staged) bt = (const uint16_t *)((const char *)staged + tb / columns * token_tile_bytes(w->type, w->n_in));
        else stage_tokens(split, x + tb * x_stride, x_stride, w->n_in, tbn, columns, own);
        for (int64_t og = o0; og < o1; og += 32 * PANELS) {
            const int np = (int)((o1 - og + 31) / 32 < PANELS ? (o1 - og + 31) / 32 : PANELS); /* panels in use */
            const int64_t og_end = og + 32 * PANELS < o1 ? og + 32 * PANELS : o1;
            for (int64_t c0 = 0; c0 < nch; c0 += SUPER_CHUNK) {
                const int64_t nc = nch - c0 < SUPER_CHUNK ? nch - c0 : SUPER_CHUNK;
                for (int pi = 0; pi < np; pi++) {
                    const int64_t o = og + 32 * pi;
                    convert_rows(split, w, o, o1, o1 - o > 16 ? 2 : 1, c0, nc, panels + pi * panel_elems);
                }
                /* the next super-chunk: this group's, or the next group's first */
                next_rows next = {w, og, og_end, c0 + SUPER_CHUNK, SUPER_CHUNK};
                if (next.c0 >= nch) next = (next_rows){w, og_end, og_end + 32 * PANELS < o1 ? og_end + 32 * PANELS : o1, 0, SUPER_CHUNK};
                if (next.c0 + next.nc > nch) next.nc = nch - next.c0;
                const int64_t passes = (tiles + 1) / 2 * np, rows_per_pass = (next.o1 - next.o + passes - 1) / passes;
                for (int64_t k = 0; k < tiles; k += 2)
                    for (int pi = 0; pi < np; pi++) {
                        const int64_t o = og + 32 * pi;
                        tile_pass_any(tiles - k >= 2 ? 2 : 1, o1 - o > 16 ? 2 : 1, split, panels + pi * panel_elems,
                                      bt + k * nch * parts * TILE_BYTES / 2, nch, c0, nc, cs + pi * cs_stride + k * 512);
                        prefetch_rows(&next, rows_per_pass);
                    }
            }
            for (int pi = 0; pi < np; pi++) {
                const int64_t o = og + 32 * pi;
                const int RH = o1 - o > 16 ? 2 : 1;
                for (int64_t t = 0; t < tbn; t++)
                    for (int r = 0; r < RH; r++) {
                        const float *c = cs + pi * cs_stride + (t / columns) * 512 + r * 256 + t % columns;
                        float *out = y + (tb + t) * y_stride + o + 16 * r;
                        const int rows = o1 - o - 16 * r < 16 ? (int)(o1 - o - 16 * r) : 16;
                        for (int m = 0; m < rows; m++) out[m] = c[16 * m];
                    }
            }
        }
    }
}
