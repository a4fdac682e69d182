/* Prefill matmul for x86-64 CPUs with AMX (compiled with it here only;
 * dispatch.c calls it only when cpuid says so and Linux has granted the
 * tile state).
 *
 * Q4_0, Q8_0, IQ4_NL, Q4_K and Q6_K weights against a batch of at least 16 tokens: a
 * tile multiply (tdpbssd) takes 16 tokens' 8-bit activations of one block
 * of 32 elements and the same block of 16 weight rows, unpacked to signed
 * levels once per block of tokens, and leaves the 256 exact block sums;
 * AVX-512 then applies the two scales of each. The arithmetic after the
 * integer sums is the AVX-512 VNNI kernel's (matmul_avx512vnni.c), done in the
 * same order: per (token, row), eight float accumulators, block b into
 * lane b % 8 by fma(sum, weight scale * activation scale, lane), summed at
 * the end by hsum256's tree (Q4_K: its mins' terms, fma(dmin * m, the
 * activations' scaled sum, lane), in lanes of their own, subtracted at the
 * end; Q6_K: each block's halves apart, below). So a token's output is the same bit for bit
 * here, in the VNNI kernel (one token, rows left over) and in any batch.
 * Everything else goes to the AVX-512 tables' matmul. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86_act.h"
#include "kernels/x86_amx.h"
#include "quant/blocks.h"

/* Fewer tokens than a tile's 16 rows leave it mostly idle: the VNNI
 * kernel, which streams the weights once, does them. */
#define AMX_MIN_TOKENS 16
/* Tokens per tile pass: two tiles of 16. */
#define TOKEN_TILE 32
/* Weight rows per tile pass: two tiles of 16. */
#define ROW_TILE 32
/* The activations of a block of tokens stay in L2 while every row tile
 * of the call passes over them. */
#define TOKEN_BLOCK_BYTES (1 << 20)

/* The tile registers (the intrinsics take them as literal numbers): 0-3
 * C (int32 sums) for (token tile, row tile) pairs (0, 0), (0, 1), (1, 0),
 * (1, 1); 4, 5 A (activations) per token tile; 6, 7 B (weights) per row
 * tile. */
/* A B tile: 8 rows of 64 bytes, row i holding elements 4i..4i+3 of each
 * of 16 weight rows (the layout tdpbssd takes). */
#define B_TILE_BYTES 512
/* An A tile: 16 tokens' 32 levels of one block. */
#define A_TILE_BYTES 512
/* A block's four C tiles (int32 sums). */
#define C_TILES_BYTES 4096
/* Blocks of a lane whose C tiles a pass keeps at once (in L1 beside the
 * operands: 4 measured best, 8 slower). */
#define STEP_CHUNK 4

__thread int sp_amx_tiles_key;

/* The tile shapes, per thread (x86_amx.h): elements per A row, 32 for
 * blocks or 16 for Q6_K's halves. */
static void configure_tiles(int depth) {
    sp_amx_tile_shapes shapes = {.key = depth};
    for (int c = 0; c < 4; c++) shapes.rows[c] = 16, shapes.colsb[c] = 64;
    shapes.rows[4] = shapes.rows[5] = 16;
    shapes.colsb[4] = shapes.colsb[5] = (uint16_t)depth;
    shapes.rows[6] = shapes.rows[7] = (uint8_t)(depth / 4);
    shapes.colsb[6] = shapes.colsb[7] = 64;
    sp_amx_configure(&shapes);
}

static bool amx_type(sprout_type type) {
    return type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_Q8_0 || type == SPROUT_TYPE_IQ4_NL || type == SPROUT_TYPE_Q4_K ||
           type == SPROUT_TYPE_Q6_K;
}

/* The byte offsets of 16 consecutive rows, for gathering a dword of each. */
static inline __m512i row_offsets_of(size_t row_bytes) {
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32((int)row_bytes));
}

/* 16 rows' fp16 block scales, each the first two bytes of the dword that
 * `at` gathers, as floats. */
static inline __m512 gather_scales(__m512i row_offsets, const uint8_t *at) {
    const __m512i words = _mm512_i32gather_epi32(row_offsets, (const void *)at, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
}

/* Half h of a panel of Q4_K rows (16 from base): sub-block j of
 * super-block s is block 8s + j, its levels (0..15) the low (j even) or
 * high nibbles of qs[32 * (j / 2)..]; its scale d * sc_j and min dmin *
 * m_j in floats, each the product the VNNI kernel forms (affine_k_group). */
static void unpack_q4_K(const uint8_t *base, int64_t nb, int halves, int h, __m512i row_offsets, int8_t *panel,
                        float *scales, float *mins) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), low6 = _mm512_set1_epi32(63);
    for (int64_t sb = 0; sb < nb / 8; sb++) {
        /* the 16 rows' d and dmin, and their 12 scale bytes as three dwords
         * (q0: bytes 0-3, q1: 4-7, q2: 8-11), unpacked as sp_q4k_scale_min
         * does, a row to a lane */
        const uint8_t *first = base + (size_t)sb * sizeof(sp_block_q4_K);
        const __m512i dd = _mm512_i32gather_epi32(row_offsets, (const void *)first, 1);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd)), dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
        const __m512i q0 = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q4_K, scales)), 1);
        const __m512i q1 = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q4_K, scales) + 4), 1);
        const __m512i q2 = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q4_K, scales) + 8), 1);
        for (int j = 0; j < 8; j++) {
            __m512i sc, m;
            if (j < 4) {
                sc = _mm512_and_si512(_mm512_srli_epi32(q0, (unsigned)(8 * j)), low6);
                m = _mm512_and_si512(_mm512_srli_epi32(q1, (unsigned)(8 * j)), low6);
            } else { /* the low four bits from q2's byte j - 4, the high two from the top of q0's (q1's) */
                const unsigned at = (unsigned)(8 * (j - 4));
                const __m512i high_sc = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q0, at + 6), _mm512_set1_epi32(3)), 4);
                const __m512i high_m = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(q1, at + 6), _mm512_set1_epi32(3)), 4);
                sc = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q2, at), _mm512_set1_epi32(0x0F)), high_sc);
                m = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q2, at + 4), _mm512_set1_epi32(0x0F)), high_m);
            }
            _mm512_storeu_ps(scales + ((8 * sb + j) * halves + h) * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
            _mm512_storeu_ps(mins + ((8 * sb + j) * halves + h) * 16, _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(m)));
        }
        const uint8_t *qs = first + offsetof(sp_block_q4_K, qs);
        for (int i = 0; i < 4; i++) {
            int8_t *even = panel + (size_t)((8 * sb + 2 * i) * halves + h) * B_TILE_BYTES;
            int8_t *odd = panel + (size_t)((8 * sb + 2 * i + 1) * halves + h) * B_TILE_BYTES;
            for (int m = 0; m < 8; m++) {
                const __m512i packed = _mm512_i32gather_epi32(row_offsets, (const void *)(qs + 32 * i + 4 * m), 1);
                _mm512_store_si512(even + 64 * m, _mm512_and_si512(packed, low4));
                _mm512_store_si512(odd + 64 * m, _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4));
            }
        }
    }
}

/* 16 Q6_K rows from base: block b's halves as B tiles at panel + b *
 * 512 (+ 256 for the second half), its rows' d in dscale[b * 16 + r], its
 * halves' scales in sc_lo, sc_hi likewise. Element l of group g (0-3) of
 * half n of a super-block: the low (g < 2) or high nibble of ql[64n + 32(g
 * & 1) + l], with bits 2g, 2g + 1 of qh[32n + l] as bits 4, 5. */
static void unpack_q6_K(const uint8_t *base, int64_t nb, __m512i row_offsets, int8_t *panel, float *dscale,
                        int32_t *sc_lo, int32_t *sc_hi) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), two_bits = _mm512_set1_epi8(3), offset = _mm512_set1_epi8(32);
    for (int64_t sb = 0; sb < nb / 8; sb++) {
        /* the 16 rows' d (the high half of the block's last dword, which
         * ends with it) and their 16 signed scales, four dwords, a row to a
         * lane, each byte sign-extended */
        const uint8_t *first = base + (size_t)sb * sizeof(sp_block_q6_K);
        const __m512i last = _mm512_i32gather_epi32(row_offsets, (const void *)(first + sizeof(sp_block_q6_K) - 4), 1);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(last, 16)));
        __m512i sc[4];
        for (int i = 0; i < 4; i++) sc[i] = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q6_K, scales) + 4 * i), 1);
        for (int j = 0; j < 8; j++) {
            const __m512i pair = sc[j / 2]; /* scales 2j, 2j + 1: bytes 2 (j % 2), 2 (j % 2) + 1 */
            const unsigned lo_at = (unsigned)(16 * (j % 2));
            _mm512_storeu_ps(dscale + (8 * sb + j) * 16, d);
            _mm512_storeu_si512(sc_lo + (8 * sb + j) * 16, _mm512_srai_epi32(_mm512_slli_epi32(pair, 24 - lo_at), 24));
            _mm512_storeu_si512(sc_hi + (8 * sb + j) * 16, _mm512_srai_epi32(_mm512_slli_epi32(pair, 16 - lo_at), 24));
        }
        for (int n = 0; n < 2; n++)
            for (int half = 0; half < 2; half++)
                for (int m = 0; m < 4; m++) {
                    const size_t l = (size_t)(16 * half + 4 * m);
                    const __m512i ql0 = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q6_K, ql) + 64 * n + l), 1);
                    const __m512i ql1 = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q6_K, ql) + 64 * n + 32 + l), 1);
                    const __m512i qh = _mm512_i32gather_epi32(row_offsets, (const void *)(first + offsetof(sp_block_q6_K, qh) + 32 * n + l), 1);
                    for (int g = 0; g < 4; g++) {
                        const __m512i ql = g & 1 ? ql1 : ql0;
                        const __m512i low = g < 2 ? _mm512_and_si512(ql, low4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4);
                        const __m512i high = _mm512_and_si512(_mm512_srli_epi16(qh, (unsigned)(2 * g)), two_bits);
                        const __m512i q = _mm512_sub_epi8(_mm512_or_si512(low, _mm512_slli_epi16(high, 4)), offset);
                        _mm512_store_si512(panel + (size_t)(8 * sb + 4 * n + g) * 512 + 256 * half + 64 * m, q);
                    }
                }
    }
}

/* Block `blk` of 16 Q8_0 rows (row_bytes apart) as a B tile: each row's
 * 32 levels loaded whole, two rows to a vector (rows k and k + 4 in its
 * halves for k < 4, rows k + 4 and k + 8 for k >= 4), two rounds of
 * unpacks that leave dwords e and e + 4 of four rows side by side in each
 * 128-bit lane, and 128-bit lane shuffles that put the 16 rows in order:
 * 8 inserts and 24 shuffles where there were eight 16-lane gathers. */
static inline void q8_0_tile(const uint8_t *blk, size_t row_bytes, int8_t *tile) {
    __m512i r[8], t[8];
    for (int k = 0; k < 8; k++) {
        const int row = k < 4 ? k : k + 4;
        const __m256i lo = _mm256_loadu_si256((const __m256i *)(blk + 2 + (size_t)row * row_bytes));
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(blk + 2 + (size_t)(row + 4) * row_bytes));
        r[k] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* r[4h + e]: dword e (128-bit lanes 0, 2) and e + 4 (lanes 1, 3) of rows 8h.. */
    for (int h = 0; h < 2; h++) {
        r[4 * h + 0] = _mm512_unpacklo_epi64(t[4 * h + 0], t[4 * h + 2]);
        r[4 * h + 1] = _mm512_unpackhi_epi64(t[4 * h + 0], t[4 * h + 2]);
        r[4 * h + 2] = _mm512_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
        r[4 * h + 3] = _mm512_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int e = 0; e < 4; e++) {
        _mm512_store_si512(tile + 64 * e, _mm512_shuffle_i32x4(r[e], r[4 + e], _MM_SHUFFLE(2, 0, 2, 0)));
        _mm512_store_si512(tile + 64 * (e + 4), _mm512_shuffle_i32x4(r[e], r[4 + e], _MM_SHUFFLE(3, 1, 3, 1)));
    }
}

/* Dword m of block `blk`'s 16 bytes of packed levels in 16 rows (row_bytes
 * apart), rows in lane order, as dwords[m]: each row's bytes loaded whole,
 * four rows to a vector (rows k, k + 4, k + 8, k + 12 in its 128-bit
 * lanes) and a 4x4 transpose of dwords in each lane; what 16-lane gathers
 * did. */
static inline void packed_dwords(const uint8_t *blk, size_t row_bytes, __m512i dwords[4]) {
    __m512i r[4], t[4];
    for (int k = 0; k < 4; k++) {
        const uint8_t *at = blk + 2 + (size_t)k * row_bytes;
        /* the lane a literal: unoptimized builds do not fold a loop's counter into the immediate */
        r[k] = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)at));
        r[k] = _mm512_inserti32x4(r[k], _mm_loadu_si128((const __m128i *)(at + 4 * row_bytes)), 1);
        r[k] = _mm512_inserti32x4(r[k], _mm_loadu_si128((const __m128i *)(at + 8 * row_bytes)), 2);
        r[k] = _mm512_inserti32x4(r[k], _mm_loadu_si128((const __m128i *)(at + 12 * row_bytes)), 3);
    }
    t[0] = _mm512_unpacklo_epi32(r[0], r[1]), t[1] = _mm512_unpackhi_epi32(r[0], r[1]);
    t[2] = _mm512_unpacklo_epi32(r[2], r[3]), t[3] = _mm512_unpackhi_epi32(r[2], r[3]);
    dwords[0] = _mm512_unpacklo_epi64(t[0], t[2]), dwords[1] = _mm512_unpackhi_epi64(t[0], t[2]);
    dwords[2] = _mm512_unpacklo_epi64(t[1], t[3]), dwords[3] = _mm512_unpackhi_epi64(t[1], t[3]);
}

/* The weights of rows [o, o + 16 * halves) as B tiles, block-major (block
 * b's tile of half h at panel + (b * halves + h) * B_TILE_BYTES), signed
 * levels, and their scales (block b's at scales + b * 16 * halves). */
static void unpack_panel(const sp_weight *w, int64_t o, int halves, int8_t *panel, float *scales, float *mins) {
    const int64_t nb = w->n_in / 32;
    const __m512i row_offsets = row_offsets_of(w->row_bytes);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i iq4 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)sp_iq4_levels));
    for (int h = 0; h < halves; h++) {
        const uint8_t *base = w->data + (size_t)(o + 16 * h) * w->row_bytes;
        if (w->type == SPROUT_TYPE_Q4_K) {
            unpack_q4_K(base, nb, halves, h, row_offsets, panel, scales, mins);
            continue;
        }
        if (w->type == SPROUT_TYPE_Q6_K) { /* one half: its integer scales where the mins go */
            unpack_q6_K(base, nb, row_offsets, panel, scales, (int32_t *)mins, (int32_t *)mins + nb * 16);
            continue;
        }
        for (int64_t b = 0; b < nb; b++) {
            int8_t *tile = panel + (size_t)(b * halves + h) * B_TILE_BYTES;
            if (w->type == SPROUT_TYPE_Q8_0) {
                const uint8_t *blk = base + (size_t)b * sizeof(sp_block_q8_0);
                _mm512_storeu_ps(scales + (b * halves + h) * 16, gather_scales(row_offsets, blk));
                q8_0_tile(blk, w->row_bytes, tile);
                continue;
            }
            /* Q4_0 and IQ4_NL: dword m of the packed nibbles holds elements
             * 4m.. in its low nibbles and 16 + 4m.. in its high ones */
            const uint8_t *blk = base + (size_t)b * sizeof(sp_block_q4_0);
            _mm512_storeu_ps(scales + (b * halves + h) * 16, gather_scales(row_offsets, blk));
            __m512i dwords[4];
            packed_dwords(blk, w->row_bytes, dwords);
            for (int m = 0; m < 4; m++) {
                const __m512i packed = dwords[m];
                __m512i lo = _mm512_and_si512(packed, low4), hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
                if (w->type == SPROUT_TYPE_IQ4_NL) {
                    lo = _mm512_shuffle_epi8(iq4, lo);
                    hi = _mm512_shuffle_epi8(iq4, hi);
                } else {
                    lo = _mm512_sub_epi8(lo, _mm512_set1_epi8(8));
                    hi = _mm512_sub_epi8(hi, _mm512_set1_epi8(8));
                }
                _mm512_store_si512(tile + 64 * m, lo);
                _mm512_store_si512(tile + 64 * (m + 4), hi);
            }
        }
    }
}

/* Where a pass's tiles live: its tokens' levels as A tiles (block b of
 * token tile k at aq + (k * nb + b) * A_TILE_BYTES, 32 bytes a token) and
 * their scales (at ad + (k * nb + b) * 16), the rows' unpacked panel and
 * scales, the accumulators (lane j of token t, rows from 16h, at acc + (j
 * * TOKEN_TILE + t) * ROW_TILE + 16h) and C tiles (STEP_CHUNK blocks' in
 * tile_pass and the Q6_K pass). */
typedef struct tile_pass_args {
    const int8_t *aq;
    const float *ad, *as; /* as: each block's scale times its levels' sum, for the mins (laid out as ad) */
    int64_t nb;
    const int8_t *panel;
    const float *scales, *mins;
    float *acc, *macc; /* macc: the mins' terms, laid out as acc */
    int32_t *c;
} tile_pass_args;

/* Block b's integer sums for TT token tiles by RH row tiles, into c (tile
 * (tt, h) at c + (2 * tt + h) * 256). */
static inline __attribute__((always_inline)) void block_sums(const int TT, const int RH, const int8_t *aq, int64_t nb, const int8_t *panel,
                                                            int64_t b, int32_t *c) {
    const int8_t *btile = panel + (size_t)b * (size_t)RH * B_TILE_BYTES;
    _tile_zero(0);
    if (RH == 2) _tile_zero(1);
    if (TT == 2) _tile_zero(2);
    if (TT == 2 && RH == 2) _tile_zero(3);
    _tile_loadd(4, aq + (size_t)b * A_TILE_BYTES, 32);
    if (TT == 2) _tile_loadd(5, aq + (size_t)(nb + b) * A_TILE_BYTES, 32);
    _tile_loadd(6, btile, 64);
    if (RH == 2) _tile_loadd(7, btile + B_TILE_BYTES, 64);
    _tile_dpbssd(0, 4, 6);
    if (RH == 2) _tile_dpbssd(1, 4, 7);
    if (TT == 2) _tile_dpbssd(2, 5, 6);
    if (TT == 2 && RH == 2) _tile_dpbssd(3, 5, 7);
    _tile_stored(0, c, 64);
    if (RH == 2) _tile_stored(1, c + 256, 64);
    if (TT == 2) _tile_stored(2, c + 512, 64);
    if (TT == 2 && RH == 2) _tile_stored(3, c + 768, 64);
}

/* A 16 x 16 tile of outputs' accumulators of one lane (16 rows of
 * ROW_TILE floats at lanes), held in registers across a chunk of blocks:
 * zeros before the lane's first chunk, else what the last chunk left. */
static inline __attribute__((always_inline)) void lane_load(__m512 acc[16], const float *lanes, bool first) {
    for (int m = 0; m < 16; m++) acc[m] = first ? _mm512_setzero_ps() : _mm512_load_ps(lanes + m * ROW_TILE);
}

static inline __attribute__((always_inline)) void lane_store(const __m512 acc[16], float *lanes) {
    for (int m = 0; m < 16; m++) _mm512_store_ps(lanes + m * ROW_TILE, acc[m]);
}

/* Lanes 0-7 of an output, from lane j at at + j * TOKEN_TILE * ROW_TILE,
 * summed as hsum256 does: ((0+4)+(2+6)) + ((1+5)+(3+7)). */
static inline __m512 sum_lanes(const float *at, int64_t nb) {
    __m512 lane[8];
    for (int j = 0; j < 8; j++) lane[j] = j < nb ? _mm512_load_ps(at + j * TOKEN_TILE * ROW_TILE) : _mm512_setzero_ps();
    const __m512 even = _mm512_add_ps(_mm512_add_ps(lane[0], lane[4]), _mm512_add_ps(lane[2], lane[6]));
    const __m512 odd = _mm512_add_ps(_mm512_add_ps(lane[1], lane[5]), _mm512_add_ps(lane[3], lane[7]));
    return _mm512_add_ps(even, odd);
}

/* Block b's sums (a C tile at c) times its weight scales ws and its 16
 * tokens' activation scales ad, into those tokens' accumulators of one
 * lane (fma(sum, weight scale * activation scale, lane): the VNNI
 * kernel's product). */
static inline __attribute__((always_inline)) void scale_into(__m512 acc[16], const int32_t *c, const float *ws, const float *ad) {
    const __m512 dw = _mm512_loadu_ps(ws);
    for (int m = 0; m < 16; m++)
        acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * m)), _mm512_mul_ps(dw, _mm512_set1_ps(ad[m])), acc[m]);
}

/* Lane j's mins' terms of the 16 tokens of token tile tt, rows from 16 h,
 * into their accumulators: fma(dmin * m, the activations' scaled sum,
 * lane), block by block (j, j + 8, ...). */
static inline __attribute__((always_inline)) void lane_mins(const tile_pass_args *p, const int RH, int tt, int h, int j) {
    const float *as = p->as + tt * p->nb * 16;
    float *lanes = p->macc + (j * TOKEN_TILE + 16 * tt) * ROW_TILE + 16 * h;
    __m512 acc[16];
    lane_load(acc, lanes, true);
    for (int64_t b = j; b < p->nb; b += 8) {
        const __m512 mw = _mm512_loadu_ps(p->mins + (b * RH + h) * 16);
        for (int m = 0; m < 16; m++) acc[m] = _mm512_fmadd_ps(mw, _mm512_set1_ps(as[b * 16 + m]), acc[m]);
    }
    lane_store(acc, lanes);
}

/* Up to TT * 16 tokens (n_tokens of them real) by RH * 16 rows from o,
 * lane by lane: lane j's blocks (j, j + 8, ...) in chunks of STEP_CHUNK,
 * first the chunk's tiles (all stored), then for each 16 x 16 tile of
 * outputs its accumulators of lane j held in registers across the chunk.
 * Each lane still takes its blocks in order, so the sums are the VNNI
 * kernel's; but the accumulators go to memory once a chunk, not once a
 * block: 16 rows of C tile and 16 of accumulators were stored per tile of
 * a block before, more than a store buffer holds every few blocks. That
 * stores bound the kernel is inferred (no PMU here) from those counts and
 * from this change having helped. Then each output's
 * eight lanes are summed as hsum256 does, ((0+4)+(2+6)) + ((1+5)+(3+7)). */
static inline __attribute__((always_inline)) void tile_pass(const int TT, const int RH, const bool MINS, const tile_pass_args *p,
                                                           int n_tokens, float *y, int64_t y_stride) {
    const int64_t nb = p->nb;
    int32_t *cbuf = p->c; /* STEP_CHUNK blocks' C tiles, C_TILES_BYTES / 4 ints each */
    for (int j = 0; j < 8 && j < nb; j++) {
        const int64_t steps = (nb - j + 7) / 8;
        for (int64_t k0 = 0; k0 < steps; k0 += STEP_CHUNK) {
            const int64_t kn = steps - k0 < STEP_CHUNK ? steps - k0 : STEP_CHUNK;
            for (int64_t k = 0; k < kn; k++) block_sums(TT, RH, p->aq, nb, p->panel, j + 8 * (k0 + k), cbuf + k * C_TILES_BYTES / 4);
            for (int tt = 0; tt < TT; tt++)
                for (int h = 0; h < RH; h++) {
                    float *lanes = p->acc + (j * TOKEN_TILE + 16 * tt) * ROW_TILE + 16 * h;
                    const float *ad = p->ad + tt * nb * 16;
                    __m512 acc[16];
                    lane_load(acc, lanes, k0 == 0);
                    for (int64_t k = 0; k < kn; k++) {
                        const int64_t b = j + 8 * (k0 + k);
                        scale_into(acc, cbuf + k * C_TILES_BYTES / 4 + (2 * tt + h) * 256, p->scales + (b * RH + h) * 16, ad + b * 16);
                    }
                    lane_store(acc, lanes);
                }
        }
        if (MINS) /* x = d * sc * q - dmin * m: the mins meet the activations' sums */
            for (int tt = 0; tt < TT; tt++)
                for (int h = 0; h < RH; h++) lane_mins(p, RH, tt, h, j);
    }
    for (int t = 0; t < n_tokens; t++)
        for (int h = 0; h < RH; h++) {
            __m512 out = sum_lanes(p->acc + t * ROW_TILE + 16 * h, nb);
            if (MINS) out = _mm512_sub_ps(out, sum_lanes(p->macc + t * ROW_TILE + 16 * h, nb)); /* the VNNI kernel's a + -1 * m */
            _mm512_storeu_ps(y + t * y_stride + 16 * h, out);
        }
}

static void tile_pass_any(int TT, int RH, bool mins, const tile_pass_args *p, int n_tokens, float *y, int64_t y_stride) {
#define PASS(T, R, M)                                                                                                      \
    if (TT == (T) && RH == (R) && mins == (M)) {                                                                           \
        tile_pass(T, R, M, p, n_tokens, y, y_stride);                                                                      \
        return;                                                                                                            \
    }
    PASS(2, 2, false) PASS(2, 1, false) PASS(1, 2, false) PASS(1, 1, false)
    PASS(2, 2, true) PASS(2, 1, true) PASS(1, 2, true) PASS(1, 1, true)
#undef PASS
}

/* --- Q6_K: a scale per 16 elements ---------------------------------------------------------------
 * Each block's two halves get tiles of their own (16 elements deep), so
 * their sums come out apart, as the VNNI kernel keeps them (split_k_group):
 * levels q - 32 (signed), the half sums times the halves' integer scales
 * added (exactly), then fma(sum, d * activation scale, lane b % 8). One row
 * tile of 16 per pass (the tiles: C 0-3 for (token tile, half), A 4-5 for
 * the halves, B 6-7). */

static inline __attribute__((always_inline)) void q6_block_sums(const int TT, const int8_t *aq, int64_t nb, const int8_t *panel, int64_t b,
                                                               int32_t *c) {
    _tile_zero(0);
    _tile_zero(1);
    if (TT == 2) _tile_zero(2);
    if (TT == 2) _tile_zero(3);
    _tile_loadd(6, panel + (size_t)b * 512, 64);
    _tile_loadd(7, panel + (size_t)b * 512 + 256, 64);
    _tile_loadd(4, aq + (size_t)b * A_TILE_BYTES, 32);
    _tile_loadd(5, aq + (size_t)b * A_TILE_BYTES + 16, 32);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 5, 7);
    if (TT == 2) {
        _tile_loadd(4, aq + (size_t)(nb + b) * A_TILE_BYTES, 32);
        _tile_loadd(5, aq + (size_t)(nb + b) * A_TILE_BYTES + 16, 32);
        _tile_dpbssd(2, 4, 6);
        _tile_dpbssd(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    _tile_stored(1, c + 256, 64);
    if (TT == 2) _tile_stored(2, c + 512, 64);
    if (TT == 2) _tile_stored(3, c + 768, 64);
}

/* Block b's half sums (C tiles at lo, hi) of 16 tokens into their
 * accumulators of one lane. The halves' products with their integer
 * scales are formed in floats: a half sum is at most 16 * 32 * 127 in
 * magnitude, times a scale of at most 128 that is under 2^23, and the two
 * products' sum under 2^24, so every step is exact and the sum is the
 * integer the VNNI kernel forms (in fewer instructions than mullo). */
static inline __attribute__((always_inline)) void q6_scale_into(__m512 acc[16], const int32_t *lo, const int32_t *hi, __m512 d,
                                                               __m512 lo_scale, __m512 hi_scale, const float *ad) {
    for (int m = 0; m < 16; m++) {
        const __m512 lo_sum = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(lo + 16 * m)), lo_scale);
        const __m512 sums = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(hi + 16 * m)), hi_scale, lo_sum);
        acc[m] = _mm512_fmadd_ps(sums, _mm512_mul_ps(d, _mm512_set1_ps(ad[m])), acc[m]);
    }
}

/* tile_pass for Q6_K: lane by lane, STEP_CHUNK blocks' tiles at a time. */
static inline __attribute__((always_inline)) void q6_tile_pass(const int TT, const tile_pass_args *p, const int32_t *sc_lo,
                                                              const int32_t *sc_hi, int n_tokens, float *y, int64_t y_stride) {
    const int64_t nb = p->nb;
    int32_t *cbuf = p->c;
    for (int j = 0; j < 8 && j < nb; j++) {
        const int64_t steps = (nb - j + 7) / 8;
        for (int64_t k0 = 0; k0 < steps; k0 += STEP_CHUNK) {
            const int64_t kn = steps - k0 < STEP_CHUNK ? steps - k0 : STEP_CHUNK;
            for (int64_t k = 0; k < kn; k++) q6_block_sums(TT, p->aq, nb, p->panel, j + 8 * (k0 + k), cbuf + k * C_TILES_BYTES / 4);
            for (int tt = 0; tt < TT; tt++) {
                float *lanes = p->acc + (j * TOKEN_TILE + 16 * tt) * ROW_TILE;
                __m512 acc[16];
                lane_load(acc, lanes, k0 == 0);
                for (int64_t k = 0; k < kn; k++) {
                    const int64_t b = j + 8 * (k0 + k);
                    const int32_t *c = cbuf + k * C_TILES_BYTES / 4 + 2 * tt * 256;
                    q6_scale_into(acc, c, c + 256, _mm512_loadu_ps(p->scales + b * 16), _mm512_cvtepi32_ps(_mm512_loadu_si512(sc_lo + b * 16)),
                                  _mm512_cvtepi32_ps(_mm512_loadu_si512(sc_hi + b * 16)), p->ad + (tt * nb + b) * 16);
                }
                lane_store(acc, lanes);
            }
        }
    }
    for (int t = 0; t < n_tokens; t++) _mm512_storeu_ps(y + t * y_stride, sum_lanes(p->acc + t * ROW_TILE, nb));
}

static void q6_tile_pass_any(int TT, const tile_pass_args *p, const int32_t *sc_lo, const int32_t *sc_hi, int n_tokens, float *y,
                             int64_t y_stride) {
    if (TT == 2) q6_tile_pass(2, p, sc_lo, sc_hi, n_tokens, y, y_stride);
    else q6_tile_pass(1, p, sc_lo, sc_hi, n_tokens, y, y_stride);
}

/* Tokens [t0, t0 + n) of the call as A tiles and scales (tile_pass_args),
 * padded with zero tokens to a whole tile: from the caller's quantized
 * blocks, or quantized here (one token at a time into `one`). */
static void stage_tokens(const sp_weight *w, const float *x, int64_t x_stride, const act_block *xq, int64_t t0, int64_t n, int8_t *aq,
                         float *ad, float *as, act_block *one) {
    const int64_t nb = w->n_in / 32, padded = (n + 15) / 16 * 16;
    for (int64_t i = 0; i < padded; i++) {
        const act_block *src = NULL;
        if (i < n && xq) src = xq + (t0 + i) * nb;
        else if (i < n) {
            sp_quantize_avx2(x + (t0 + i) * x_stride, w->n_in, one);
            src = one;
        }
        const int64_t k = i / 16, m = i % 16;
        for (int64_t b = 0; b < nb; b++) {
            int8_t *to = aq + (size_t)(k * nb + b) * A_TILE_BYTES + 32 * m;
            if (src) memcpy(to, src[b].qs, 32);
            else memset(to, 0, 32);
            ad[(k * nb + b) * 16 + m] = src ? src[b].d : 0.f;
            /* as prepare_act_tile forms it (x86_matmul_tiles.h) */
            as[(k * nb + b) * 16 + m] = src ? src[b].d * (float)(src[b].sum[0] + src[b].sum[1]) : 0.f;
        }
    }
}

static inline void *align64(void *p) { return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

void sp_matmul_amx(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y, int64_t y_stride,
                   int64_t o0, int64_t o1, float *scratch) {
    const int64_t amx_rows = (o1 - o0) / 16 * 16;
    if (!amx_type(w->type) || w->n_in % 32 || n_tokens < AMX_MIN_TOKENS || amx_rows == 0) {
        sp_matmul_avx512bf16(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
        return;
    }
    const bool q6 = w->type == SPROUT_TYPE_Q6_K;
    configure_tiles(q6 ? 16 : 32);
    const int64_t nb = w->n_in / 32;
    /* the scratch: sp_matmul_scratch_floats, over 108 bytes per input
     * element and 590 KiB more; here 40 bytes per element for the rows' panel
     * (levels, scales, mins), 1.25 for one token's blocks, 80 KiB of
     * accumulators and C tiles, and the rest, up to TOKEN_BLOCK_BYTES, for
     * the staged tokens at 1.25 bytes per element each */
    char *const end = (char *)(scratch + sp_matmul_scratch_floats(w->n_in));
    float *acc = align64(scratch), *macc = acc + 8 * TOKEN_TILE * ROW_TILE;
    int32_t *cbuf = (int32_t *)(macc + 8 * TOKEN_TILE * ROW_TILE);
    float *scales = (float *)(cbuf + STEP_CHUNK * C_TILES_BYTES / 4), *mins = scales + nb * ROW_TILE;
    int8_t *panel = align64(mins + nb * ROW_TILE);
    act_block *one = align64(panel + (size_t)nb * 2 * B_TILE_BYTES);
    float *ad = align64(one + nb);
    const int64_t token_bytes = nb * (A_TILE_BYTES / 16 + 2 * (int64_t)sizeof(float));
    int64_t token_block = (end - (char *)ad - 256) / token_bytes;
    if (token_block > TOKEN_BLOCK_BYTES / token_bytes) token_block = TOKEN_BLOCK_BYTES / token_bytes;
    token_block = token_block / TOKEN_TILE * TOKEN_TILE;
    if (token_block < TOKEN_TILE) token_block = TOKEN_TILE; /* 82 bytes per element and 80 KiB: always there */
    float *as = align64(ad + token_block * nb);
    int8_t *aq = align64(as + token_block * nb);
    const bool with_mins = w->type == SPROUT_TYPE_Q4_K;
    tile_pass_args p = {.nb = nb, .panel = panel, .scales = scales, .mins = mins, .acc = acc, .macc = macc, .c = cbuf};
    for (int64_t tb = 0; tb < n_tokens; tb += token_block) {
        const int64_t tbn = n_tokens - tb < token_block ? n_tokens - tb : token_block;
        stage_tokens(w, x, x_stride, xq, tb, tbn, aq, ad, as, one);
        for (int64_t o = o0; o < o0 + amx_rows; o += q6 ? 16 : ROW_TILE) {
            const int RH = !q6 && o0 + amx_rows - o >= ROW_TILE ? 2 : 1; /* Q6_K: a row tile of 16 at a time */
            unpack_panel(w, o, RH, panel, scales, mins);
            for (int64_t t0 = 0; t0 < tbn; t0 += TOKEN_TILE) {
                const int tn = tbn - t0 < TOKEN_TILE ? (int)(tbn - t0) : TOKEN_TILE, TT = tn > 16 ? 2 : 1;
                p.aq = aq + (size_t)(t0 / 16 * nb) * A_TILE_BYTES;
                p.ad = ad + t0 / 16 * nb * 16;
                p.as = as + t0 / 16 * nb * 16;
                float *out = y + (tb + t0) * y_stride + o;
                if (q6) q6_tile_pass_any(TT, &p, (const int32_t *)mins, (const int32_t *)mins + nb * 16, tn, out, y_stride);
                else tile_pass_any(TT, RH, with_mins, &p, tn, out, y_stride);
            }
        }
    }
    if (o0 + amx_rows < o1) sp_matmul_avx512bf16(w, x, x_stride, xq, n_tokens, y, y_stride, o0 + amx_rows, o1, scratch);
}

/* The types sp_prompt_entry_type names (kernels.h) to the AMX-BF16
 * tiles, the rest as any other token. */
void sp_matmul_amx_prompt(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    if (sp_prompt_entry_type(w->type))
        sp_matmul_amx_float(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
    else sp_matmul_amx(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
}
